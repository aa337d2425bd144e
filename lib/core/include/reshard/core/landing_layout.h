// Where each landing (RankStorages::landings) sits in the executor's landing pool, fixed per op list.
// A landing is live from the first to the last op of the list that goes through it; landings whose
// live ranges overlap get disjoint space. So when a landing opens, the only landings in its way are
// ones whose last op is already in the current batch: ending the batch frees the space, and the pool
// never fragments (a first-fit pool at run time did, with misc buckets' many landings per op).
// Reusing space ends a batch, so placement goes round the pool's budget rather than reusing early.
#pragma once
#include <cstdint>
#include <vector>

#include "reshard/core/ops.h"

namespace reshard {

struct LandingLayout {
  std::vector<int64_t> offset;  // per landing; -1: no op of the list uses it
  int64_t pool_bytes = 0;
  int64_t max_op_bytes = 0;  // the most any one op needs at once
};

// Bytes a landing takes in the pool (64-byte aligned, so kernels get aligned rows).
int64_t landing_bytes(const Landing& l);

// The executor's pool holds each landing whole, within --staging-bytes: throws Error(Config) naming the
// first of `rank`'s landings (MXFP8 members, block-FP8 sources) that does not fit `staging_bytes`.
void check_landings_fit(const Plan& plan, const std::vector<Landing>& landings, int rank, int64_t staging_bytes);

// The distinct landings an op's pieces go through (usually none or one).
std::vector<int> landings_of(const Op& op);

// In order of first use, each landing at the first offset clear of every landing still live at its
// first op, going round a ring of `budget` bytes (at most the landings' total): the pool is the
// budget, or more where the landings live at once need more.
LandingLayout layout_landings(const std::vector<Op>& ops, const std::vector<Landing>& landings, int64_t budget);

}  // namespace reshard
