// CudaBatchCopy (the cuda-ipc copy kernel) against the device's own ceilings, in one process on one GPU:
//   reshard_bench_batch_copy [--benchmark_out=F.json --benchmark_out_format=json] [--benchmark_filter=...]
// Every case reports `traffic` bytes per second: the device-memory bytes it must move (a copy of S
// bytes: S read + S written; a fan-out to k destinations: S read + k·S written; a memset of S: S
// written), so cases compare on one scale. Ceilings measured in the same run: cudaMemcpyAsync
// device-to-device, cudaMemsetAsync (writes only, what a fan-out's traffic mostly is), and a reference
// grid-stride fan-out kernel (fixed fan, no descriptors) with plain or streaming (st.global.cs) stores.
// Timing: CUDA events around each launch (manual time), after one warm-up launch.
#include <benchmark/benchmark.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_batch_copy.h"

namespace {

#define CHECK(call)                                                                          \
  do {                                                                                       \
    const cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "bench_batch_copy: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(3);                                                                          \
    }                                                                                        \
  } while (0)

constexpr int64_t kSource = int64_t{512} << 20;  // bytes one case reads
constexpr int kMaxDst = 8;

struct Buffers {
  void* src = nullptr;
  void* dst[kMaxDst] = {};
  Buffers() {
    CHECK(cudaMalloc(&src, kSource));
    CHECK(cudaMemset(src, 0x5a, kSource));
    for (void*& d : dst) CHECK(cudaMalloc(&d, kSource));
  }
};
Buffers& buffers() {
  static Buffers b;  // allocated once, for every case
  return b;
}

// Times `launch` (enqueues work on stream 0) with events; traffic = device bytes moved per launch.
template <class F>
void time_launches(benchmark::State& state, int64_t traffic, F&& launch) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  launch();  // warm-up
  CHECK(cudaDeviceSynchronize());
  for (auto _ : state) {
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    state.SetIterationTime(ms * 1e-3);
  }
  state.counters["traffic"] =
      benchmark::Counter(static_cast<double>(traffic), benchmark::Counter::kIsIterationInvariantRate);
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
}

void memcpy_ceiling(benchmark::State& state) {
  Buffers& m = buffers();
  time_launches(state, 2 * kSource,
                [&] { CHECK(cudaMemcpyAsync(m.dst[0], m.src, kSource, cudaMemcpyDeviceToDevice, 0)); });
}

void memset_ceiling(benchmark::State& state) {
  Buffers& m = buffers();
  const int k = static_cast<int>(state.range(0));
  time_launches(state, k * kSource, [&] {
    for (int f = 0; f < k; ++f) CHECK(cudaMemsetAsync(m.dst[f], f, kSource, 0));
  });
}

void memcpy_each(benchmark::State& state) {  // k plain copies: k reads + k writes
  Buffers& m = buffers();
  const int k = static_cast<int>(state.range(0));
  time_launches(state, 2 * k * kSource, [&] {
    for (int f = 0; f < k; ++f) CHECK(cudaMemcpyAsync(m.dst[f], m.src, kSource, cudaMemcpyDeviceToDevice, 0));
  });
}

// Reference fan-out: 16-byte vectors, grid-stride, U vectors in flight per thread.
template <int Fan, int U, bool Streaming>
__global__ void __launch_bounds__(256) ref_fanout(const uint4* __restrict__ src, uint4* const* dst, int64_t n) {
  uint4* out[Fan];
#pragma unroll
  for (int f = 0; f < Fan; ++f) out[f] = dst[f];
  const int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += stride * U) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * stride < n) v[u] = __ldcs(src + i + u * stride);
#pragma unroll
    for (int f = 0; f < Fan; ++f)
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i + u * stride < n) {
          if (Streaming) {
            __stcs(out[f] + i + u * stride, v[u]);
          } else {
            out[f][i + u * stride] = v[u];
          }
        }
  }
}

template <int Fan, int U, bool Streaming>
void reference_fanout(benchmark::State& state) {
  Buffers& m = buffers();
  uint4** dst = nullptr;
  CHECK(cudaMalloc(&dst, sizeof(uint4*) * Fan));
  CHECK(cudaMemcpy(dst, m.dst, sizeof(uint4*) * Fan, cudaMemcpyHostToDevice));
  int sms = 0, per_sm = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ref_fanout<Fan, U, Streaming>, 256, 0));
  time_launches(state, (1 + Fan) * kSource, [&] {
    ref_fanout<Fan, U, Streaming><<<sms * per_sm, 256>>>(static_cast<const uint4*>(m.src), dst, kSource / 16);
    CHECK(cudaGetLastError());
  });
  CHECK(cudaFree(dst));
}

// CudaBatchCopy: the source cut into `boxes` contiguous boxes (a misc bucket's params), each fanned out
// to k destinations at the same offsets.
void batch_fanout(benchmark::State& state) {
  Buffers& m = buffers();
  const int k = static_cast<int>(state.range(0));
  const int64_t boxes = state.range(1), elems = kSource / 2;
  reshard::CudaBatchCopy batch;
  const std::vector<void*> dsts(m.dst, m.dst + k);
  const reshard::Dims shape{elems};
  time_launches(state, (1 + k) * kSource, [&] {
    for (int64_t b = 0; b < boxes; ++b) {
      const int64_t at = elems / boxes * b, len = b + 1 == boxes ? elems - at : elems / boxes;
      batch.add_fanout(m.src, shape, reshard::Dims{at}, dsts, shape, reshard::Dims{at}, reshard::Dims{len}, 2);
    }
    batch.launch(nullptr);
  });
}

// CudaBatchCopy on a strided box: the column half of a row-major [rows, 2·cols] BF16 tensor into a dense
// [rows, cols] one (a row-parallel weight's TP slice: down_proj 2560 x 9728 → 4864-byte rows at TP 4).
void batch_strided(benchmark::State& state) {
  Buffers& m = buffers();
  const int k = static_cast<int>(state.range(0));
  const int64_t cols = state.range(1), rows = kSource / 2 / (2 * cols);
  reshard::CudaBatchCopy batch;
  const std::vector<void*> dsts(m.dst, m.dst + k);
  time_launches(state, (1 + k) * rows * cols * 2, [&] {
    batch.add_fanout(m.src, reshard::Dims{rows, 2 * cols}, reshard::Dims{0, cols}, dsts, reshard::Dims{rows, cols},
                     reshard::Dims{0, 0}, reshard::Dims{rows, cols}, 2);
    batch.launch(nullptr);
  });
}

// CudaBatchCopy on many small tensors, each its own cudaMalloc (as the executor allocates storages):
// range(0) copies of 32 KiB (the issue-4 stress config: 4096 params of 32 KiB per rank).
void batch_small_tensors(benchmark::State& state) {
  const int64_t n = state.range(0), bytes = 32 << 10;
  std::vector<void*> src(static_cast<size_t>(n)), dst(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    CHECK(cudaMalloc(&src[static_cast<size_t>(i)], bytes));
    CHECK(cudaMalloc(&dst[static_cast<size_t>(i)], bytes));
  }
  reshard::CudaBatchCopy batch;
  const reshard::Dims shape{bytes / 2};
  time_launches(state, 2 * n * bytes, [&] {
    for (int64_t i = 0; i < n; ++i)
      batch.add(src[static_cast<size_t>(i)], shape, reshard::Dims{0}, dst[static_cast<size_t>(i)], shape,
                reshard::Dims{0}, shape, 2);
    batch.launch(nullptr);
  });
  state.counters["s_per_copy"] = benchmark::Counter(
      static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  for (int64_t i = 0; i < n; ++i) {
    CHECK(cudaFree(src[static_cast<size_t>(i)]));
    CHECK(cudaFree(dst[static_cast<size_t>(i)]));
  }
}

}  // namespace

BENCHMARK(memcpy_ceiling)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(memset_ceiling)->Arg(1)->Arg(4)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(memcpy_each)->Arg(4)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(reference_fanout<1, 4, false>)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(reference_fanout<4, 4, false>)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(reference_fanout<4, 4, true>)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(reference_fanout<4, 2, true>)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(reference_fanout<4, 8, true>)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(reference_fanout<8, 4, true>)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(batch_fanout)
    ->ArgsProduct({{1, 2, 4, 8}, {1, 128, 16384}})
    ->ArgNames({"fan", "boxes"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(batch_strided)
    ->ArgsProduct({{1, 4}, {2432, 64}})
    ->ArgNames({"fan", "cols"})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

BENCHMARK(batch_small_tensors)->Arg(64)->Arg(4096)->UseManualTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
