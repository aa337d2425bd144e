#include "json_checks.h"

#include <nlohmann/json.hpp>

#include "reshard/core/error.h"

namespace reshard {
namespace {

// Counts open containers; everything else is accepted as it comes.
struct DepthProbe : nlohmann::json_sax<nlohmann::json> {
  explicit DepthProbe(const std::string& o) : origin(o) {}
  bool open() {
    if (++depth > kMaxJsonDepth)
      throw config_error(origin + ": nested more than " + std::to_string(kMaxJsonDepth) + " levels deep");
    return true;
  }
  bool start_object(std::size_t) override { return open(); }
  bool start_array(std::size_t) override { return open(); }
  bool end_object() override { return --depth >= 0; }
  bool end_array() override { return --depth >= 0; }
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool key(string_t&) override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

  const std::string& origin;
  int depth = 0;
};

}  // namespace

void check_json_depth(std::string_view text, const std::string& origin) {
  DepthProbe probe(origin);
  nlohmann::json::sax_parse(text.begin(), text.end(), &probe);
}

}  // namespace reshard
