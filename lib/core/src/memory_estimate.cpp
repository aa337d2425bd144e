#include "reshard/core/memory_estimate.h"

#include <algorithm>

#include "reshard/core/storage.h"

namespace reshard {

RankMemory rank_memory(const Plan& plan, int rank, const BatchPolicy& policy) {
  RankMemory m;
  for (const auto& list : {src_storages(plan, rank), dst_storages(plan, rank)})
    for (const LocalStorage& s : list) m.storages += s.bytes() + s.scale_bytes();
  m.staging = m.landings = std::min(policy.staging_bytes, m.storages);
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
