// cuda-ipc push's fan-out merge (lib/exec/src/cuda_ipc_fanout.h): copies of one source box into
// tensors of one shape at one offset become one copy to several destinations. Plain C++.
#include <gtest/gtest.h>

#include "cuda_ipc_fanout.h"

namespace reshard {
namespace {

TEST(CudaIpcFanout, CopiesOfOneSourceBoxToLikeTensorsMergeAndOthersStayApart) {
  int src = 0, a = 0, b = 0, c = 0, d = 0;
  const Dims shape{8, 4};
  // a and b take rows [0, 2) of src at their own row 0: one fan-out; c the same rows at row 2: apart;
  // d rows [2, 4): apart.
  const std::vector<PushCopy> copies = {
      {&src, shape, Dims{0, 0}, &a, shape, Dims{0, 0}, Dims{2, 4}},
      {&src, shape, Dims{2, 0}, &d, shape, Dims{0, 0}, Dims{2, 4}},
      {&src, shape, Dims{0, 0}, &c, shape, Dims{2, 0}, Dims{2, 4}},
      {&src, shape, Dims{0, 0}, &b, shape, Dims{0, 0}, Dims{2, 4}},
  };
  std::vector<std::vector<void*>> groups;
  for_each_fanout(copies, [&](const PushCopy&, const std::vector<void*>& dsts) { groups.push_back(dsts); });
  ASSERT_EQ(groups.size(), 3u);
  size_t fan = 0;
  for (const auto& g : groups)
    if (g.size() == 2) {
      ++fan;
      EXPECT_TRUE((g[0] == &a && g[1] == &b) || (g[0] == &b && g[1] == &a));
    } else {
      EXPECT_EQ(g.size(), 1u);
    }
  EXPECT_EQ(fan, 1u);
}

}  // namespace
}  // namespace reshard
