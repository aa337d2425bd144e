// Device block-FP8 -> BF16 (reshard/core/fp8_block.h), bit for bit equal to the host reference
// (host_dequant_block_fp8), and the device check of dequantized destinations. Only built when
// RESHARD_HAVE_CUDA; no CUDA includes here (`stream` is a cudaStream_t).
// Asynchronous on `stream`; device pointers; bad shapes and CUDA failures throw Error(Runtime).
#pragma once
#include "reshard/core/box.h"
#include "region_ops.h"

namespace reshard {

// Box `box` (shard coordinates) of a shard: values dense e4m3 [shard.extent] whose origin in the
// param is shard.offset; scales dense float32 of fp8_block_cover(shard).extent; out dense BF16
// [shard.extent], written inside the box only.
void cuda_dequant_block_fp8(const void* values, const void* scales, const Box& shard, const Box& box, void* out,
                            void* stream);
// Adds to *device_counter the bytes of the (r.dequant) region that differ from dequant_pattern.
void cuda_count_wrong_dequant(const void* storage, const RegionSpec& r, unsigned long long* device_counter,
                              void* stream);

}  // namespace reshard
