// Precision pairs (docs/precision.md), private to the planner: which train/gen
// pair a plan is for, the block-FP8 scale siblings, --scales bulk block
// alignment, and the MXFP8 params.
#pragma once
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/fp8_block.h"
#include "reshard/core/grouping.h"
#include "reshard/core/plan.h"

namespace reshard {

// The resolved generation precision (never Auto). Checks the pair and every
// e4m3 weight's float32
// "<name>_scale_inv" sibling ([.., ceil(out/128), ceil(in/128)]); every problem
// goes to `problems`.
GenPrecision check_precision_pair(const std::vector<LogicalParam> &params,
                                  const PlanOptions &options,
                                  Problems &problems);

// For each param: the index of the weight whose "<weight>_scale_inv" it is, or
// -1.
std::vector<int> scale_owners(const std::vector<LogicalParam> &params);

// After layouts: with --scales bulk, every bulk scale's weight must have each
// shard boundary (src and dst) on a 128-block boundary; with MXFP8, marks the
// quantized params and checks that their K (last) dim, global and on every gen
// shard, is a multiple of 32. Problems name the tensor, side and boundary.
void apply_precision(Plan &plan, GenPrecision gen,
                     const std::vector<int> &owners, Problems &problems);

// Megatron destination: removes the "<w>_scale_inv" of every e4m3 weight `w` (they stay on the source,
// which dequantizes); true when the model has e4m3 weights.
bool drop_source_scales(std::vector<LogicalParam> &params);

// After fused storages are final: the MXFP8 scale storage names (per-expert storages "<dst_storage><i>"
// get "<dst_storage><i>_scale", storage.cpp).
void name_scale_storages(Plan &plan);

} // namespace reshard
