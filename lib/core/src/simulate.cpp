// `reshard simulate`: a plan's phases walked alone and together (replay.h), its link floors and its
// lower bound in time (see simulate.h for the model).
#include "reshard/core/simulate.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "replay.h"
#include "reshard/core/box.h"
#include "reshard/core/landing_layout.h"
#include "reshard/core/ops.h"
#include "reshard/core/verify.h"
#include "reshard/core/stats.h"

namespace reshard {
namespace {

// See SimResult::lower_bound_seconds.
double lower_bound_time(const Plan& plan, const SystemModel& m, const PlanStats& stats) {
  int64_t misc = 0;
  for (const MiscBucket& b : plan.buckets) misc += b.bytes;
  const double both = (m.nvlink_gbps + m.nic_gbps) * 1e9;
  double t = static_cast<double>(stats.lower_bound_bytes) / both;
  for (int r = plan.train_world(); r < plan.world(); ++r)
    t = std::max(t, static_cast<double>(stats.ranks[r].lower_bound_bytes + misc) / both);
  // Domains without train ranks: each distinct box their gen ranks hold enters through their NICs.
  std::set<int64_t> train_nodes;
  for (int r = 0; r < plan.train_world(); ++r) train_nodes.insert(r / m.gpus_per_node);
  std::map<int64_t, int64_t> node_ranks, node_bytes;
  for (int r = plan.train_world(); r < plan.world(); ++r) {
    const int64_t n = r / m.gpus_per_node;
    if (train_nodes.count(n)) continue;
    if (node_ranks[n]++ == 0) node_bytes[n] += misc;
  }
  if (node_ranks.empty()) return t;
  std::set<std::tuple<int64_t, uint32_t, std::vector<int64_t>>> seen;
  for (uint32_t p = 0; p < plan.params.size(); ++p) {
    const ParamPlan& param = plan.params[p];
    if (param.path != Path::Bulk) continue;
    for (int f = 0; f < param.dst.mesh.size(); ++f) {
      const int64_t n = param.dst.mesh.ranks[f] / m.gpus_per_node;
      if (!node_ranks.count(n)) continue;
      const int64_t held = param.dst.held_elements(param.shape, f);
      if (held == 0) continue;
      // Replicas on one node hold the same pieces: count them once (keyed by the first piece's origin).
      const Box b = param.dst.local_pieces(param.shape, f).front().box;
      if (seen.emplace(n, p, b.offset.to_vector()).second) node_bytes[n] += held * dtype_size(param.dtype);
    }
  }
  for (const auto& [n, bytes] : node_bytes)
    t = std::max(t, static_cast<double>(bytes) / (static_cast<double>(node_ranks[n]) * m.nic_gbps * 1e9));
  return t;
}

// A shared memory system copies every byte a domain's gen ranks must receive at least once (a gen
// rank holds no source shard: train and gen ranks are distinct).
// Push (cuda-ipc): a byte is written once and its source read once per kMaxFan written, so each costs
// at least (1 + 1 / kMaxFan) / 2 of a copy.
double shared_lower_bound_time(const Plan& plan, const SystemModel& m) {
  if (m.shared_copy_gbps <= 0 || m.copy_gbps <= 0) return 0;
  const double per_byte = m.box_ops && m.ipc_push ? (1.0 + 1.0 / static_cast<double>(replay::kMaxFan)) / 2 : 1.0;
  const PhaseLowerBounds lb = compute_phase_lower_bounds(plan);
  std::map<int64_t, int64_t> node_bytes;
  for (int ph = 0; ph < lb.phases(); ++ph)
    for (int r = 0; r < plan.world(); ++r) node_bytes[r / m.gpus_per_node] += lb.received[ph][r];
  double t = 0;
  for (const auto& [n, bytes] : node_bytes)
    t = std::max(t, per_byte * static_cast<double>(bytes) / (m.shared_copy_gbps * 1e9));
  return t;
}

}  // namespace

void check_plan_runs(const Plan& plan, const SystemModel& model, const std::string& origin) {
  require_verified(plan, origin);
  for (int r = 0; r < plan.world(); ++r)
    check_landings_fit(plan, rank_storages(plan, r).landings, r, model.batch.staging_bytes);
}

SimResult simulate(const Plan& plan, const SystemModel& model) {
  Problems problems;
  validate_system_model(model, problems);
  problems.throw_if_any("invalid system model '" + model.name + "':");
  SimResult r;
  r.model = model;
  const replay::OpLists lists(plan, model);
  const int stages = phase_count(plan) - 1;
  for (int s = 0; s < stages; ++s)
    r.phases.push_back(replay::run_phase(plan, model, lists, "bulk.pp" + std::to_string(s), {s, false, false}));
  r.phases.push_back(replay::run_phase(plan, model, lists, "fanout", {-1, false, true}));
  r.phases.push_back(replay::run_phase(plan, model, lists, "misc", {stages, false, false}));
  r.misc_seconds = r.phases.back().seconds;
  r.bulk_seconds = replay::run_phase(plan, model, lists, "bulk", {-1, true, false}).seconds;
  r.sequential_seconds = r.bulk_seconds + r.misc_seconds;

  replay::TotalWalk all = replay::run_total(plan, model, lists);
  for (replay::RankTotals& s : all.ranks) r.timeline.push_back(std::move(s.spans));
  const SimPhase& total = all.phase;
  r.total_seconds = total.seconds;
  r.slowest_rank = total.slowest_rank;
  r.total_switches = total.switches;
  r.slowest_rank_batches = total.batches;
  r.slowest_rank_wait_seconds = total.wait_seconds;
  for (size_t rank = 0; rank < all.ranks.size(); ++rank) {
    const replay::RankTotals& s = all.ranks[rank];
    r.nvlink_bytes += s.res[0];
    r.nic_bytes += s.res[2];
    r.copy_bytes += s.copy_bytes;
    for (size_t i = 0; i < s.res.size(); ++i) {
      const double t = static_cast<double>(s.res[i]) / all.beta[i];
      const double misc = static_cast<double>(s.misc_res[i]) / all.beta[i];
      LinkFloor& f = i < 2 ? r.nvlink_floor : r.nic_floor;
      f.seconds = std::max(f.seconds, t);
      f.bulk_seconds = std::max(f.bulk_seconds, t - misc);
      f.misc_seconds = std::max(f.misc_seconds, misc);
      if (t > r.busiest_link_seconds) {
        r.busiest_link_seconds = t;
        r.busiest_link_bytes = s.res[i];
        r.busiest_rank = static_cast<int>(rank);
        r.busiest_link = static_cast<LinkResource>(i);
      }
    }
  }
  const PlanStats stats = compute_stats(plan);
  r.lower_bound_bytes = stats.lower_bound_bytes;
  r.lower_bound_seconds = std::max(lower_bound_time(plan, model, stats), shared_lower_bound_time(plan, model));
  return r;
}

}  // namespace reshard
