// Device memory for the GPU transports: plain cudaMalloc blocks (never managed memory), registered
// in the shared CudaContext so transports can name them; region ops are the kernels of
// cuda_region_ops.h, ordered on the context's streams. Calls without a stream use stream 0 and the
// executor syncs (sync(-1)) before it relies on them. Only counts travel back to the host.
#if RESHARD_HAVE_CUDA
#include <memory>
#include <unordered_map>

#include "cuda_check.h"
#include "cuda_context.h"
#include "reshard/core/error.h"
#include "cuda_dequant.h"
#include "cuda_quantize.h"
#include "cuda_region_ops.h"
#include "memory.h"
#include "transports.h"

namespace reshard {
namespace {

class CudaMemory final : public Memory {
 public:
  explicit CudaMemory(std::shared_ptr<CudaContext> context) : ctx_(std::move(context)) {
    ctx_->ensure_streams(1);
    RESHARD_CUDA_CHECK(cudaSetDevice(ctx_->device));
    RESHARD_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&counter_), sizeof(unsigned long long)));
    RESHARD_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&host_counter_), sizeof(unsigned long long)));
  }
  ~CudaMemory() override {
    cudaDeviceSynchronize();  // nothing may still use a block we free; errors were reported before
    for (auto& [p, bytes] : sizes_) {
      ctx_->remove_allocation(p);
      cudaFree(p);
    }
    cudaFree(counter_);
    cudaFreeHost(host_counter_);
  }
  MemoryKind kind() const override { return MemoryKind::Device; }
  int64_t available_bytes() const override {
    size_t free = 0, total = 0;
    if (cudaSetDevice(ctx_->device) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) return -1;
    return static_cast<int64_t>(free);
  }
  std::string pool() const override {
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, ctx_->device) != cudaSuccess) return "GPU " + std::to_string(ctx_->device);
    return std::string("GPU ") + bus;
  }

  void* alloc(int64_t bytes) override {
    void* p = nullptr;
    const size_t n = static_cast<size_t>(std::max<int64_t>(bytes, 1));
    const cudaError_t err = cudaMalloc(&p, n);
    if (err != cudaSuccess) {
      size_t free_bytes = 0, total = 0;
      cudaGetLastError();  // clear the sticky-free allocation error before asking
      cudaMemGetInfo(&free_bytes, &total);
      throw runtime_error("cudaMalloc of " + std::to_string(bytes) + " bytes on " + ctx_->describe() +
                          " failed: " + cudaGetErrorString(err) + " (" + std::to_string(free_bytes >> 20) + " of " +
                          std::to_string(total >> 20) + " MiB free; this rank holds " +
                          std::to_string(current_bytes() >> 20) + " MiB)");
    }
    sizes_[p] = bytes;
    ctx_->add_allocation(p, static_cast<int64_t>(n));
    account(bytes);
    return p;
  }
  void free(void* p) override {
    auto it = sizes_.find(p);
    if (it == sizes_.end()) return;
    ctx_->sync_all();  // queued work on the block finishes first
    account(-it->second);
    ctx_->remove_allocation(p);
    sizes_.erase(it);
    RESHARD_CUDA_CHECK(cudaFree(p));
  }
  void memset(void* p, uint8_t value, int64_t bytes) override {
    RESHARD_CUDA_CHECK(cudaMemsetAsync(p, value, static_cast<size_t>(bytes), s0()));
  }
  void fill_pattern(void* storage, const RegionSpec& r) override {
    if (r.dequant) throw runtime_error("fill_pattern: dequantized BF16 regions are only checked on the device");
    cuda_fill_pattern(storage, r, s0());
  }
  int64_t count_wrong(const void* storage, const RegionSpec& r) override {
    RESHARD_CUDA_CHECK(cudaMemsetAsync(counter_, 0, sizeof *counter_, s0()));
    if (r.dequant) cuda_count_wrong_dequant(storage, r, counter_, s0());
    else cuda_count_wrong(storage, r, counter_, s0());
    return read_counter();
  }
  void copy_box(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst, const Dims& dst_shape,
                const Dims& dst_offset, const Dims& extent, int elem_size, int stream) override {
    cuda_copy_box(src, src_shape, src_offset, dst, dst_shape, dst_offset, extent, elem_size, ctx_->stream(stream));
  }
  int64_t count_different(const void* a, const void* b, const Dims& shape, const Dims& offset, const Dims& extent,
                          int elem_size) override {
    RESHARD_CUDA_CHECK(cudaMemsetAsync(counter_, 0, sizeof *counter_, s0()));
    cuda_count_different(a, b, shape, offset, extent, elem_size, counter_, s0());
    return read_counter();
  }
  void copy_bytes(void* dst, const void* src, int64_t bytes) override {
    RESHARD_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, s0()));
  }
  void quantize_mxfp8(const void* bf16, const Dims& extent, void* values, void* scales, const Dims& shape,
                      const Dims& offset, int stream) override {
    cuda_quantize_mxfp8(bf16, extent, values, scales, shape, offset, ctx_->stream(stream));
  }
  void dequant_block_fp8(const void* values, const void* scales, const Box& shard, const Box& box, void* out,
                         int stream) override {
    cuda_dequant_block_fp8(values, scales, shard, box, out, ctx_->stream(stream));
  }
  void upload(void* dst, const void* host, int64_t bytes) override {
    RESHARD_CUDA_CHECK(cudaMemcpyAsync(dst, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, s0()));
    RESHARD_CUDA_CHECK(cudaStreamSynchronize(s0()));
  }
  void download(void* host, const void* src, int64_t bytes) override {
    RESHARD_CUDA_CHECK(cudaMemcpyAsync(host, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, s0()));
    RESHARD_CUDA_CHECK(cudaStreamSynchronize(s0()));
  }
  void reserve_streams(int n) override { ctx_->ensure_streams(n); }
  void join(int waiter, int producer) override {
    if (waiter == producer) return;
    // The wait takes the record as it stands, so the event goes back to the pool at once.
    cudaEvent_t e = ctx_->take_event();
    RESHARD_CUDA_CHECK(cudaEventRecord(e, ctx_->stream(producer)));
    RESHARD_CUDA_CHECK(cudaStreamWaitEvent(ctx_->stream(waiter), e, 0));
    ctx_->give_event(e);
  }
  void sync(int stream) override {
    if (stream < 0) {
      ctx_->sync_all();
    } else {
      RESHARD_CUDA_CHECK(cudaStreamSynchronize(ctx_->stream(stream)));
    }
  }

 private:
  cudaStream_t s0() const { return ctx_->stream(0); }
  int64_t read_counter() {
    RESHARD_CUDA_CHECK(cudaMemcpyAsync(host_counter_, counter_, sizeof *counter_, cudaMemcpyDeviceToHost, s0()));
    RESHARD_CUDA_CHECK(cudaStreamSynchronize(s0()));
    return static_cast<int64_t>(*host_counter_);
  }

  std::shared_ptr<CudaContext> ctx_;
  unsigned long long* counter_ = nullptr;       // device
  unsigned long long* host_counter_ = nullptr;  // pinned
  std::unordered_map<void*, int64_t> sizes_;
};

}  // namespace

std::unique_ptr<Memory> make_cuda_memory(std::shared_ptr<CudaContext> context) {
  return std::make_unique<CudaMemory>(std::move(context));
}

}  // namespace reshard
#endif
