// Block-FP8 element math (reshard/core/fp8_block.h): e4m3 decoding, BF16 rounding, the scale pattern
// and the block cover of a shard, against independent computations.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "reshard/core/fp8_block.h"

namespace reshard {
namespace {

TEST(Fp8Block, E4m3DecodesEveryFiniteByte) {
  for (int b = 0; b < 256; ++b) {
    if ((b & 0x7F) == 0x7F) continue;  // NaN
    const int e = (b >> 3) & 0xF, m = b & 7;
    double want = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 7 - 3);
    if (b & 0x80) want = -want;
    EXPECT_EQ(static_cast<double>(e4m3_to_float(static_cast<uint8_t>(b))), want) << b;
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_TRUE(std::signbit(e4m3_to_float(0x80)));
}

TEST(Fp8Block, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_from_float_rne(1.0f), 0x3F80);
  EXPECT_EQ(bf16_from_float_rne(float_from_bits(0x3F808000u)), 0x3F80);  // tie, even stays
  EXPECT_EQ(bf16_from_float_rne(float_from_bits(0x3F818000u)), 0x3F82);  // tie, odd rounds up
  EXPECT_EQ(bf16_from_float_rne(float_from_bits(0x3F808001u)), 0x3F81);  // above the tie
  EXPECT_EQ(bf16_from_float_rne(float_from_bits(0x3F807FFFu)), 0x3F80);  // below the tie
  EXPECT_EQ(bf16_from_float_rne(-2.5f), 0xC020);
}

TEST(Fp8Block, ScalePatternIsFinitePositiveAndVaried) {
  std::set<uint32_t> seen;
  for (uint64_t k = 0; k < 4096; ++k) {
    const float s = block_scale_pattern(123, k);
    ASSERT_TRUE(std::isnormal(s) && s > 0) << k;
    EXPECT_GE(s, std::ldexp(1.0f, -8));
    EXPECT_LT(s, std::ldexp(1.0f, 8));
    seen.insert(bits_from_float(s));
  }
  EXPECT_GT(seen.size(), 4000u);
  // Every product with an e4m3 value stays a normal float, so host and device agree on its bits.
  EXPECT_TRUE(std::isnormal(e4m3_to_float(1) * std::ldexp(1.0f, -8)));
}

TEST(Fp8Block, DequantPatternUsesTheElementsBlock) {
  // [2, 300, 260]: element (1, 129, 257) sits in block (1, 1, 2) of the [2, 3, 3] grid.
  const uint64_t rows = 300, cols = 260, index = (1 * rows + 129) * cols + 257;
  const float scale = block_scale_pattern(7, (1 * 3 + 1) * 3 + 2);
  EXPECT_EQ(dequant_pattern(5, 7, index, rows, cols),
            bf16_from_float_rne(e4m3_to_float(fp8_valid_byte(pattern_byte(5, index))) * scale));
  EXPECT_EQ(fp8_block_grid(Dims{2, 300, 260}), (Dims{2, 3, 3}));
}

TEST(Fp8Block, CoverSpansTheBlocksAShardTouches) {
  EXPECT_EQ(fp8_block_cover(Box{Dims{0, 0}, Dims{128, 256}}).extent, (Dims{1, 2}));
  const Box c = fp8_block_cover(Box{Dims{100, 3}, Dims{50, 130}});  // rows 100..149, cols 3..132
  EXPECT_EQ(c.offset, (Dims{0, 0}));
  EXPECT_EQ(c.extent, (Dims{2, 2}));
  EXPECT_EQ(fp8_block_cover(Box{Dims{4, 256, 0}, Dims{2, 0, 5}}).extent, (Dims{2, 0, 1}));
}

}  // namespace
}  // namespace reshard
