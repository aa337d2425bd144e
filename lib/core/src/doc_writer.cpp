#include "doc_writer.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "reshard/core/error.h"

namespace reshard::detail {

// ---- JSON ----

void JsonWriter::flush_break() {
  if (pending_indent_ < 0) return;
  put('\n');
  out_.insert(out_.end(), static_cast<size_t>(pending_indent_), ' ');
  pending_indent_ = -1;
}

void JsonWriter::separate() {
  if (stack_.empty()) return;
  if (after_key_) {  // an object member's value follows its key directly
    after_key_ = false;
    return;
  }
  Frame& f = stack_.back();
  if (!f.first) put(f.object && pending_indent_ < 0 ? ", " : ",");
  f.first = false;
  flush_break();
}

void JsonWriter::begin_object(size_t) {
  separate();
  put('{');
  stack_.push_back({true, true});
}

void JsonWriter::end_object() {
  flush_break();
  put('}');
  stack_.pop_back();
}

void JsonWriter::begin_array(size_t) {
  separate();
  put('[');
  stack_.push_back({false, true});
}

void JsonWriter::end_array() {
  flush_break();
  put(']');
  stack_.pop_back();
}

void JsonWriter::key(std::string_view k) {
  separate();
  quoted(k);
  put(": ");
  after_key_ = true;
}

void JsonWriter::integer(int64_t x) {
  separate();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  put(std::string_view(buf, static_cast<size_t>(r.ptr - buf)));
}

void JsonWriter::number(double x) {
  separate();
  if (!std::isfinite(x)) {
    put("null");
    return;
  }
  char buf[40];
  auto r = std::to_chars(buf, buf + sizeof buf, x);
  std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
  put(s);
  // Keep it a float when read back: "1" would come back as an integer.
  if (s.find_first_of(".e") == std::string_view::npos) put(".0");
}

void JsonWriter::str(std::string_view s) {
  separate();
  quoted(s);
}

void JsonWriter::boolean(bool b) {
  separate();
  put(b ? "true" : "false");
}

void JsonWriter::null() {
  separate();
  put("null");
}

void JsonWriter::quoted(std::string_view s) {
  put('"');
  for (char c : s) {
    switch (c) {
      case '"':
        put("\\\"");
        break;
      case '\\':
        put("\\\\");
        break;
      case '\n':
        put("\\n");
        break;
      case '\t':
        put("\\t");
        break;
      case '\r':
        put("\\r");
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          put(buf);
        } else {
          put(c);  // UTF-8 passes through unchanged
        }
    }
  }
  put('"');
}

// ---- CBOR ----

void CborWriter::head(int major, uint64_t value) {
  const auto m = static_cast<uint8_t>(major << 5);
  auto be = [&](int bytes) {
    for (int i = bytes - 1; i >= 0; --i) out_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  };
  if (value < 24) {
    out_.push_back(static_cast<uint8_t>(m | value));
  } else if (value <= 0xff) {
    out_.push_back(m | 24);
    be(1);
  } else if (value <= 0xffff) {
    out_.push_back(m | 25);
    be(2);
  } else if (value <= 0xffffffffu) {
    out_.push_back(m | 26);
    be(4);
  } else {
    out_.push_back(m | 27);
    be(8);
  }
}

void CborWriter::item() {
  if (!stack_.empty() && !stack_.back().object) ++stack_.back().written;
}

void CborWriter::close() {
  const Frame& f = stack_.back();
  if (f.written != f.expected) {
    throw runtime_error("internal error: CBOR " + std::string(f.object ? "map" : "array") + " declared " +
                        std::to_string(f.expected) + " entries but " + std::to_string(f.written) +
                        " were written");
  }
  stack_.pop_back();
}

void CborWriter::begin_object(size_t n) {
  item();
  head(5, n);
  stack_.push_back({true, n, 0});
}

void CborWriter::begin_array(size_t n) {
  item();
  head(4, n);
  stack_.push_back({false, n, 0});
}

void CborWriter::text(std::string_view s) {
  head(3, s.size());
  out_.insert(out_.end(), s.begin(), s.end());
}

void CborWriter::key(std::string_view k) {
  ++stack_.back().written;
  text(k);
}

void CborWriter::integer(int64_t x) {
  item();
  if (x >= 0) {
    head(0, static_cast<uint64_t>(x));
  } else {
    head(1, static_cast<uint64_t>(-(x + 1)));
  }
}

void CborWriter::number(double x) {
  item();
  if (!std::isfinite(x)) {  // as JSON has no NaN/inf, keep the two documents equal
    out_.push_back(0xf6);
    return;
  }
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  out_.push_back(0xfb);
  for (int i = 7; i >= 0; --i) out_.push_back(static_cast<uint8_t>(bits >> (8 * i)));
}

void CborWriter::str(std::string_view s) {
  item();
  text(s);
}

void CborWriter::boolean(bool b) {
  item();
  out_.push_back(b ? 0xf5 : 0xf4);
}

void CborWriter::null() {
  item();
  out_.push_back(0xf6);
}

}  // namespace reshard::detail
