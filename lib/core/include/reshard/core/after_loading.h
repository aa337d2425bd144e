// What a destination engine does to its weights after loading them, where a refit that writes the
// plan's storages must act too (docs/layouts.md, "After loading"). Shown by plan --summary and inspect.
#pragma once
#include <string>
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

// One line per post-load step the plan's storages are subject to (vLLM destinations), each naming the
// engine's file and function; empty when none applies.
std::vector<std::string> after_loading_notes(const Plan& plan);

}  // namespace reshard
