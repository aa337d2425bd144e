// CudaBatchCopy (lib/exec/src/cuda_batch_copy.h) against host_copy_box, byte for byte: many random
// boxes per launch (ranks 0..4, element sizes 1/2/4/8, odd tensor placements so every vector width
// is reached, empty boxes), the copy-engine split for large contiguous copies, launches cut at the
// grid limit, descriptor buffers reused while earlier launches may still run, and fan-outs (one source
// box into many destinations). Each copy writes
// its own tensor of one destination arena, so the copies of a launch never overlap (the contract).
// Skips without a device; argument checks run without one.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda_batch_copy.h"
#include "gpu_test_support.h"
#include "reshard/core/error.h"
#include "memory.h"

namespace reshard {
namespace {

constexpr int64_t kNeverMemcpy = std::numeric_limits<int64_t>::max();

using gpu_test::check;

// One copy: a source tensor at src_at in the source arena, a destination tensor at dst_at in the
// destination arena (disjoint from every other copy's).
struct Copy {
  Dims src_shape, src_offset, dst_shape, dst_offset, extent;
  int elem = 1;
  int64_t src_at = 0, dst_at = 0;
  std::string str() const {
    return "src " + src_shape.str() + " at " + src_offset.str() + " (arena +" + std::to_string(src_at) +
           ") -> dst " + dst_shape.str() + " at " + dst_offset.str() + " (arena +" + std::to_string(dst_at) +
           "), extent " + extent.str() + ", elem " + std::to_string(elem);
  }
};

using DeviceArena = gpu_test::DeviceBuffer;

// Copies laid out in two arenas, with host reference results.
struct Batch {
  std::vector<Copy> copies;
  std::vector<uint8_t> src, dst, want;  // host arenas; want = dst after every copy (host_copy_box)
};

class CudaBatchCopyTest : public testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = gpu_test::no_device_reason(); !why.empty()) GTEST_SKIP() << why;
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaStreamCreateWithFlags(&other_, cudaStreamNonBlocking), "cudaStreamCreate");
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    if (other_) cudaStreamDestroy(other_);
  }

  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  std::vector<uint8_t> random_bytes(int64_t n) {
    std::vector<uint8_t> v(static_cast<size_t>(n));
    for (auto& b : v) b = static_cast<uint8_t>(rng_());
    return v;
  }
  // Where the next tensor starts: a 256-byte aligned cursor plus 0..15 bytes half the time, so
  // tensors start at every alignment (and so reach every vector width).
  int64_t place(int64_t& cursor, int64_t bytes) {
    cursor = (cursor + 255) / 256 * 256;
    const int64_t at = cursor + (uniform(0, 1) ? 0 : uniform(0, 15));
    cursor = at + bytes;
    return at;
  }
  // A random shape (dims 1..9, sometimes a long last dim) of at most max_bytes.
  Dims random_shape(int rank, int elem, int64_t max_bytes) {
    while (true) {
      Dims s = Dims::zeros(rank);
      for (int i = 0; i < rank; ++i) s[i] = uniform(1, 9);
      if (rank > 0 && uniform(0, 3) == 0) s[rank - 1] = uniform(100, 3000);
      if (s.product() * elem <= max_bytes) return s;
    }
  }
  // A random copy; one in `empty_every` (0: none) has an empty box (a zero extent).
  Copy random_copy(int64_t& src_cursor, int64_t& dst_cursor, int64_t max_bytes, int empty_every) {
    Copy c;
    const int rank = static_cast<int>(uniform(0, 4));
    c.elem = 1 << uniform(0, 3);
    c.src_shape = random_shape(rank, c.elem, max_bytes);
    c.src_offset = Dims::zeros(rank);
    c.extent = Dims::zeros(rank);
    for (int i = 0; i < rank; ++i) {  // often whole dims, so rows merge; else a random sub-range
      if (uniform(0, 2) == 0) {
        c.extent[i] = c.src_shape[i];
      } else {
        c.src_offset[i] = uniform(0, c.src_shape[i] - 1);
        c.extent[i] = uniform(1, c.src_shape[i] - c.src_offset[i]);
      }
    }
    if (empty_every > 0 && rank > 0 && uniform(1, empty_every) == 1) c.extent[uniform(0, rank - 1)] = 0;
    c.dst_shape = Dims::zeros(rank);
    c.dst_offset = Dims::zeros(rank);
    for (int i = 0; i < rank; ++i) {
      c.dst_shape[i] = c.extent[i] + (uniform(0, 1) ? 0 : uniform(1, 4));
      c.dst_offset[i] = uniform(0, c.dst_shape[i] - c.extent[i]);
    }
    c.src_at = place(src_cursor, c.src_shape.product() * c.elem);
    c.dst_at = place(dst_cursor, c.dst_shape.product() * c.elem);
    return c;
  }
  Batch random_batch(int n, int64_t max_bytes, int empty_every) {
    Batch b;
    int64_t src_cursor = 0, dst_cursor = 0;
    for (int i = 0; i < n; ++i)
      b.copies.push_back(random_copy(src_cursor, dst_cursor, max_bytes, empty_every));
    finish(b, src_cursor, dst_cursor);
    return b;
  }
  void finish(Batch& b, int64_t src_bytes, int64_t dst_bytes) {
    b.src = random_bytes(src_bytes + 16);
    b.dst = random_bytes(dst_bytes + 16);
    b.want = b.dst;
    for (const Copy& c : b.copies)
      host_copy_box(b.src.data() + c.src_at, c.src_shape, c.src_offset, b.want.data() + c.dst_at, c.dst_shape,
                    c.dst_offset, c.extent, c.elem);
  }
  static void add(CudaBatchCopy& batch, const Batch& b, const DeviceArena& src, const DeviceArena& dst) {
    for (const Copy& c : b.copies)
      batch.add(src.get() + c.src_at, c.src_shape, c.src_offset, dst.get() + c.dst_at, c.dst_shape,
                c.dst_offset, c.extent, c.elem);
  }
  // Names the first copy whose destination tensor differs from the host's.
  static void expect_equal(const Batch& b, const std::vector<uint8_t>& got) {
    ASSERT_EQ(got.size(), b.want.size());
    if (got == b.want) return;
    for (const Copy& c : b.copies) {
      const int64_t bytes = c.dst_shape.product() * c.elem;
      for (int64_t i = 0; i < bytes; ++i)
        if (got[static_cast<size_t>(c.dst_at + i)] != b.want[static_cast<size_t>(c.dst_at + i)])
          FAIL() << "byte " << i << " of the destination of " << c.str();
    }
    FAIL() << "a byte outside every destination tensor changed";
  }
  // Uploads b, runs it through `batch` in one launch on stream_, and compares.
  void run_and_compare(CudaBatchCopy& batch, const Batch& b) {
    DeviceArena src(static_cast<int64_t>(b.src.size())), dst(static_cast<int64_t>(b.dst.size()));
    src.upload(b.src);
    dst.upload(b.dst);
    add(batch, b, src, dst);
    batch.launch(stream_);
    EXPECT_EQ(batch.pending(), 0);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    expect_equal(b, dst.download());
  }

  std::mt19937_64 rng_{20261129};
  cudaStream_t stream_ = nullptr, other_ = nullptr;
};

TEST_F(CudaBatchCopyTest, ManyRandomBoxesInOneKernelMatchHost) {
  for (int round = 0; round < 8; ++round) {
    const Batch b = random_batch(400, int64_t{256} << 10, 10);
    CudaBatchCopy batch(kNeverMemcpy);
    int64_t nonempty = 0;
    for (const Copy& c : b.copies) nonempty += c.extent.product() > 0;
    run_and_compare(batch, b);
    EXPECT_EQ(batch.memcpys_issued(), 0);
    EXPECT_EQ(batch.kernels_launched(), nonempty > 0 ? 1 : 0);
  }
}

TEST_F(CudaBatchCopyTest, LargeContiguousCopiesGoToTheCopyEngine) {
  // memcpy from 1 byte: every contiguous copy is a cudaMemcpyAsync, the strided rest one kernel.
  const Batch b = random_batch(300, int64_t{256} << 10, 10);
  CudaBatchCopy batch(1);
  run_and_compare(batch, b);
  EXPECT_GT(batch.memcpys_issued(), 0);
  EXPECT_LE(batch.kernels_launched(), 1);
}

TEST_F(CudaBatchCopyTest, LaunchesAreCutAtTheGridLimit) {
  const Batch b = random_batch(200, int64_t{256} << 10, 0);
  CudaBatchCopy batch(kNeverMemcpy, 3);  // at most 3 blocks per launch: many launches
  run_and_compare(batch, b);
  EXPECT_GT(batch.kernels_launched(), 200 / 3 / 2);
}

TEST_F(CudaBatchCopyTest, ThousandsOfSmallPiecesAsInMiscBuckets) {
  // A bucket's worth of 1-D params of a few bytes to a few KiB, back to back at odd offsets on both
  // sides: more descriptors than the first descriptor buffer holds.
  Batch b;
  int64_t src_at = 0, dst_at = 3;
  for (int i = 0; i < 6000; ++i) {
    Copy c;
    c.elem = 1 << uniform(0, 3);
    const int64_t n = uniform(0, 7) == 0 ? uniform(256, 2048) : uniform(1, 64);
    c.src_shape = {n + uniform(0, 3)};
    c.src_offset = {uniform(0, c.src_shape[0] - n)};
    c.extent = {n};
    c.dst_shape = {n};
    c.dst_offset = {0};
    c.src_at = src_at;
    c.dst_at = dst_at;
    src_at += c.src_shape[0] * c.elem;
    dst_at += n * c.elem;
    b.copies.push_back(c);
  }
  finish(b, src_at, dst_at);
  CudaBatchCopy batch(kNeverMemcpy);
  run_and_compare(batch, b);
  EXPECT_EQ(batch.kernels_launched(), 1);
}

TEST_F(CudaBatchCopyTest, LongRowsAndManyRowsUseManyBlocks) {
  // One 40 MiB + 5 byte contiguous row at odd offsets (bytes only, grid-stride over a full wave), a
  // strided box of 600k short rows, and the same pair again through the copy engine for the row.
  for (int64_t memcpy_min : {kNeverMemcpy, int64_t{8} << 20}) {
    Batch b;
    Copy row;
    row.elem = 1;
    row.src_shape = {(int64_t{40} << 20) + 9};
    row.src_offset = {3};
    row.extent = {(int64_t{40} << 20) + 5};
    row.dst_shape = row.extent;
    row.dst_offset = {0};
    row.src_at = 0;
    row.dst_at = 7;
    Copy rows;
    rows.elem = 2;
    rows.src_shape = {600000, 24};
    rows.src_offset = {0, 4};
    rows.extent = {600000, 12};
    rows.dst_shape = {600001, 12};
    rows.dst_offset = {1, 0};
    rows.src_at = (row.src_shape[0] + 255) / 256 * 256;
    rows.dst_at = (row.dst_at + row.dst_shape[0] + 255) / 256 * 256 + 8;
    b.copies = {row, rows};
    finish(b, rows.src_at + rows.src_shape.product() * 2, rows.dst_at + rows.dst_shape.product() * 2);
    CudaBatchCopy batch(memcpy_min);
    run_and_compare(batch, b);
    EXPECT_EQ(batch.memcpys_issued(), memcpy_min == kNeverMemcpy ? 0 : 1);
  }
}

TEST_F(CudaBatchCopyTest, ReusesDescriptorBuffersOnlyAfterTheirLaunchesFinish) {
  // Launches of growing and shrinking sizes on two streams, no sync between them: a descriptor buffer
  // reused while a kernel still read it would corrupt that launch's copies.
  const std::vector<int> sizes = {5, 3000, 40, 7000, 1, 2500, 300, 9000};
  std::vector<Batch> batches;
  for (int n : sizes) batches.push_back(random_batch(n, int64_t{16} << 10, 20));
  std::vector<std::unique_ptr<DeviceArena>> src, dst;
  CudaBatchCopy batch(kNeverMemcpy);
  for (size_t i = 0; i < batches.size(); ++i) {
    src.push_back(std::make_unique<DeviceArena>(static_cast<int64_t>(batches[i].src.size())));
    dst.push_back(std::make_unique<DeviceArena>(static_cast<int64_t>(batches[i].dst.size())));
    src.back()->upload(batches[i].src);
    dst.back()->upload(batches[i].dst);
  }
  for (size_t i = 0; i < batches.size(); ++i) {
    add(batch, batches[i], *src[i], *dst[i]);
    batch.launch(i % 2 ? other_ : stream_);
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  for (size_t i = 0; i < batches.size(); ++i) {
    SCOPED_TRACE("launch " + std::to_string(i) + " of " + std::to_string(sizes[i]) + " copies");
    expect_equal(batches[i], dst[i]->download());
  }
}

TEST_F(CudaBatchCopyTest, FanOutsWriteEveryDestinationFromOneRead) {
  // Random boxes each copied into 1..19 destinations (more than kMaxFan: split into several
  // descriptors), each destination its own tensor of one shape at odd placements; plus a 24 MiB
  // contiguous row to 3 destinations, which must take the kernel (a memcpy would re-read).
  for (int64_t memcpy_min : {kNeverMemcpy, int64_t{8} << 20}) {
    Batch b;
    std::vector<std::vector<int64_t>> fans;  // per source copy: where its destinations start
    int64_t src_cursor = 0, dst_cursor = 0;
    for (int i = 0; i < 60; ++i) {
      Copy c = random_copy(src_cursor, dst_cursor, int64_t{64} << 10, 10);
      std::vector<int64_t> at{c.dst_at};
      const int fan = static_cast<int>(uniform(1, 19));
      for (int f = 1; f < fan; ++f) at.push_back(place(dst_cursor, c.dst_shape.product() * c.elem));
      fans.push_back(at);
      b.copies.push_back(c);
    }
    Copy row;
    row.elem = 1;
    row.src_shape = row.extent = row.dst_shape = {int64_t{24} << 20};
    row.src_offset = row.dst_offset = {0};
    row.src_at = place(src_cursor, row.src_shape[0]);
    row.dst_at = place(dst_cursor, row.dst_shape[0]);
    std::vector<int64_t> row_at{row.dst_at};
    for (int f = 1; f < 3; ++f) row_at.push_back(place(dst_cursor, row.dst_shape[0]));
    b.copies.push_back(row);
    fans.push_back(row_at);
    // Every destination is a copy of its own: the host reference and the byte check see them all.
    Batch expanded;
    for (size_t i = 0; i < b.copies.size(); ++i)
      for (int64_t at : fans[i]) {
        Copy c = b.copies[i];
        c.dst_at = at;
        expanded.copies.push_back(c);
      }
    finish(expanded, src_cursor, dst_cursor);
    DeviceArena src(static_cast<int64_t>(expanded.src.size())), dst(static_cast<int64_t>(expanded.dst.size()));
    src.upload(expanded.src);
    dst.upload(expanded.dst);
    CudaBatchCopy batch(memcpy_min);
    int64_t descriptors = 0;
    for (size_t i = 0; i < b.copies.size(); ++i) {
      const Copy& c = b.copies[i];
      std::vector<void*> dsts;
      for (int64_t at : fans[i]) dsts.push_back(dst.get() + at);
      batch.add_fanout(src.get() + c.src_at, c.src_shape, c.src_offset, dsts, c.dst_shape, c.dst_offset, c.extent,
                       c.elem);
      if (c.extent.product() > 0)
        descriptors += (static_cast<int64_t>(dsts.size()) + CudaBatchCopy::kMaxFan - 1) / CudaBatchCopy::kMaxFan;
    }
    EXPECT_EQ(batch.pending(), descriptors);
    batch.launch(stream_);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    EXPECT_EQ(batch.memcpys_issued(), 0);
    EXPECT_EQ(batch.kernels_launched(), 1);
    expect_equal(expanded, dst.download());
  }
}

// Without a device too: nothing below reaches CUDA.
TEST(CudaBatchCopyArgs, EmptyBoxesAreDroppedAndEmptyLaunchesDoNothing) {
  CudaBatchCopy batch;
  batch.add(nullptr, {4, 0}, {0, 0}, nullptr, {4, 0}, {0, 0}, {4, 0}, 2);
  batch.add(nullptr, {3, 5}, {1, 2}, nullptr, {3, 5}, {0, 0}, {2, 0}, 8);
  EXPECT_EQ(batch.pending(), 0);
  EXPECT_EQ(batch.pending_bytes(), 0);
  batch.launch(nullptr);
  EXPECT_EQ(batch.kernels_launched(), 0);
  EXPECT_EQ(batch.memcpys_issued(), 0);
}

TEST(CudaBatchCopyArgs, RejectsBadBoxesBeforeQueueingThem) {
  CudaBatchCopy batch;
  uint8_t host[64];
  try {
    batch.add(host, {4, 8}, {2, 0}, host, {4, 8}, {0, 0}, {3, 8}, 1);  // rows 2..4 of a 4-row source
    FAIL() << "no error for a box past its source";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Runtime);
    EXPECT_NE(std::string(e.what()).find("[4, 8]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(batch.add(host, {4, 8}, {0, 0}, host, {4}, {0}, {4, 8}, 1), Error);           // ranks differ
  EXPECT_THROW(batch.add(host, {4, 8}, {0, 0}, host, {4, 8}, {0, 0}, {4, 8}, 0), Error);     // elem_size 0
  EXPECT_THROW(batch.add(nullptr, {4, 8}, {0, 0}, host, {4, 8}, {0, 0}, {1, 1}, 1), Error);  // null source
  EXPECT_THROW(CudaBatchCopy(CudaBatchCopy::kDefaultMemcpyMinBytes, 0), Error);              // no blocks
  EXPECT_THROW(batch.add_fanout(host, {4, 8}, {0, 0}, {}, {4, 8}, {0, 0}, {1, 1}, 1), Error);  // no destination
  EXPECT_THROW(batch.add_fanout(host, {4, 8}, {0, 0}, {host, nullptr}, {4, 8}, {0, 0}, {1, 1}, 1), Error);
  EXPECT_EQ(batch.pending(), 0);
  batch.add(host, {4, 8}, {1, 2}, host + 32, {2, 8}, {0, 0}, {2, 4}, 1);
  EXPECT_EQ(batch.pending(), 1);
  EXPECT_EQ(batch.pending_bytes(), 8);
  batch.add_fanout(host, {4, 8}, {1, 2}, {host + 32, host + 48}, {2, 8}, {0, 0}, {2, 4}, 1);  // writes 2 x 8
  EXPECT_EQ(batch.pending(), 2);
  EXPECT_EQ(batch.pending_bytes(), 24);
  batch.clear();
  EXPECT_EQ(batch.pending(), 0);
}

}  // namespace
}  // namespace reshard
