#include "reshard/core/plan_check.h"

#include "reshard/core/error.h"
#include "reshard/core/hash.h"
#include "reshard/core/planner.h"

#include <map>

namespace reshard {

std::string model_digest(const ModelMeta& model) {
  Hasher h;
  for (const TensorMeta& t : model.tensors) {
    h.add(t.name).add(dtype_name(t.dtype));
    for (int d = 0; d < t.shape.n; ++d) h.add(t.shape[d]);
    if (t.too_many_dims > 0) h.add("dims").add(t.too_many_dims);
  }
  return h.hex();
}

void check_plan_matches_model(const Plan& plan, const ModelMeta& model, const std::string& plan_origin) {
  const std::string digest = model_digest(model);
  if (digest == plan.model_digest) {
    // The digest is what the plan says about itself: compare its params with the model's, one by one,
    // as the planner groups them for the plan's own system and options.
    Plan expected;
    try {
      expected = plan_layouts(model, plan.system, plan.options);
    } catch (const Error& e) {
      throw config_error(plan_origin + ": its system and options are no valid configuration for " + model.origin +
                         ": " + e.what());
    }
    std::map<std::string, const ParamPlan*> by_name;
    for (const ParamPlan& p : expected.params) by_name.emplace(p.name, &p);
    Problems problems;
    for (const ParamPlan& p : plan.params) {
      auto it = by_name.find(p.name);
      if (it == by_name.end()) {
        problems.add("param " + p.name + " is not in " + model.origin);
        continue;
      }
      const ParamPlan& e = *it->second;
      if (p.shape != e.shape || p.dtype != e.dtype || p.members != e.members)
        problems.add("param " + p.name + ": the plan has " + std::string(dtype_name(p.dtype)) + " " + p.shape.str() +
                     " (" + std::to_string(p.members.size()) + " members), " + model.origin + " gives " +
                     std::string(dtype_name(e.dtype)) + " " + e.shape.str() + " (" + std::to_string(e.members.size()) +
                     " members)");
      by_name.erase(it);
    }
    for (const auto& [name, unused] : by_name) problems.add("param " + name + " of " + model.origin + " is not in the plan");
    problems.throw_if_any(plan_origin + " disagrees with " + model.origin + " although their digests match:");
    return;
  }
  throw config_error(plan_origin + " was made for another model: the plan's model is '" + plan.model_name +
                     "' (" + std::to_string(plan.model_tensors) + " tensors, digest " + plan.model_digest +
                     "), " + model.origin + " is '" + model.name + "' (" + std::to_string(model.tensors.size()) +
                     " tensors, digest " + digest + ")");
}

}  // namespace reshard
