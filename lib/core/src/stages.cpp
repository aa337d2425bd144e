#include "reshard/core/stages.h"

#include <string>

namespace reshard {

std::vector<int> megatron_layer_stages(int layers, int pp, int first, int last, Problems& problems) {
  std::vector<int> stage(layers, 0);
  if (pp <= 1 || layers == 0) return stage;
  if (first < 0 || last < 0) {
    problems.add("first/last stage layers must be >= 0");
    return stage;
  }
  const int middle_stages = pp - (first > 0) - (last > 0);
  const int middle_layers = layers - first - last;
  if (middle_layers < 0 || (middle_stages == 0 && middle_layers != 0) ||
      (middle_stages > 0 && (middle_layers % middle_stages != 0 || middle_layers == 0))) {
    problems.add("pipeline split: " + std::to_string(layers) + " decoder layers over pp=" + std::to_string(pp) +
                 " with first_stage_layers=" + std::to_string(first) + ", last_stage_layers=" + std::to_string(last) +
                 ": the remaining " + std::to_string(middle_layers) + " layers do not divide evenly over " +
                 std::to_string(middle_stages) + " stages (use --first-stage-layers/--last-stage-layers or --layer-map)");
    return stage;
  }
  const int per = middle_stages > 0 ? middle_layers / middle_stages : 0;
  for (int l = 0; l < layers; ++l) {
    if (first > 0 && l < first) stage[l] = 0;
    else if (last > 0 && l >= layers - last) stage[l] = pp - 1;
    else stage[l] = (first > 0 ? 1 : 0) + (l - first) / per;
  }
  return stage;
}

std::vector<int> vllm_layer_stages(int layers, int pp) {
  std::vector<int> count(pp, pp > 0 ? layers / pp : 0);
  const int remaining = pp > 0 ? layers % pp : 0;
  for (int i = 2; i < remaining + 2; ++i) count[pp - i] += 1;
  std::vector<int> stage;
  for (int s = 0; s < pp; ++s) stage.insert(stage.end(), count[s], s);
  return stage;
}

}  // namespace reshard
