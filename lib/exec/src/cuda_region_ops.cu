// CUDA kernels for region_ops: pattern fill, wrong-byte count, strided box copy (pack/unpack).
// Every operation walks its box as rows contiguous in both tensors (row_walk.h). Work is split into
// tasks: a task is `lanes` threads (a power of two) covering per_lane consecutive groups of
// `lanes` vectors in one row, so a warp's accesses are coalesced whether rows are long (one row,
// many tasks) or short (many rows per warp). Grid-stride loops over tasks; one resident wave.
// Fill/check are bound by the pattern's integer math (two splitmix rounds per 8 bytes), not memory.
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"
#include "reshard/core/error.h"
#include "reshard/core/pattern.h"
#include "cuda_region_ops.h"
#include "row_walk.h"

namespace reshard {
namespace {

constexpr int kBlock = 256;
constexpr int kPerLane = 4;  // vectors per thread per task on long rows: more bytes in flight
constexpr int kChunk = 16;   // bytes per fill/check vector

struct Tiling {
  int lanes_log2 = 0;
  int per_lane = kPerLane;      // vectors per thread per task
  int64_t vectors_per_row = 0;  // an upper bound for fill/check (depends on the row's alignment)
  int64_t tasks_per_row = 0;
  int64_t tasks = 0;
};

// Tasks of lanes * kPerLane vectors, up to a block's worth of lanes per row. With `coalesce_short`,
// rows one warp covers get one vector per lane, so a warp moves several whole rows at once: that
// pays for copies (memory bound) but not for fill/check (bound by the pattern math, where the
// per-task row lookup is better spread over kPerLane vectors; measured on H200).
Tiling make_tiling(int64_t rows, int64_t vectors_per_row, bool coalesce_short) {
  Tiling t;
  t.vectors_per_row = vectors_per_row;
  if (coalesce_short && vectors_per_row <= 32) t.per_lane = 1;
  const int64_t lanes_wanted = (vectors_per_row + t.per_lane - 1) / t.per_lane;
  while ((1 << t.lanes_log2) < kBlock && (int64_t{1} << t.lanes_log2) < lanes_wanted) ++t.lanes_log2;
  const int64_t per_task = (int64_t{1} << t.lanes_log2) * t.per_lane;
  t.tasks_per_row = (vectors_per_row + per_task - 1) / per_task;
  t.tasks = rows * t.tasks_per_row;
  return t;
}

int resident_blocks() {
  int device = 0, sms = 0;
  RESHARD_CUDA_CHECK(cudaGetDevice(&device));
  RESHARD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms * (2048 / kBlock);
}

unsigned grid_for(const Tiling& t) {
  const int64_t tasks_per_block = kBlock >> t.lanes_log2;
  const int64_t needed = (t.tasks + tasks_per_block - 1) / tasks_per_block;
  const int64_t cap = resident_blocks();
  return static_cast<unsigned>(needed < cap ? needed : cap);
}

// Tasks index with 32-bit arithmetic (cheaper divisions) unless there are too many.
bool small_index(const Tiling& t, unsigned grid) {
  return t.tasks + int64_t{grid} * kBlock < (int64_t{1} << 32);
}

// Byte offsets of row `row` in tensors A and B.
template <typename I>
__device__ __forceinline__ void locate_row(const RowWalk& w, I row, int64_t& a, int64_t& b) {
  a = w.base_a;
  b = w.base_b;
#pragma unroll
  for (int i = RowWalk::kMaxOuter - 1; i >= 0; --i) {
    if (i < w.outer_n) {
      const I e = static_cast<I>(w.outer_extent[i]);
      const I q = row / e;
      const int64_t idx = static_cast<int64_t>(row - q * e);
      row = q;
      a += idx * w.stride_a[i];
      b += idx * w.stride_b[i];
    }
  }
}

// Calls run(row_a, row_b, first, stride) for each task of this thread: its vectors in the row are
// first + k * stride for k < t.per_lane (callers bound them by the row's length).
template <typename I, typename Run>
__device__ __forceinline__ void for_each_task(const RowWalk& w, const Tiling& t, Run run) {
  const I lanes = I{1} << t.lanes_log2;
  const I lane = threadIdx.x & (lanes - 1);
  const I tasks_per_block = kBlock >> t.lanes_log2;
  const I tasks = static_cast<I>(t.tasks), tasks_per_row = static_cast<I>(t.tasks_per_row);
  for (I task = static_cast<I>(blockIdx.x) * tasks_per_block + (threadIdx.x >> t.lanes_log2); task < tasks;
       task += static_cast<I>(gridDim.x) * tasks_per_block) {
    I row = task, seg = 0;
    if (tasks_per_row != 1) {
      row = task / tasks_per_row;
      seg = task - row * tasks_per_row;
    }
    int64_t a, b;
    locate_row<I>(w, row, a, b);
    run(a, b, static_cast<int64_t>(seg) * lanes * t.per_lane + lane, static_cast<int>(lanes));
  }
}

// The 16 pattern bytes at global byte offsets [g, g + 16); g may be negative (a head chunk that
// starts before its row), those bytes are never used.
__device__ __forceinline__ void expected16(uint64_t seed, int64_t g, uint64_t& e0, uint64_t& e1) {
  const int64_t word = g >> 3;  // floor
  const int shift = static_cast<int>(g & 7) * 8;
  const uint64_t p0 = pattern_word(seed, static_cast<uint64_t>(word));
  const uint64_t p1 = pattern_word(seed, static_cast<uint64_t>(word + 1));
  if (shift == 0) {
    e0 = p0;
    e1 = p1;
    return;
  }
  const uint64_t p2 = pattern_word(seed, static_cast<uint64_t>(word + 2));
  e0 = (p0 >> shift) | (p1 << (64 - shift));
  e1 = (p1 >> shift) | (p2 << (64 - shift));
}

__device__ __forceinline__ uint8_t byte_of(uint64_t e0, uint64_t e1, int j) {
  return static_cast<uint8_t>((j < 8 ? e0 : e1) >> (8 * (j & 7)));
}

__device__ __forceinline__ unsigned nonzero_bytes(uint64_t x) {
  x |= x >> 4;
  x |= x >> 2;
  x |= x >> 1;
  return __popcll(x & 0x0101010101010101ull);
}

// Fill/check see a row as the 16-byte aligned chunks that overlap it: chunk c of a row starting at
// `begin` covers [addr, addr + 16), of which bytes [lo, hi) are in the row (none when lo >= hi);
// g is the global byte index of addr.
struct Chunk {
  uintptr_t addr;
  int64_t g;
  int lo, hi;
  __device__ __forceinline__ Chunk(uintptr_t storage, int64_t row_bytes, int64_t a, int64_t b, int64_t c) {
    const uintptr_t begin = storage + static_cast<uintptr_t>(a),
                    end = begin + static_cast<uintptr_t>(row_bytes);
    addr = (begin & ~uintptr_t{kChunk - 1}) + static_cast<uintptr_t>(c) * kChunk;
    g = b + static_cast<int64_t>(addr - begin);
    lo = addr < begin ? static_cast<int>(begin - addr) : 0;
    hi = addr >= end ? 0 : (addr + kChunk > end ? static_cast<int>(end - addr) : kChunk);
  }
  __device__ __forceinline__ bool full() const { return lo == 0 && hi == kChunk; }
};

template <typename I>
__global__ void __launch_bounds__(kBlock)
    fill_kernel(uintptr_t storage, RowWalk w, Tiling t, uint64_t seed, bool fp8) {
  for_each_task<I>(w, t, [&](int64_t a, int64_t b, int64_t first, int stride) {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      if (k >= t.per_lane) break;
      const Chunk ch(storage, w.row_bytes, a, b, first + k * stride);
      if (ch.lo >= ch.hi) break;  // past the row's end; later k are further
      uint64_t e0, e1;
      expected16(seed, ch.g, e0, e1);
      if (fp8) {  // float8_e4m3fn params: no NaN bytes (pattern.h)
        e0 = fp8_valid_word(e0);
        e1 = fp8_valid_word(e1);
      }
      if (ch.full()) {
        *reinterpret_cast<ulonglong2*>(ch.addr) = make_ulonglong2(e0, e1);
      } else {
        for (int j = ch.lo; j < ch.hi; ++j) reinterpret_cast<uint8_t*>(ch.addr)[j] = byte_of(e0, e1, j);
      }
    }
  });
}

__device__ __forceinline__ void warp_add_to(unsigned long long* counter, unsigned long long n) {
  for (int offset = 16; offset > 0; offset /= 2) n += __shfl_down_sync(0xffffffffu, n, offset);
  if ((threadIdx.x & 31) == 0 && n != 0) atomicAdd(counter, n);
}

template <typename I>
__global__ void __launch_bounds__(kBlock)
    count_kernel(uintptr_t storage, RowWalk w, Tiling t, uint64_t seed, bool fp8, unsigned long long* counter) {
  unsigned long long wrong = 0;
  for_each_task<I>(w, t, [&](int64_t a, int64_t b, int64_t first, int stride) {
    // All loads of the task first, so they are in flight together, then the pattern math.
    ulonglong2 v[kPerLane];
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const Chunk ch(storage, w.row_bytes, a, b, first + k * stride);
      if (k < t.per_lane && ch.full()) v[k] = __ldcs(reinterpret_cast<const ulonglong2*>(ch.addr));
    }
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      if (k >= t.per_lane) break;
      const Chunk ch(storage, w.row_bytes, a, b, first + k * stride);
      if (ch.lo >= ch.hi) break;
      uint64_t e0, e1;
      expected16(seed, ch.g, e0, e1);
      if (fp8) {  // float8_e4m3fn params: no NaN bytes (pattern.h)
        e0 = fp8_valid_word(e0);
        e1 = fp8_valid_word(e1);
      }
      if (ch.full()) {
        wrong += nonzero_bytes(v[k].x ^ e0) + nonzero_bytes(v[k].y ^ e1);
      } else {
        for (int j = ch.lo; j < ch.hi; ++j)
          wrong += reinterpret_cast<const uint8_t*>(ch.addr)[j] != byte_of(e0, e1, j);
      }
    }
  });
  warp_add_to(counter, wrong);
}

// Bytes that differ between two vectors.
__device__ __forceinline__ unsigned diff_bytes(uint4 x, uint4 y) {
  return nonzero_bytes((uint64_t{x.x ^ y.x} << 32) | (x.y ^ y.y)) +
         nonzero_bytes((uint64_t{x.z ^ y.z} << 32) | (x.w ^ y.w));
}
__device__ __forceinline__ unsigned diff_bytes(uint2 x, uint2 y) {
  return nonzero_bytes((uint64_t{x.x ^ y.x} << 32) | (x.y ^ y.y));
}
template <typename V>
__device__ __forceinline__ unsigned diff_bytes(V x, V y) {
  return nonzero_bytes(static_cast<uint64_t>(x ^ y));
}

// Row copy A -> B in vectors of type V; the host picked V so every row start in both tensors and
// the row length are multiples of sizeof(V). (Issuing a task's loads before its stores measured
// slower on H200: 1.88 vs 1.95 TB/s on long rows.)
template <typename I, typename V>
__global__ void __launch_bounds__(kBlock) copy_kernel(uintptr_t src, uintptr_t dst, RowWalk w, Tiling t) {
  const int64_t vectors = w.row_bytes / static_cast<int64_t>(sizeof(V));
  for_each_task<I>(w, t, [&](int64_t a, int64_t b, int64_t first, int stride) {
    const V* in = reinterpret_cast<const V*>(src + static_cast<uintptr_t>(a)) + first;
    V* out = reinterpret_cast<V*>(dst + static_cast<uintptr_t>(b)) + first;
    const int64_t left = vectors - first;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k)
      if (k < t.per_lane && k * stride < left) out[k * stride] = in[k * stride];
  });
}

template <typename I, typename V>
__global__ void __launch_bounds__(kBlock)
    diff_kernel(uintptr_t x, uintptr_t y, RowWalk w, Tiling t, unsigned long long* counter) {
  const int64_t vectors = w.row_bytes / static_cast<int64_t>(sizeof(V));
  unsigned long long wrong = 0;
  for_each_task<I>(w, t, [&](int64_t a, int64_t b, int64_t first, int stride) {
    const V* px = reinterpret_cast<const V*>(x + static_cast<uintptr_t>(a)) + first;
    const V* py = reinterpret_cast<const V*>(y + static_cast<uintptr_t>(b)) + first;
    const int64_t left = vectors - first;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k)
      if (k < t.per_lane && k * stride < left) wrong += diff_bytes(px[k * stride], py[k * stride]);
  });
  warp_add_to(counter, wrong);
}

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

RowWalk region_walk(const RegionSpec& r) {
  return row_walk(r.extent, r.storage_shape, r.storage_offset, r.global_shape, r.global_offset, r.elem_size);
}

// Runs copy_kernel (counter == nullptr) or diff_kernel on rows of V vectors.
template <typename V>
void launch_rows(uintptr_t a, uintptr_t b, const RowWalk& w, unsigned long long* counter, cudaStream_t s) {
  const Tiling t = make_tiling(w.rows(), w.row_bytes / static_cast<int64_t>(sizeof(V)), true);
  const unsigned grid = grid_for(t);
  const bool small = small_index(t, grid);
  if (counter == nullptr) {
    if (small) {
      copy_kernel<uint32_t, V><<<grid, kBlock, 0, s>>>(a, b, w, t);
    } else {
      copy_kernel<uint64_t, V><<<grid, kBlock, 0, s>>>(a, b, w, t);
    }
    RESHARD_CUDA_CHECK_LAUNCH(copy_kernel);
  } else {
    if (small) {
      diff_kernel<uint32_t, V><<<grid, kBlock, 0, s>>>(a, b, w, t, counter);
    } else {
      diff_kernel<uint64_t, V><<<grid, kBlock, 0, s>>>(a, b, w, t, counter);
    }
    RESHARD_CUDA_CHECK_LAUNCH(diff_kernel);
  }
}

// Picks the widest vector that divides every row start in both tensors and the row length.
void launch_rows_widest(uintptr_t a, uintptr_t b, const RowWalk& w, unsigned long long* counter,
                        cudaStream_t s) {
  uint64_t bits = a | b | static_cast<uint64_t>(w.base_a) | static_cast<uint64_t>(w.base_b) |
                  static_cast<uint64_t>(w.row_bytes);
  for (int i = 0; i < w.outer_n; ++i) bits |= static_cast<uint64_t>(w.stride_a[i] | w.stride_b[i]);
  if (bits % 16 == 0) {
    launch_rows<uint4>(a, b, w, counter, s);
  } else if (bits % 8 == 0) {
    launch_rows<uint2>(a, b, w, counter, s);
  } else if (bits % 4 == 0) {
    launch_rows<uint32_t>(a, b, w, counter, s);
  } else if (bits % 2 == 0) {
    launch_rows<uint16_t>(a, b, w, counter, s);
  } else {
    launch_rows<uint8_t>(a, b, w, counter, s);
  }
}

}  // namespace

void cuda_fill_pattern(void* storage, const RegionSpec& r, void* stream) {
  const RowWalk w = region_walk(r);
  if (w.rows() == 0) return;
  const Tiling t = make_tiling(w.rows(), (w.row_bytes + 2 * kChunk - 2) / kChunk, false);
  const unsigned grid = grid_for(t);
  const auto s = reinterpret_cast<uintptr_t>(storage);
  if (small_index(t, grid)) {
    fill_kernel<uint32_t><<<grid, kBlock, 0, as_stream(stream)>>>(s, w, t, r.seed, r.fp8_valid);
  } else {
    fill_kernel<uint64_t><<<grid, kBlock, 0, as_stream(stream)>>>(s, w, t, r.seed, r.fp8_valid);
  }
  RESHARD_CUDA_CHECK_LAUNCH(fill_kernel);
}

void cuda_count_wrong(const void* storage, const RegionSpec& r, unsigned long long* device_counter,
                      void* stream) {
  const RowWalk w = region_walk(r);
  if (w.rows() == 0) return;
  if (device_counter == nullptr) throw runtime_error("cuda_count_wrong: device_counter is null");
  const Tiling t = make_tiling(w.rows(), (w.row_bytes + 2 * kChunk - 2) / kChunk, false);
  const unsigned grid = grid_for(t);
  const auto s = reinterpret_cast<uintptr_t>(storage);
  if (small_index(t, grid)) {
    count_kernel<uint32_t><<<grid, kBlock, 0, as_stream(stream)>>>(s, w, t, r.seed, r.fp8_valid, device_counter);
  } else {
    count_kernel<uint64_t><<<grid, kBlock, 0, as_stream(stream)>>>(s, w, t, r.seed, r.fp8_valid, device_counter);
  }
  RESHARD_CUDA_CHECK_LAUNCH(count_kernel);
}

void cuda_copy_box(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst,
                   const Dims& dst_shape, const Dims& dst_offset, const Dims& extent, int elem_size,
                   void* stream) {
  const RowWalk w = row_walk(extent, src_shape, src_offset, dst_shape, dst_offset, elem_size);
  if (w.rows() == 0) return;
  const auto a = reinterpret_cast<uintptr_t>(src), b = reinterpret_cast<uintptr_t>(dst);
  if (w.outer_n == 0) {  // contiguous in both: one copy engine / driver copy
    RESHARD_CUDA_CHECK(cudaMemcpyAsync(reinterpret_cast<void*>(b + static_cast<uintptr_t>(w.base_b)),
                                       reinterpret_cast<const void*>(a + static_cast<uintptr_t>(w.base_a)),
                                       static_cast<size_t>(w.row_bytes), cudaMemcpyDefault,
                                       as_stream(stream)));
    return;
  }
  launch_rows_widest(a, b, w, nullptr, as_stream(stream));
}

void cuda_pack(const void* tensor, const Dims& shape, const Dims& offset, const Dims& extent, int elem_size,
               void* out, void* stream) {
  cuda_copy_box(tensor, shape, offset, out, extent, Dims::zeros(extent.n), extent, elem_size, stream);
}

void cuda_unpack(const void* in, void* tensor, const Dims& shape, const Dims& offset, const Dims& extent,
                 int elem_size, void* stream) {
  cuda_copy_box(in, extent, Dims::zeros(extent.n), tensor, shape, offset, extent, elem_size, stream);
}

void cuda_count_different(const void* x, const void* y, const Dims& storage_shape, const Dims& offset,
                          const Dims& extent, int elem_size, unsigned long long* device_counter,
                          void* stream) {
  const RowWalk w = row_walk(extent, storage_shape, offset, storage_shape, offset, elem_size);
  if (w.rows() == 0) return;
  if (device_counter == nullptr) throw runtime_error("cuda_count_different: device_counter is null");
  launch_rows_widest(reinterpret_cast<uintptr_t>(x), reinterpret_cast<uintptr_t>(y), w, device_counter,
                     as_stream(stream));
}

}  // namespace reshard
