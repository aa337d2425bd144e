// Block-FP8 training weights (DeepSeek-V3 style): float8_e4m3fn values plus one float32
// "<name>_scale_inv" per 128 x 128 block of the last two dims (leading dims, e.g. grouped experts,
// one to one). A Megatron destination receives them as logical BF16 (docs/precision.md):
//   bf16 = round-to-nearest-even(float(e4m3) * scale_inv), one float32 multiply, then RNE to BF16.
// Header-only element functions carry RESHARD_HD so the CUDA kernel (cuda_dequant.cu) computes the
// same bits as the host; no CUDA includes.
#pragma once
#include <cstdint>
#include <cstring>

#include "reshard/core/box.h"
#include "reshard/core/pattern.h"

namespace reshard {

inline constexpr int64_t kFp8BlockEdge = 128;  // scale_inv: one per 128 x 128 block of the last two dims

RESHARD_HD float float_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
RESHARD_HD uint32_t bits_from_float(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

// Exact float value of a finite e4m3fn byte (the NaN encodings 0x7F / 0xFF never reach here).
RESHARD_HD float e4m3_to_float(uint8_t b) {
  const uint32_t sign = static_cast<uint32_t>(b >> 7) << 31, e = (b >> 3) & 0xF, m = b & 7;
  if (e == 0) return float_from_bits(sign | bits_from_float(static_cast<float>(m) * (1.0f / 512.0f)));  // m * 2^-9
  return float_from_bits(sign | ((e - 7 + 127) << 23) | (m << 20));
}

// BF16 bits of a finite float, rounded to nearest even.
RESHARD_HD uint16_t bf16_from_float_rne(float f) {
  const uint32_t u = bits_from_float(f);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

RESHARD_HD float fp8_mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);  // never contracted or flushed differently from the host's IEEE multiply
#else
  return a * b;
#endif
}

RESHARD_HD uint16_t dequant_e4m3(uint8_t value, float scale_inv) {
  return bf16_from_float_rne(fp8_mul(e4m3_to_float(value), scale_inv));
}

// The verification pattern's scale_inv of block `block` (linear index in the param's global block
// grid): finite, positive, 2^[-8, 7] times a random 23-bit mantissa, so every product with an e4m3
// value is a normal float and its BF16 rounding is exercised.
RESHARD_HD float block_scale_pattern(uint64_t seed, uint64_t block) {
  const uint64_t w = pattern_word(seed, block);
  const uint32_t exponent = static_cast<uint32_t>(127 - 8 + (w & 15));
  return float_from_bits((exponent << 23) | static_cast<uint32_t>((w >> 4) & 0x7FFFFF));
}

// The BF16 a golden dequantization yields at global linear element `index` of a param whose last two
// dims are rows x cols: its e4m3 pattern value (param_seed, one byte per element, NaN-free) times its
// block's pattern scale.
RESHARD_HD uint16_t dequant_pattern(uint64_t seed, uint64_t scale_seed, uint64_t index, uint64_t rows,
                                    uint64_t cols) {
  const uint64_t col = index % cols, rest = index / cols, row = rest % rows, lead = rest / rows;
  const uint64_t block_cols = (cols + kFp8BlockEdge - 1) / kFp8BlockEdge;
  const uint64_t block_rows = (rows + kFp8BlockEdge - 1) / kFp8BlockEdge;
  const uint64_t block = (lead * block_rows + row / kFp8BlockEdge) * block_cols + col / kFp8BlockEdge;
  return dequant_e4m3(fp8_valid_byte(pattern_byte(seed, index)), block_scale_pattern(scale_seed, block));
}

// The seed of a param's scale pattern (its values use param_seed(name)).
inline uint64_t block_scale_seed(uint64_t value_seed) { return pattern_mix(value_seed ^ 0x5CA1E1AFull); }

// Global block grid of a tensor: the last two dims divided by 128, rounded up. Needs n >= 2.
inline Dims fp8_block_grid(const Dims& shape) {
  Dims g = shape;
  for (int d = shape.n - 2; d < shape.n; ++d) g[d] = (shape[d] + kFp8BlockEdge - 1) / kFp8BlockEdge;
  return g;
}

// The blocks of the global grid a box touches (leading dims one to one): offset and extent in the grid.
inline Box fp8_block_cover(const Box& box) {
  Box c = box;
  for (int d = box.offset.n - 2; d < box.offset.n; ++d) {
    c.offset[d] = box.offset[d] / kFp8BlockEdge;
    c.extent[d] = box.extent[d] == 0 ? 0 : (box.offset[d] + box.extent[d] - 1) / kFp8BlockEdge + 1 - c.offset[d];
  }
  return c;
}

}  // namespace reshard
