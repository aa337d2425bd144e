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
  DType dtype = DType::BF16;
  Dims shape;
  std::vector<StorageMember> members;
  int64_t bytes() const { return shape.product() * dtype_size(dtype); }
};

// Source side (train ranks): one storage per bulk param whose src mesh holds `rank` (its local
// shard), plus each misc param whole on the root of its bucket.
std::vector<LocalStorage> src_storages(const Plan& plan, int rank);
// Destination side (gen ranks): bulk params grouped by dst_storage (fused members concatenated
// along dst_fuse_dim), plus every misc param whole. Empty for train ranks.
std::vector<LocalStorage> dst_storages(const Plan& plan, int rank);

}  // namespace reshard
