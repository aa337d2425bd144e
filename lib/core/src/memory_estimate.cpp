#include "reshard/core/memory_estimate.h"

#include <algorithm>

#include "reshard/core/landing_layout.h"
#include "reshard/core/ops.h"
#include "reshard/core/storage.h"

namespace reshard {

RankMemory rank_memory(const Plan& plan, int rank, const BatchPolicy& policy) {
  RankMemory m;
  const RankStorages s = rank_storages(plan, rank);
  for (const auto* list : {&s.src, &s.dst})
    for (const LocalStorage& st : *list) m.storages += st.bytes() + st.scale_bytes();
  m.staging = std::min(policy.staging_bytes, m.storages);
  // The landing pool (executor.h): only ranks with MXFP8 members or block-FP8 sources for a Megatron
  // destination have one, at most --staging-bytes.
  int64_t landings = 0;
  for (const Landing& l : s.landings) landings += landing_bytes(l);
  m.landings = std::min(policy.staging_bytes, landings);
  for (const MiscBucket& b : plan.buckets) m.bucket = std::max(m.bucket, b.bytes);
  return m;
}

std::vector<RankMemory> plan_memory(const Plan& plan, const BatchPolicy& policy) {
  std::vector<RankMemory> out;
  out.reserve(static_cast<size_t>(plan.world()));
  for (int r = 0; r < plan.world(); ++r) out.push_back(rank_memory(plan, r, policy));
  return out;
}

}  // namespace reshard
