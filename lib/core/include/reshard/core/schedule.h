// The order in which every rank walks a plan's work. A unit is one bulk param's transfers, one level
// of its fan-outs, or one misc bucket (placed at its first param). Fan-outs of level l go in
// (l + 1) * kFanoutLag units of their stage after the param's transfers: the replica that roots one
// sends what its transfers (level 0) or a lower level's broadcast wrote, so the batch holding that
// is waited for first, and by then it has usually completed inside the window (--window) instead of
// stalling the stage. A unit goes to stream
// (train PP stage % streams) and units are taken round-robin over the train PP stages, so that every
// stage's ranks (and their links) have work from the first batch on. Every rank derives
// the same order from the plan alone: the executor's deadlock-freedom argument rests on it, and the
// simulator walks the same order so that its batches mirror the executor's. Golden's shards too.
#pragma once
#include <cstdint>
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

struct WorkUnit {
  bool bucket = false;   // index is a misc bucket; else a bulk param
  bool fanouts = false;  // the bulk param's fan-outs of `level` (golden has none); else its transfers
  int level = 0;
  uint32_t index = 0;
  int stream = 0;
};

// Measured with `simulate` on the seed's and NCCL M2N's rows at window 16 (docs/performance.md): with
// each end of an op timed on its own links (lags 2 to 24) 7 and 8 kept every row within 1.15x of its
// floor, 6 did not, 2 left Qwen3-235B's fan-out roots waiting on 1.6 GB units still in their NIC
// queue; with an op done once through on both ends (lags 8 to 24) none keeps every row within 1.15x.
inline constexpr int kFanoutLag = 8;

struct Schedule {
  std::vector<WorkUnit> units;
  std::vector<int> fanout_level;  // per plan.fanouts entry (fanout_levels)
};
// Built once per plan and stream count; every rank's op list (ops.h) follows it.
Schedule make_schedule(const Plan& plan, int streams, int fanout_lag = kFanoutLag);
inline std::vector<WorkUnit> work_units(const Plan& plan, int streams, int fanout_lag = kFanoutLag) {
  return make_schedule(plan, streams, fanout_lag).units;
}

// Per fan-out op of the plan: 0 where its root received the box by a transfer, else one more than the
// level of the fan-out of the same param the root received it from (a lane broadcast feeds the
// broadcasts inside its nodes).
std::vector<int> fanout_levels(const Plan& plan);

// What the golden algorithm broadcasts for a bulk param: each distinct source shard whole (no empty
// ones), from its lowest holder, in the order the src mesh first holds them.
struct GoldenShard {
  int holder = 0;  // global rank
  Box box;
  Dims at;  // where `box` starts in the holder's local shard (a sectioned source holds several)
};
std::vector<GoldenShard> golden_shards(const ParamPlan& p);

}  // namespace reshard
