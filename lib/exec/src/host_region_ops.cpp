// Host implementation of region_ops.h. Every operation walks the region row by row (innermost
// dim), so rows map to one contiguous run in the storage and in the param's global byte space.
#include <algorithm>
#include <cstring>

#include "reshard/core/fp8_block.h"
#include "reshard/core/pattern.h"
#include "memory.h"
#include "region_ops.h"

namespace reshard {
namespace {

// Calls f(storage_byte_offset, global_byte_offset, row_bytes) for every row of the region.
template <class F>
void for_each_row(const RegionSpec& r, F&& f) {
  const int n = r.extent.n;
  if (r.extent.product() == 0) return;
  if (n == 0) {
    f(int64_t{0}, int64_t{0}, int64_t{r.elem_size});
    return;
  }
  const int64_t row = r.extent[n - 1] * r.elem_size;
  Dims idx = Dims::zeros(n);
  Dims at_storage = Dims::zeros(n), at_global = Dims::zeros(n);
  while (true) {
    for (int d = 0; d < n; ++d) {
      at_storage[d] = r.storage_offset[d] + idx[d];
      at_global[d] = r.global_offset[d] + idx[d];
    }
    f(linear_index(at_storage, r.storage_shape) * r.elem_size, linear_index(at_global, r.global_shape) * r.elem_size,
      row);
    int d = n - 2;
    while (d >= 0 && ++idx[d] == r.extent[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

uint64_t expected_word(const RegionSpec& r, uint64_t word) {
  const uint64_t w = pattern_word(r.seed, word);
  return r.fp8_valid ? fp8_valid_word(w) : w;
}

// Dequant regions: the expected BF16 of each element of a row starting at global byte g.
template <class F>
void for_each_dequant_element(const RegionSpec& r, int64_t g, int64_t len, F&& f) {
  const int n = r.global_shape.n;
  const uint64_t rows = static_cast<uint64_t>(r.global_shape[n - 2]), cols = static_cast<uint64_t>(r.global_shape[n - 1]);
  for (int64_t e = 0; e < len / 2; ++e)
    f(e, dequant_pattern(r.seed, r.scale_seed, static_cast<uint64_t>(g / 2 + e), rows, cols));
}

}  // namespace

void host_fill_pattern(void* storage, const RegionSpec& r) {
  auto* base = static_cast<uint8_t*>(storage);
  if (r.dequant) {
    for_each_row(r, [&](int64_t at, int64_t g, int64_t len) {
      for_each_dequant_element(r, g, len, [&](int64_t e, uint16_t v) { std::memcpy(base + at + 2 * e, &v, 2); });
    });
    return;
  }
  for_each_row(r, [&](int64_t at, int64_t g, int64_t len) {
    uint8_t* out = base + at;
    uint64_t b = static_cast<uint64_t>(g);
    const uint64_t end = b + static_cast<uint64_t>(len);
    while (b < end) {
      const uint64_t word = expected_word(r, b >> 3);
      const uint64_t stop = std::min(end, ((b >> 3) + 1) << 3);
      for (; b < stop; ++b) *out++ = static_cast<uint8_t>(word >> (8 * (b & 7)));
    }
  });
}

int64_t host_count_wrong(const void* storage, const RegionSpec& r) {
  const auto* base = static_cast<const uint8_t*>(storage);
  int64_t wrong = 0;
  if (r.dequant) {
    for_each_row(r, [&](int64_t at, int64_t g, int64_t len) {
      for_each_dequant_element(r, g, len, [&](int64_t e, uint16_t v) {
        const uint8_t* got = base + at + 2 * e;
        wrong += (got[0] != static_cast<uint8_t>(v)) + (got[1] != static_cast<uint8_t>(v >> 8));
      });
    });
    return wrong;
  }
  for_each_row(r, [&](int64_t at, int64_t g, int64_t len) {
    const uint8_t* in = base + at;
    uint64_t b = static_cast<uint64_t>(g);
    const uint64_t end = b + static_cast<uint64_t>(len);
    while (b < end) {
      const uint64_t word = expected_word(r, b >> 3);
      const uint64_t stop = std::min(end, ((b >> 3) + 1) << 3);
      for (; b < stop; ++b) wrong += *in++ != static_cast<uint8_t>(word >> (8 * (b & 7)));
    }
  });
  return wrong;
}

void host_copy_box(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst, const Dims& dst_shape,
                   const Dims& dst_offset, const Dims& extent, int elem_size) {
  const int n = extent.n;
  if (extent.product() == 0) return;
  const auto* s = static_cast<const uint8_t*>(src);
  auto* o = static_cast<uint8_t*>(dst);
  if (n == 0) {
    std::memcpy(o, s, elem_size);
    return;
  }
  // Merge trailing dims that are whole in both tensors into one run.
  int outer = n - 1;  // dims [0, outer) are iterated; [outer, n) form the run
  int64_t run = extent[n - 1] * elem_size;
  while (outer > 0 && extent[outer] == src_shape[outer] && extent[outer] == dst_shape[outer]) {
    --outer;
    run *= extent[outer];
  }
  Dims idx = Dims::zeros(n), at_s = src_offset, at_d = dst_offset;
  while (true) {
    for (int d = 0; d < outer; ++d) {
      at_s[d] = src_offset[d] + idx[d];
      at_d[d] = dst_offset[d] + idx[d];
    }
    std::memcpy(o + linear_index(at_d, dst_shape) * elem_size, s + linear_index(at_s, src_shape) * elem_size, run);
    int d = outer - 1;
    while (d >= 0 && ++idx[d] == extent[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

void host_pack(const void* tensor, const Dims& shape, const Dims& offset, const Dims& extent, int elem_size, void* out) {
  host_copy_box(tensor, shape, offset, out, extent, Dims::zeros(extent.n), extent, elem_size);
}

void host_unpack(const void* in, void* tensor, const Dims& shape, const Dims& offset, const Dims& extent, int elem_size) {
  host_copy_box(in, extent, Dims::zeros(extent.n), tensor, shape, offset, extent, elem_size);
}

void host_dequant_block_fp8(const void* values, const void* scales, const Box& shard, const Box& box, void* out) {
  const int n = shard.extent.n;
  if (box.extent.product() == 0) return;
  const auto* v = static_cast<const uint8_t*>(values);
  const auto* sc = static_cast<const float*>(scales);
  auto* o = static_cast<uint16_t*>(out);
  const Dims grid = fp8_block_cover(shard).extent;
  const int64_t r0 = shard.offset[n - 2] % kFp8BlockEdge, c0 = shard.offset[n - 1] % kFp8BlockEdge;
  // Rows of the box: every index of its first n-1 dims, in shard coordinates.
  Dims idx = Dims::zeros(n), at = box.offset;
  while (true) {
    for (int d = 0; d < n - 1; ++d) at[d] = box.offset[d] + idx[d];
    at[n - 1] = box.offset[n - 1];
    int64_t lead = 0;  // the row's leading dims (before the last two), linear in the shard
    for (int d = 0; d < n - 2; ++d) lead = lead * shard.extent[d] + at[d];
    const float* block_row = sc + (lead * grid[n - 2] + (r0 + at[n - 2]) / kFp8BlockEdge) * grid[n - 1];
    const int64_t row = linear_index(at, shard.extent);
    for (int64_t j = 0; j < box.extent[n - 1]; ++j)
      o[row + j] = dequant_e4m3(v[row + j], block_row[(c0 + at[n - 1] + j) / kFp8BlockEdge]);
    int d = n - 2;
    while (d >= 0 && ++idx[d] == box.extent[d]) idx[d--] = 0;
    if (d < 0) return;
  }
}

void host_fill_block_scales(float* scales, const Dims& shape, const Box& shard, uint64_t scale_seed) {
  const Dims grid = fp8_block_grid(shape);
  const Box cover = fp8_block_cover(shard);
  const int64_t count = cover.extent.product();
  Dims idx = Dims::zeros(cover.extent.n), at = cover.offset;
  for (int64_t k = 0; k < count; ++k) {
    for (int d = 0; d < at.n; ++d) at[d] = cover.offset[d] + idx[d];
    scales[k] = block_scale_pattern(scale_seed, static_cast<uint64_t>(linear_index(at, grid)));
    for (int d = idx.n - 1; d >= 0 && ++idx[d] == cover.extent[d]; --d) idx[d] = 0;
  }
}

}  // namespace reshard
