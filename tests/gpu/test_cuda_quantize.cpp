// Device MXFP8 quantizer (cuda_quantize.h) against the CPU reference
// (reshard/core/mxfp8.h), byte for byte: random BF16, adversarial blocks
// (zeros, BF16 subnormals, +-max, NaN/Inf, RNE ties), dense tensors and boxes
// inside larger (fused) storages, every BF16 value at every scale, misaligned
// buffers; each with both element conversions. Also the FP8-valid pattern of
// the fill/check kernels against the host fill. Skips without a device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_test_support.h"
#include "reshard/core/mxfp8.h"
#include "cuda_quantize.h"
#include "cuda_region_ops.h"
#include "region_ops.h"

namespace reshard {
namespace {

template <class T> class Dev {
public:
  explicit Dev(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(&p_, std::max<size_t>(n, 1) * sizeof(T)), cudaSuccess);
  }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev &) = delete;
  Dev &operator=(const Dev &) = delete;
  T *get() const { return p_; }
  void put(const std::vector<T> &h) {
    EXPECT_EQ(cudaMemcpy(p_, h.data(), n_ * sizeof(T), cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  std::vector<T> take() const {
    std::vector<T> h(n_);
    EXPECT_EQ(cudaMemcpy(h.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return h;
  }

private:
  T *p_ = nullptr;
  size_t n_;
};

class CudaQuantize : public testing::Test {
protected:
  void SetUp() override {
    if (const std::string why = gpu_test::no_device_reason(); !why.empty()) GTEST_SKIP() << why;
  }

  // Quantizes `in` (dense [extent]) into a box of (shape, offset) on the device, with each element
  // conversion, and on the host, and compares every byte of both storages (poisoned alike outside
  // the box). in_shift / values_shift move the device buffers off their allocation's alignment (in
  // BF16 elements / bytes), which takes the scalar path.
  void compare(const std::vector<uint16_t> &in, const Dims &extent,
               const Dims &shape, const Dims &offset, size_t in_shift = 0,
               size_t values_shift = 0) {
    const Dims sshape = mxfp8_scale_shape(shape);
    const size_t nv = static_cast<size_t>(shape.product()),
                 ns = static_cast<size_t>(sshape.product());
    std::vector<uint8_t> want_v(nv, 0xA5), want_s(ns, 0xA5);
    mxfp8_quantize_into(in.data(), extent, want_v.data(), want_s.data(), shape,
                        offset);
    Dev<uint16_t> d_in(in.size() + in_shift);
    Dev<uint8_t> d_v(nv + values_shift), d_s(ns);
    std::vector<uint16_t> shifted(in_shift, 0);
    shifted.insert(shifted.end(), in.begin(), in.end());
    d_in.put(shifted);
    for (const Mxfp8Convert convert :
         {Mxfp8Convert::kHardware, Mxfp8Convert::kInteger}) {
      const char *name =
          convert == Mxfp8Convert::kHardware ? "hardware" : "integer";
      d_v.put(std::vector<uint8_t>(nv + values_shift, 0xA5));
      d_s.put(std::vector<uint8_t>(ns, 0xA5));
      cuda_quantize_mxfp8(d_in.get() + in_shift, extent,
                          d_v.get() + values_shift, d_s.get(), shape, offset,
                          nullptr, convert);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<uint8_t> got_v = d_v.take();
      got_v.erase(got_v.begin(),
                  got_v.begin() + static_cast<std::ptrdiff_t>(values_shift));
      const std::vector<uint8_t> got_s = d_s.take();
      size_t bad = 0, first = nv;
      for (size_t i = 0; i < nv; ++i)
        if (got_v[i] != want_v[i])
          ++bad, first = std::min(first, i);
      EXPECT_EQ(bad, 0u) << name << ": values differ, first at " << first
                         << " (input " << std::hex
                         << (first < in.size() ? in[first] : 0) << std::dec
                         << ", " << int(got_v[first]) << " vs "
                         << int(want_v[first]) << "), box " << offset.str()
                         << " " << extent.str() << " of " << shape.str();
      EXPECT_EQ(got_s, want_s) << name << ": scales differ, box "
                               << offset.str() << " " << extent.str() << " of "
                               << shape.str();
    }
  }
};

TEST_F(CudaQuantize, RandomBf16Dense) {
  std::mt19937_64 rng(11);
  for (const Dims &e : {Dims{32}, Dims{7, 64}, Dims{3, 5, 96},
                        Dims{2, 3, 4, 256}, Dims{1023, 32 * 33}}) {
    std::vector<uint16_t> in(static_cast<size_t>(e.product()));
    for (auto &h : in)
      h = static_cast<uint16_t>(rng());
    compare(in, e, e, Dims::zeros(e.n));
  }
}

TEST_F(CudaQuantize, AdversarialBlocks) {
  // One 32-element block per row: zeros, -0, BF16 subnormals, +-max finite,
  // NaN/Inf mixes, RNE ties at X = 1, values that saturate, and a block of
  // similar magnitudes.
  const std::vector<std::vector<uint16_t>> rows = {
      std::vector<uint16_t>(32, 0x0000),
      std::vector<uint16_t>(32, 0x8000),
      std::vector<uint16_t>(32, 0x0001),
      {0x0001, 0x8001, 0x0040, 0x007F, 0x0080, 0x8080},
      std::vector<uint16_t>(32, 0x7F7F),
      {0x7F7F, 0xFF7F, 0x3F80, 0x0001},
      {0x7FC0, 0xFFC0, 0x7F80, 0xFF80, 0x7F81, 0x3F80},
      std::vector<uint16_t>(32, 0x7FC0),
      std::vector<uint16_t>(32, 0xFF80),
      {0x4380 /*256*/, 0x3F88 /*1.0625*/, 0x3F98 /*1.1875*/, 0x3A80 /*2^-10*/,
       0x3AC0 /*3*2^-11*/},
      {0x43F0 /*480*/, 0xC3FA /*-500*/, 0x43E0 /*448*/, 0x3F80},
  };
  std::vector<uint16_t> in;
  for (auto r : rows) {
    r.resize(32, 0x3C00); // pad with 2^-7
    in.insert(in.end(), r.begin(), r.end());
  }
  const Dims e{static_cast<int64_t>(rows.size()), 32};
  compare(in, e, e, Dims{0, 0});
  // Every BF16 bit pattern once, with amax blocks of every magnitude.
  std::vector<uint16_t> all(65536);
  for (int i = 0; i < 65536; ++i)
    all[static_cast<size_t>(i)] = static_cast<uint16_t>(i);
  compare(all, Dims{2048, 32}, Dims{2048, 32}, Dims{0, 0});
  std::mt19937_64 rng(5);
  std::shuffle(all.begin(), all.end(), rng);
  compare(all, Dims{64, 1024}, Dims{64, 1024}, Dims{0, 0});
}

TEST_F(CudaQuantize, BoxesInsideFusedStorages) {
  std::mt19937_64 rng(13);
  // gate/up halves of a fused [E, 2I, K] storage, a qkv-like [rows, K] slice,
  // and a 4-d box.
  struct Case {
    Dims extent, shape, offset;
  };
  for (const Case &c :
       {Case{Dims{4, 64, 192}, Dims{4, 128, 192}, Dims{0, 64, 0}},
        Case{Dims{4, 64, 192}, Dims{4, 128, 192}, Dims{0, 0, 0}},
        Case{Dims{37, 96}, Dims{100, 96}, Dims{50, 0}},
        Case{Dims{2, 3, 5, 64}, Dims{3, 4, 6, 64}, Dims{1, 1, 1, 0}},
        // trailing whole dims merge into one run; size-1 and middle dims
        Case{Dims{2, 3, 4, 64}, Dims{3, 5, 4, 64}, Dims{1, 2, 0, 0}},
        Case{Dims{1, 64, 192}, Dims{4, 128, 192}, Dims{2, 64, 0}},
        Case{Dims{4, 1, 96}, Dims{4, 3, 96}, Dims{0, 2, 0}},
        Case{Dims{3, 7, 32}, Dims{3, 7, 128}, Dims{0, 0, 96}},
        // many groups per run, odd run counts (fast division)
        Case{Dims{7, 301, 7168 / 7}, Dims{7, 602, 7168 / 7}, Dims{0, 301, 0}},
        Case{Dims{3, 5, 11, 160}, Dims{4, 6, 13, 192}, Dims{1, 1, 2, 32}}}) {
    std::vector<uint16_t> in(static_cast<size_t>(c.extent.product()));
    for (auto &h : in)
      h = static_cast<uint16_t>(rng());
    compare(in, c.extent, c.shape, c.offset);
  }
}

TEST_F(CudaQuantize, EveryBf16ValueAtEveryScale) {
  // For each binade of the block amax (every E8M0 scale BF16 can produce,
  // 0..246, and a subnormal amax), blocks of the amax A and 31 BF16 values of
  // magnitude <= A, covering every such value of both signs; every 61st block
  // also holds a NaN or an Inf (reference path at that scale). The amax moves
  // around the block.
  const uint16_t specials[] = {0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7F81};
  std::vector<uint16_t> in;
  size_t blocks = 0;
  std::vector<uint16_t> amaxes = {0x0001, 0x0055};
  for (uint32_t e = 1; e <= 254; ++e)
    amaxes.push_back(static_cast<uint16_t>((e << 7) | (e % 2 ? 0x7F : 0x00)));
  for (const uint16_t a : amaxes) {
    std::vector<uint16_t> members;
    for (uint32_t p = 0; p < 65536; ++p)
      if (((p >> 7) & 0xFF) != 0xFF && (p & 0x7FFF) <= a)
        members.push_back(static_cast<uint16_t>(p));
    for (size_t at = 0; at < members.size(); at += 31, ++blocks) {
      uint16_t block[32];
      const int amax_slot = static_cast<int>(blocks % 32);
      for (int i = 0, j = 0; i < 32; ++i) {
        const size_t m = at + static_cast<size_t>(j);
        block[i] = i == amax_slot ? static_cast<uint16_t>(a | (blocks % 2) << 15)
                   : m < members.size() && j < 31 ? members[m]
                                                  : uint16_t{0x8000};
        if (i != amax_slot)
          ++j;
      }
      if (blocks % 61 == 0)
        block[(amax_slot + 7) % 32] = specials[blocks / 61 % 5];
      in.insert(in.end(), block, block + 32);
    }
  }
  const Dims e{static_cast<int64_t>(blocks), 32};
  compare(in, e, e, Dims{0, 0});
  // The same values as rows of a wider tensor (several blocks per row).
  const Dims wide{static_cast<int64_t>(blocks / 8), 256};
  in.resize(static_cast<size_t>(wide.product()));
  compare(in, wide, wide, Dims{0, 0});
}

TEST_F(CudaQuantize, MisalignedBuffersTakeTheScalarPath) {
  std::mt19937_64 rng(17);
  std::vector<uint16_t> in(static_cast<size_t>(5 * 3 * 64));
  for (auto &h : in)
    h = static_cast<uint16_t>(rng());
  const Dims e{5, 3, 64};
  compare(in, e, e, Dims{0, 0, 0}, 1, 0);   // BF16 2-byte aligned only
  compare(in, e, e, Dims{0, 0, 0}, 0, 3);   // values 1-byte aligned
  compare(in, e, e, Dims{0, 0, 0}, 4, 8);   // BF16 8-byte aligned
  compare(in, e, Dims{6, 4, 96}, Dims{1, 1, 32}, 1, 1);
}

TEST_F(CudaQuantize, Fp8ValidPatternMatchesHost) {
  RegionSpec r;
  r.storage_shape = Dims{40, 77};
  r.storage_offset = Dims{3, 5};
  r.extent = Dims{30, 61};
  r.global_shape = Dims{100, 200};
  r.global_offset = Dims{17, 9};
  r.elem_size = 1;
  r.seed = 99;
  r.fp8_valid = true;
  const size_t n = static_cast<size_t>(r.storage_shape.product());
  std::vector<uint8_t> host(n, 0);
  host_fill_pattern(host.data(), r);
  Dev<uint8_t> dev(n);
  dev.put(std::vector<uint8_t>(n, 0));
  cuda_fill_pattern(dev.get(), r, nullptr);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(dev.take(), host);
  for (uint8_t b : host)
    EXPECT_NE(b & 0x7F, 0x7F);
  unsigned long long *counter = nullptr;
  ASSERT_EQ(cudaMalloc(&counter, sizeof *counter), cudaSuccess);
  ASSERT_EQ(cudaMemset(counter, 0, sizeof *counter), cudaSuccess);
  cuda_count_wrong(dev.get(), r, counter, nullptr);
  unsigned long long wrong = 1;
  ASSERT_EQ(cudaMemcpy(&wrong, counter, sizeof wrong, cudaMemcpyDeviceToHost),
            cudaSuccess);
  EXPECT_EQ(wrong, 0u);
  EXPECT_EQ(host_count_wrong(host.data(), r), 0);
  cudaFree(counter);
}

} // namespace
} // namespace reshard
