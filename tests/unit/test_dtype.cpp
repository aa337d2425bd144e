#include <gtest/gtest.h>

#include "reshard/core/dtype.h"

namespace reshard {
namespace {

TEST(DType, TorchAndSafetensorsNamesAgree) {
  struct Case {
    const char* torch;
    const char* st;
    DType type;
    int size;
  };
  const Case cases[] = {
      {"bfloat16", "BF16", DType::BF16, 2},          {"float16", "F16", DType::F16, 2},
      {"float32", "F32", DType::F32, 4},             {"float64", "F64", DType::F64, 8},
      {"float8_e4m3fn", "F8_E4M3", DType::F8_E4M3, 1}, {"float8_e5m2", "F8_E5M2", DType::F8_E5M2, 1},
      {"float8_e8m0fnu", "F8_E8M0", DType::F8_E8M0, 1}, {"int8", "I8", DType::I8, 1},
      {"int16", "I16", DType::I16, 2},               {"int32", "I32", DType::I32, 4},
      {"int64", "I64", DType::I64, 8},               {"uint8", "U8", DType::U8, 1},
      {"uint16", "U16", DType::U16, 2},              {"uint32", "U32", DType::U32, 4},
      {"uint64", "U64", DType::U64, 8},              {"bool", "BOOL", DType::Bool, 1},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(parse_dtype(c.torch), c.type) << c.torch;
    EXPECT_EQ(parse_dtype(std::string("torch.") + c.torch), c.type) << c.torch;
    EXPECT_EQ(parse_dtype(c.st), c.type) << c.st;
    EXPECT_EQ(dtype_name(c.type), c.torch);
    EXPECT_EQ(dtype_size(c.type), c.size) << c.torch;
    // Canonical names round-trip: plans store them.
    EXPECT_EQ(parse_dtype(dtype_name(c.type)), c.type);
  }
}

TEST(DType, Aliases) {
  EXPECT_EQ(parse_dtype("half"), DType::F16);
  EXPECT_EQ(parse_dtype("torch.half"), DType::F16);
  EXPECT_EQ(parse_dtype("float"), DType::F32);
  EXPECT_EQ(parse_dtype("double"), DType::F64);
}

TEST(DType, UnknownIsNullopt) {
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_FALSE(parse_dtype("torch.").has_value());
  EXPECT_FALSE(parse_dtype("bfloat17").has_value());
  EXPECT_FALSE(parse_dtype("torch.BF16").has_value());  // safetensors names carry no torch prefix
  EXPECT_FALSE(parse_dtype("complex64").has_value());
}

}  // namespace
}  // namespace reshard
