// Streaming writers for one JSON-shaped document, as JSON text or as CBOR bytes (RFC 8949, definite
// lengths only). The plan encoder drives both through the same calls, so the two files carry the same
// document, and neither builds a DOM: plans hold up to millions of transfers.
// Private to lib/core.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

namespace reshard::detail {

// JSON text: ", " between object members, "," between array items (transfers stay compact), and line
// breaks only where the caller asks for them with line_break(), so the layout is the caller's choice.
class JsonWriter {
 public:
  explicit JsonWriter(std::vector<uint8_t>& out) : out_(out) {}

  void begin_object(size_t n);
  void end_object();
  void begin_array(size_t n);
  void end_array();
  void key(std::string_view k);
  void integer(int64_t x);
  void number(double x);  // shortest round-trip form, always with '.' or 'e'; NaN/inf as null
  void str(std::string_view s);
  void boolean(bool b);
  void null();
  // The next member, item or closing bracket of the current container starts a new line indented by
  // `indent` spaces.
  void line_break(int indent) { pending_indent_ = indent; }

 private:
  struct Frame {
    bool object;
    bool first;
  };
  void separate();  // before a key or an array item
  void flush_break();
  void put(char c) { out_.push_back(static_cast<uint8_t>(c)); }
  void put(std::string_view s) { out_.insert(out_.end(), s.begin(), s.end()); }
  void quoted(std::string_view s);

  std::vector<uint8_t>& out_;
  std::vector<Frame> stack_;
  bool after_key_ = false;
  int pending_indent_ = -1;
};

// CBOR: integers in their shortest head, text strings, definite-length arrays and maps, doubles as
// 64-bit floats. Container sizes are checked against what was written, so a miscounted caller fails
// loudly instead of producing a corrupt file.
class CborWriter {
 public:
  explicit CborWriter(std::vector<uint8_t>& out) : out_(out) {}

  void begin_object(size_t n);
  void end_object() { close(); }
  void begin_array(size_t n);
  void end_array() { close(); }
  void key(std::string_view k);
  void integer(int64_t x);
  void number(double x);
  void str(std::string_view s);
  void boolean(bool b);
  void null();
  void line_break(int) {}

 private:
  struct Frame {
    bool object;
    uint64_t expected, written;
  };
  void item();  // counts an array item (object members are counted by key())
  void close();
  void head(int major, uint64_t value);
  void text(std::string_view s);

  std::vector<uint8_t>& out_;
  std::vector<Frame> stack_;
};

}  // namespace reshard::detail
