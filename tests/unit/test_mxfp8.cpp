// MXFP8 CPU reference (reshard/core/mxfp8.h): hand-computed blocks, RNE ties,
// saturation, zeros, denormals, NaN/Inf, and an independent double-precision
// reference on random blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/mxfp8.h"

namespace reshard {
namespace {

uint16_t bf16(float f) { // exact for the values used (they fit BF16)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}

double e4m3_value(uint8_t b) { // independent decode
  const int e = (b >> 3) & 15, m = b & 7;
  const double v =
      e == 0 ? m * std::ldexp(1.0, -9) : (1 + m / 8.0) * std::ldexp(1.0, e - 7);
  return (b & 0x80) ? -v : v;
}

double bf16_value(uint16_t h) {
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Reference element: nearest finite e4m3 to v (ties to the even mantissa),
// saturating at 448.
uint8_t ref_e4m3(double v) {
  const uint8_t sign = std::signbit(v) ? 0x80 : 0;
  if (std::isnan(v))
    return sign | 0x7F;
  const double a = std::fabs(v);
  if (a >= 448)
    return sign | 0x7E;
  uint8_t best = 0;
  for (int b = 1; b <= 0x7E; ++b) {
    const double d = std::fabs(e4m3_value(static_cast<uint8_t>(b)) - a),
                 db = std::fabs(e4m3_value(best) - a);
    if (d < db || (d == db && (b & 1) == 0))
      best = static_cast<uint8_t>(b);
  }
  return sign | best;
}

struct Block {
  uint8_t scale;
  std::vector<uint8_t> values;
};

Block quantize(const std::vector<uint16_t> &in) {
  Block b{0, std::vector<uint8_t>(in.size())};
  b.scale = mxfp8_quantize_block(in.data(), static_cast<int>(in.size()),
                                 b.values.data());
  return b;
}

std::vector<uint16_t>
block_of(float fill, std::initializer_list<std::pair<int, uint16_t>> set = {}) {
  std::vector<uint16_t> v(32, bf16(fill));
  for (auto [i, h] : set)
    v[i] = h;
  return v;
}

TEST(Mxfp8, ScaleFromAmax) {
  Block b = quantize(block_of(1.0f));
  EXPECT_EQ(b.scale, 119);      // floor(log2 1) - 8 + 127: X = 2^-8
  EXPECT_EQ(b.values[0], 0x78); // 1 / 2^-8 = 256 = 2^8
  b = quantize(block_of(1.0f, {{5, bf16(448.0f)}}));
  EXPECT_EQ(b.scale, 127); // X = 1
  EXPECT_EQ(b.values[5], 0x7E);
  EXPECT_EQ(b.values[0], 0x38); // 1.0
  b = quantize(block_of(-3.0f));
  EXPECT_EQ(b.scale, 120); // floor(log2 3) = 1
  EXPECT_EQ(b.values[0],
            0xFC); // -3 / 2^-7 = -384 = -1.5 * 2^8: sign, field 15, mantissa 4
}

TEST(Mxfp8, RoundToNearestEvenTies) {
  // X = 1 (amax 256): 1 + 1/16 ties 1.0 / 1.125 -> 1.0 (even); 1 + 3/16
  // ties 1.125 / 1.25 -> 1.25.
  Block b = quantize(block_of(0.0f, {{0, bf16(256.0f)},
                                     {1, bf16(1.0625f)},
                                     {2, bf16(1.1875f)},
                                     {3, bf16(-1.0625f)}}));
  ASSERT_EQ(b.scale, 127);
  EXPECT_EQ(b.values[1], 0x38);
  EXPECT_EQ(b.values[2], 0x3A);
  EXPECT_EQ(b.values[3], 0xB8);
  // Subnormal ties: 2^-10 ties 0 / 2^-9 -> 0; 3 * 2^-10 ties 2^-9 / 2^-8 ->
  // 2^-8 (even).
  b = quantize(block_of(0.0f, {{0, bf16(256.0f)},
                               {1, bf16(std::ldexp(1.0f, -10))},
                               {2, bf16(3 * std::ldexp(1.0f, -10))},
                               {3, bf16(std::ldexp(1.0f, -9))},
                               {4, bf16(-std::ldexp(1.0f, -12))}}));
  EXPECT_EQ(b.values[1], 0x00);
  EXPECT_EQ(b.values[2], 0x02);
  EXPECT_EQ(b.values[3], 0x01);
  EXPECT_EQ(b.values[4], 0x80); // rounds to -0
}

TEST(Mxfp8, SaturatesAboveMax) {
  // amax 480 and 500 keep X = 1 (floor(log2) = 8) and saturate to 448; so
  // does 1.9921875 * 2^127.
  Block b = quantize(block_of(1.0f, {{0, bf16(480.0f)}, {1, bf16(-500.0f)}}));
  EXPECT_EQ(b.scale, 127);
  EXPECT_EQ(b.values[0], 0x7E);
  EXPECT_EQ(b.values[1], 0xFE);
  b = quantize(block_of(1.0f, {{0, 0x7F7F}})); // largest finite BF16
  EXPECT_EQ(b.scale, 246);
  EXPECT_EQ(b.values[0], 0x7E);
  EXPECT_EQ(b.values[1], 0x00); // 1 / 2^119 is far below the smallest e4m3
}

TEST(Mxfp8, ZerosAndDenormals) {
  Block b = quantize(block_of(0.0f, {{3, 0x8000}}));
  EXPECT_EQ(b.scale, 0);
  EXPECT_EQ(b.values[0], 0x00);
  EXPECT_EQ(b.values[3], 0x80); // -0 keeps its sign
  // BF16 subnormals: amax 0x0040 = 2^-127 wants exponent -8: clamped to 0 (X =
  // 2^-127), so 0x0001 = 2^-133 -> 2^-6 (the smallest normal e4m3) and 2^-127
  // -> 1.0.
  b = quantize(block_of(0.0f, {{0, 0x0001}, {1, 0x8001}, {2, 0x0040}}));
  EXPECT_EQ(b.scale, 0);
  EXPECT_EQ(b.values[0], 0x08);
  EXPECT_EQ(b.values[1], 0x88);
  EXPECT_EQ(b.values[2], 0x38);
}

TEST(Mxfp8, NanAndInf) {
  // NaN / Inf do not take part in amax; NaN -> 0x7F with sign, Inf -> +-448.
  Block b = quantize(block_of(
      1.0f, {{0, 0x7FC0}, {1, 0xFFC0}, {2, 0x7F80}, {3, 0xFF80}, {4, 0x7F81}}));
  EXPECT_EQ(b.scale, 119);
  EXPECT_EQ(b.values[0], 0x7F);
  EXPECT_EQ(b.values[1], 0xFF);
  EXPECT_EQ(b.values[2], 0x7E);
  EXPECT_EQ(b.values[3], 0xFE);
  EXPECT_EQ(b.values[4], 0x7F); // signalling NaN too
  EXPECT_EQ(b.values[5], 0x78);
  b = quantize(std::vector<uint16_t>(32, 0x7FC0));
  EXPECT_EQ(b.scale, 0); // no finite value: amax 0
  EXPECT_EQ(b.values[0], 0x7F);
}

TEST(Mxfp8, E4m3EncodeDecodeRoundTrip) {
  for (int b = 0; b < 256; ++b) {
    const uint32_t f = e4m3_to_float_bits(static_cast<uint8_t>(b));
    float v;
    std::memcpy(&v, &f, 4);
    if ((b & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v)) << b;
      EXPECT_EQ(e4m3_from_float_bits(f), b) << b;
      continue;
    }
    EXPECT_EQ(static_cast<double>(v), e4m3_value(static_cast<uint8_t>(b))) << b;
    EXPECT_EQ(e4m3_from_float_bits(f), b) << b;
  }
  EXPECT_EQ(e4m3_from_float_bits(0x7F800000u), 0x7E); // +Inf saturates
  EXPECT_EQ(e4m3_from_float_bits(0x43E80000u),
            0x7E); // 464: halfway 448 / 480 saturates
}

TEST(Mxfp8, MatchesDoubleReferenceOnRandomBlocks) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<uint16_t> in(32);
    const int exp_center = static_cast<int>(rng() % 250) +
                           2; // blocks of similar magnitude, any range
    for (auto &h : in) {
      const uint32_t e = static_cast<uint32_t>(std::max(
          0, std::min(254, exp_center + static_cast<int>(rng() % 24) - 12)));
      h = static_cast<uint16_t>(((rng() & 1) << 15) | (e << 7) |
                                (rng() & 0x7F));
      if (rng() % 97 == 0)
        h = static_cast<uint16_t>(rng()); // anything, NaN and Inf included
    }
    const Block b = quantize(in);
    double amax = 0;
    for (uint16_t h : in)
      if (std::isfinite(bf16_value(h)))
        amax = std::max(amax, std::fabs(bf16_value(h)));
    int scale =
        amax == 0 ? 0 : static_cast<int>(std::floor(std::log2(amax))) - 8 + 127;
    scale = std::max(0, std::min(254, scale));
    ASSERT_EQ(b.scale, scale) << "trial " << trial;
    for (int i = 0; i < 32; ++i) {
      const double v = bf16_value(in[i]);
      const uint8_t want = std::isinf(v)
                               ? (v < 0 ? 0xFE : 0x7E)
                               : ref_e4m3(v / std::ldexp(1.0, scale - 127));
      ASSERT_EQ(b.values[i], want)
          << "trial " << trial << " element " << i << " value " << v;
    }
  }
}

TEST(Mxfp8, TensorQuantizeIntoABox) {
  // A [2, 64] box into a [3, 96] storage at [1, 32]: rows land at their storage
  // rows, scales at / 32.
  std::vector<uint16_t> in(2 * 64);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = bf16(static_cast<float>(i % 7) - 3.0f);
  std::vector<uint8_t> values(3 * 96, 0xAA), scales(3 * 3, 0xAA);
  mxfp8_quantize_into(in.data(), Dims{2, 64}, values.data(), scales.data(),
                      Dims{3, 96}, Dims{1, 32});
  for (int r = 0; r < 2; ++r)
    for (int blk = 0; blk < 2; ++blk) {
      uint8_t want[32];
      const uint8_t s =
          mxfp8_quantize_block(in.data() + r * 64 + blk * 32, 32, want);
      EXPECT_EQ(scales[(1 + r) * 3 + 1 + blk], s);
      EXPECT_EQ(0, std::memcmp(values.data() + (1 + r) * 96 + 32 + blk * 32,
                               want, 32));
    }
  EXPECT_EQ(values[0], 0xAA); // untouched outside the box
  EXPECT_EQ(scales[0], 0xAA);
  EXPECT_THROW(mxfp8_quantize_into(in.data(), Dims{2, 48}, values.data(),
                                   scales.data(), Dims{3, 96}, Dims{0, 0}),
               Error);
}

} // namespace
} // namespace reshard
