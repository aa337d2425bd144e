// Small string helpers for parameter names (private to lib/core).
#pragma once
#include <string>
#include <string_view>

namespace reshard::names {

inline bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
inline bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }
inline bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }
// "a.b.gate_proj.weight" with suffix "gate_proj.weight" -> "a.b."
inline std::string stem(const std::string& s, std::string_view suffix) { return s.substr(0, s.size() - suffix.size()); }

// The FFN projection a name ends in: gate_proj.weight, up_proj.weight (not gate_up_proj) or down_proj.weight.
enum class Proj { None, Gate, Up, Down };
inline Proj ffn_proj(const std::string& name) {
  if (ends_with(name, "gate_proj.weight")) return Proj::Gate;
  if (ends_with(name, "up_proj.weight") && !ends_with(name, "gate_up_proj.weight")) return Proj::Up;
  if (ends_with(name, "down_proj.weight")) return Proj::Down;
  return Proj::None;
}
inline std::string_view proj_suffix(Proj p) {
  return p == Proj::Gate ? "gate_proj.weight" : p == Proj::Up ? "up_proj.weight" : "down_proj.weight";
}

// Where "self_attn.{q,k,v}_proj." starts in `name` and which of q/k/v (0/1/2); npos when none.
struct QkvPart {
  size_t at = std::string::npos;
  int which = -1;
  std::string suffix;  // "weight" or "bias"
};
inline QkvPart qkv_part(const std::string& name) {
  static constexpr std::string_view kParts[] = {"self_attn.q_proj.", "self_attn.k_proj.", "self_attn.v_proj."};
  for (int i = 0; i < 3; ++i) {
    const size_t at = name.find(kParts[i]);
    if (at != std::string::npos) return QkvPart{at, i, name.substr(at + kParts[i].size())};
  }
  return {};
}

}  // namespace reshard::names
