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

// FFN name families (docs/design.md, "FFN names"): which names mean gate / up / down.
//   gate_proj / up_proj / down_proj  Llama, Qwen2/3(-MoE), DeepSeek, Nemotron-H: dense, shared and routed
//   w1 / w3 / w2 under ".experts."   Mixtral's block_sparse_moe experts (vLLM models/mixtral.py
//                                    get_expert_mapping: ckpt_gate_proj_name="w1", up "w3", down "w2")
enum class Proj { None, Gate, Up, Down };
struct FfnSuffix {
  Proj proj;
  std::string_view suffix;  // what the name ends in
  bool experts_only;        // only under ".experts."
};
inline constexpr FfnSuffix kFfnFamilies[] = {
    {Proj::Gate, "gate_proj.weight", false}, {Proj::Up, "up_proj.weight", false}, {Proj::Down, "down_proj.weight", false},
    {Proj::Gate, ".w1.weight", true},        {Proj::Up, ".w3.weight", true},      {Proj::Down, ".w2.weight", true},
};
// The family entry `name` ends in; nullptr when none ("gate_up_proj" is not "up_proj").
inline const FfnSuffix* ffn_suffix(const std::string& name) {
  for (const FfnSuffix& f : kFfnFamilies) {
    if (!ends_with(name, f.suffix)) continue;
    if (f.proj == Proj::Up && ends_with(name, "gate_up_proj.weight")) continue;
    if (f.experts_only && !contains(name, ".experts.")) continue;
    return &f;
  }
  return nullptr;
}
inline Proj ffn_proj(const std::string& name) {
  const FfnSuffix* f = ffn_suffix(name);
  return f ? f->proj : Proj::None;
}
// "a.b.gate_proj.weight" -> "a.b."; Mixtral "a.experts.w1.weight" -> "a.experts."
inline std::string ffn_stem(const std::string& name) {
  const FfnSuffix* f = ffn_suffix(name);
  if (!f) return name;
  return stem(name, f->suffix.front() == '.' ? f->suffix.substr(1) : f->suffix);
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
