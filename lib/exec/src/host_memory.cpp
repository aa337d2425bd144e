// Host memory for the MPI transport: aligned blocks, synchronous region operations.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unordered_map>

#include "reshard/core/error.h"
#include "reshard/core/mxfp8.h"
#include "memory.h"

namespace reshard {

const char* to_string(MemoryKind k) { return k == MemoryKind::Host ? "host" : "device"; }

namespace {

class HostMemory final : public Memory {
 public:
  ~HostMemory() override {
    for (auto& [p, bytes] : sizes_) std::free(p);
  }
  MemoryKind kind() const override { return MemoryKind::Host; }
  int64_t available_bytes() const override {
    std::FILE* f = std::fopen("/proc/meminfo", "r");
    if (f == nullptr) return -1;
    char line[256];
    long long kib = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    std::fclose(f);
    return kib < 0 ? -1 : static_cast<int64_t>(kib) * 1024;
  }

  void* alloc(int64_t bytes) override {
    const int64_t rounded = ((std::max<int64_t>(bytes, 1) + 63) / 64) * 64;
    void* p = std::aligned_alloc(64, static_cast<size_t>(rounded));
    if (p == nullptr) throw runtime_error("out of host memory allocating " + std::to_string(bytes) + " bytes");
    sizes_[p] = bytes;
    account(bytes);
    return p;
  }
  void free(void* p) override {
    auto it = sizes_.find(p);
    if (it == sizes_.end()) return;
    account(-it->second);
    sizes_.erase(it);
    std::free(p);
  }
  void memset(void* p, uint8_t value, int64_t bytes) override { std::memset(p, value, static_cast<size_t>(bytes)); }
  void fill_pattern(void* storage, const RegionSpec& r) override { host_fill_pattern(storage, r); }
  int64_t count_wrong(const void* storage, const RegionSpec& r) override { return host_count_wrong(storage, r); }
  void copy_box(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst, const Dims& dst_shape,
                const Dims& dst_offset, const Dims& extent, int elem_size, int) override {
    host_copy_box(src, src_shape, src_offset, dst, dst_shape, dst_offset, extent, elem_size);
  }
  int64_t count_different(const void* a, const void* b, const Dims& shape, const Dims& offset, const Dims& extent,
                          int elem_size) override {
    // Row by row through a small buffer-free walk: compare the same box of both storages.
    int64_t diff = 0;
    const int n = extent.n;
    if (extent.product() == 0) return 0;
    const auto* pa = static_cast<const uint8_t*>(a);
    const auto* pb = static_cast<const uint8_t*>(b);
    if (n == 0) return std::memcmp(pa, pb, elem_size) == 0 ? 0 : count_bytes(pa, pb, elem_size);
    const int64_t row = extent[n - 1] * elem_size;
    Dims idx = Dims::zeros(n), at = offset;
    while (true) {
      for (int d = 0; d < n - 1; ++d) at[d] = offset[d] + idx[d];
      const int64_t o = linear_index(at, shape) * elem_size;
      if (std::memcmp(pa + o, pb + o, row) != 0) diff += count_bytes(pa + o, pb + o, row);
      int d = n - 2;
      while (d >= 0 && ++idx[d] == extent[d]) idx[d--] = 0;
      if (d < 0) return diff;
    }
  }
  void copy_bytes(void* dst, const void* src, int64_t bytes) override { std::memcpy(dst, src, static_cast<size_t>(bytes)); }
  void quantize_mxfp8(const void* bf16, const Dims& extent, void* values, void* scales, const Dims& shape,
                      const Dims& offset, int) override {
    mxfp8_quantize_into(static_cast<const uint16_t*>(bf16), extent, static_cast<uint8_t*>(values),
                        static_cast<uint8_t*>(scales), shape, offset);
  }
  void dequant_block_fp8(const void* values, const void* scales, const Box& shard, const Box& box, void* out,
                         int) override {
    host_dequant_block_fp8(values, scales, shard, box, out);
  }
  void download(void* host, const void* src, int64_t bytes) override {
    std::memcpy(host, src, static_cast<size_t>(bytes));
  }
  void upload(void* dst, const void* host, int64_t bytes) override { std::memcpy(dst, host, static_cast<size_t>(bytes)); }
  void sync(int) override {}

 private:
  static int64_t count_bytes(const uint8_t* a, const uint8_t* b, int64_t n) {
    int64_t d = 0;
    for (int64_t i = 0; i < n; ++i) d += a[i] != b[i];
    return d;
  }
  std::unordered_map<void*, int64_t> sizes_;
};

}  // namespace

std::unique_ptr<Memory> make_host_memory() { return std::make_unique<HostMemory>(); }

}  // namespace reshard
