// Block-FP8 dequantization kernels (see cuda_dequant.h). Dequantization walks the box row by row
// (index arithmetic once per row, not per element) with 8 elements per thread where alignment
// allows: it reads 1 byte and writes 2 per element and should run at memory bandwidth. The check
// kernel (not timed) takes one element per thread.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "cuda_grid.h"
#include "reshard/core/error.h"
#include "reshard/core/fp8_block.h"
#include "cuda_dequant.h"

namespace reshard {
namespace {

constexpr int kThreads = 256;

struct Shape {  // a device copy of Dims
  int n = 0;
  int64_t d[kMaxDims] = {};
};

Shape shape_of(const Dims& x) {
  Shape s;
  s.n = x.n;
  for (int i = 0; i < x.n; ++i) s.d[i] = x[i];
  return s;
}

// A box of a shard as rows: row r of the box (index over its first n-1 dims) starts at element
// `row_start(r)` of the shard, and its scales at `scale_row(r)` of the shard's block cover.
struct DequantRows {
  int lead_n = 0;                  // box dims before the last
  int64_t box_extent[kMaxDims] = {};
  int64_t box_offset[kMaxDims] = {};
  int64_t shard_extent[kMaxDims] = {};
  int64_t rows = 0, cols = 0;      // rows of the box, elements per row
  int64_t r0 = 0, c0 = 0;          // the shard's origin within its first block (last two dims)
  int64_t grid_rows = 0, grid_cols = 0;

  __device__ void locate(int64_t r, int64_t& start, int64_t& scale_row) const {
    int64_t at[kMaxDims];
    for (int d = lead_n - 1; d >= 0; --d) {
      at[d] = box_offset[d] + r % box_extent[d];
      r /= box_extent[d];
    }
    int64_t row = 0, lead = 0;
    for (int d = 0; d < lead_n; ++d) row = row * shard_extent[d] + at[d];
    for (int d = 0; d + 1 < lead_n; ++d) lead = lead * shard_extent[d] + at[d];
    start = row * shard_extent[lead_n] + box_offset[lead_n];
    scale_row = (lead * grid_rows + (r0 + at[lead_n - 1]) / kFp8BlockEdge) * grid_cols;
  }
};

// One row per block iteration, threads across the row. Vector path: 8 elements per thread (an
// 8-byte load, a 16-byte store), all in one 128-wide block since groups start on multiples of 8.
template <bool kVector>
__global__ void __launch_bounds__(kThreads)
dequant_kernel(const uint8_t* values, const float* scales, uint16_t* out, DequantRows b) {
  const int64_t col0 = b.c0 + b.box_offset[b.lead_n];  // the row's first column, relative to its first block
  for (int64_t r = blockIdx.x; r < b.rows; r += gridDim.x) {
    int64_t start = 0, scale_row = 0;
    b.locate(r, start, scale_row);
    const float* s = scales + scale_row;
    if (kVector) {
      for (int64_t j = 8 * int64_t{threadIdx.x}; j < b.cols; j += 8 * int64_t{blockDim.x}) {
        const uint2 in = *reinterpret_cast<const uint2*>(values + start + j);
        const float scale = s[(col0 + j) / kFp8BlockEdge];
        const uint32_t w[2] = {in.x, in.y};
        uint32_t o[4];
        for (int k = 0; k < 4; ++k) {
          const uint32_t lo = dequant_e4m3(static_cast<uint8_t>(w[k / 2] >> (16 * (k % 2))), scale);
          const uint32_t hi = dequant_e4m3(static_cast<uint8_t>(w[k / 2] >> (16 * (k % 2) + 8)), scale);
          o[k] = lo | (hi << 16);
        }
        *reinterpret_cast<uint4*>(out + start + j) = make_uint4(o[0], o[1], o[2], o[3]);
      }
    } else {
      for (int64_t j = threadIdx.x; j < b.cols; j += blockDim.x)
        out[start + j] = dequant_e4m3(values[start + j], s[(col0 + j) / kFp8BlockEdge]);
    }
  }
}

__global__ void __launch_bounds__(kThreads)
count_dequant_kernel(const uint8_t* storage, Shape storage_shape, Shape storage_offset, Shape extent,
                     Shape global_shape, Shape global_offset, int64_t elements, uint64_t seed, uint64_t scale_seed,
                     unsigned long long* counter) {
  const int n = extent.n;
  unsigned long long wrong = 0;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < elements; e += int64_t{gridDim.x} * blockDim.x) {
    int64_t rest = e, at_storage = 0, at_global = 0, stride_s = 1, stride_g = 1;
    for (int d = n - 1; d >= 0; --d) {
      const int64_t k = rest % extent.d[d];
      rest /= extent.d[d];
      at_storage += (storage_offset.d[d] + k) * stride_s;
      at_global += (global_offset.d[d] + k) * stride_g;
      stride_s *= storage_shape.d[d];
      stride_g *= global_shape.d[d];
    }
    const uint16_t want = dequant_pattern(seed, scale_seed, static_cast<uint64_t>(at_global),
                                          static_cast<uint64_t>(global_shape.d[n - 2]),
                                          static_cast<uint64_t>(global_shape.d[n - 1]));
    const uint8_t* got = storage + 2 * at_storage;
    wrong += (got[0] != static_cast<uint8_t>(want)) + (got[1] != static_cast<uint8_t>(want >> 8));
  }
  for (int off = 16; off > 0; off /= 2) wrong += __shfl_down_sync(0xffffffffu, wrong, off);
  if ((threadIdx.x & 31) == 0 && wrong != 0) atomicAdd(counter, wrong);
}


}  // namespace

void cuda_dequant_block_fp8(const void* values, const void* scales, const Box& shard, const Box& box, void* out,
                            void* stream) {
  const int n = shard.extent.n;
  if (n < 2 || box.offset.n != n || box.extent.n != n || !contains(Box{Dims::zeros(n), shard.extent}, box))
    throw runtime_error("cuda_dequant_block_fp8: box " + box.str() + " is not inside a shard of " +
                        shard.extent.str() + " of rank >= 2");
  if (box.extent.product() == 0) return;
  DequantRows b;
  b.lead_n = n - 1;
  for (int d = 0; d < n; ++d) {
    b.box_extent[d] = box.extent[d];
    b.box_offset[d] = box.offset[d];
    b.shard_extent[d] = shard.extent[d];
  }
  b.cols = box.extent[n - 1];
  b.rows = box.extent.product() / b.cols;
  b.r0 = shard.offset[n - 2] % kFp8BlockEdge;
  b.c0 = shard.offset[n - 1] % kFp8BlockEdge;
  const Dims grid = fp8_block_cover(shard).extent;
  b.grid_rows = grid[n - 2];
  b.grid_cols = grid[n - 1];
  const auto* v = static_cast<const uint8_t*>(values);
  auto* o = static_cast<uint16_t*>(out);
  // Vector groups of 8 stay in one row, one scale block, and aligned: every row start and the
  // row's global first column must be multiples of 8 (as the base pointers' alignment).
  const bool vector = b.cols % 8 == 0 && shard.extent[n - 1] % 8 == 0 && box.offset[n - 1] % 8 == 0 &&
                      (b.c0 + box.offset[n - 1]) % 8 == 0 && reinterpret_cast<uintptr_t>(v) % 8 == 0 &&
                      reinterpret_cast<uintptr_t>(o) % 16 == 0;
  const auto st = static_cast<cudaStream_t>(stream);
  const auto* sc = static_cast<const float*>(scales);
  auto* kernel = vector ? dequant_kernel<true> : dequant_kernel<false>;
  kernel<<<grid_for(kernel, b.rows * kThreads, kThreads), kThreads, 0, st>>>(v, sc, o, b);
  RESHARD_CUDA_CHECK_LAUNCH(dequant_kernel);
}

void cuda_count_wrong_dequant(const void* storage, const RegionSpec& r, unsigned long long* device_counter,
                              void* stream) {
  const int n = r.extent.n;
  if (!r.dequant || r.elem_size != 2 || n < 2 || r.global_shape.n != n || r.storage_shape.n != n)
    throw runtime_error("cuda_count_wrong_dequant: needs a BF16 dequant region of rank >= 2, got extent " +
                        r.extent.str() + " of " + r.global_shape.str());
  const int64_t elements = r.extent.product();
  if (elements == 0) return;
  const auto st = static_cast<cudaStream_t>(stream);
  count_dequant_kernel<<<grid_for(count_dequant_kernel, elements, kThreads), kThreads, 0, st>>>(
      static_cast<const uint8_t*>(storage), shape_of(r.storage_shape), shape_of(r.storage_offset), shape_of(r.extent),
      shape_of(r.global_shape), shape_of(r.global_offset), elements, r.seed, r.scale_seed, device_counter);
  RESHARD_CUDA_CHECK_LAUNCH(count_dequant_kernel);
}

}  // namespace reshard
