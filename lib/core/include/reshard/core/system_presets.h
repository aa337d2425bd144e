// Named system models for `reshard simulate --system NAME`. Each value's source (datasheet,
// published nccl-tests numbers, or an assumption) is listed in docs/performance.md.
#pragma once
#include <string>
#include <vector>

#include "reshard/core/simulate.h"

namespace reshard {

const std::vector<SystemModel>& system_presets();
// Throws Error(Config) naming `name` and the known presets when there is none.
SystemModel find_system_preset(const std::string& name);

}  // namespace reshard
