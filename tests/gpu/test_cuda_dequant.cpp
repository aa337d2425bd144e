// Device block-FP8 -> BF16 (cuda_dequant.h) against the host reference, bit for bit: shards whose
// origins sit inside scale blocks, grouped-expert (3-D) shards, every e4m3 value at many scales; and
// the device check of dequantized regions against the host check. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gpu_test_support.h"
#include "reshard/core/fp8_block.h"
#include "cuda_dequant.h"
#include "region_ops.h"

namespace reshard {
namespace {

class CudaDequant : public testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = gpu_test::no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  }
  template <class T>
  T* upload(const std::vector<T>& h) {
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(h.size(), 1) * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
    owned_.push_back(p);
    return static_cast<T*>(p);
  }
  template <class T>
  std::vector<T> download(const T* p, size_t n) {
    std::vector<T> h(n);
    EXPECT_EQ(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
  void TearDown() override {
    for (void* p : owned_) cudaFree(p);
  }

  // Shard `shard` of a param of `shape`: pattern values and scales, dequantized on both sides.
  void check_shard(const Dims& shape, const Box& shard) {
    const uint64_t seed = param_seed("p"), scale_seed = block_scale_seed(seed);
    std::vector<uint8_t> values(static_cast<size_t>(shard.extent.product()));
    host_fill_pattern(values.data(),
                      RegionSpec{shard.extent, Dims::zeros(shape.n), shard.extent, shape, shard.offset, 1, seed, true});
    std::vector<float> scales(static_cast<size_t>(fp8_block_cover(shard).extent.product()));
    host_fill_block_scales(scales.data(), shape, shard, scale_seed);
    const Box whole{Dims::zeros(shape.n), shard.extent};
    std::vector<uint16_t> want(values.size(), 0xA5A5);
    host_dequant_block_fp8(values.data(), scales.data(), shard, whole, want.data());

    const uint8_t* v = upload(values);
    const float* s = upload(scales);
    uint16_t* out = upload(std::vector<uint16_t>(values.size(), 0xA5A5));
    cuda_dequant_block_fp8(v, s, shard, whole, out, nullptr);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(download(out, values.size()), want) << shape.str() << " " << shard.str();

    // Sub-boxes (what one op sends) write exactly their box, on both sides: vector and scalar paths.
    for (const Box& sub : sub_boxes(shard.extent)) {
      std::vector<uint16_t> want_sub(values.size(), 0xA5A5);
      host_dequant_block_fp8(values.data(), scales.data(), shard, sub, want_sub.data());
      uint16_t* got = upload(std::vector<uint16_t>(values.size(), 0xA5A5));
      cuda_dequant_block_fp8(v, s, shard, sub, got, nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(download(got, values.size()), want_sub) << shape.str() << " " << shard.str() << " box " << sub.str();
    }

    // The device check agrees with the host's: 0 on the result, 3 after flipping 3 bytes.
    RegionSpec r{shard.extent, Dims::zeros(shape.n), shard.extent, shape, shard.offset, 2, seed, false};
    r.dequant = true;
    r.scale_seed = scale_seed;
    auto* counter = upload(std::vector<unsigned long long>{0});
    cuda_count_wrong_dequant(out, r, counter, nullptr);
    EXPECT_EQ(download(counter, 1)[0], 0u);
    if (want.empty()) return;
    want[want.size() / 2] ^= 0x0101;
    want[0] ^= 0x0080;
    uint16_t* flipped = upload(want);
    auto* counter2 = upload(std::vector<unsigned long long>{0});
    cuda_count_wrong_dequant(flipped, r, counter2, nullptr);
    EXPECT_EQ(download(counter2, 1)[0], 3u);
    EXPECT_EQ(host_count_wrong(want.data(), r), 3);
  }

  // A few boxes inside a shard: halves along the first dim, an odd column window, a single row.
  static std::vector<Box> sub_boxes(const Dims& extent) {
    const int n = extent.n;
    std::vector<Box> out;
    if (extent.product() == 0) return out;
    Box half{Dims::zeros(n), extent};
    half.extent[0] = (extent[0] + 1) / 2;
    out.push_back(half);
    half.offset[0] = half.extent[0];
    half.extent[0] = extent[0] - half.extent[0];
    out.push_back(half);
    Box window{Dims::zeros(n), extent};
    window.offset[n - 1] = std::min<int64_t>(3, extent[n - 1] - 1);
    window.extent[n - 1] = std::max<int64_t>(1, extent[n - 1] - window.offset[n - 1] - 5);
    out.push_back(window);
    Box aligned = window;  // a multiple-of-8 window that takes the vector path where the shard allows
    aligned.offset[n - 1] = extent[n - 1] >= 16 ? 8 : 0;
    aligned.extent[n - 1] = extent[n - 1] >= 16 ? (extent[n - 1] - 8) / 8 * 8 : extent[n - 1];
    out.push_back(aligned);
    Box row{Dims::zeros(n), extent};
    for (int d = 0; d < n - 1; ++d) {
      row.offset[d] = extent[d] / 2;
      row.extent[d] = 1;
    }
    out.push_back(row);
    return out;
  }

  std::vector<void*> owned_;
};

TEST_F(CudaDequant, ShardsMatchTheHostReference) {
  check_shard(Dims{256, 256}, Box{Dims{0, 0}, Dims{256, 256}});
  check_shard(Dims{200, 256}, Box{Dims{50, 0}, Dims{50, 256}});     // rows inside one block
  check_shard(Dims{300, 260}, Box{Dims{100, 7}, Dims{150, 250}});   // both dims cross blocks
  check_shard(Dims{4, 256, 384}, Box{Dims{2, 0, 128}, Dims{2, 256, 256}});  // grouped experts
  check_shard(Dims{3, 129, 129}, Box{Dims{0, 1, 1}, Dims{3, 128, 128}});
  check_shard(Dims{8, 64}, Box{Dims{8, 0}, Dims{0, 64}});            // an empty shard
}

// Every finite e4m3 byte at 256 scales: a [2048, 256] tensor whose 16 x 2 blocks each have their own
// scale; pattern bytes cover all values many times over.
TEST_F(CudaDequant, EveryValueAtManyScales) {
  check_shard(Dims{2048, 256}, Box{Dims{0, 0}, Dims{2048, 256}});
  check_shard(Dims{16, 2048, 256}, Box{Dims{0, 0, 0}, Dims{16, 2048, 256}});
}

}  // namespace
}  // namespace reshard
