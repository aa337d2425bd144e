// Checks that tie a plan to the inputs it was made from.
#pragma once
#include <string>

#include "reshard/core/model.h"
#include "reshard/core/plan.h"

namespace reshard {

// 16 hex digits over the model's names, dtypes and shapes, in file order: what a plan records as
// inputs.model.digest.
std::string model_digest(const ModelMeta& model);

// Throws Error(Config) when `plan` was made from a different model than `model` (digests differ),
// naming both models, their tensor counts and digests. `plan_origin` names the plan in the message.
void check_plan_matches_model(const Plan& plan, const ModelMeta& model, const std::string& plan_origin);

}  // namespace reshard
