// Element-region operations on local storage tensors: fill with the verification pattern, count
// wrong bytes, pack a strided box into a contiguous buffer and unpack it back. Host versions live
// in host_region_ops.cpp; the CUDA kernels (cuda_region_ops.cu) implement the same contract on
// device memory and must agree byte for byte.
#pragma once
#include <cstdint>

#include "reshard/core/box.h"

namespace reshard {

// One param's region inside a local storage tensor (row-major, no padding).
struct RegionSpec {
  Dims storage_shape;   // shape of the whole local storage tensor
  Dims storage_offset;  // where the region starts inside the storage
  Dims extent;          // region extent (same rank as storage_shape)
  Dims global_shape;    // the param's global shape
  Dims global_offset;   // the region's origin in the param's global coordinates
  int elem_size = 2;    // bytes per element
  uint64_t seed = 0;    // param_seed(param name) (pattern.h)
  bool fp8_valid = false;  // float8_e4m3fn param: pattern words pass through fp8_valid_word (no NaN bytes)
  // BF16 region of a block-FP8 param dequantized on the source (fp8_block.h): every element is
  // dequant_pattern(seed, scale_seed, ...) instead of pattern bytes. elem_size is 2.
  bool dequant = false;
  uint64_t scale_seed = 0;
};

// Writes pattern_byte(seed, global_linear_index * elem_size + b) into every byte of the region
// (through fp8_valid_byte when r.fp8_valid; dequant_pattern per element when r.dequant).
void host_fill_pattern(void* storage, const RegionSpec& r);
// Number of bytes in the region that differ from the pattern.
int64_t host_count_wrong(const void* storage, const RegionSpec& r);
// Copies the box (offset, extent) of a row-major tensor of `shape` into/out of a dense buffer.
void host_pack(const void* tensor, const Dims& shape, const Dims& offset, const Dims& extent, int elem_size, void* out);
void host_unpack(const void* in, void* tensor, const Dims& shape, const Dims& offset, const Dims& extent, int elem_size);
// Block-FP8 -> BF16 of box `box` (shard coordinates) of a shard: the dense e4m3 `values` of
// `shard.extent`, whose origin in the param is `shard.offset`, times its float32 scales (dense,
// fp8_block_cover(shard).extent), into the same box of the dense BF16 buffer `out` of shard.extent.
void host_dequant_block_fp8(const void* values, const void* scales, const Box& shard, const Box& box, void* out);
// Writes the pattern scales of the blocks that box `shard` of a param of `shape` touches, dense.
void host_fill_block_scales(float* scales, const Dims& shape, const Box& shard, uint64_t scale_seed);

}  // namespace reshard
