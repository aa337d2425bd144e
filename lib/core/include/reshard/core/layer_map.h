// The layer-to-stage inputs of `reshard plan`: a --layer-map file and a comma-separated layer list
// (--mtp-layers). Every problem goes to `problems`, each naming the flag and the place.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reshard/core/error.h"

namespace reshard {

// `text` (from `path`) is {"<layer>": stage, ...} covering layers 0..N-1 once each, or [stage, ...]:
// the stage of each layer, or what could be read where there are problems.
std::vector<int> parse_layer_map(std::string_view text, const std::string& path, Problems& problems);

// "61" or "0,61": non-negative layer indices; `flag` names the input in messages.
std::vector<int> parse_layer_list(const std::string& list, const std::string& flag, Problems& problems);

}  // namespace reshard
