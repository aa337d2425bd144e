// Device region ops (cuda_region_ops.h) against the host reference (region_ops.h), byte for byte, on
// random regions: ranks 0..4, element sizes 1/2/4/8, storage offsets and misaligned base pointers
// (to reach the unaligned heads/tails and the narrow-vector copy paths). Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_support.h"
#include "reshard/core/error.h"
#include "reshard/core/pattern.h"
#include "cuda_region_ops.h"
#include "memory.h"
#include "region_ops.h"

namespace reshard {
namespace {

using gpu_test::check;
using gpu_test::DeviceBuffer;

std::string describe(const RegionSpec& r) {
  return "storage " + r.storage_shape.str() + " at " + r.storage_offset.str() + ", extent " + r.extent.str() +
         ", global " + r.global_shape.str() + " at " + r.global_offset.str() + ", elem " +
         std::to_string(r.elem_size);
}

class CudaRegionOps : public testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = gpu_test::no_device_reason(); !why.empty()) GTEST_SKIP() << why;
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");
    check(cudaMalloc(&counter_, sizeof(unsigned long long)), "cudaMalloc counter");
  }
  void TearDown() override {
    if (counter_) cudaFree(counter_);
    if (stream_) cudaStreamDestroy(stream_);
  }
  void sync() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }
  void zero_counter() { check(cudaMemsetAsync(counter_, 0, sizeof(*counter_), stream_), "zero counter"); }
  unsigned long long read_counter() {
    unsigned long long n = 0;
    check(cudaMemcpyAsync(&n, counter_, sizeof(n), cudaMemcpyDeviceToHost, stream_), "read counter");
    sync();
    return n;
  }
  int64_t device_count_wrong(const DeviceBuffer& storage, const RegionSpec& r) {
    zero_counter();
    cuda_count_wrong(storage.get(), r, counter_, stream_);
    return static_cast<int64_t>(read_counter());
  }

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  int elem_size() { return 1 << uniform(0, 3); }
  std::vector<uint8_t> random_bytes(int64_t n) {
    std::vector<uint8_t> v(static_cast<size_t>(n));
    for (auto& b : v) b = static_cast<uint8_t>(rng_());
    return v;
  }
  // A random shape of `rank` dims; every few shapes gets a long last dim (multi-task rows).
  Dims random_shape(int rank) {
    Dims s = Dims::zeros(rank);
    for (int i = 0; i < rank; ++i) s[i] = uniform(1, 9);
    if (rank > 0 && uniform(0, 3) == 0) s[rank - 1] = uniform(100, 3000);
    return s;
  }
  // A random non-empty box inside `shape`: often whole dims, so contiguous merges happen.
  Box random_box(const Dims& shape) {
    Box b{Dims::zeros(shape.n), Dims::zeros(shape.n)};
    for (int i = 0; i < shape.n; ++i) {
      if (uniform(0, 2) == 0) {
        b.extent[i] = shape[i];
      } else {
        b.offset[i] = uniform(0, shape[i] - 1);
        b.extent[i] = uniform(1, shape[i] - b.offset[i]);
      }
    }
    return b;
  }
  // A region of a random global box, placed at a random offset inside a storage at least as large.
  RegionSpec random_region() {
    RegionSpec r;
    const int rank = static_cast<int>(uniform(0, 4));
    r.global_shape = random_shape(rank);
    const Box g = random_box(r.global_shape);
    r.global_offset = g.offset;
    r.extent = g.extent;
    r.storage_shape = Dims::zeros(rank);
    r.storage_offset = Dims::zeros(rank);
    for (int i = 0; i < rank; ++i) {
      r.storage_shape[i] = r.extent[i] + (uniform(0, 1) ? 0 : uniform(1, 5));
      r.storage_offset[i] = uniform(0, r.storage_shape[i] - r.extent[i]);
    }
    r.elem_size = elem_size();
    r.seed = rng_();
    return r;
  }

  std::mt19937_64 rng_{20240611};
  cudaStream_t stream_ = nullptr;
  unsigned long long* counter_ = nullptr;
};

constexpr int kCases = 300;

TEST_F(CudaRegionOps, FillMatchesHostByteForByte) {
  for (int c = 0; c < kCases; ++c) {
    const RegionSpec r = random_region();
    SCOPED_TRACE(describe(r));
    const int64_t bytes = r.storage_shape.product() * r.elem_size;
    std::vector<uint8_t> want(static_cast<size_t>(bytes), kPoisonByte);
    host_fill_pattern(want.data(), r);
    DeviceBuffer storage(bytes, static_cast<int>(uniform(0, 15)));
    storage.upload(std::vector<uint8_t>(want.size(), kPoisonByte));
    cuda_fill_pattern(storage.get(), r, stream_);
    sync();
    ASSERT_EQ(storage.download(), want);  // region patterned, everything else untouched
    ASSERT_EQ(device_count_wrong(storage, r), 0);
  }
}

TEST_F(CudaRegionOps, LargeContiguousRegionUsesManyBlocks) {
  // 1-D, 48 MiB + 7 bytes at an odd global byte offset: one long row split over the whole grid.
  RegionSpec r;
  r.elem_size = 1;
  r.global_shape = {(int64_t{48} << 20) + 20};
  r.global_offset = {13};
  r.extent = {(int64_t{48} << 20) + 7};
  r.storage_shape = r.extent;
  r.storage_offset = {0};
  r.seed = param_seed("layers.0.mlp.weight");
  const int64_t bytes = r.extent[0];
  std::vector<uint8_t> want(static_cast<size_t>(bytes));
  host_fill_pattern(want.data(), r);
  DeviceBuffer storage(bytes, 3);
  cuda_fill_pattern(storage.get(), r, stream_);
  sync();
  ASSERT_EQ(storage.download(), want);
  // Plant corruption at the ends and spread through the middle.
  std::vector<uint8_t> bad = want;
  const std::vector<int64_t> at = {0, 1, 15, bytes / 3, bytes / 2, bytes - 16, bytes - 1};
  for (int64_t i : at) bad[static_cast<size_t>(i)] ^= 0x5A;
  storage.upload(bad);
  EXPECT_EQ(device_count_wrong(storage, r), static_cast<int64_t>(at.size()));
  EXPECT_EQ(host_count_wrong(bad.data(), r), static_cast<int64_t>(at.size()));
}

TEST_F(CudaRegionOps, CountWrongMatchesHostOnPlantedCorruption) {
  for (int c = 0; c < kCases; ++c) {
    const RegionSpec r = random_region();
    SCOPED_TRACE(describe(r));
    const int64_t bytes = r.storage_shape.product() * r.elem_size;
    std::vector<uint8_t> data(static_cast<size_t>(bytes), kPoisonByte);
    host_fill_pattern(data.data(), r);
    // Corrupt random bytes anywhere in the storage; only those inside the region count.
    const int64_t planted = uniform(0, 20);
    for (int64_t i = 0; i < planted; ++i)
      data[static_cast<size_t>(uniform(0, bytes - 1))] ^= 1 << uniform(0, 7);
    const int64_t want = host_count_wrong(data.data(), r);
    DeviceBuffer storage(bytes, static_cast<int>(uniform(0, 15)));
    storage.upload(data);
    ASSERT_EQ(device_count_wrong(storage, r), want);
  }
}

TEST_F(CudaRegionOps, CountWrongOfPoisonedStorageMatchesHost) {
  for (int c = 0; c < kCases / 3; ++c) {
    const RegionSpec r = random_region();
    SCOPED_TRACE(describe(r));
    const std::vector<uint8_t> poison(static_cast<size_t>(r.storage_shape.product() * r.elem_size),
                                      kPoisonByte);
    DeviceBuffer storage(static_cast<int64_t>(poison.size()), static_cast<int>(uniform(0, 15)));
    storage.upload(poison);
    const int64_t want = host_count_wrong(poison.data(), r);
    EXPECT_GT(want, 0);
    ASSERT_EQ(device_count_wrong(storage, r), want);
  }
}

TEST_F(CudaRegionOps, PackAndUnpackMatchHostAndRoundTrip) {
  for (int c = 0; c < kCases; ++c) {
    const int rank = static_cast<int>(uniform(0, 4));
    const Dims shape = random_shape(rank);
    const Box box = random_box(shape);
    const int elem = elem_size();
    SCOPED_TRACE("shape " + shape.str() + ", box " + box.str() + ", elem " + std::to_string(elem));
    const int64_t tensor_bytes = shape.product() * elem, box_bytes = box.elements() * elem;
    const std::vector<uint8_t> tensor = random_bytes(tensor_bytes);

    std::vector<uint8_t> want_packed(static_cast<size_t>(box_bytes));
    host_pack(tensor.data(), shape, box.offset, box.extent, elem, want_packed.data());
    DeviceBuffer dev_tensor(tensor_bytes, static_cast<int>(uniform(0, 1)) * elem);
    DeviceBuffer dev_packed(box_bytes, static_cast<int>(uniform(0, 2)) * 8);
    dev_tensor.upload(tensor);
    cuda_pack(dev_tensor.get(), shape, box.offset, box.extent, elem, dev_packed.get(), stream_);
    sync();
    ASSERT_EQ(dev_packed.download(), want_packed);

    // Unpack a fresh dense buffer into the tensor: only the box changes, exactly as on the host.
    const std::vector<uint8_t> dense = random_bytes(box_bytes);
    std::vector<uint8_t> want_tensor = tensor;
    host_unpack(dense.data(), want_tensor.data(), shape, box.offset, box.extent, elem);
    dev_packed.upload(dense);
    cuda_unpack(dev_packed.get(), dev_tensor.get(), shape, box.offset, box.extent, elem, stream_);
    sync();
    ASSERT_EQ(dev_tensor.download(), want_tensor);

    // And packing it again gives the dense buffer back.
    DeviceBuffer again(box_bytes, 0);
    cuda_pack(dev_tensor.get(), shape, box.offset, box.extent, elem, again.get(), stream_);
    sync();
    ASSERT_EQ(again.download(), dense);
  }
}

TEST_F(CudaRegionOps, CopyBoxBetweenTensorsMatchesHost) {
  for (int c = 0; c < kCases; ++c) {
    const int rank = static_cast<int>(uniform(0, 4));
    const Dims src_shape = random_shape(rank);
    const Box src_box = random_box(src_shape);
    Dims dst_shape = Dims::zeros(rank), dst_offset = Dims::zeros(rank);
    for (int i = 0; i < rank; ++i) {
      dst_shape[i] = src_box.extent[i] + (uniform(0, 1) ? 0 : uniform(1, 4));
      dst_offset[i] = uniform(0, dst_shape[i] - src_box.extent[i]);
    }
    const int elem = elem_size();
    SCOPED_TRACE("src " + src_shape.str() + " box " + src_box.str() + " -> dst " + dst_shape.str() + " at " +
                 dst_offset.str() + ", elem " + std::to_string(elem));
    const std::vector<uint8_t> src = random_bytes(src_shape.product() * elem);
    const std::vector<uint8_t> dst = random_bytes(dst_shape.product() * elem);
    std::vector<uint8_t> want = dst;
    host_copy_box(src.data(), src_shape, src_box.offset, want.data(), dst_shape, dst_offset, src_box.extent,
                  elem);
    DeviceBuffer dev_src(static_cast<int64_t>(src.size()), static_cast<int>(uniform(0, 15)));
    DeviceBuffer dev_dst(static_cast<int64_t>(dst.size()), static_cast<int>(uniform(0, 15)));
    dev_src.upload(src);
    dev_dst.upload(dst);
    cuda_copy_box(dev_src.get(), src_shape, src_box.offset, dev_dst.get(), dst_shape, dst_offset,
                  src_box.extent, elem, stream_);
    sync();
    ASSERT_EQ(dev_dst.download(), want);
  }
}

TEST_F(CudaRegionOps, CountDifferentCountsBytesInsideTheBoxOnly) {
  for (int c = 0; c < kCases; ++c) {
    const int rank = static_cast<int>(uniform(0, 4));
    const Dims shape = random_shape(rank);
    const Box box = random_box(shape);
    const int elem = elem_size();
    SCOPED_TRACE("shape " + shape.str() + ", box " + box.str() + ", elem " + std::to_string(elem));
    const int64_t bytes = shape.product() * elem;
    const std::vector<uint8_t> a = random_bytes(bytes);
    std::vector<uint8_t> b = a;
    const int64_t changes = uniform(0, 20);
    for (int64_t i = 0; i < changes; ++i) b[static_cast<size_t>(uniform(0, bytes - 1))] ^= 1 << uniform(0, 7);
    // Host answer: compare the packed boxes.
    std::vector<uint8_t> pa(static_cast<size_t>(box.elements() * elem)), pb(pa.size());
    host_pack(a.data(), shape, box.offset, box.extent, elem, pa.data());
    host_pack(b.data(), shape, box.offset, box.extent, elem, pb.data());
    int64_t want = 0;
    for (size_t i = 0; i < pa.size(); ++i) want += pa[i] != pb[i];
    DeviceBuffer da(bytes, static_cast<int>(uniform(0, 15))), db(bytes, static_cast<int>(uniform(0, 15)));
    da.upload(a);
    db.upload(b);
    zero_counter();
    cuda_count_different(da.get(), db.get(), shape, box.offset, box.extent, elem, counter_, stream_);
    ASSERT_EQ(static_cast<int64_t>(read_counter()), want);
  }
}

TEST_F(CudaRegionOps, ZeroElementRegionsTouchNothing) {
  RegionSpec r;
  r.storage_shape = {4, 0, 6};
  r.storage_offset = {1, 0, 2};
  r.extent = {2, 0, 3};
  r.global_shape = {8, 0, 6};
  r.global_offset = {3, 0, 0};
  r.seed = 7;
  // A zero-element region may come with a null storage (nothing allocated for it).
  cuda_fill_pattern(nullptr, r, stream_);
  zero_counter();
  cuda_count_wrong(nullptr, r, counter_, stream_);
  EXPECT_EQ(read_counter(), 0u);

  // An empty box of a non-empty tensor: the tensor is untouched, nothing is read from `in`.
  const Dims shape = {3, 5};
  const std::vector<uint8_t> tensor = random_bytes(shape.product() * 4);
  DeviceBuffer dev(static_cast<int64_t>(tensor.size()), 0);
  dev.upload(tensor);
  cuda_unpack(nullptr, dev.get(), shape, {1, 2}, {2, 0}, 4, stream_);
  cuda_pack(dev.get(), shape, {3, 0}, {0, 5}, 4, nullptr, stream_);
  cuda_copy_box(dev.get(), shape, {0, 0}, nullptr, {0, 5}, {0, 0}, {0, 5}, 4, stream_);
  RegionSpec empty_in_storage{shape, {1, 1}, {2, 0}, shape, {1, 1}, 4, 9};
  cuda_fill_pattern(dev.get(), empty_in_storage, stream_);
  sync();
  EXPECT_EQ(dev.download(), tensor);
}

TEST_F(CudaRegionOps, ScalarRegion) {
  RegionSpec r;  // rank 0: one element
  r.elem_size = 8;
  r.seed = param_seed("scalar");
  std::vector<uint8_t> want(8, kPoisonByte);
  host_fill_pattern(want.data(), r);
  DeviceBuffer storage(8, 5);
  cuda_fill_pattern(storage.get(), r, stream_);
  sync();
  EXPECT_EQ(storage.download(), want);
  EXPECT_EQ(device_count_wrong(storage, r), 0);
}

// Argument validation and error reporting happen before any CUDA call needs a device, so the tests
// below run without one too.
TEST(CudaCheck, ThrowsRuntimeErrorNamingTheCallAndCudasMessage) {
  try {
    cuda_check(static_cast<int>(cudaErrorInvalidValue), "cudaMemcpyAsync(x)");
    FAIL() << "cuda_check did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Runtime);
    EXPECT_NE(std::string(e.what()).find("cudaMemcpyAsync(x)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(cudaGetErrorString(cudaErrorInvalidValue)), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(cuda_check(0, "nothing"));
}

TEST(CudaRegionOpsArgs, RejectsBoxesOutsideTheirTensors) {
  RegionSpec r;
  r.storage_shape = {4, 8};
  r.storage_offset = {2, 0};
  r.extent = {3, 8};  // rows 2..4 of a 4-row storage
  r.global_shape = {8, 8};
  r.global_offset = {0, 0};
  try {
    cuda_fill_pattern(nullptr, r, nullptr);
    FAIL() << "no error for a region past the storage";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Runtime);
    EXPECT_NE(std::string(e.what()).find("[4, 8]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cuda_pack(nullptr, {4, 8}, {0, 0}, {4}, 2, nullptr, nullptr), Error);       // rank mismatch
  EXPECT_THROW(cuda_unpack(nullptr, nullptr, {4, 8}, {0, 0}, {4, 8}, 0, nullptr), Error);  // elem_size 0
}

}  // namespace
}  // namespace reshard
