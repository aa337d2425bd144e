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

// Destinations are poisoned with this byte before a run, so an unwritten byte is caught unless the
// pattern happens to produce it there (the check compares against the pattern, not the poison).
inline constexpr uint8_t kPoisonByte = 0xA5;

}  // namespace reshard
