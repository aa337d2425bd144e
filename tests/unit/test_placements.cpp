// Placements beyond torch.chunk (mesh.h): each cut's pieces for a coordinate, worked out by hand, and
// the plan-file strings round-tripping.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/mesh.h"

namespace reshard {
namespace {

// "[begin:end]->at" per piece of a 1-d tensor of `n` rows, over a mesh dim of `size`, coordinate `c`.
std::string pieces(const Placement& p, int64_t n, int size, int c) {
  Layout l{make_mesh({{"tp", size}}, 0), {p}};
  if (size == 1) l.mesh = Mesh{{"tp"}, {1}, {0}};
  std::string s;
  for (const LocalPiece& q : l.local_pieces(Dims{n}, c))
    s += (s.empty() ? "" : " ") + q.box.str() + "->" + std::to_string(q.at[0]);
  return s + " / " + std::to_string(l.local_shape(Dims{n}, c)[0]);
}

TEST(Placements, EachCutByHand) {
  EXPECT_EQ(pieces(Placement::shard(0), 10, 4, 3), "[9:10]->0 / 1");                 // torch.chunk: 3,3,3,1
  EXPECT_EQ(pieces(Placement::blocks(0, 2), 32, 4, 1), "[0:16]->0 / 16");            // 2 KV heads over 4
  EXPECT_EQ(pieces(Placement::blocks(0, 2), 32, 4, 2), "[16:32]->0 / 16");
  EXPECT_EQ(pieces(Placement::pad(0, 1024), 1000, 4, 3), "[768:1000]->0 / 256");     // 24 padding rows
  EXPECT_EQ(pieces(Placement::balanced(0), 6, 4, 1), "[2:4]->0 / 2");                // 2, 2, 1, 1
  EXPECT_EQ(pieces(Placement::balanced(0), 6, 4, 3), "[5:6]->0 / 1");
  EXPECT_EQ(pieces(Placement::cyclic(0), 8, 2, 1), "[1:2]->0 [3:4]->1 [5:6]->2 [7:8]->3 / 4");
  EXPECT_EQ(pieces(Placement::split(0, {64, 64, 32, 32, 8}), 200, 2, 1),
            "[32:64]->0 [96:128]->32 [144:160]->64 [176:192]->80 [196:200]->96 / 100");
  EXPECT_EQ(pieces(Placement::split(0, {64, 64, -32, -32, 8}), 200, 2, 1),
            "[32:64]->0 [96:128]->32 [128:160]->64 [160:192]->96 [196:200]->128 / 132");
  // 4 groups of [8, 8, 16, 16] over 2: coordinate 1 holds groups 2, 3, section-major.
  EXPECT_EQ(pieces(Placement::grouped(0, 4, {8, 8, 16, 16}), 192, 2, 1),
            "[96:104]->0 [144:152]->8 [104:112]->16 [152:160]->24 [112:128]->32 [160:176]->48 [128:144]->64 "
            "[176:192]->80 / 96");
}

TEST(Placements, StringsRoundTripAndBadOnesAreRefused) {
  for (const char* s : {"R", "S(0)", "S(1,blocks=4)", "S(0,pad=151680)", "S(0,balanced)", "S(0,cyclic)",
                        "S(0,sections=[4096,4096,1024,1024,64])", "S(0,sections=[64,64,32r,32r,8])",
                        "S(0,groups=16,sections=[128,128,256,256])"})
    EXPECT_EQ(Placement::parse(s).str(), s);
  for (const char* s : {"S(0,blocks=0)", "S(0,pad=)", "S(0,sections=[])", "S(0,sections=[1,,2])", "S(0,groups=2)",
                        "S(0,groups=x,sections=[1])", "S(0,odd)", "S(9)"})
    EXPECT_THROW(Placement::parse(s), Error) << s;
  EXPECT_EQ(Placement::blocks(0, 3).check(32, 4), "S(0,blocks=3) of 32 over 4: 3 blocks do not divide the mesh dim");
  EXPECT_EQ(Placement::pad(0, 1000).check(1003, 4).empty(), false);
  EXPECT_EQ(Placement::grouped(0, 4, {8, 8}).check(64, 2), "");
}

}  // namespace
}  // namespace reshard
