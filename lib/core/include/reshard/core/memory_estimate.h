// What a rank allocates at most to run a plan (the executor's own allocations, executor.cpp): its
// storages (scales included), the wire staging and the BF16 landing pool (each at most
// --staging-bytes and at most what the rank holds), and its largest misc bucket. `run` refuses up
// front what the ranks sharing a memory pool cannot fit (runner.cpp); `plan --summary` and `inspect`
// print the same estimate. It lives in host memory for --transport mpi, in GPU memory otherwise.
#pragma once
#include <cstdint>
#include <vector>

#include "reshard/core/batch_policy.h"
#include "reshard/core/plan.h"

namespace reshard {

struct RankMemory {
  int64_t storages = 0;  // src and dst storages with their scales
  int64_t staging = 0;   // wire staging, at most --staging-bytes
  int64_t landings = 0;  // BF16 landing pool, at most --staging-bytes
  int64_t bucket = 0;    // the largest misc bucket
  int64_t total() const { return storages + staging + landings + bucket; }
};

RankMemory rank_memory(const Plan& plan, int rank, const BatchPolicy& policy = BatchPolicy{});

// Every rank's estimate (index = global rank).
std::vector<RankMemory> plan_memory(const Plan& plan, const BatchPolicy& policy = BatchPolicy{});

}  // namespace reshard
