#include <gtest/gtest.h>

#include <set>

#include "reshard/core/box.h"
#include "reshard/core/error.h"

namespace reshard {
namespace {

TEST(BoxDims, ConstructAndCompare) {
  Dims d{2, 3, 4};
  EXPECT_EQ(d.n, 3);
  EXPECT_EQ(d.product(), 24);
  EXPECT_EQ(d.str(), "[2, 3, 4]");
  EXPECT_EQ(d, Dims::from({2, 3, 4}));
  EXPECT_NE(d, (Dims{2, 3}));
  EXPECT_NE(d, (Dims{2, 3, 5}));
  EXPECT_EQ(Dims{}.product(), 1);
  EXPECT_EQ(Dims{}.str(), "[]");
  EXPECT_EQ(Dims::zeros(2), (Dims{0, 0}));
  EXPECT_EQ(d.to_vector(), (std::vector<int64_t>{2, 3, 4}));
}

TEST(BoxDims, TooManyDimsIsConfigError) {
  try {
    Dims::from({1, 2, 3, 4, 5, 6, 7, 8, 9});
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    EXPECT_NE(std::string(e.what()).find("9 dims"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(Dims::from({1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(BoxChunk, TorchChunkSemantics) {
  // 10 over 4 -> [0,3) [3,6) [6,9) [9,10)
  const int64_t want[4][2] = {{0, 3}, {3, 6}, {6, 9}, {9, 10}};
  for (int i = 0; i < 4; ++i) {
    Range r = chunk_range(10, 4, i);
    EXPECT_EQ(r.begin, want[i][0]);
    EXPECT_EQ(r.end, want[i][1]);
  }
  EXPECT_TRUE(chunks_uneven(10, 4));
  EXPECT_FALSE(chunks_uneven(8, 4));
  // 5 over 4: chunk 2 -> [0,2) [2,4) [4,5) [5,5): the last is empty.
  EXPECT_EQ(chunk_range(5, 4, 3).size(), 0);
  EXPECT_EQ(chunk_range(5, 4, 2).size(), 1);
  EXPECT_TRUE(chunks_uneven(5, 4));
  // 6 over 4: chunk 2 -> [0,2) [2,4) [4,6) [6,6): only the empty trailing one differs.
  EXPECT_TRUE(chunks_uneven(6, 4));
  EXPECT_FALSE(chunks_uneven(7, 1));
}

TEST(BoxChunk, ChunksTileTheRangeForManySizes) {
  for (int64_t size = 0; size <= 40; ++size) {
    for (int64_t parts = 1; parts <= 9; ++parts) {
      int64_t next = 0;
      bool uneven = false;
      const int64_t first = chunk_range(size, parts, 0).size();
      for (int64_t i = 0; i < parts; ++i) {
        Range r = chunk_range(size, parts, i);
        ASSERT_EQ(r.begin, std::min(next, size)) << size << "/" << parts << " #" << i;
        next = r.end;
        uneven |= r.size() != first;
        EXPECT_LE(r.size(), (size + parts - 1) / parts);
      }
      EXPECT_EQ(next, size);
      EXPECT_EQ(chunks_uneven(size, parts), uneven) << size << "/" << parts;
    }
  }
}

TEST(BoxOps, IntersectContainsRelative) {
  Box a{{0, 0}, {4, 6}}, b{{2, 3}, {4, 4}};
  auto i = intersect(a, b);
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(*i, (Box{{2, 3}, {2, 3}}));
  EXPECT_EQ(i->str(), "[2:4, 3:6]");
  EXPECT_EQ(i->elements(), 6);
  EXPECT_TRUE(contains(a, *i));
  EXPECT_TRUE(contains(b, *i));
  EXPECT_FALSE(contains(*i, a));
  EXPECT_EQ(relative(*i, b.offset), (Dims{0, 0}));
  EXPECT_EQ(relative(*i, a.offset), (Dims{2, 3}));
  // Touching boxes share no element.
  EXPECT_FALSE(intersect(Box{{0}, {3}}, Box{{3}, {2}}).has_value());
  EXPECT_FALSE(intersect(Box{{0, 0}, {2, 2}}, Box{{5, 0}, {1, 2}}).has_value());
  EXPECT_EQ(full_box(Dims{3, 5}), (Box{{0, 0}, {3, 5}}));
}

TEST(BoxOps, Empty) {
  EXPECT_TRUE((Box{{0, 0}, {0, 5}}).empty());
  EXPECT_FALSE((Box{{0, 0}, {1, 5}}).empty());
  EXPECT_FALSE(full_box(Dims{}).empty());  // a scalar holds one element
}

TEST(BoxOps, ContiguityInRowMajor) {
  const Dims shape{4, 6, 8};
  EXPECT_TRUE(is_contiguous(Dims{4, 6, 8}, shape));
  EXPECT_TRUE(is_contiguous(Dims{2, 6, 8}, shape));   // whole rows
  EXPECT_TRUE(is_contiguous(Dims{1, 3, 8}, shape));   // part of one matrix, full inner rows
  EXPECT_TRUE(is_contiguous(Dims{1, 1, 5}, shape));   // part of one row
  EXPECT_TRUE(is_contiguous(Dims{1, 1, 1}, shape));
  EXPECT_TRUE(is_contiguous(Dims{0, 6, 8}, shape));   // empty
  EXPECT_FALSE(is_contiguous(Dims{2, 3, 8}, shape));  // gaps between the two matrices
  EXPECT_FALSE(is_contiguous(Dims{1, 2, 4}, shape));  // gaps between rows
  EXPECT_FALSE(is_contiguous(Dims{4, 6, 4}, shape));
}

TEST(BoxOps, ContiguityAgreesWithLinearIndices) {
  // Brute force: a box is contiguous iff its element indices form one run.
  const Dims shape{3, 4, 5};
  for (int64_t e0 = 1; e0 <= 3; ++e0)
    for (int64_t e1 = 1; e1 <= 4; ++e1)
      for (int64_t e2 = 1; e2 <= 5; ++e2) {
        std::set<int64_t> idx;
        for (int64_t i = 0; i < e0; ++i)
          for (int64_t j = 0; j < e1; ++j)
            for (int64_t k = 0; k < e2; ++k) idx.insert(linear_index(Dims{i, j, k}, shape));
        const bool run = *idx.rbegin() - *idx.begin() + 1 == static_cast<int64_t>(idx.size());
        EXPECT_EQ(is_contiguous(Dims{e0, e1, e2}, shape), run) << e0 << "," << e1 << "," << e2;
      }
}

TEST(BoxOps, FindOverlap) {
  auto box = [](Dims o, Dims e) { return Box{o, e}; };
  // Column stripes of a [4, 8] tensor, 2 wide: none overlap, in any order given.
  std::vector<Box> stripes = {box({0, 6}, {4, 2}), box({0, 0}, {4, 2}), box({0, 4}, {4, 2}), box({0, 2}, {4, 2})};
  EXPECT_FALSE(find_overlap(stripes));
  // A third stripe [0:4, 3:5] meets both [.., 2:4] and [.., 4:6]; the first found is named.
  stripes.push_back(box({0, 3}, {4, 2}));
  const auto hit = find_overlap(stripes);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->first, box({0, 2}, {4, 2}));
  EXPECT_EQ(hit->second, box({0, 3}, {4, 2}));
  // A 2 x 2 grid of [2, 2] tiles: touching edges are no overlap; a duplicate tile is.
  std::vector<Box> grid = {box({2, 2}, {2, 2}), box({0, 0}, {2, 2}), box({0, 2}, {2, 2}), box({2, 0}, {2, 2})};
  EXPECT_FALSE(find_overlap(grid));
  grid.push_back(box({2, 0}, {2, 2}));
  ASSERT_TRUE(find_overlap(grid));
  EXPECT_EQ(find_overlap(grid)->first, box({2, 0}, {2, 2}));
  // Fewer than two boxes: nothing to compare.
  std::vector<Box> one = {box({0}, {3})};
  EXPECT_FALSE(find_overlap(one));
}

TEST(BoxOps, LinearIndex) {
  EXPECT_EQ(linear_index(Dims{0, 0, 0}, Dims{3, 4, 5}), 0);
  EXPECT_EQ(linear_index(Dims{1, 2, 3}, Dims{3, 4, 5}), 1 * 20 + 2 * 5 + 3);
  EXPECT_EQ(linear_index(Dims{2, 3, 4}, Dims{3, 4, 5}), 59);
  EXPECT_EQ(linear_index(Dims{}, Dims{}), 0);
}

}  // namespace
}  // namespace reshard
