// A box walked as rows of bytes contiguous in two tensors at once (private to lib/exec).
// The same box of `extent` sits at offset_a in a row-major tensor A and at offset_b in tensor B
// (storage and global tensor for fill/check; tensor and dense buffer for pack/unpack). Dims of
// extent 1 are folded into the bases and dims contiguous in both tensors are merged, so a box of
// rank <= 4 becomes rows of `row_bytes` indexed by at most 3 outer dims. Plain C++ (no CUDA) so
// kernels take it by value.
#pragma once
#include <cstdint>

#include "reshard/core/box.h"

namespace reshard {

struct RowWalk {
  static constexpr int kMaxOuter = kMaxDims - 1;
  int64_t row_bytes = 0;  // 0 when the box is empty
  int outer_n = 0;        // outer dims, outermost first
  int64_t outer_extent[kMaxOuter] = {};
  int64_t stride_a[kMaxOuter] = {};  // bytes between consecutive indices of each outer dim in A
  int64_t stride_b[kMaxOuter] = {};
  int64_t base_a = 0;  // byte offset of the first row in A
  int64_t base_b = 0;

  int64_t rows() const {
    if (row_bytes == 0) return 0;
    int64_t n = 1;
    for (int i = 0; i < outer_n; ++i) n *= outer_extent[i];
    return n;
  }
};

// Throws Error(Runtime) naming the values when ranks differ, elem_size < 1, or the box does not fit
// inside either tensor (these are executor bugs, not user input).
RowWalk row_walk(const Dims& extent, const Dims& shape_a, const Dims& offset_a, const Dims& shape_b,
                 const Dims& offset_b, int elem_size);

}  // namespace reshard
