// MXFP8 (OCP Microscaling Formats v1.0, E4M3 elements): BF16 -> e4m3 values +
// one E8M0 scale per 32 consecutive elements along the last dim. The rounding
// is defined exactly in docs/precision.md and computed in integers only, so the
// CPU reference (here and mxfp8.cpp) and the CUDA kernel (cuda_quantize.cu,
// which includes this header) agree bit for bit (CPU: this code; GPU: a hardware-conversion fast path proven equal by exhaustive tests, see docs/precision.md); tests check
// it.
//
// Definition, per block of 32 BF16 values v_i:
//   amax  = max |v_i| over the finite v_i (NaN and Inf do not take part);
//   E8M0  = clamp(floor(log2(amax)) - 8 + 127, 0, 254), and 0 when amax == 0
//   (no finite non-zero); X     = 2^(E8M0 - 127); e4m3  =
//   round-to-nearest-even(v_i / X), saturated to +-448 (0x7E / 0xFE); -0 stays
//   0x80;
//           NaN -> 0x7F with the input's sign (0x7F / 0xFF); +-Inf -> +-448
//           (saturation).
// Header-only element functions carry RESHARD_HD so device code shares them; no
// CUDA includes.
#pragma once
#include <cstdint>

#include "reshard/core/box.h"
#include "reshard/core/pattern.h" // RESHARD_HD

namespace reshard {

inline constexpr int kMxBlock = 32;       // elements per shared scale
inline constexpr int kMxEmaxElem = 8;     // emax of E4M3 (448 = 1.75 * 2^8)
inline constexpr uint8_t kE4m3Max = 0x7E; // 448
inline constexpr uint8_t kE4m3NaN = 0x7F;
inline constexpr uint8_t kE8m0NaN =
    0xFF; // never produced (see above); defined by the spec

// Index of the highest set bit of x != 0 (the same on host and device).
RESHARD_HD int msb_index(uint32_t x) {
#ifdef __CUDA_ARCH__
  return 31 - __clz(static_cast<int>(x));
#else
  return 31 - __builtin_clz(x);
#endif
}

// |value| = mag * 2^exp (mag < 2^24), rounded to e4m3 (RNE, saturating), with
// `sign` (0 or 1).
RESHARD_HD uint8_t e4m3_encode_parts(uint32_t sign, uint32_t mag, int exp) {
  const uint8_t s = static_cast<uint8_t>(sign << 7);
  if (mag == 0)
    return s;
  const int p = msb_index(mag) + exp; // binade: 2^p <= |value| < 2^(p+1)
  if (p > 8)
    return static_cast<uint8_t>(s | kE4m3Max);
  const int ulp =
      p >= -6 ? p - 3 : -9;    // e4m3 spacing in that binade (subnormals: 2^-9)
  const int shift = ulp - exp; // bits of mag below the ulp
  uint32_t n;
  if (shift <= 0) {
    n = mag << -shift; // exact (only when mag has few bits: n < 16)
  } else if (shift > 25) {
    n = 0; // far below half an ulp
  } else {
    n = mag >> shift;
    const uint32_t rem = mag & ((1u << shift) - 1u), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (n & 1u)))
      ++n;
  }
  // n * 2^ulp: n < 8 only for subnormals; n == 16 carried into the next binade.
  int e = ulp;
  if (n >= 16) {
    n >>= 1;
    ++e;
  }
  if (n < 8)
    return static_cast<uint8_t>(s | n); // subnormal (or zero after rounding)
  const int field = e + 3 + 7; // biased exponent of n * 2^e, n in [8, 16)
  if (field > 15 || (field == 15 && n - 8 == 7))
    return static_cast<uint8_t>(s | kE4m3Max);
  return static_cast<uint8_t>(s | (field << 3) | (n - 8));
}

// BF16 bits scaled by 2^-scale_exp (unbiased), to e4m3.
RESHARD_HD uint8_t e4m3_from_bf16_scaled(uint16_t h, int scale_exp) {
  const uint32_t sign = h >> 15, e = (h >> 7) & 0xFFu, m = h & 0x7Fu;
  if (e == 0xFF)
    return static_cast<uint8_t>((sign << 7) | (m != 0 ? kE4m3NaN : kE4m3Max));
  if (e == 0)
    return e4m3_encode_parts(sign, m, -133 - scale_exp);
  return e4m3_encode_parts(sign, 0x80u | m,
                           static_cast<int>(e) - 134 - scale_exp);
}

// float -> e4m3 (RNE, saturating; NaN -> 0x7F with sign; Inf -> +-448). Plain
// FP8 cast.
RESHARD_HD uint8_t e4m3_from_float_bits(uint32_t f) {
  const uint32_t sign = f >> 31, e = (f >> 23) & 0xFFu, m = f & 0x7FFFFFu;
  if (e == 0xFF)
    return static_cast<uint8_t>((sign << 7) | (m != 0 ? kE4m3NaN : kE4m3Max));
  if (e == 0)
    return e4m3_encode_parts(sign, m, -149);
  return e4m3_encode_parts(sign, 0x800000u | m, static_cast<int>(e) - 150);
}

// e4m3 -> float bits (exact). 0x7F / 0xFF -> quiet NaN.
RESHARD_HD uint32_t e4m3_to_float_bits(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b >> 7) << 31;
  const uint32_t e = (b >> 3) & 0xFu, m = b & 7u;
  if (e == 15 && m == 7)
    return sign | 0x7FC00000u;
  if (e == 0) {
    if (m == 0)
      return sign;
    const int top = msb_index(m); // m * 2^-9 = 1.x * 2^(top - 9)
    const uint32_t frac = (m << (23 - top)) & 0x7FFFFFu;
    return sign | (static_cast<uint32_t>(top - 9 + 127) << 23) | frac;
  }
  return sign | ((e - 7 + 127) << 23) | (m << 20);
}

// The E8M0 scale of a block from the largest finite magnitude among its BF16
// values (bits & 0x7FFF).
RESHARD_HD uint8_t e8m0_from_bf16_amax(uint16_t amax_bits) {
  if (amax_bits == 0)
    return 0;
  const int e = amax_bits >> 7;
  int floor_log2;
  if (e > 0) {
    floor_log2 = e - 127;
  } else { // subnormal: m * 2^-133
    floor_log2 = msb_index(amax_bits & 0x7Fu) - 133;
  }
  const int biased = floor_log2 - kMxEmaxElem + 127;
  return static_cast<uint8_t>(biased < 0 ? 0 : biased > 254 ? 254 : biased);
}

// |h| as bits when finite, else 0 (NaN / Inf do not take part in amax).
RESHARD_HD uint16_t bf16_finite_magnitude(uint16_t h) {
  return ((h >> 7) & 0xFF) == 0xFF ? uint16_t{0}
                                   : static_cast<uint16_t>(h & 0x7FFF);
}

// One block of n <= 32 BF16 values (n == 32 in MXFP8 storages) -> n e4m3 bytes;
// returns the E8M0 scale.
RESHARD_HD uint8_t mxfp8_quantize_block(const uint16_t *in, int n,
                                        uint8_t *out) {
  uint16_t amax = 0;
  for (int i = 0; i < n; ++i) {
    const uint16_t a = bf16_finite_magnitude(in[i]);
    amax = a > amax ? a : amax;
  }
  const uint8_t scale = e8m0_from_bf16_amax(amax);
  const int scale_exp = static_cast<int>(scale) - 127;
  for (int i = 0; i < n; ++i)
    out[i] = e4m3_from_bf16_scaled(in[i], scale_exp);
  return scale;
}

// CPU reference over a dense row-major BF16 tensor of `extent` (extent[last] %
// 32 == 0): e4m3 values (same shape) and scales (last dim / 32), both dense.
// Throws Error(Config) when the last dim is not a multiple of 32.
void mxfp8_quantize(const uint16_t *bf16, const Dims &extent, uint8_t *values,
                    uint8_t *scales);
// The same into a box of larger storages: values of `storage_shape` at
// `offset`, scales of mxfp8_scale_shape(storage_shape) at offset with its last
// coordinate / 32. The box must span whole 32-blocks along the last dim.
void mxfp8_quantize_into(const uint16_t *bf16, const Dims &extent,
                         uint8_t *values, uint8_t *scales,
                         const Dims &storage_shape, const Dims &offset);
// Shape of the scale tensor of an MXFP8 tensor of `shape` (last dim / 32).
Dims mxfp8_scale_shape(const Dims &shape);

} // namespace reshard
