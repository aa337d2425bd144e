#include "row_walk.h"

#include <string>

#include "reshard/core/error.h"

namespace reshard {
namespace {

void check_fits(const char* which, const Dims& extent, const Dims& shape, const Dims& offset) {
  bool ok = shape.n == extent.n && offset.n == extent.n;
  for (int i = 0; ok && i < extent.n; ++i)
    ok = extent[i] >= 0 && offset[i] >= 0 && offset[i] + extent[i] <= shape[i];
  if (!ok)
    throw runtime_error(std::string("row_walk: box extent ") + extent.str() + " at offset " + offset.str() +
                        " does not fit " + which + " shape " + shape.str());
}

}  // namespace

RowWalk row_walk(const Dims& extent, const Dims& shape_a, const Dims& offset_a, const Dims& shape_b,
                 const Dims& offset_b, int elem_size) {
  if (elem_size < 1) throw runtime_error("row_walk: elem_size " + std::to_string(elem_size) + " < 1");
  check_fits("tensor A", extent, shape_a, offset_a);
  check_fits("tensor B", extent, shape_b, offset_b);
  RowWalk w;
  if (extent.product() == 0) return w;
  w.base_a = linear_index(offset_a, shape_a) * elem_size;
  w.base_b = linear_index(offset_b, shape_b) * elem_size;

  // Innermost first: the row grows while a dim continues contiguously in both tensors; the rest
  // become outer dims, merged pairwise when the outer one steps exactly over the inner one.
  int64_t row_elems = 1;
  int64_t elem_stride_a = 1, elem_stride_b = 1;  // element strides of dim i
  bool in_row = true;
  int64_t ext[kMaxDims], sa[kMaxDims], sb[kMaxDims];  // outer dims, innermost first
  int n_outer = 0;
  for (int i = extent.n - 1; i >= 0; --i) {
    const int64_t e = extent[i];
    if (e != 1) {
      if (in_row && elem_stride_a == row_elems && elem_stride_b == row_elems) {
        row_elems *= e;
      } else {
        in_row = false;
        if (n_outer > 0 && sa[n_outer - 1] * ext[n_outer - 1] == elem_stride_a &&
            sb[n_outer - 1] * ext[n_outer - 1] == elem_stride_b) {
          ext[n_outer - 1] *= e;
        } else {
          ext[n_outer] = e;
          sa[n_outer] = elem_stride_a;
          sb[n_outer] = elem_stride_b;
          ++n_outer;
        }
      }
    }
    elem_stride_a *= shape_a[i];
    elem_stride_b *= shape_b[i];
  }
  // The innermost dim has stride 1 in both, so at most kMaxDims - 1 dims end up outer.
  w.row_bytes = row_elems * elem_size;
  w.outer_n = n_outer;
  for (int k = 0; k < n_outer; ++k) {
    const int i = n_outer - 1 - k;  // outermost first
    w.outer_extent[k] = ext[i];
    w.stride_a[k] = sa[i] * elem_size;
    w.stride_b[k] = sb[i] * elem_size;
  }
  return w;
}

}  // namespace reshard
