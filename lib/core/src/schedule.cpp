#include "reshard/core/schedule.h"

#include <algorithm>
#include <map>

namespace reshard {

std::vector<WorkUnit> work_units(const Plan& plan, int streams) {
  streams = std::max(streams, 1);
  // One queue per train PP stage, taken round-robin: every stage's ranks have work from the start
  // (queues per stream would keep stages s + streams, s + 2·streams, ... idle until s finished).
  const int stages = std::max(plan.system.train.pp, 1);
  std::vector<std::vector<WorkUnit>> queues(stages);
  auto add = [&](int stage, bool bucket, uint32_t index) {
    stage = std::clamp(stage, 0, stages - 1);
    queues[stage].push_back({bucket, index, stage % streams});
  };
  for (uint32_t p = 0; p < plan.params.size(); ++p) {
    const ParamPlan& param = plan.params[p];
    if (param.path == Path::Bulk) {
      add(param.pp_stage, false, p);
    } else if (param.bucket >= 0 && param.bucket < static_cast<int>(plan.buckets.size())) {
      const MiscBucket& b = plan.buckets[param.bucket];
      if (!b.params.empty() && b.params.front() == p)
        add(b.pp_stage, true, static_cast<uint32_t>(param.bucket));
    }
  }
  std::vector<WorkUnit> order;
  std::vector<size_t> next(queues.size(), 0);
  for (bool more = true; more;) {
    more = false;
    for (size_t s = 0; s < queues.size(); ++s) {
      if (next[s] >= queues[s].size()) continue;
      order.push_back(queues[s][next[s]++]);
      more = true;
    }
  }
  return order;
}

std::vector<GoldenShard> golden_shards(const ParamPlan& p) {
  std::vector<GoldenShard> out;
  std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, size_t> seen;  // box -> index in out
  for (int f = 0; f < p.src.mesh.size(); ++f) {
    const int rank = p.src.mesh.ranks[f];
    for (const LocalPiece& q : p.src.local_pieces(p.shape, f)) {
      auto [it, fresh] = seen.try_emplace({q.box.offset.to_vector(), q.box.extent.to_vector()}, out.size());
      if (fresh) out.push_back(GoldenShard{rank, q.box, q.at});
      else out[it->second].holder = std::min(out[it->second].holder, rank);
    }
  }
  return out;
}

}  // namespace reshard
