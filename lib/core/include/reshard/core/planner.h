// The planner: model metadata + parallelism + options -> Plan. Pure and deterministic.
#pragma once
#include "reshard/core/model.h"
#include "reshard/core/plan.h"

namespace reshard {

// Validates everything first (every problem in one Error(Config)), then plans.
Plan plan_reshard(const ModelMeta& model, SystemConfig system, const PlanOptions& options);
// The same checks and every param's rule, stage, layouts and storage, without transfers or buckets
// (what verify compares a plan's layouts against).
Plan plan_layouts(const ModelMeta& model, SystemConfig system, const PlanOptions& options);

}  // namespace reshard
