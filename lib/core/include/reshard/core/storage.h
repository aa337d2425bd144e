// The local tensors a rank owns under a plan: what the executor allocates, fills and checks.
#pragma once
#include <string>
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

struct StorageMember {
  uint32_t param = 0;
  Box box;      // global region of the param held here
  Dims offset;  // where that region starts inside the storage tensor
};

struct LocalStorage {
  std::string name;
  DType dtype = DType::BF16;  // MXFP8 storages: float8_e4m3fn (their members are BF16 on the wire)
  Dims shape;
  std::vector<StorageMember> members;
  // MXFP8 (dst): the E8M0 scale tensor (shape with the last dim / 32, one byte each). Block-FP8
  // (src of a src_dequant param): the float32 scale_inv blocks of the global 128 x 128 grid that the
  // shard touches (fp8_block_cover of its box). n == 0 otherwise.
  std::string scale_name;
  Dims scale_shape;
  bool block_fp8 = false;
  bool mxfp8() const { return scale_shape.n > 0 && !block_fp8; }
  int64_t bytes() const { return shape.product() * dtype_size(dtype); }
  int64_t scale_bytes() const { return scale_shape.n > 0 ? scale_shape.product() * (block_fp8 ? 4 : 1) : 0; }
};

// Source side (train ranks): one storage per bulk param whose src mesh holds `rank` (its local
// shard), plus each misc param whole on the root of its bucket. A src_dequant param's storage holds
// e4m3 values and its float32 block scales (block_fp8); it is sent as BF16 (docs/precision.md).
std::vector<LocalStorage> src_storages(const Plan& plan, int rank);
// Destination side (gen ranks): bulk params in their destination's local tensors, as DstMap
// (dst_layout.h) cuts them: fused members concatenated or interleaved along dst_fuse_dim, per-index
// tensors "<dst_storage><i>" with dst_split_dim; a param has one member per piece. Plus every misc
// param whole. Empty for train ranks. Storages of MXFP8 params
// hold e4m3 values plus E8M0 scales (scale_shape).
std::vector<LocalStorage> dst_storages(const Plan& plan, int rank);

}  // namespace reshard
