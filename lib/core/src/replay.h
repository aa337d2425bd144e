// The walk `reshard simulate` times: every rank's op list replayed on a virtual clock, cut into the
// executor's batches and waiting where it waits, and where ranks share one GPU their transport passes
// taking turns on it (time_slice.h). simulate.cpp builds its phases, floors and bounds from it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "reshard/core/ops.h"
#include "reshard/core/plan.h"
#include "reshard/core/simulate.h"

namespace reshard::replay {

// Destinations one cuda-ipc fan-out copy writes per read of its source (CudaBatchCopy::kMaxFan).
inline constexpr int64_t kMaxFan = 8;

// A rank's resources: NVLink send and receive, NIC send and receive (in that order).
inline constexpr int kResources = 4;
using Bytes4 = std::array<int64_t, kResources>;

// Which ops a walk includes.
struct Filter {
  int phase = -1;       // one phase (bulk stage or misc), -1: all
  bool bulk_only = false, fanouts_only = false;
};

// Whether walk `f` takes `op` (misc_phase: the plan's misc phase, phase_count - 1).
inline bool selects(const Filter& f, const Op& op, int misc_phase) {
  if (f.phase >= 0 && op.phase != f.phase) return false;
  if (f.bulk_only && op.phase == misc_phase) return false;
  if (f.fanouts_only && !op.fanout) return false;
  return true;
}

// Every rank's op list, as the executor builds it (ops.h), and the ops of the global order with the
// ranks that take part in each: messages[i] = (rank, index into its list), ranks ascending.
struct OpLists {
  std::vector<std::vector<Op>> ops;  // by rank
  std::vector<std::vector<std::pair<int, uint32_t>>> messages;

  OpLists(const Plan& plan, const SystemModel& m);
};

// One rank of the whole run's walk: its batches, and its bytes on each resource (NVLink send and
// receive, NIC send and receive; misc buckets' alone too) and copied in its memory.
struct RankTotals {
  std::vector<BatchSpan> spans;
  Bytes4 res{}, misc_res{};
  int64_t copy_bytes = 0;
};

// The whole run walked in the executor's order: its slowest rank as a phase row ("total"), every
// rank's totals, and each resource's rate in B/s (after SystemModel::host_cores' share).
struct TotalWalk {
  SimPhase phase;
  std::vector<RankTotals> ranks;
  std::array<double, kResources> beta{};
};

// The ops `f` selects, walked alone.
SimPhase run_phase(const Plan& plan, const SystemModel& m, const OpLists& lists, const std::string& name,
                   const Filter& f);
TotalWalk run_total(const Plan& plan, const SystemModel& m, const OpLists& lists);

}  // namespace reshard::replay
