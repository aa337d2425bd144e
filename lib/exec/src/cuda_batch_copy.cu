// CudaBatchCopy (cuda_batch_copy.h): many strided box copies in one kernel launch.
//
// Each copy becomes a descriptor: its RowWalk (rows contiguous in both tensors, up to 3 outer dims)
// with the bases folded into the pointers, the widest vector its addresses, strides and row length
// allow, and its tiling: tasks of `lanes` threads covering per_lane groups of `lanes` vectors of one
// row, as in cuda_region_ops.cu, so a warp's accesses coalesce whether rows are long or short. A
// copy gets ceil(tasks / tasks per block) blocks, at most one resident wave (it then loops over its
// tasks, grid-stride within its own blocks). Blocks are numbered copy after copy; a block finds its
// copy by binary search over a dense array of the copies' first blocks (4 bytes per copy, so a
// bucket's few hundred copies are a few cache lines), so one launch serves copies from a few bytes
// to gigabytes. A fan-out descriptor stores each vector it loads into up to kMaxFan destinations.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "cuda_batch_copy.h"
#include "cuda_check.h"
#include "reshard/core/error.h"
#include "row_walk.h"

namespace reshard {
namespace {

constexpr int kBlock = 256;
constexpr int kPerLane = 4;                        // vectors per thread per task on long rows
constexpr size_t kMinDescBytes = size_t{1} << 18;  // first descriptor buffer: ~1700 copies

// One copy as the kernel sees it. Plain data, copied bytewise to the device.
struct CopyDesc {
  uint64_t src = 0, dst = 0;  // first row's bytes
  uint64_t more_dst[CudaBatchCopy::kMaxFan - 1] = {};  // a fan-out's other destinations (first row)
  int64_t row_bytes = 0;
  int64_t outer_extent[RowWalk::kMaxOuter] = {};  // outermost first
  int64_t stride_src[RowWalk::kMaxOuter] = {};    // bytes
  int64_t stride_dst[RowWalk::kMaxOuter] = {};
  int64_t tasks = 0, tasks_per_row = 0;
  int32_t first_block = 0;  // blocks of earlier copies in the same kernel launch (also in `firsts`)
  int32_t blocks = 0;       // >= 1
  int32_t outer_n = 0;
  int32_t vec_log2 = 0;  // vector of 1 << vec_log2 bytes (0..4)
  int32_t lanes_log2 = 0;
  int32_t per_lane = kPerLane;
  int32_t small = 0;  // task indices fit 32 bits (cheaper divisions)
  int32_t fan = 1;    // destinations: dst, then more_dst[0 .. fan - 2]
};
static_assert(sizeof(CopyDesc) % alignof(uint32_t) == 0, "the first-block array follows the descriptors");

// Copies the tasks of block `block` of `blocks` of copy d, in vectors of type V.
template <typename I, typename V>
__device__ __forceinline__ void copy_rows(const CopyDesc& d, I block, I blocks) {
  const int lanes_log2 = d.lanes_log2;
  const I lanes = I{1} << lanes_log2;
  const I lane = static_cast<I>(threadIdx.x) & (lanes - 1);
  const I tasks_per_block = static_cast<I>(kBlock >> lanes_log2);
  const I tasks = static_cast<I>(d.tasks), tasks_per_row = static_cast<I>(d.tasks_per_row);
  const int per_lane = d.per_lane, outer_n = d.outer_n;
  const int64_t vectors = d.row_bytes / static_cast<int64_t>(sizeof(V));
  for (I task = block * tasks_per_block + (static_cast<I>(threadIdx.x) >> lanes_log2); task < tasks;
       task += blocks * tasks_per_block) {
    I row = task, seg = 0;
    if (tasks_per_row != 1) {
      row = task / tasks_per_row;
      seg = task - row * tasks_per_row;
    }
    int64_t a = 0, b = 0;  // byte offsets of the row
#pragma unroll
    for (int i = RowWalk::kMaxOuter - 1; i >= 0; --i) {
      if (i < outer_n) {
        const I e = static_cast<I>(d.outer_extent[i]);
        const I q = row / e;
        const int64_t idx = static_cast<int64_t>(row - q * e);
        row = q;
        a += idx * d.stride_src[i];
        b += idx * d.stride_dst[i];
      }
    }
    const int64_t first =
        static_cast<int64_t>(seg) * static_cast<int64_t>(lanes) * per_lane + static_cast<int64_t>(lane);
    const V* in = reinterpret_cast<const V*>(d.src + static_cast<uint64_t>(a)) + first;
    const int64_t left = vectors - first;
    // Loads first, then the stores to every destination: a fan-out reads its source once (and the
    // compiler, not knowing that source and destinations never alias, would not reorder them itself).
    V v[kPerLane];
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int64_t at = static_cast<int64_t>(k) * static_cast<int64_t>(lanes);
      if (k < per_lane && at < left) v[k] = in[at];
    }
    for (int f = 0; f < d.fan; ++f) {
      const uint64_t dst = f == 0 ? d.dst : d.more_dst[f - 1];
      V* out = reinterpret_cast<V*>(dst + static_cast<uint64_t>(b)) + first;
#pragma unroll
      for (int k = 0; k < kPerLane; ++k) {
        const int64_t at = static_cast<int64_t>(k) * static_cast<int64_t>(lanes);
        if (k < per_lane && at < left) out[at] = v[k];
      }
    }
  }
}

template <typename I>
__device__ __forceinline__ void copy_any(const CopyDesc& d, I block, I blocks) {
  switch (d.vec_log2) {
    case 4:
      copy_rows<I, uint4>(d, block, blocks);
      break;
    case 3:
      copy_rows<I, uint2>(d, block, blocks);
      break;
    case 2:
      copy_rows<I, uint32_t>(d, block, blocks);
      break;
    case 1:
      copy_rows<I, uint16_t>(d, block, blocks);
      break;
    default:
      copy_rows<I, uint8_t>(d, block, blocks);
      break;
  }
}

// Grid: the copies' blocks back to back; firsts[i] = descs[i].first_block, ascending from 0, every
// copy >= 1 block.
__global__ void __launch_bounds__(kBlock)
    batch_copy_kernel(const CopyDesc* __restrict__ descs, const uint32_t* __restrict__ firsts, int n) {
  const uint32_t bid = blockIdx.x;
  int lo = 0, hi = n - 1;  // the last copy whose first block is <= bid
  while (lo < hi) {
    const int mid = lo + (hi - lo + 1) / 2;
    if (firsts[mid] <= bid) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  const CopyDesc& d = descs[lo];
  const int64_t block = static_cast<int64_t>(bid) - d.first_block;
  if (block < 0 || block >= d.blocks) return;  // cannot happen for a well-formed launch
  if (d.small) {
    copy_any<uint32_t>(d, static_cast<uint32_t>(block), static_cast<uint32_t>(d.blocks));
  } else {
    copy_any<uint64_t>(d, static_cast<uint64_t>(block), static_cast<uint64_t>(d.blocks));
  }
}

struct Pending {
  uintptr_t src = 0, dst = 0;  // tensor bases
  RowWalk w;
  int fan = 1;  // a fan-out: also writes the tensors at more_dst[0 .. fan - 2] (same shape as dst's)
  uintptr_t more_dst[CudaBatchCopy::kMaxFan - 1] = {};
};

// Descriptor buffers of one launch in flight: reused once `done` (recorded behind the launch's
// kernels) has completed.
struct Slot {
  void* host = nullptr;  // pinned
  void* dev = nullptr;
  size_t capacity = 0;
  cudaEvent_t done = nullptr;
};

int vector_log2(uint64_t bits) {
  if (bits % 16 == 0) return 4;
  if (bits % 8 == 0) return 3;
  if (bits % 4 == 0) return 2;
  if (bits % 2 == 0) return 1;
  return 0;
}

// The kernel's view of one copy, in at most max_blocks blocks (first_block is set by the caller).
CopyDesc describe_copy(const Pending& p, int64_t max_blocks) {
  const RowWalk& w = p.w;
  CopyDesc d;
  d.src = static_cast<uint64_t>(p.src) + static_cast<uint64_t>(w.base_a);
  d.dst = static_cast<uint64_t>(p.dst) + static_cast<uint64_t>(w.base_b);
  d.row_bytes = w.row_bytes;
  d.outer_n = w.outer_n;
  d.fan = p.fan;
  uint64_t bits = d.src | d.dst | static_cast<uint64_t>(w.row_bytes);
  for (int f = 0; f + 1 < p.fan; ++f) {
    d.more_dst[f] = static_cast<uint64_t>(p.more_dst[f]) + static_cast<uint64_t>(w.base_b);
    bits |= d.more_dst[f];
  }
  for (int i = 0; i < w.outer_n; ++i) {
    d.outer_extent[i] = w.outer_extent[i];
    d.stride_src[i] = w.stride_a[i];
    d.stride_dst[i] = w.stride_b[i];
    bits |= static_cast<uint64_t>(w.stride_a[i]) | static_cast<uint64_t>(w.stride_b[i]);
  }
  d.vec_log2 = vector_log2(bits);
  // Tiling (cuda_region_ops.cu's make_tiling for copies): rows one warp covers get one vector per
  // lane, so a warp moves several whole rows at once.
  const int64_t vectors_per_row = w.row_bytes >> d.vec_log2;
  if (vectors_per_row <= 32) d.per_lane = 1;
  const int64_t lanes_wanted = (vectors_per_row + d.per_lane - 1) / d.per_lane;
  while ((1 << d.lanes_log2) < kBlock && (int64_t{1} << d.lanes_log2) < lanes_wanted) ++d.lanes_log2;
  const int64_t per_task = (int64_t{1} << d.lanes_log2) * d.per_lane;
  d.tasks_per_row = (vectors_per_row + per_task - 1) / per_task;
  d.tasks = w.rows() * d.tasks_per_row;
  const int64_t tasks_per_block = kBlock >> d.lanes_log2;
  const int64_t needed = (d.tasks + tasks_per_block - 1) / tasks_per_block;
  d.blocks = static_cast<int32_t>(std::max<int64_t>(1, std::min(needed, max_blocks)));
  d.small = d.tasks + int64_t{d.blocks} * kBlock < (int64_t{1} << 32);
  return d;
}

}  // namespace

struct CudaBatchCopy::Impl {
  int64_t memcpy_min = kDefaultMemcpyMinBytes;
  int64_t max_grid = kMaxGridBlocks;
  int wave = 0;  // resident blocks of the device (queried at the first launch)
  std::vector<Pending> pending;
  int64_t pending_bytes = 0;
  std::vector<CopyDesc> descs;                       // host scratch, reused
  std::vector<uint32_t> firsts;                      // descs[i].first_block
  std::vector<std::pair<size_t, int64_t>> launches;  // (first desc, grid) per kernel launch
  std::deque<Slot> slots;                            // deque: slots stay put as more are added
  int64_t kernels = 0, memcpys = 0;

  ~Impl() {
    // No throwing here. Waiting is what makes freeing safe; errors (a device already gone) are
    // ignored, since nothing else can be done with them.
    for (Slot& s : slots) {
      if (s.done != nullptr) {
        cudaEventSynchronize(s.done);
        cudaEventDestroy(s.done);
      }
      if (s.host != nullptr) cudaFreeHost(s.host);
      if (s.dev != nullptr) cudaFree(s.dev);
    }
  }

  // A slot whose previous launch has finished, with room for `bytes` of descriptors.
  Slot& take_slot(size_t bytes) {
    Slot* free_slot = nullptr;
    for (Slot& s : slots) {
      const cudaError_t e = cudaEventQuery(s.done);  // never recorded: cudaSuccess
      if (e == cudaErrorNotReady) continue;
      RESHARD_CUDA_CHECK(e);
      if (s.capacity >= bytes) return s;
      if (free_slot == nullptr) free_slot = &s;
    }
    if (free_slot == nullptr) {
      cudaEvent_t done = nullptr;
      RESHARD_CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
      slots.emplace_back();
      slots.back().done = done;
      free_slot = &slots.back();
    }
    Slot& s = *free_slot;
    // Growing: free (its launch is done; cudaFree waits for the device anyway), then allocate. Rare:
    // capacities double, so this stops after the first batches.
    const size_t capacity = std::max({bytes, 2 * s.capacity, kMinDescBytes});
    if (s.host != nullptr) RESHARD_CUDA_CHECK(cudaFreeHost(s.host));
    s.host = nullptr;
    if (s.dev != nullptr) RESHARD_CUDA_CHECK(cudaFree(s.dev));
    s.dev = nullptr;
    s.capacity = 0;
    RESHARD_CUDA_CHECK(cudaMallocHost(&s.host, capacity));
    RESHARD_CUDA_CHECK(cudaMalloc(&s.dev, capacity));
    s.capacity = capacity;
    return s;
  }

  // Blocks of batch_copy_kernel resident at once on the device (its registers decide, not only
  // the thread count).
  int resident_blocks() {
    if (wave == 0) {
      int device = 0, sms = 0, per_sm = 0;
      RESHARD_CUDA_CHECK(cudaGetDevice(&device));
      RESHARD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
      RESHARD_CUDA_CHECK(
          cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, batch_copy_kernel, kBlock, 0));
      wave = std::max(sms, 1) * std::max(per_sm, 1);
    }
    return wave;
  }
};

CudaBatchCopy::CudaBatchCopy(int64_t memcpy_min_bytes, int64_t max_grid_blocks)
    : impl_(std::make_unique<Impl>()) {
  if (max_grid_blocks < 1 || max_grid_blocks > kMaxGridBlocks)
    throw runtime_error("CudaBatchCopy: max_grid_blocks " + std::to_string(max_grid_blocks) +
                        " outside [1, " + std::to_string(kMaxGridBlocks) + "]");
  impl_->memcpy_min = std::max<int64_t>(memcpy_min_bytes, 1);
  impl_->max_grid = max_grid_blocks;
}

CudaBatchCopy::~CudaBatchCopy() = default;

void CudaBatchCopy::add(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst,
                        const Dims& dst_shape, const Dims& dst_offset, const Dims& extent, int elem_size) {
  add_fanout(src, src_shape, src_offset, std::vector<void*>{dst}, dst_shape, dst_offset, extent, elem_size);
}

void CudaBatchCopy::add_fanout(const void* src, const Dims& src_shape, const Dims& src_offset,
                               const std::vector<void*>& dsts, const Dims& dst_shape, const Dims& dst_offset,
                               const Dims& extent, int elem_size) {
  const RowWalk w = row_walk(extent, src_shape, src_offset, dst_shape, dst_offset, elem_size);
  if (w.rows() == 0) return;
  const bool null_dst = std::find(dsts.begin(), dsts.end(), nullptr) != dsts.end();
  if (src == nullptr || null_dst || dsts.empty())
    throw runtime_error("CudaBatchCopy: " +
                        std::string(src == nullptr ? "null source" : dsts.empty() ? "no destination" : "null destination") +
                        " for a box of extent " + extent.str());
  for (size_t first = 0; first < dsts.size(); first += kMaxFan) {
    Pending p{reinterpret_cast<uintptr_t>(src), reinterpret_cast<uintptr_t>(dsts[first]), w};
    p.fan = static_cast<int>(std::min<size_t>(kMaxFan, dsts.size() - first));
    for (int f = 1; f < p.fan; ++f) p.more_dst[f - 1] = reinterpret_cast<uintptr_t>(dsts[first + static_cast<size_t>(f)]);
    impl_->pending.push_back(p);
    impl_->pending_bytes += w.rows() * w.row_bytes * p.fan;
  }
}

int64_t CudaBatchCopy::pending() const { return static_cast<int64_t>(impl_->pending.size()); }
int64_t CudaBatchCopy::pending_bytes() const { return impl_->pending_bytes; }
int64_t CudaBatchCopy::kernels_launched() const { return impl_->kernels; }
int64_t CudaBatchCopy::memcpys_issued() const { return impl_->memcpys; }

void CudaBatchCopy::clear() {
  impl_->pending.clear();
  impl_->pending_bytes = 0;
}

void CudaBatchCopy::launch(void* stream) {
  Impl& m = *impl_;
  if (m.pending.empty()) return;
  struct ClearOnExit {
    CudaBatchCopy& batch;
    ~ClearOnExit() { batch.clear(); }
  } clear_on_exit{*this};
  const auto s = static_cast<cudaStream_t>(stream);

  // Large contiguous copies to the copy engine now; the rest become descriptors, cut into kernel
  // launches of at most max_grid blocks.
  m.descs.clear();
  m.firsts.clear();
  m.launches.clear();
  int64_t grid = 0;
  for (const Pending& p : m.pending) {
    if (p.fan == 1 && p.w.outer_n == 0 && p.w.row_bytes >= m.memcpy_min) {
      RESHARD_CUDA_CHECK(
          cudaMemcpyAsync(reinterpret_cast<void*>(p.dst + static_cast<uintptr_t>(p.w.base_b)),
                          reinterpret_cast<const void*>(p.src + static_cast<uintptr_t>(p.w.base_a)),
                          static_cast<size_t>(p.w.row_bytes), cudaMemcpyDefault, s));
      ++m.memcpys;
      continue;
    }
    CopyDesc d = describe_copy(p, std::min<int64_t>(m.resident_blocks(), m.max_grid));
    if (m.launches.empty() || grid + d.blocks > m.max_grid ||
        m.descs.size() - m.launches.back().first >= INT32_MAX) {
      if (!m.launches.empty()) m.launches.back().second = grid;
      m.launches.emplace_back(m.descs.size(), 0);
      grid = 0;
    }
    d.first_block = static_cast<int32_t>(grid);
    grid += d.blocks;
    m.descs.push_back(d);
    m.firsts.push_back(static_cast<uint32_t>(d.first_block));
  }
  if (m.descs.empty()) return;
  m.launches.back().second = grid;

  // One upload: the descriptors, then the first blocks (sizeof(CopyDesc) keeps them 8-byte aligned).
  const size_t desc_bytes = m.descs.size() * sizeof(CopyDesc),
               bytes = desc_bytes + m.firsts.size() * sizeof(uint32_t);
  Slot& slot = m.take_slot(bytes);
  std::memcpy(slot.host, m.descs.data(), desc_bytes);
  std::memcpy(static_cast<uint8_t*>(slot.host) + desc_bytes, m.firsts.data(), bytes - desc_bytes);
  RESHARD_CUDA_CHECK(cudaMemcpyAsync(slot.dev, slot.host, bytes, cudaMemcpyHostToDevice, s));
  const auto* dev_descs = static_cast<const CopyDesc*>(slot.dev);
  const auto* dev_firsts =
      reinterpret_cast<const uint32_t*>(static_cast<const uint8_t*>(slot.dev) + desc_bytes);
  for (size_t i = 0; i < m.launches.size(); ++i) {
    const size_t first = m.launches[i].first;
    const size_t end = i + 1 < m.launches.size() ? m.launches[i + 1].first : m.descs.size();
    batch_copy_kernel<<<static_cast<unsigned>(m.launches[i].second), kBlock, 0, s>>>(
        dev_descs + first, dev_firsts + first, static_cast<int>(end - first));
    RESHARD_CUDA_CHECK_LAUNCH(batch_copy_kernel);
    ++m.kernels;
  }
  // The slot's buffers are reused only after this (behind the kernels that read them) completes.
  RESHARD_CUDA_CHECK(cudaEventRecord(slot.done, s));
}

}  // namespace reshard
