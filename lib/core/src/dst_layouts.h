// The destination layouts behind make_destination_layout (private to lib/core; docs/layouts.md).
#pragma once
#include <memory>

#include "reshard/core/dst_layout.h"

namespace reshard {

std::unique_ptr<DestinationLayout> make_hf_layout();        // dst_layout_hf.cpp
std::unique_ptr<DestinationLayout> make_vllm_layout();      // dst_layout_vllm.cpp
std::unique_ptr<DestinationLayout> make_megatron_layout();  // dst_layout_megatron.cpp

}  // namespace reshard
