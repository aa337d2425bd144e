// "Did you mean": the closest known name to a mistyped one, for unknown commands and flags.
#pragma once
#include <string>
#include <vector>

namespace reshard {

// Edit distance (insertions, deletions, substitutions, adjacent swaps) between a and b.
int edit_distance(const std::string& a, const std::string& b);

// The known name closest to `word` when it is close enough to be a typo (at most a third of its
// length, and at most 3, edits away; ties: the first listed), else "".
std::string closest_name(const std::string& word, const std::vector<std::string>& known);

}  // namespace reshard
