#include "reshard/core/error.h"

#include <cctype>

namespace reshard {

namespace {

// A problem with its layer numbers blanked ("model.layers.17.mlp" -> "model.layers.#.mlp"): one cause
// repeated over the layers collapses to one line.
std::string layer_blind(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (s.compare(i, 7, "layers.") == 0 && i + 7 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 7]))) {
      out += "layers.#";
      i += 7;
      while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
      continue;
    }
    out += s[i++];
  }
  return out;
}

}  // namespace

void Problems::throw_if_any(const std::string& what) const {
  if (list_.empty()) return;
  std::string message = what;
  // Repeats of one cause in other layers: the first in full, then how many more.
  std::map<std::string, size_t> first;  // layer-blind form -> index in lines
  std::vector<std::pair<std::string, size_t>> lines;  // (problem, repeats)
  for (const std::string& p : list_) {
    auto [it, fresh] = first.try_emplace(layer_blind(p), lines.size());
    if (fresh)
      lines.push_back({p, 0});
    else
      ++lines[it->second].second;
  }
  for (const auto& [p, more] : lines) {
    message += "\n  - " + p;
    if (more > 0) message += " (and " + std::to_string(more) + " more like it in other layers)";
  }
  throw config_error(message);
}

void GroupedProblems::flush(Problems& problems) const {
  for (const auto& [message, where] : by_message_) {
    std::string s = message + " (" + *where.begin();
    if (where.size() > 1) s += " and " + std::to_string(where.size() - 1) + " more";
    problems.add(s + ")");
  }
}

}  // namespace reshard
