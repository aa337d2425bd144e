// Strict sizes and integers from the command line, and byte formatting.
#include <gtest/gtest.h>

#include "reshard/core/error.h"
#include "reshard/core/units.h"

namespace reshard {
namespace {

TEST(Units, SizeSuffixes) {
  EXPECT_EQ(parse_size("0"), 0);
  EXPECT_EQ(parse_size("4096"), 4096);
  EXPECT_EQ(parse_size("2K"), 2000);
  EXPECT_EQ(parse_size("3M"), 3000000);
  EXPECT_EQ(parse_size("1G"), 1000000000);
  EXPECT_EQ(parse_size("64Ki"), 65536);
  EXPECT_EQ(parse_size("256Mi"), 256LL << 20);
  EXPECT_EQ(parse_size("1Gi"), 1LL << 30);
  EXPECT_EQ(parse_size("2Ti"), 2LL << 40);
}

TEST(Units, SizeRejectsAnythingElse) {
  for (const char* bad : {"", "1.5G", "-1", "+1", " 1", "1 ", "10 M", "4GB", "Gi", "1k", "1gi", "0x10",
                          "1Kii", "99999999999999999999", "9000000000Gi"}) {
    EXPECT_THROW(parse_size(bad, "--bucket-bytes"), Error) << "'" << bad << "'";
  }
  try {
    parse_size("1.5G", "--bucket-bytes");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    EXPECT_NE(std::string(e.what()).find("--bucket-bytes"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("1.5G"), std::string::npos);
  }
}

TEST(Units, IntegerRange) {
  EXPECT_EQ(parse_integer("12", "--iters"), 12);
  EXPECT_EQ(parse_integer("-3", "x", -5, 5), -3);
  EXPECT_THROW(parse_integer("-3", "x"), Error);  // default minimum is 0
  EXPECT_THROW(parse_integer("6", "x", -5, 5), Error);
  EXPECT_THROW(parse_integer("1e3", "x"), Error);
  EXPECT_THROW(parse_integer("", "x"), Error);
  EXPECT_THROW(parse_integer("-", "x", -5, 5), Error);
  try {
    parse_integer("0", "--train-gpus", 1, 100);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--train-gpus: 0 is outside [1, 100]"), std::string::npos)
        << e.what();
  }
}

TEST(Units, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.00 KiB");
  EXPECT_EQ(format_bytes(3LL << 29), "1.50 GiB");
}

// The text a size flag shows as its default reads back as the same count.
TEST(Units, SizeText) {
  EXPECT_EQ(size_text(512LL << 20), "512Mi");
  EXPECT_EQ(size_text(1LL << 30), "1Gi");
  EXPECT_EQ(size_text(3LL << 29), "1536Mi");
  EXPECT_EQ(size_text(4096), "4Ki");
  EXPECT_EQ(size_text(4097), "4097");
  EXPECT_EQ(size_text(0), "0");
  for (const int64_t b : {int64_t{4097}, int64_t{4096}, int64_t{3} << 29, int64_t{5} << 40})
    EXPECT_EQ(parse_size(size_text(b)), b) << b;
}

}  // namespace
}  // namespace reshard
