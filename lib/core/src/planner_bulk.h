// Planner stages after classification (private to lib/core).
#pragma once
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

// Orders the members of each fused dst storage and falls back to one storage per param where
// members disagree outside the fuse dim.
void finalize_fused_storages(Plan& plan);
// Fills plan.transfers / plan.fanouts and the per-param ranges; adds fan-out groups.
void plan_bulk_transfers(Plan& plan);
// Packs misc params into buckets in metadata order; roots rotate over the stage's train ranks.
void plan_misc_buckets(Plan& plan, const Mesh& train_mesh);

// For each param: where its region starts along its storage's fuse dim, per dst flat index (empty
// when the param is first in its storage or not fused). Shared with storage.cpp.
std::vector<std::vector<int64_t>> fused_origins(const Plan& plan);

}  // namespace reshard
