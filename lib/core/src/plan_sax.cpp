// The SAX pass of decode_plan (plan_sax.h).
#include "plan_sax.h"

#include <limits>
#include <optional>

#include "reshard/core/error.h"
#include "reshard/core/plan_enums.h"

namespace reshard {
namespace {

using json = nlohmann::json;

// CBOR text strings are not checked by the parser; a plan's strings must be valid UTF-8 so that it can
// be written back as JSON.
bool valid_utf8(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int extra = c < 0x80 ? 0 : (c >> 5) == 0x6 ? 1 : (c >> 4) == 0xe ? 2 : (c >> 3) == 0x1e ? 3 : -1;
    if (extra < 0 || (extra > 0 && c < 0xc2) ||
        i + static_cast<size_t>(extra) >= s.size() + (extra ? 0 : 1)) {
      return false;
    }
    for (int k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + static_cast<size_t>(k)]) >> 6) != 0x2) return false;
    }
    if (extra >= 2) {  // no overlong forms, surrogates or code points above U+10FFFF
      const auto d = static_cast<unsigned char>(s[i + 1]);
      if ((c == 0xe0 && d < 0xa0) || (c == 0xed && d >= 0xa0) || (c == 0xf0 && d < 0x90) ||
          (c == 0xf4 && d >= 0x90) || c > 0xf4) {
        return false;
      }
    }
    i += static_cast<size_t>(extra) + 1;
  }
  return true;
}

class PlanSax final : public json::json_sax_t {
 public:
  explicit PlanSax(Plan& plan) : plan_(plan) {}

  json& root() { return root_; }
  const std::string& error() const { return error_; }
  const std::vector<Slice>& transfer_slices() const { return transfer_slices_; }
  const std::vector<Slice>& fanout_slices() const { return fanout_slices_; }

  bool null() override { return scalar(json(nullptr)); }
  bool boolean(bool b) override { return scalar(json(b)); }
  bool number_integer(number_integer_t x) override {
    if (level_ > 0) return capture_int(x);
    return scalar(json(x));
  }
  bool number_unsigned(number_unsigned_t x) override {
    if (level_ > 0) {
      if (x > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return fail(where(), "integer out of range");
      return capture_int(static_cast<int64_t>(x));
    }
    return scalar(json(x));
  }
  bool number_float(number_float_t x, const string_t&) override { return scalar(json(x)); }
  bool string(string_t& s) override {
    if (!valid_utf8(s)) return fail(where(), "invalid UTF-8 in a string");
    return scalar(json(std::move(s)));
  }
  bool binary(binary_t&) override { return fail(where(), "binary strings are not part of a plan"); }

  // A plan nests about ten levels deep. Stopping far deeper inputs here also bounds the recursion of
  // nlohmann's CBOR reader, which would otherwise overflow the stack on a hostile file.
  static constexpr size_t kMaxDepth = 64;
  bool too_deep() { return fail(where(), "nested more than " + std::to_string(kMaxDepth) + " levels deep"); }

  bool start_object(std::size_t) override {
    if (armed_ || level_ > 0) return unexpected();
    if (stack_.size() >= kMaxDepth) return too_deep();
    json* v = place(json::object());
    stack_.push_back(v);
    return true;
  }
  bool end_object() override {
    stack_.pop_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!valid_utf8(k)) return fail(where(), "invalid UTF-8 in a key");
    // params[i].transfers / params[i].fanouts bypass the DOM.
    if (stack_.size() == 3 && params_ != nullptr && stack_[1] == params_ &&
        (k == "transfers" || k == "fanouts")) {
      param_ = params_->size() - 1;
      kind_ = k == "transfers" ? Kind::Transfers : Kind::Fanouts;
      auto& slices = kind_ == Kind::Transfers ? transfer_slices_ : fanout_slices_;
      if (slices.size() <= param_) slices.resize(param_ + 1);
      if (slices[param_].seen) return fail(list_path(), "duplicate key");
      armed_ = true;
      return true;
    }
    key_ = std::move(k);
    return true;
  }
  bool start_array(std::size_t) override {
    if (armed_) {  // the transfers / fanouts list itself
      armed_ = false;
      level_ = 1;
      record_ = 0;
      auto& slices = kind_ == Kind::Transfers ? transfer_slices_ : fanout_slices_;
      slices[param_] = {true, kind_ == Kind::Transfers ? plan_.transfers.size() : plan_.fanouts.size(), 0};
      return true;
    }
    if (level_ == 1) {  // a record
      level_ = 2;
      field_ = 0;
      return true;
    }
    if (level_ == 2) {
      if (field_ < 2 || field_ >= arity() - 1) return fail(record_path(), shape_message());
      level_ = 3;
      dims_[field_ - 2] = Dims();
      return true;
    }
    if (level_ == 3) return fail(record_path(), shape_message());
    if (stack_.size() >= kMaxDepth) return too_deep();
    json* v = place(json::array());
    if (stack_.size() == 1 && key_ == "params") params_ = v;
    stack_.push_back(v);
    return true;
  }
  bool end_array() override {
    switch (level_) {
      case 0:
        stack_.pop_back();
        return true;
      case 1:
        level_ = 0;
        return true;
      case 2:
        if (field_ != arity() - 1 && field_ != arity()) return fail(record_path(), shape_message());
        if (field_ == arity() - 1) ints_[2] = 0;  // no dst storage index: the param's only storage
        emit_record();
        ++record_;
        level_ = 1;
        return true;
      default:
        ++field_, level_ = 2;
        return true;
    }
  }
  bool parse_error(std::size_t, const std::string&, const json::exception& ex) override {
    std::string what = ex.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 9: ..." -> from "parse error".
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    error_ = what;
    return false;
  }

 private:
  enum class Kind { Transfers, Fanouts };

  // The longest record; the last field (the dst storage index) is optional.
  int arity() const { return kind_ == Kind::Transfers ? 7 : 6; }
  std::string shape_message() const {
    return kind_ == Kind::Transfers
               ? "expected array of 6: [src, dst, [offset], [extent], [src_local], [dst_local]] (or 7, with dst storage)"
               : "expected array of 5: [root, group, [offset], [extent], [dst_local]] (or 6, with dst storage)";
  }
  std::string list_path() const {
    return index_path("params", param_) + (kind_ == Kind::Transfers ? ".transfers" : ".fanouts");
  }
  std::string record_path() const { return index_path(list_path(), record_); }
  std::string where() const { return level_ > 0 ? record_path() : armed_ ? list_path() : "document"; }

  bool fail(const std::string& path, const std::string& message) {
    error_ = path + ": " + message;
    return false;
  }
  bool unexpected() {
    if (armed_) return fail(list_path(), "expected array");
    return fail(record_path(), shape_message());
  }

  bool scalar(json v) {
    if (armed_ || level_ > 0) return unexpected();
    place(std::move(v));
    return true;
  }

  json* place(json v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    json& slot = top[key_];
    slot = std::move(v);
    return &slot;
  }

  bool capture_int(int64_t x) {
    if (level_ == 2) {
      const bool storage = field_ == arity() - 1;
      if (field_ >= 2 && !storage) return fail(record_path(), shape_message());
      if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) {
        return fail(record_path(), "value " + std::to_string(x) + " out of range");
      }
      ints_[storage ? 2 : field_] = static_cast<int32_t>(x);
      ++field_;
      return true;
    }
    if (level_ == 3) {
      Dims& d = dims_[field_ - 2];
      if (d.n == kMaxDims) return fail(record_path(), "more than " + std::to_string(kMaxDims) + " dims");
      d[d.n++] = x;
      return true;
    }
    return fail(record_path(), shape_message());
  }

  void emit_record() {
    const auto param = static_cast<uint32_t>(param_);
    if (kind_ == Kind::Transfers) {
      plan_.transfers.push_back({param, ints_[0], ints_[1], ints_[2], Box{dims_[0], dims_[1]}, dims_[2], dims_[3]});
      ++transfer_slices_[param_].count;
    } else {
      plan_.fanouts.push_back({param, ints_[0], ints_[1], ints_[2], Box{dims_[0], dims_[1]}, dims_[2]});
      ++fanout_slices_[param_].count;
    }
  }

  Plan& plan_;
  json root_;
  std::vector<json*> stack_;
  std::string key_;
  json* params_ = nullptr;
  std::string error_;

  // Capture of one params[i].transfers / .fanouts list. level_: 0 outside, 1 in the list, 2 in a
  // record, 3 in one of its coordinate arrays.
  bool armed_ = false;
  Kind kind_ = Kind::Transfers;
  size_t param_ = 0, record_ = 0;
  int level_ = 0, field_ = 0;
  int32_t ints_[3] = {0, 0, 0};  // src/root, dst/group, dst storage
  Dims dims_[4];
  std::vector<Slice> transfer_slices_, fanout_slices_;
};

}  // namespace

PlanEvents parse_plan_events(const std::vector<uint8_t>& bytes, Plan& plan, const std::string& origin) {
  size_t first = 0;
  while (first < bytes.size() &&
         (bytes[first] == ' ' || bytes[first] == '\t' || bytes[first] == '\n' || bytes[first] == '\r')) {
    ++first;
  }
  if (first == bytes.size()) throw config_error(origin + ": empty plan file");
  const bool is_json = bytes[first] == '{';
  PlanSax sax(plan);
  const bool ok = json::sax_parse(bytes.begin(), bytes.end(), &sax,
                                  is_json ? json::input_format_t::json : json::input_format_t::cbor);
  if (!ok) {
    // nlohmann names the position: "line 3, column 9" for JSON, "byte 57" for CBOR.
    throw config_error(origin + ": " + (sax.error().empty() ? std::string("malformed plan") : sax.error()));
  }
  return PlanEvents{std::move(sax.root()), sax.transfer_slices(), sax.fanout_slices()};
}

}  // namespace reshard
