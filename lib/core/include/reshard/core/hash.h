// A small streaming 64-bit hash (FNV-1a) for fingerprints and digests. Not cryptographic: it
// detects mismatched inputs, it does not defend against forgery.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace reshard {

class Hasher {
 public:
  Hasher& add(std::string_view s) {
    for (unsigned char c : s) byte(c);
    byte(0xff);  // separator: ("ab","c") != ("a","bc")
    return *this;
  }
  Hasher& add(int64_t x) {
    for (int i = 0; i < 8; ++i) byte(static_cast<unsigned char>(static_cast<uint64_t>(x) >> (8 * i)));
    return *this;
  }
  uint64_t value() const { return h_; }
  std::string hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return buf;
  }

 private:
  void byte(unsigned char c) {
    h_ ^= c;
    h_ *= 1099511628211ull;
  }
  uint64_t h_ = 1469598103934665603ull;
};

}  // namespace reshard
