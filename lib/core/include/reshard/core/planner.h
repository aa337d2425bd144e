// The planner: model metadata + parallelism + options -> Plan. Pure and deterministic.
#pragma once
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/model.h"
#include "reshard/core/plan.h"
#include "reshard/core/rules.h"
#include "reshard/core/user_regex.h"

namespace reshard {

// What the planner checks and prepares before it reads the model: the system (null: not known;
// Megatron's defaults are applied to it), option combinations, the --exclude regexes and the --rules.
// `reshard plan` calls it alone when the model could not be read, so that every problem shows at once.
struct PlanInputs {
  std::vector<UserRegex> excludes;
  std::vector<CustomRule> custom;
};
PlanInputs check_plan_inputs(SystemConfig* system, const PlanOptions& options, Problems& problems);

// Validates everything first (every problem in one Error(Config)), then plans.
Plan plan_reshard(const ModelMeta& model, SystemConfig system, const PlanOptions& options);
// The same checks and every param's rule, stage, layouts and storage, without transfers or buckets
// (what verify compares a plan's layouts against).
Plan plan_layouts(const ModelMeta& model, SystemConfig system, const PlanOptions& options);

}  // namespace reshard
