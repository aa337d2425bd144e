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
  int64_t lower_bound_bytes = 0;                   // bulk bytes this rank must move at least
};

struct PlanStats {
  std::vector<RankStats> ranks;  // index = global rank
  int64_t total_bytes = 0;       // every param once (logical model bytes in the plan)
  int64_t bulk_bytes = 0, misc_bytes = 0;
  double bulk_fraction = 0;      // bulk_bytes / total_bytes
  int64_t bulk_params = 0, misc_params = 0, uneven_params = 0;
  int64_t transfers = 0, fanout_ops = 0, buckets = 0;
  // Lower bound of the bulk phase: max over ranks of the bytes a rank must receive that it does not
  // hold (gen side) or of the unique bytes it holds spread evenly over their holders (train side).
  int64_t lower_bound_bytes = 0;
  int64_t busiest_bytes = 0;  // max over ranks of max(bulk sent, bulk received)
  int busiest_rank = 0;
  double efficiency = 0;      // lower_bound_bytes / busiest_bytes (1 when nothing moves)
};

PlanStats compute_stats(const Plan& plan);

}  // namespace reshard
