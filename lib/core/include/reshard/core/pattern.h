// The verification pattern: every byte of every param is a pure function of (param, global byte
// index). Header-only and free of CUDA includes so .cu kernels share it (RESHARD_HD marks the
// functions __host__ __device__ when compiled by nvcc).
#pragma once
#include <cstdint>
#include <string_view>

#ifdef __CUDACC__
#define RESHARD_HD __host__ __device__ __forceinline__
#else
#define RESHARD_HD inline
#endif

namespace reshard {

// FNV-1a 64 of a param name: the per-param seed.
inline uint64_t param_seed(std::string_view name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// splitmix64 finalizer.
RESHARD_HD uint64_t pattern_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The 8 pattern bytes at global byte offsets [8*word, 8*word + 8) of the param.
RESHARD_HD uint64_t pattern_word(uint64_t seed, uint64_t word) { return pattern_mix(seed ^ pattern_mix(word)); }

RESHARD_HD uint8_t pattern_byte(uint64_t seed, uint64_t byte_index) {
  return static_cast<uint8_t>(pattern_word(seed, byte_index >> 3) >> (8 * (byte_index & 7)));
}

// float8_e4m3fn params: pattern bytes whose low 7 bits are all ones (0x7F, 0xFF: the only NaN
// encodings) have bit 0 cleared (-> 0x7E / 0xFE, +-448), so every pattern byte is a valid finite e4m3.
// The word form applies that to 8 bytes at once (host fill/check and the CUDA kernels use it).
RESHARD_HD uint8_t fp8_valid_byte(uint8_t b) { return (b & 0x7F) == 0x7F ? static_cast<uint8_t>(b ^ 1) : b; }
RESHARD_HD uint64_t fp8_valid_word(uint64_t w) {
  const uint64_t low7 = w & 0x7F7F7F7F7F7F7F7Full;
  const uint64_t nan = (low7 + 0x0101010101010101ull) & 0x8080808080808080ull;  // 0x7F + 1 sets bit 7
  return w ^ (nan >> 7);
}

// Destinations are poisoned with this byte before a run, so an unwritten byte is caught unless the
// pattern happens to produce it there (the check compares against the pattern, not the poison).
inline constexpr uint8_t kPoisonByte = 0xA5;

}  // namespace reshard
