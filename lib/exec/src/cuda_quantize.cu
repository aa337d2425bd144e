// MXFP8 quantize kernels. Vector path: thread t takes 8 consecutive BF16 values (one 16-byte load,
// coalesced across the warp; two groups per thread in flight); the 4 threads of a 32-element block
// exchange their finite amax with two shuffles, and each writes its 8 e4m3 bytes (one 8-byte store);
// the first of the four writes the E8M0 scale. Scalar path (buffers not 16/8-byte aligned): one
// thread per block through the reference code of reshard/core/mxfp8.h.
//
// Why the fast element code is exact (docs/precision.md defines the rounding): X = 2^(E8M0 - 127)
// with E8M0 <= 246 for BF16 input, so 1/X is a normal float and v * (1/X) is exact whenever the
// result is at least 2^-126 (v has 8 significant bits); smaller results are below 2^-10, half the
// smallest e4m3 subnormal, so they round to a signed zero either way. |v / X| < 512 by the choice of
// X, so saturation only meets [448, 512). Blocks with NaN/Inf go through the reference code, so the
// fast conversions only see finite values. tests/gpu/test_cuda_quantize.cpp checks every BF16 value
// at every reachable scale against the CPU reference for each conversion.
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "cuda_grid.h"
#include "reshard/core/error.h"
#include "reshard/core/mxfp8.h"
#include "cuda_quantize.h"

namespace reshard {
namespace {

constexpr int kThreads = 256;
constexpr int kPerThread = 8;  // BF16 values per thread: a quarter of an MX block
constexpr int kUnroll = 2;     // groups per thread whose loads are in flight together

// n / d and n % d for n, d < 2^31 by a multiply-high (Granlund-Montgomery), d fixed per launch.
struct FastDiv {
  uint32_t d = 1, mul = 1, shift = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t divisor) : d(divisor) {
    while ((uint64_t{1} << shift) < divisor) ++shift;
    mul = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - divisor)) / divisor + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, mul) + n) >> shift; }
};

// Where the dense box's elements land. The box is cut into runs: the longest contiguous pieces of
// the values tensor (trailing dims that span the whole storage are merged into one run). Run r of
// the outer dims starts at element base + sum(idx_i * stride_i); scales sit at the same / 32 (every
// run starts on a 32-block because shape[-1] % 32 == 0).
struct BoxRuns {
  int64_t run = 0;                 // elements per run, a multiple of 32
  int outer_n = 0;                 // outer dims, outermost first
  int64_t extent[kMaxDims] = {};   // outer extents
  int64_t stride[kMaxDims] = {};   // outer strides in elements of the values tensor
  int64_t base = 0;                // element offset of the box origin in the values tensor
  bool dense = false;              // one run: the whole box is contiguous
  bool small = false;              // every index below fits the 32-bit fast division
  FastDiv run_groups;              // run / kPerThread
  FastDiv outer_div[kMaxDims];     // outer extents
};

// Element offset in the values tensor of element `e` of the dense box (any run layout).
__device__ __forceinline__ int64_t box_offset_slow(const BoxRuns& b, int64_t e) {
  int64_t r = e / b.run, at = b.base + (e - r * b.run);
  for (int i = b.outer_n - 1; i >= 0; --i) {
    const int64_t q = r / b.extent[i];
    at += (r - q * b.extent[i]) * b.stride[i];
    r = q;
  }
  return at;
}

// The same for the first element of group g (kPerThread elements), with the fast divisions.
__device__ __forceinline__ int64_t group_offset(const BoxRuns& b, int64_t g) {
  if (b.dense) return b.base + g * kPerThread;
  if (!b.small) return box_offset_slow(b, g * kPerThread);
  const uint32_t g32 = static_cast<uint32_t>(g);
  uint32_t r = b.run_groups.div(g32);
  int64_t at = b.base + int64_t{g32 - r * b.run_groups.d} * kPerThread;
  for (int i = b.outer_n - 1; i > 0; --i) {
    const uint32_t q = b.outer_div[i].div(r);
    at += int64_t{r - q * b.outer_div[i].d} * b.stride[i];
    r = q;
  }
  return b.outer_n > 0 ? at + int64_t{r} * b.stride[0] : at;
}

// Two scaled finite floats to e4m3 bytes (lo in bits 0-7, hi in 8-15), as mxfp8.h rounds them.
template <Mxfp8Convert kConvert>
__device__ __forceinline__ uint32_t e4m3x2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  if constexpr (kConvert == Mxfp8Convert::kHardware)
    return __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
#endif
  uint32_t out = 0;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
    const uint32_t ux = __float_as_uint(i == 0 ? lo : hi), ua = ux & 0x7FFFFFFFu;
    // Normal e4m3 (|x| >= 2^-6): round the float mantissa to 3 bits, ties to even, and rebias the
    // exponent (127 -> 7); a carry moves into the exponent, 480 and up come out above 0x7E.
    const uint32_t normal = (ua + (0x7FFFFu - (120u << 23)) + ((ua >> 20) & 1u)) >> 20;
    // Subnormal e4m3: adding 2^14 (whose float ulp is 2^-9) rounds |x| to a multiple of 2^-9 (RNE),
    // left in the low mantissa bits; 8 * 2^-9 = 2^-6 gives 0x08, the smallest normal, as it should.
    const uint32_t sub = __float_as_uint(__fadd_rn(__uint_as_float(ua), 16384.0f)) - 0x46800000u;
    const uint32_t mag = min(ua < 0x3C800000u ? sub : normal, uint32_t{kE4m3Max});
    out |= (mag | ((ux >> 24) & 0x80u)) << (8 * i);
  }
  return out;
}

// One group: 8 BF16 values in `v`, the group's place `at` in the values tensor.
template <Mxfp8Convert kConvert>
__device__ __forceinline__ void quantize_group(const uint4& v, bool live, int64_t g, int64_t at,
                                               uint8_t* __restrict__ values,
                                               uint8_t* __restrict__ scales) {
  const uint32_t w[4] = {v.x, v.y, v.z, v.w};
  // Finite magnitudes, two per word: a 15-bit magnitude is NaN/Inf iff adding 0x80 sets bit 15.
  uint32_t amax2 = 0, special = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t m = w[i] & 0x7FFF7FFFu, nf = (m + 0x00800080u) & 0x80008000u;
    amax2 = __vmaxu2(amax2, m & ~(nf - (nf >> 15)));
    special |= nf;
  }
  uint32_t amax = max(amax2 & 0xFFFFu, amax2 >> 16);
  amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  amax = max(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  if (!live) return;
  const uint8_t scale = e8m0_from_bf16_amax(static_cast<uint16_t>(amax));
  uint32_t out[2];
  if (special != 0) {  // rare: NaN/Inf take the reference code
    const int scale_exp = static_cast<int>(scale) - 127;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      out[i] = 0;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        const uint32_t word = w[2 * i + j / 2];
        const uint16_t h = static_cast<uint16_t>(j % 2 == 0 ? word & 0xFFFFu : word >> 16);
        out[i] |= static_cast<uint32_t>(e4m3_from_bf16_scaled(h, scale_exp)) << (8 * j);
      }
    }
  } else {
    const float inv_x = __uint_as_float(static_cast<uint32_t>(254 - scale) << 23);  // 2^(127 - E8M0)
    uint32_t pair[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      pair[i] = e4m3x2<kConvert>(__fmul_rn(__uint_as_float(w[i] << 16), inv_x),
                                 __fmul_rn(__uint_as_float(w[i] & 0xFFFF0000u), inv_x));
    out[0] = pair[0] | (pair[1] << 16);
    out[1] = pair[2] | (pair[3] << 16);
  }
  __stcs(reinterpret_cast<uint2*>(values + at), make_uint2(out[0], out[1]));
  if ((g & 3) == 0) scales[at >> 5] = scale;
}

template <Mxfp8Convert kConvert>
__global__ void __launch_bounds__(kThreads)
    quantize_vector_kernel(const uint4* __restrict__ in, uint8_t* __restrict__ values,
                           uint8_t* __restrict__ scales, const __grid_constant__ BoxRuns box,
                           int64_t groups) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  // Whole warps iterate together so the shuffles always see all 32 lanes (stride is a multiple of
  // 32, so the lanes of a warp agree on the trip count).
  const int64_t padded = (groups + 31) / 32 * 32;
  for (int64_t g0 = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; g0 < padded;
       g0 += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t g = g0 + u * stride;
      v[u] = g < groups ? __ldcs(in + g) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t g = g0 + u * stride;
      if (g >= padded) break;  // warp-uniform, as above
      const bool live = g < groups;
      quantize_group<kConvert>(v[u], live, g, live ? group_offset(box, g) : 0, values, scales);
    }
  }
}

// Any alignment: one thread per 32-element block, 2-byte loads, the reference code.
__global__ void __launch_bounds__(kThreads)
    quantize_scalar_kernel(const uint16_t* __restrict__ in, uint8_t* __restrict__ values,
                           uint8_t* __restrict__ scales, const __grid_constant__ BoxRuns box,
                           int64_t blocks) {
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; b < blocks;
       b += static_cast<int64_t>(gridDim.x) * kThreads) {
    uint16_t h[kMxBlock];
#pragma unroll
    for (int i = 0; i < kMxBlock; ++i) h[i] = in[b * kMxBlock + i];
    const int64_t at = box_offset_slow(box, b * kMxBlock);
    scales[at / kMxBlock] = mxfp8_quantize_block(h, kMxBlock, values + at);
  }
}

BoxRuns box_runs(const Dims& extent, const Dims& shape, const Dims& offset, int64_t groups) {
  const int n = extent.n;
  BoxRuns box;
  int64_t stride = 1;
  for (int d = n - 1; d >= 0; --d) {
    box.base += offset[d] * stride;
    stride *= shape[d];
  }
  // Merge trailing dims while the inner one spans its whole storage dim.
  int d = n - 1;
  box.run = extent[d];
  while (d > 0 && extent[d] == shape[d]) {
    --d;
    box.run *= extent[d];
  }
  box.dense = d == 0 || box.run == extent.product();
  for (int i = 0; i < d; ++i) {
    int64_t s = 1;
    for (int j = i + 1; j < n; ++j) s *= shape[j];
    box.extent[box.outer_n] = extent[i];
    box.stride[box.outer_n] = s;
    ++box.outer_n;
  }
  box.small = groups < (int64_t{1} << 31);
  if (box.small && !box.dense) {
    box.run_groups = FastDiv(static_cast<uint32_t>(box.run / kPerThread));
    for (int i = 0; i < box.outer_n; ++i) box.outer_div[i] = FastDiv(static_cast<uint32_t>(box.extent[i]));
  }
  return box;
}


}  // namespace

void cuda_quantize_mxfp8(const void* bf16, const Dims& extent, void* values, void* scales,
                         const Dims& shape, const Dims& offset, void* stream, Mxfp8Convert convert) {
  const int n = extent.n;
  if (n == 0 || shape.n != n || offset.n != n || extent[n - 1] % kMxBlock != 0 ||
      offset[n - 1] % kMxBlock != 0 || shape[n - 1] % kMxBlock != 0)
    throw runtime_error("cuda_quantize_mxfp8: box offset " + offset.str() + " extent " + extent.str() +
                        " of " + shape.str() + " does not span whole 32-element blocks of the last dim");
  for (int d = 0; d < n; ++d)
    if (offset[d] < 0 || offset[d] + extent[d] > shape[d])
      throw runtime_error("cuda_quantize_mxfp8: box offset " + offset.str() + " extent " + extent.str() +
                          " is outside " + shape.str());
  const int64_t elements = extent.product();
  if (elements == 0) return;
  if (reinterpret_cast<uintptr_t>(bf16) % 2 != 0)
    throw runtime_error("cuda_quantize_mxfp8: the BF16 buffer must be 2-byte aligned");
  auto* v = static_cast<uint8_t*>(values);
  auto* s = static_cast<uint8_t*>(scales);
  const auto st = static_cast<cudaStream_t>(stream);
  const int64_t groups = elements / kPerThread;
  const BoxRuns box = box_runs(extent, shape, offset, groups);
  if (reinterpret_cast<uintptr_t>(bf16) % 16 != 0 || reinterpret_cast<uintptr_t>(values) % 8 != 0) {
    const int64_t blocks = elements / kMxBlock;
    quantize_scalar_kernel<<<grid_for(quantize_scalar_kernel, blocks, kThreads), kThreads, 0, st>>>(
        static_cast<const uint16_t*>(bf16), v, s, box, blocks);
    RESHARD_CUDA_CHECK_LAUNCH(quantize_scalar_kernel);
    return;
  }
  const auto* in = static_cast<const uint4*>(bf16);
  if (convert == Mxfp8Convert::kHardware) {
    auto* kernel = quantize_vector_kernel<Mxfp8Convert::kHardware>;
    kernel<<<grid_for(kernel, groups, kThreads), kThreads, 0, st>>>(in, v, s, box, groups);
  } else {
    auto* kernel = quantize_vector_kernel<Mxfp8Convert::kInteger>;
    kernel<<<grid_for(kernel, groups, kThreads), kThreads, 0, st>>>(in, v, s, box, groups);
  }
  RESHARD_CUDA_CHECK_LAUNCH(quantize_vector_kernel);
}

}  // namespace reshard
