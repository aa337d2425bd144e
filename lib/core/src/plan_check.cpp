#include "reshard/core/plan_check.h"

#include "reshard/core/error.h"
#include "reshard/core/hash.h"

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
  if (digest == plan.model_digest) return;
  throw config_error(plan_origin + " was made for another model: the plan's model is '" + plan.model_name +
                     "' (" + std::to_string(plan.model_tensors) + " tensors, digest " + plan.model_digest +
                     "), " + model.origin + " is '" + model.name + "' (" + std::to_string(model.tensors.size()) +
                     " tensors, digest " + digest + ")");
}

}  // namespace reshard
