#include "reshard/core/schedule.h"

#include <algorithm>
#include <map>

namespace reshard {

std::vector<WorkUnit> work_units(const Plan& plan, int streams) {
  streams = std::max(streams, 1);
  std::vector<std::vector<WorkUnit>> queues(streams);
  for (uint32_t p = 0; p < plan.params.size(); ++p) {
    const ParamPlan& param = plan.params[p];
    if (param.path == Path::Bulk) {
      const int s = param.pp_stage % streams;
      queues[s].push_back({false, p, s});
    } else if (param.bucket >= 0 && param.bucket < static_cast<int>(plan.buckets.size())) {
      const MiscBucket& b = plan.buckets[param.bucket];
      const int s = b.pp_stage % streams;
      if (!b.params.empty() && b.params.front() == p) queues[s].push_back({true, static_cast<uint32_t>(param.bucket), s});
    }
  }
  std::vector<WorkUnit> order;
  std::vector<size_t> next(streams, 0);
  for (bool more = true; more;) {
    more = false;
    for (int s = 0; s < streams; ++s) {
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
