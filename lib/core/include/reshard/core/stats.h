// What a plan costs: bytes and messages per rank, the lower bound, and plan efficiency.
#pragma once
#include <cstdint>
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

struct RankStats {
  int rank = 0;
  int64_t bulk_send_bytes = 0, bulk_recv_bytes = 0;
  int64_t misc_send_bytes = 0, misc_recv_bytes = 0;
  int64_t bulk_send_msgs = 0, bulk_recv_msgs = 0;  // fan-out broadcasts count once per peer
  int64_t misc_msgs = 0;                           // buckets this rank takes part in
  // Gen rank: bulk bytes it must receive. Train rank: the unique bytes it holds, each divided by
  // its number of holders (its fair share of sending).
  int64_t lower_bound_bytes = 0;
};

struct PlanStats {
  std::vector<RankStats> ranks;  // index = global rank
  int64_t total_bytes = 0;       // every param once (logical model bytes in the plan)
  int64_t bulk_bytes = 0, misc_bytes = 0;
  double bulk_fraction = 0;      // bulk_bytes / total_bytes
  int64_t bulk_params = 0, misc_params = 0, uneven_params = 0;
  int64_t transfers = 0, fanout_ops = 0, buckets = 0;
  // Lower bound of the bulk phase: the most any gen rank must receive (it holds none of it), or a
  // train stage's unique bytes spread evenly over the stage's ranks, whichever is larger.
  int64_t lower_bound_bytes = 0;
  int64_t busiest_bytes = 0;  // max over ranks of max(bulk sent, bulk received)
  int busiest_rank = 0;
  double efficiency = 0;      // lower_bound_bytes / busiest_bytes (1 when nothing moves)
  // The whole refit, misc included: every gen rank receives its bulk bound and every misc byte; the
  // busiest rank's max(sent, received) over bulk and misc together.
  int64_t refit_lower_bound_bytes = 0;
  int64_t refit_busiest_bytes = 0;
  int refit_busiest_rank = 0;
  double refit_efficiency = 0;
};

// The least each rank must move, per phase. Phases are those the executor runs
// (docs/executor.md): phase s < train PP stages holds the bulk params of train stage s, the last
// holds the misc buckets.
struct PhaseLowerBounds {
  // [phase][rank]: bytes the rank must send or receive at least. Bulk: a gen rank receives its dst
  // regions (the groups are disjoint); each distinct src box leaves its holders once, shared evenly.
  // Misc: a bucket's root sends it, every gen rank receives it.
  std::vector<std::vector<int64_t>> moved;
  // [phase][rank]: bytes the rank must receive at least: a gen rank's dst regions and every misc
  // bucket; train ranks nothing. What must cross a shared GPU's memory (the copy ceiling).
  std::vector<std::vector<int64_t>> received;
  // [phase]: bulk bytes that must leave the train stage, each distinct src box once (misc: 0).
  std::vector<int64_t> stage_unique;
  int phases() const { return static_cast<int>(moved.size()); }
};

PhaseLowerBounds compute_phase_lower_bounds(const Plan& plan);
PlanStats compute_stats(const Plan& plan);  // its lower bounds sum compute_phase_lower_bounds' bulk phases

}  // namespace reshard
