// Block-FP8 dequantization kernels (see cuda_dequant.h). One thread per element in a grid-stride
// loop: the source side reads 1 byte and writes 2 per element, so these are bandwidth-bound and the
// per-element index arithmetic (64-bit divisions by the shard's dims) hides behind the memory traffic.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "reshard/core/error.h"
#include "reshard/core/fp8_block.h"
#include "reshard/exec/cuda_dequant.h"

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

__global__ void __launch_bounds__(kThreads)
dequant_kernel(const uint8_t* values, const float* scales, uint16_t* out, int64_t elements, int64_t rows,
               int64_t cols, int64_t r0, int64_t c0, int64_t grid_rows, int64_t grid_cols) {
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < elements; e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t j = e % cols, rest = e / cols, i = rest % rows, lead = rest / rows;
    const float s = scales[(lead * grid_rows + (r0 + i) / kFp8BlockEdge) * grid_cols + (c0 + j) / kFp8BlockEdge];
    out[e] = dequant_e4m3(values[e], s);
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

template <class Kernel>
unsigned grid_for(Kernel kernel, int64_t items) {
  int device = 0, sms = 0, per_sm = 0;
  RESHARD_CUDA_CHECK(cudaGetDevice(&device));
  RESHARD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  RESHARD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  const int64_t needed = (items + kThreads - 1) / kThreads, cap = int64_t{sms} * (per_sm > 0 ? per_sm : 1);
  return static_cast<unsigned>(needed < cap ? needed : cap);
}

}  // namespace

void cuda_dequant_block_fp8(const void* values, const void* scales, const Dims& extent, const Dims& global_offset,
                            void* out, void* stream) {
  const int n = extent.n;
  if (n < 2 || global_offset.n != n)
    throw runtime_error("cuda_dequant_block_fp8: extent " + extent.str() + " / offset " + global_offset.str() +
                        " must have the same rank, at least 2");
  const int64_t elements = extent.product();
  if (elements == 0) return;
  const Dims grid = fp8_block_cover(Box{global_offset, extent}).extent;
  const auto st = static_cast<cudaStream_t>(stream);
  dequant_kernel<<<grid_for(dequant_kernel, elements), kThreads, 0, st>>>(
      static_cast<const uint8_t*>(values), static_cast<const float*>(scales), static_cast<uint16_t*>(out), elements,
      extent[n - 2], extent[n - 1], global_offset[n - 2] % kFp8BlockEdge, global_offset[n - 1] % kFp8BlockEdge,
      grid[n - 2], grid[n - 1]);
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
  count_dequant_kernel<<<grid_for(count_dequant_kernel, elements), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint8_t*>(storage), shape_of(r.storage_shape), shape_of(r.storage_offset), shape_of(r.extent),
      shape_of(r.global_shape), shape_of(r.global_offset), elements, r.seed, r.scale_seed, device_counter);
  RESHARD_CUDA_CHECK_LAUNCH(count_dequant_kernel);
}

}  // namespace reshard
