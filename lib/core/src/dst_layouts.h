// The destination layouts behind make_destination_layout (private to lib/core; docs/layouts.md).
#pragma once
#include <memory>

#include "reshard/core/dst_layout.h"

namespace reshard {

std::unique_ptr<DestinationLayout> make_hf_layout();        // dst_layout_hf.cpp
std::unique_ptr<DestinationLayout> make_vllm_layout();      // dst_layout_vllm.cpp
std::unique_ptr<DestinationLayout> make_megatron_layout();  // dst_layout_megatron.cpp

// The attention head dim: --head-dim, else the size of the first self_attn.q_norm / k_norm; 0 when
// neither. `from` names where it came from.
int64_t find_head_dim(const std::vector<LogicalParam>& params, const PlanOptions& options, std::string& from);

}  // namespace reshard
