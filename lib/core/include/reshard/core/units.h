// Strict numbers on the command line and in configs, and human-readable byte counts.
// Strict: the whole text must be the number (no sign, spaces, fractions or trailing junk), and
// overflow is an error, so "1.5G", "-1", "10 M" and "4GB" are rejected rather than half-read.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace reshard {

// Bytes: a decimal integer with an optional suffix K M G T (powers of 1000) or Ki Mi Gi Ti (powers of
// 1024): "4096", "64Ki", "1Gi", "2M". Throws Error(Config) naming `what` and the text.
int64_t parse_size(std::string_view text, const std::string& what = "size");
// A decimal integer in [min, max]. Throws Error(Config) naming `what`, the text and the range.
int64_t parse_integer(std::string_view text, const std::string& what, int64_t min = 0,
                      int64_t max = INT64_MAX);
// "1.50 GiB", "512 B": binary units, three significant decimals at most.
std::string format_bytes(int64_t bytes);
// A byte count as a size flag's text (parse_size reads it back), in the largest binary unit that
// divides it: 536870912 -> "512Mi", 4097 -> "4097".
std::string size_text(int64_t bytes);

}  // namespace reshard
