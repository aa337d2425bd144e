#include "reshard/core/schedule.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>

#include "reshard/core/box.h"

namespace reshard {

Schedule make_schedule(const Plan& plan, int streams, int fanout_lag) {
  Schedule out;
  out.fanout_level = fanout_levels(plan);
  streams = std::max(streams, 1);
  fanout_lag = std::max(fanout_lag, 0);
  // One queue per train PP stage, taken round-robin: every stage's ranks have work from the start
  // (queues per stream would keep stages s + streams, s + 2·streams, ... idle until s finished).
  const int stages = std::max(plan.system.train.pp, 1);
  std::vector<std::vector<WorkUnit>> queues(stages);
  // Per stage: transfer and bucket units placed so far, and fan-outs waiting until that count is due.
  std::vector<size_t> placed(stages, 0);
  struct Lagged {
    size_t due;
    int level;
    uint32_t param;
  };
  std::vector<std::vector<Lagged>> lagged(stages);  // kept sorted by due (stable: plan order among equals)
  auto release = [&](int stage, size_t upto) {
    auto& due = lagged[stage];
    size_t n = 0;
    for (; n < due.size() && due[n].due <= upto; ++n)
      queues[stage].push_back({false, true, due[n].level, due[n].param, stage % streams});
    due.erase(due.begin(), due.begin() + static_cast<std::ptrdiff_t>(n));
  };
  auto add = [&](int stage, bool bucket, uint32_t index, bool fanouts) {
    stage = std::clamp(stage, 0, stages - 1);
    queues[stage].push_back({bucket, false, 0, index, stage % streams});
    ++placed[stage];
    if (fanouts) {
      const ParamPlan& param = plan.params[index];
      const auto first = out.fanout_level.begin() + static_cast<std::ptrdiff_t>(param.fanout_begin);
      const int top = *std::max_element(first, first + static_cast<std::ptrdiff_t>(param.fanout_count));
      auto& due = lagged[stage];
      for (int l = 0; l <= top; ++l) {
        const Lagged entry{placed[stage] + static_cast<size_t>(fanout_lag) * static_cast<size_t>(l + 1), l, index};
        due.insert(std::upper_bound(due.begin(), due.end(), entry,
                                    [](const Lagged& a, const Lagged& b) { return a.due < b.due; }),
                   entry);
      }
    }
    release(stage, placed[stage]);
  };
  for (uint32_t p = 0; p < plan.params.size(); ++p) {
    const ParamPlan& param = plan.params[p];
    if (param.path == Path::Bulk) {
      add(param.pp_stage, false, p, param.fanout_count > 0);
    } else if (param.bucket >= 0 && param.bucket < static_cast<int>(plan.buckets.size())) {
      const MiscBucket& b = plan.buckets[param.bucket];
      if (!b.params.empty() && b.params.front() == p)
        add(b.pp_stage, true, static_cast<uint32_t>(param.bucket), false);
    }
  }
  for (int s = 0; s < stages; ++s) release(s, SIZE_MAX);
  std::vector<size_t> next(queues.size(), 0);
  for (bool more = true; more;) {
    more = false;
    for (size_t s = 0; s < queues.size(); ++s) {
      if (next[s] >= queues[s].size()) continue;
      out.units.push_back(queues[s][next[s]++]);
      more = true;
    }
  }
  return out;
}

std::vector<int> fanout_levels(const Plan& plan) {
  std::vector<int> level(plan.fanouts.size(), 0);
  std::map<int, std::vector<std::pair<Box, int>>> received;  // of one param: by rank, boxes and their level
  for (const ParamPlan& param : plan.params) {
    if (param.fanout_count == 0) continue;
    received.clear();
    for (uint64_t i = param.fanout_begin; i < param.fanout_begin + param.fanout_count; ++i) {
      const FanoutOp& f = plan.fanouts[i];
      const auto got = received.find(f.root);
      if (got != received.end())
        for (const auto& [box, l] : got->second) {
          const auto overlap = intersect(box, f.box);
          if (overlap && !overlap->empty()) level[i] = std::max(level[i], l + 1);
        }
      if (f.group < 0 || f.group >= static_cast<int>(plan.groups.size())) continue;
      for (int m : plan.groups[f.group].ranks)
        if (m != f.root) received[m].emplace_back(f.box, level[i]);
    }
  }
  return level;
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
