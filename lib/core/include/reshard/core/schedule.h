// The order in which every rank walks a plan's work. A unit is one bulk param (its transfers, then
// its fan-outs) or one misc bucket (placed at its first param); a unit goes to stream
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
  bool bucket = false;  // index is a misc bucket; else a bulk param
  uint32_t index = 0;
  int stream = 0;
};

std::vector<WorkUnit> work_units(const Plan& plan, int streams);

// What the golden algorithm broadcasts for a bulk param: each distinct source shard whole (no empty
// ones), from its lowest holder, in the order the src mesh first holds them.
struct GoldenShard {
  int holder = 0;  // global rank
  Box box;
  Dims at;  // where `box` starts in the holder's local shard (a sectioned source holds several)
};
std::vector<GoldenShard> golden_shards(const ParamPlan& p);

}  // namespace reshard
