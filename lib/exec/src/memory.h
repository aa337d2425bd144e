// Where the executor's buffers live and the element-region operations on them. The executor only
// talks to this interface, so the same op walk runs on host memory (MPI transport) and on device
// memory (CUDA IPC / NCCL: a CUDA implementation with the kernels of cuda_region_ops.h).
// Not thread-safe; one Memory per rank. `stream` arguments name the transport's stream the
// operation must be ordered on (host memory runs everything synchronously and ignores it).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "reshard/core/box.h"
#include "region_ops.h"

namespace reshard {

enum class MemoryKind { Host, Device };
const char* to_string(MemoryKind k);

class Memory {
 public:
  virtual ~Memory() = default;
  virtual MemoryKind kind() const = 0;
  // What can still be allocated where this memory lives (host: MemAvailable; device: cudaMemGetInfo's
  // free bytes), or -1 when unknown; and a name for that pool, equal on ranks that share it
  // ("host", "GPU 0000:1b:00.0"). run checks the plan's needs against it before allocating.
  virtual int64_t available_bytes() const { return -1; }
  virtual std::string pool() const { return "host memory"; }
  // Never returns null (a zero-byte request gets a valid one-byte block). Throws Error(Runtime).
  virtual void* alloc(int64_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual void memset(void* p, uint8_t value, int64_t bytes) = 0;
  virtual void fill_pattern(void* storage, const RegionSpec& r) = 0;
  virtual int64_t count_wrong(const void* storage, const RegionSpec& r) = 0;
  // Copies box `extent` from (src, src_shape at src_offset) to (dst, dst_shape at dst_offset);
  // both row-major tensors of `elem_size`-byte elements. Pack and unpack are special cases.
  virtual void copy_box(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst,
                        const Dims& dst_shape, const Dims& dst_offset, const Dims& extent, int elem_size,
                        int stream) = 0;
  // Bytes that differ between the two regions (same spec, two storages of the same shape).
  virtual int64_t count_different(const void* a, const void* b, const Dims& storage_shape, const Dims& offset,
                                  const Dims& extent, int elem_size) = 0;
  // Copies `bytes` between two buffers of this memory (snapshots for verify --execute).
  virtual void copy_bytes(void* dst, const void* src, int64_t bytes) = 0;
  // MXFP8 (reshard/core/mxfp8.h): quantizes the dense BF16 buffer `bf16` of `extent` into the box at
  // `offset` of the e4m3 tensor `values` of `shape` and of its E8M0 tensor `scales`
  // (mxfp8_scale_shape(shape), last coordinate / 32). The box spans whole 32-element blocks of the
  // last dim. Host: the CPU reference; CUDA: the kernel of cuda_quantize.h, ordered on `stream`.
  virtual void quantize_mxfp8(const void* bf16, const Dims& extent, void* values, void* scales, const Dims& shape,
                              const Dims& offset, int stream) = 0;
  // Block-FP8 -> BF16 of box `box` of a shard (host_dequant_block_fp8's contract): dense e4m3
  // `values` of shard.extent at shard.offset in the param, dense float32 `scales` of its block cover,
  // into the same box of dense BF16 `out`. Host: the CPU reference; CUDA: cuda_dequant.h on `stream`.
  virtual void dequant_block_fp8(const void* values, const void* scales, const Box& shard, const Box& box, void* out,
                                 int stream) = 0;
  // Copies `bytes` of a buffer of this memory into host memory (synchronous; for CPU-side checks).
  virtual void download(void* host, const void* src, int64_t bytes) = 0;
  // Copies `bytes` of host memory into a buffer of this memory (synchronous; set-up only).
  virtual void upload(void* dst, const void* host, int64_t bytes) = 0;
  // Waits until everything queued on `stream` (all streams when -1) has finished.
  virtual void sync(int stream) = 0;
  // Streams 0..n-1 exist (beside the transport's: the executor's side streams). Host memory: nothing.
  virtual void reserve_streams(int n) { (void)n; }
  // Work queued on `waiter` from now on starts after everything queued on `producer` so far (CUDA: an
  // event recorded on one, waited for by the other; the host waits for neither). Host: nothing, its
  // operations are done when they return.
  virtual void join(int waiter, int producer) { (void)waiter, (void)producer; }

  int64_t current_bytes() const { return current_; }
  int64_t peak_bytes() const { return peak_; }

 protected:
  void account(int64_t delta) {
    current_ += delta;
    if (current_ > peak_) peak_ = current_;
  }

 private:
  int64_t current_ = 0, peak_ = 0;
};

// One allocation of a Memory, freed when it goes (move-only); empty when default-made. The Memory
// must outlive it.
class Block {
 public:
  Block() = default;
  Block(Memory& memory, int64_t bytes) : memory_(&memory), p_(memory.alloc(bytes)) {}
  ~Block() { reset(); }
  Block(Block&& o) noexcept : memory_(o.memory_), p_(o.p_) { o.p_ = nullptr; }
  Block& operator=(Block&& o) noexcept {
    if (this != &o) {
      reset();
      memory_ = o.memory_;
      p_ = o.p_;
      o.p_ = nullptr;
    }
    return *this;
  }
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  void* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  void reset() {
    if (p_ != nullptr) memory_->free(p_);
    p_ = nullptr;
  }

 private:
  Memory* memory_ = nullptr;
  void* p_ = nullptr;
};

// Host memory: 64-byte aligned blocks, synchronous operations (host_region_ops.h kernels).
std::unique_ptr<Memory> make_host_memory();

// Host strided box copy shared by host_pack/host_unpack and HostMemory::copy_box.
void host_copy_box(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst, const Dims& dst_shape,
                   const Dims& dst_offset, const Dims& extent, int elem_size);

}  // namespace reshard
