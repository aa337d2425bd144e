#include "reshard/core/stats.h"

#include <algorithm>
#include <map>

namespace reshard {

PhaseLowerBounds compute_phase_lower_bounds(const Plan& plan) {
  const int stages = std::max(plan.system.train.pp, 1);
  PhaseLowerBounds lb;
  lb.moved.assign(stages + 1, std::vector<int64_t>(plan.world(), 0));
  lb.received = lb.moved;
  lb.stage_unique.assign(stages + 1, 0);
  for (const ParamPlan& p : plan.params) {
    if (p.path != Path::Bulk) continue;
    const int ph = std::clamp(p.pp_stage, 0, stages - 1);  // decoded plans are in range already
    std::vector<int64_t>& moved = lb.moved[ph];
    const int64_t esize = dtype_size(p.dtype);
    // Gen side: everything a gen rank holds must arrive (the groups are disjoint).
    for (int f = 0; f < p.dst.mesh.size(); ++f) {
      const int64_t n = p.dst.held_elements(p.shape, f) * esize;
      moved[p.dst.mesh.ranks[f]] += n;
      lb.received[ph][p.dst.mesh.ranks[f]] += n;
    }
    // Train side: each distinct src box leaves at least once, shared evenly by its holders.
    std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, std::vector<int>> holders;
    for (int f = 0; f < p.src.mesh.size(); ++f) {
      for (const LocalPiece& q : p.src.local_pieces(p.shape, f))
        holders[{q.box.offset.to_vector(), q.box.extent.to_vector()}].push_back(p.src.mesh.ranks[f]);
    }
    for (const auto& [key, ranks] : holders) {
      int64_t n = esize;
      for (int64_t e : key.second) n *= e;
      for (int r : ranks) moved[r] += n / static_cast<int64_t>(ranks.size());
      lb.stage_unique[ph] += n;
    }
  }
  for (const MiscBucket& b : plan.buckets) {
    lb.moved[stages][b.root] += b.bytes;
    for (int r = plan.train_world(); r < plan.world(); ++r) {
      lb.moved[stages][r] += b.bytes;
      lb.received[stages][r] += b.bytes;
    }
  }
  return lb;
}

PlanStats compute_stats(const Plan& plan) {
  PlanStats s;
  s.ranks.resize(plan.world());
  for (int r = 0; r < plan.world(); ++r) s.ranks[r].rank = r;
  // Per-rank bounds cover the bulk path only: the bulk phases' sum.
  const PhaseLowerBounds lb = compute_phase_lower_bounds(plan);
  for (int ph = 0; ph + 1 < lb.phases(); ++ph)
    for (int r = 0; r < plan.world(); ++r) s.ranks[r].lower_bound_bytes += lb.moved[ph][r];

  for (const ParamPlan& p : plan.params) {
    const int64_t bytes = p.bytes();
    s.total_bytes += bytes;
    if (p.path == Path::Misc) {
      s.misc_bytes += bytes;
      ++s.misc_params;
      continue;
    }
    s.bulk_bytes += bytes;
    ++s.bulk_params;
    s.uneven_params += p.uneven;
  }
  for (const Transfer& t : plan.transfers) {
    const int64_t b = t.box.elements() * dtype_size(plan.params[t.param].dtype);
    s.ranks[t.src].bulk_send_bytes += b;
    s.ranks[t.src].bulk_send_msgs += 1;
    s.ranks[t.dst].bulk_recv_bytes += b;
    s.ranks[t.dst].bulk_recv_msgs += 1;
  }
  // A fan-out broadcast: the root sends the box once (pipelined), every other replica receives it.
  // Summed per group, then handed to its members once: linear in ops + group sizes.
  std::map<int, std::pair<int64_t, int64_t>> per_group;  // group -> (bytes, ops)
  for (const FanoutOp& f : plan.fanouts) {
    const int64_t b = f.box.elements() * dtype_size(plan.params[f.param].dtype);
    const int64_t members = static_cast<int64_t>(plan.groups[f.group].ranks.size());
    s.ranks[f.root].bulk_send_bytes += b;
    s.ranks[f.root].bulk_send_msgs += members - 1;
    s.ranks[f.root].bulk_recv_bytes -= b;  // the root is a member but receives nothing
    s.ranks[f.root].bulk_recv_msgs -= 1;
    auto& [bytes, ops] = per_group[f.group];
    bytes += b;
    ops += 1;
  }
  for (const auto& [g, sum] : per_group)
    for (int r : plan.groups[g].ranks) {
      s.ranks[r].bulk_recv_bytes += sum.first;
      s.ranks[r].bulk_recv_msgs += sum.second;
    }
  for (const MiscBucket& b : plan.buckets) {
    for (int r : plan.groups[b.group].ranks) {
      s.ranks[r].misc_msgs += 1;
      if (r == b.root) s.ranks[r].misc_send_bytes += b.bytes;
      else s.ranks[r].misc_recv_bytes += b.bytes;
    }
  }
  s.transfers = static_cast<int64_t>(plan.transfers.size());
  s.fanout_ops = static_cast<int64_t>(plan.fanouts.size());
  s.buckets = static_cast<int64_t>(plan.buckets.size());
  s.bulk_fraction = s.total_bytes > 0 ? static_cast<double>(s.bulk_bytes) / static_cast<double>(s.total_bytes) : 0;
  // The plan's bound: every gen rank receives all it holds; each train stage's unique bytes leave
  // it, at best spread evenly over its ranks. (Per-rank source bounds above follow the holders and
  // can exceed what a balanced plan sends when holdings differ between ranks.)
  for (int r = plan.train_world(); r < plan.world(); ++r)
    s.lower_bound_bytes = std::max(s.lower_bound_bytes, s.ranks[r].lower_bound_bytes);
  const int stages = lb.phases() - 1;
  const int64_t train_ranks = std::max(plan.train_world(), 1);
  for (int ph = 0; ph < stages; ++ph)
    s.lower_bound_bytes = std::max(s.lower_bound_bytes, lb.stage_unique[ph] * stages / train_ranks);
  for (const RankStats& r : s.ranks) {
    const int64_t load = std::max(r.bulk_send_bytes, r.bulk_recv_bytes);
    if (load > s.busiest_bytes) {
      s.busiest_bytes = load;
      s.busiest_rank = r.rank;
    }
  }
  s.efficiency = s.busiest_bytes > 0 ? static_cast<double>(s.lower_bound_bytes) / static_cast<double>(s.busiest_bytes) : 1.0;
  s.refit_lower_bound_bytes = s.lower_bound_bytes;
  for (int r = plan.train_world(); r < plan.world(); ++r)
    s.refit_lower_bound_bytes = std::max(s.refit_lower_bound_bytes, s.ranks[r].lower_bound_bytes + s.misc_bytes);
  for (const RankStats& r : s.ranks) {
    const int64_t load = std::max(r.bulk_send_bytes + r.misc_send_bytes, r.bulk_recv_bytes + r.misc_recv_bytes);
    if (load > s.refit_busiest_bytes) {
      s.refit_busiest_bytes = load;
      s.refit_busiest_rank = r.rank;
    }
  }
  s.refit_efficiency = s.refit_busiest_bytes > 0 ? static_cast<double>(s.refit_lower_bound_bytes) /
                                                       static_cast<double>(s.refit_busiest_bytes)
                                                 : 1.0;
  return s;
}

}  // namespace reshard
