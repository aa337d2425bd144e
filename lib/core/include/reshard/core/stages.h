// Decoder layer -> pipeline stage.
#pragma once
#include <vector>

#include "reshard/core/error.h"

namespace reshard {

// Megatron's split: `first`/`last` (num_layers_in_first/last_pipeline_stage; 0 = not set) take
// their layers, the rest divide evenly over the remaining stages (a problem otherwise).
std::vector<int> megatron_layer_stages(int layers, int pp, int first, int last, Problems& problems);
// vLLM's get_pp_indices split: layers/pp each, the remainder going one each to the stages just
// before the last.
std::vector<int> vllm_layer_stages(int layers, int pp);

}  // namespace reshard
