// MXFP8 quantize kernel. Thread t takes 8 consecutive BF16 values (one 16-byte
// load, coalesced across the warp); the 4 threads of a 32-element block
// exchange their finite amax with two shuffles, lane 0 of the four writes the
// E8M0 scale, and each thread writes its 8 e4m3 bytes (one 8-byte store).
// Element math: reshard/core/mxfp8.h, shared with the CPU reference.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "reshard/core/error.h"
#include "reshard/core/mxfp8.h"
#include "reshard/exec/cuda_quantize.h"

namespace reshard {
namespace {

constexpr int kBlock = 256;
constexpr int kPerThread =
    8; // BF16 values per thread: a quarter of an MX block

// Where the dense box's rows land: row r (over the outer dims of extent) starts
// at element base + sum(idx_i * stride_i) of the values tensor (scales: the
// same / 32).
struct BoxRows {
  int64_t k = 0;                 // row length (last dim), a multiple of 32
  int outer_n = 0;               // outer dims, outermost first
  int64_t extent[kMaxDims] = {}; // outer extents
  int64_t stride[kMaxDims] =
      {};             // outer strides in elements of the values tensor
  int64_t base = 0;   // element offset of the box origin in the values tensor
  bool dense = false; // the box is one contiguous run of the values tensor
};

__device__ __forceinline__ int64_t row_start(const BoxRows &b, int64_t row) {
  int64_t at = b.base;
  for (int i = b.outer_n - 1; i >= 0; --i) {
    const int64_t q = row / b.extent[i];
    at += (row - q * b.extent[i]) * b.stride[i];
    row = q;
  }
  return at;
}

__global__ void __launch_bounds__(kBlock)
    quantize_kernel(const uint4 *__restrict__ in, uint8_t *__restrict__ values,
                    uint8_t *__restrict__ scales, BoxRows box, int64_t groups) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kBlock;
  // Whole warps iterate together so the shuffles below always see all 32 lanes.
  const int64_t padded = (groups + 31) / 32 * 32;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * kBlock + threadIdx.x;
       g < padded; g += stride) {
    const bool live = g < groups;
    uint4 v = live ? __ldcs(in + g) : make_uint4(0, 0, 0, 0);
    uint16_t h[kPerThread];
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      h[2 * i] = static_cast<uint16_t>(words[i] & 0xFFFFu);
      h[2 * i + 1] = static_cast<uint16_t>(words[i] >> 16);
    }
    uint32_t amax = 0;
#pragma unroll
    for (int i = 0; i < kPerThread; ++i)
      amax = max(amax, static_cast<uint32_t>(bf16_finite_magnitude(h[i])));
    amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
    amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
    if (!live)
      continue;
    const uint8_t scale = e8m0_from_bf16_amax(static_cast<uint16_t>(amax));
    const int scale_exp = static_cast<int>(scale) - 127;
    uint32_t lo = 0, hi = 0;
#pragma unroll
    for (int i = 0; i < 4; ++i)
      lo |= static_cast<uint32_t>(e4m3_from_bf16_scaled(h[i], scale_exp))
            << (8 * i);
#pragma unroll
    for (int i = 0; i < 4; ++i)
      hi |= static_cast<uint32_t>(e4m3_from_bf16_scaled(h[4 + i], scale_exp))
            << (8 * i);
    const int64_t e = g * kPerThread; // element index in the dense box
    int64_t at = e;
    if (!box.dense) {
      const int64_t row = e / box.k;
      at = row_start(box, row) + (e - row * box.k);
    } else {
      at += box.base;
    }
    *reinterpret_cast<uint2 *>(values + at) = make_uint2(lo, hi);
    if ((g & 3) == 0)
      scales[at / kMxBlock] = scale;
  }
}

} // namespace

void cuda_quantize_mxfp8(const void *bf16, const Dims &extent, void *values,
                         void *scales, const Dims &shape, const Dims &offset,
                         void *stream) {
  const int n = extent.n;
  if (n == 0 || shape.n != n || offset.n != n ||
      extent[n - 1] % kMxBlock != 0 || offset[n - 1] % kMxBlock != 0 ||
      shape[n - 1] % kMxBlock != 0)
    throw runtime_error(
        "cuda_quantize_mxfp8: box offset " + offset.str() + " extent " +
        extent.str() + " of " + shape.str() +
        " does not span whole 32-element blocks of the last dim");
  for (int d = 0; d < n; ++d)
    if (offset[d] < 0 || offset[d] + extent[d] > shape[d])
      throw runtime_error("cuda_quantize_mxfp8: box offset " + offset.str() +
                          " extent " + extent.str() + " is outside " +
                          shape.str());
  const int64_t elements = extent.product();
  if (elements == 0)
    return;
  if (reinterpret_cast<uintptr_t>(bf16) % 16 != 0 ||
      reinterpret_cast<uintptr_t>(values) % 8 != 0)
    throw runtime_error("cuda_quantize_mxfp8: buffers must be 16-byte (BF16) "
                        "and 8-byte (values) aligned");
  BoxRows box;
  box.k = extent[n - 1];
  // Scale offsets are element offsets / 32 because every row starts on a block
  // (shape[-1] % 32 == 0).
  int64_t stride = shape[n - 1];
  box.base = offset[n - 1];
  for (int d = n - 2; d >= 0; --d) {
    box.base += offset[d] * stride;
    stride *= shape[d];
  }
  box.dense = is_contiguous(extent, shape);
  int outer = 0;
  for (int d = 0; d < n - 1; ++d) {
    int64_t s = 1;
    for (int j = d + 1; j < n; ++j)
      s *= shape[j];
    box.extent[outer] = extent[d];
    box.stride[outer] = s;
    ++outer;
  }
  box.outer_n = outer;
  const int64_t groups = elements / kPerThread;
  int device = 0, sms = 0;
  RESHARD_CUDA_CHECK(cudaGetDevice(&device));
  RESHARD_CUDA_CHECK(
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t needed = (groups + kBlock - 1) / kBlock,
                cap = int64_t{sms} * (2048 / kBlock);
  const auto grid = static_cast<unsigned>(needed < cap ? needed : cap);
  quantize_kernel<<<grid, kBlock, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const uint4 *>(bf16), static_cast<uint8_t *>(values),
      static_cast<uint8_t *>(scales), box, groups);
  RESHARD_CUDA_CHECK_LAUNCH(quantize_kernel);
}

} // namespace reshard
