#include "reshard/core/units.h"

#include <charconv>
#include <cstdio>
#include <utility>

#include "reshard/core/error.h"

namespace reshard {
namespace {

struct Suffix {
  std::string_view text;
  int64_t factor;
};
constexpr Suffix kSuffixes[] = {
    {"Ki", int64_t{1} << 10},
    {"Mi", int64_t{1} << 20},
    {"Gi", int64_t{1} << 30},
    {"Ti", int64_t{1} << 40},
    {"K", 1000},
    {"M", 1000 * 1000},
    {"G", 1000 * 1000 * 1000},
    {"T", int64_t{1000} * 1000 * 1000 * 1000},
};

// Digits only: false on anything else, and on overflow.
bool parse_digits(std::string_view digits, int64_t& out) {
  if (digits.empty()) return false;
  for (char c : digits)
    if (c < '0' || c > '9') return false;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && end == digits.data() + digits.size();
}

}  // namespace

int64_t parse_size(std::string_view text, const std::string& what) {
  std::string_view digits = text;
  int64_t factor = 1;
  for (const Suffix& s : kSuffixes) {
    if (digits.size() > s.text.size() && digits.substr(digits.size() - s.text.size()) == s.text) {
      digits.remove_suffix(s.text.size());
      factor = s.factor;
      break;
    }
  }
  int64_t value = 0;
  if (!parse_digits(digits, value))
    throw config_error(what + ": '" + std::string(text) +
                       "' is not a size (an integer with an optional K M G T or Ki Mi Gi Ti suffix)");
  if (value > INT64_MAX / factor) throw config_error(what + ": '" + std::string(text) + "' is too large");
  return value * factor;
}

int64_t parse_integer(std::string_view text, const std::string& what, int64_t min, int64_t max) {
  const bool negative = !text.empty() && text.front() == '-';
  int64_t value = 0;
  if (!parse_digits(negative ? text.substr(1) : text, value))
    throw config_error(what + ": '" + std::string(text) + "' is not an integer");
  if (negative) value = -value;
  if (value < min || value > max) {
    // Appended piece by piece: GCC 12's -Wrestrict misfires on `"literal" + std::string&&` here.
    std::string range = "[";
    range += std::to_string(min);
    range += ", ";
    range += max == INT64_MAX ? std::string("inf)") : std::to_string(max) + "]";
    throw config_error(what + ": " + std::string(text) + " is outside " + range);
  }
  return value;
}

std::string format_bytes(int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int unit = 0;
  while ((v >= 1024 || v <= -1024) && unit < 5) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0)
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[unit]);
  return buf;
}

std::string size_text(int64_t bytes) {
  for (const auto& [unit, scale] : {std::pair{"Gi", int64_t{1} << 30}, {"Mi", int64_t{1} << 20}, {"Ki", int64_t{1} << 10}})
    if (bytes > 0 && bytes % scale == 0) return std::to_string(bytes / scale) + unit;
  return std::to_string(bytes);
}

}  // namespace reshard
