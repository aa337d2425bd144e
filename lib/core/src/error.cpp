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
  struct Line {
    std::string text;
    size_t same = 0, other_layers = 0;  // repeats word for word (a flag given twice), and in other layers
  };
  std::vector<Line> lines;
  for (const std::string& p : list_) {
    auto [it, fresh] = first.try_emplace(layer_blind(p), lines.size());
    if (fresh)
      lines.push_back({p});
    else if (lines[it->second].text == p)
      ++lines[it->second].same;
    else
      ++lines[it->second].other_layers;
  }
  for (const Line& l : lines) {
    message += "\n  - " + l.text;
    if (l.same > 0) message += " (" + std::to_string(l.same + 1) + " times)";
    if (l.other_layers > 0) message += " (and " + std::to_string(l.other_layers) + " more like it in other layers)";
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
