// Many strided box copies in one kernel launch (private to lib/exec; CUDA builds only, but no CUDA
// includes: streams are cudaStream_t passed as void*, as in cuda_region_ops.h).
//
// Why: a cuda-ipc receiver copies one box per overlap of its pieces with the sender's (a misc bucket
// is ~100 params per side, a gen rank issues hundreds of copies per batch, many of a few KiB). One
// launch per copy costs microseconds of driver time each, and with several ranks time-slicing one GPU
// those launches, not the bytes, set the time. A batch collects the copies (add), then launch()
// uploads their descriptors once and runs ONE kernel that walks all of them: each copy gets blocks in
// proportion to its size (up to one resident wave, then grid-stride), and moves its rows with the
// widest vector (16..1 bytes) its addresses, strides and row length allow. Contiguous copies of at
// least `memcpy_min_bytes` may go to cudaMemcpyAsync instead; by default none do: between ranks' IPC-
// mapped tensors on one H200 the kernel measured faster (docs/gpu.md: 1a bulk 3.23 vs 3.97 ms).
//
// Contract: the copies of one launch must not write overlapping bytes, nor write what another copy of
// the launch reads (they run in any order, concurrently). Pointers are device (UVA, IPC-mapped
// included) pointers valid until the stream reaches the work. add() validates the box (Error(Runtime)
// naming the values, before any CUDA call); launch() throws Error(Runtime) on CUDA failures. Not
// thread-safe; one object may launch on any number of streams (each launch is ordered on its stream).
//
// Buffers: descriptors go through a pinned host buffer and a device buffer (one pair per launch in
// flight, grown on demand and reused). A pair is reused only after the event recorded behind its
// kernel has completed, so a launch never overwrites descriptors a running kernel may still read.
// The destructor waits for those events (every copy of a finished run is long done by then).
#pragma once
#include <climits>
#include <cstdint>
#include <memory>
#include <vector>

#include "reshard/core/box.h"

namespace reshard {

class CudaBatchCopy {
 public:
  static constexpr int64_t kNeverMemcpy = INT64_MAX;
  static constexpr int64_t kDefaultMemcpyMinBytes = kNeverMemcpy;
  static constexpr int64_t kMaxGridBlocks = int64_t{1} << 30;  // per kernel launch (grid.x limit: 2^31 - 1)
  static constexpr int kMaxFan = 8;  // destinations one fan-out copy writes per read (more: split)

  // memcpy_min_bytes: contiguous copies this large or larger use cudaMemcpyAsync (INT64_MAX: never).
  // max_grid_blocks: blocks per kernel launch; a batch needing more is split into several launches
  // (only tests set it low, to reach that path).
  explicit CudaBatchCopy(int64_t memcpy_min_bytes = kDefaultMemcpyMinBytes,
                         int64_t max_grid_blocks = kMaxGridBlocks);
  ~CudaBatchCopy();
  CudaBatchCopy(const CudaBatchCopy&) = delete;
  CudaBatchCopy& operator=(const CudaBatchCopy&) = delete;

  // Queues the copy of box `extent` from (src, src_shape at src_offset) to (dst, dst_shape at
  // dst_offset), row-major tensors of elem_size-byte elements: the contract of cuda_copy_box.
  // Empty boxes are dropped (their pointers may be null).
  void add(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst, const Dims& dst_shape,
           const Dims& dst_offset, const Dims& extent, int elem_size);
  // A fan-out: the same box copied into each of `dsts` (tensors of one shape, the box at the same
  // offset in each), reading the source once per kMaxFan destinations. On one GPU shared by the ranks
  // of a broadcast (cuda-ipc push) this saves the re-reads: k copies cost 1 read + k writes of
  // device memory instead of k + k. Fan-outs always take the kernel (cudaMemcpyAsync would re-read).
  // The destinations must not overlap each other.
  void add_fanout(const void* src, const Dims& src_shape, const Dims& src_offset, const std::vector<void*>& dsts,
                  const Dims& dst_shape, const Dims& dst_offset, const Dims& extent, int elem_size);
  int64_t pending() const;        // copies queued since the last launch or clear (a fan-out counts once
                                  // per kMaxFan destinations)
  int64_t pending_bytes() const;  // the bytes they write
  // Enqueues every queued copy on `stream` (asynchronous; nothing when none is queued) and empties
  // the queue. Work of later calls on the same stream runs after it.
  void launch(void* stream);
  void clear();  // drops the queued copies (e.g. after an error while adding)

  // Totals since construction, for tests and reports.
  int64_t kernels_launched() const;
  int64_t memcpys_issued() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace reshard
