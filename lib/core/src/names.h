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

// Pre-process modules Megatron builds only on the first pipeline stage (Megatron-Bridge
// models/qwen_vl/modelling_qwen3_vl/model.py Qwen3VLModel.__init__: "if self.pre_process:
// self.vision_model = ..."; likewise Qwen3.5, Qwen2.5-VL) and vLLM on every stage (qwen3_vl.py
// Qwen3VLForConditionalGeneration.__init__ builds self.visual unconditionally): vision / audio
// towers and their projectors, under their HF names.
inline bool pre_process_module(const std::string& name) {
  for (std::string_view prefix : {"model.visual.", "visual.", "vision_tower.", "model.vision_tower.", "vision_model.",
                                  "model.vision_model.", "multi_modal_projector.", "model.multi_modal_projector.",
                                  "audio_tower.", "model.audio_tower."})
    if (starts_with(name, prefix)) return true;
  return false;
}

// Which part of the model a param belongs to, for its pipeline stage (planner.cpp) and the summary's
// `train pp` row: `layer` is its decoder layer index (-1: none), `mtp` whether it is of the MTP
// module ("mtp.*" or a --mtp-layers layer).
enum class Module { PreProcess, Decoder, Mtp, Embedding, Output, FinalNorm };
inline Module module_kind(const std::string& name, int layer, bool mtp) {
  if (pre_process_module(name)) return Module::PreProcess;
  if (mtp) return Module::Mtp;
  if (layer >= 0) return Module::Decoder;
  if (contains(name, "embed")) return Module::Embedding;
  if (starts_with(name, "lm_head.") || contains(name, ".lm_head.") || contains(name, "output_layer."))
    return Module::Output;
  return Module::FinalNorm;
}
inline const char* module_label(Module m) {
  switch (m) {
    case Module::PreProcess: return "vision";
    case Module::Decoder: return "layers";
    case Module::Mtp: return "mtp";
    case Module::Embedding: return "embeddings";
    case Module::Output: return "lm_head";
    case Module::FinalNorm: return "final norm";
  }
  return "?";
}

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

// Where the attention module "self_attn." (or NemotronH's attention "mixer.") of a
// "{module}{q,k,v}_proj." name starts, which of q/k/v (0/1/2), the module; npos when none.
struct QkvPart {
  size_t at = std::string::npos;
  int which = -1;
  std::string suffix;  // "weight" or "bias"
  std::string module;  // "self_attn." or "mixer."
};
inline QkvPart qkv_part(const std::string& name) {
  static constexpr std::string_view kModules[] = {"self_attn.", "mixer."};
  static constexpr std::string_view kParts[] = {"q_proj.", "k_proj.", "v_proj."};
  for (std::string_view module : kModules)
    for (int i = 0; i < 3; ++i) {
      const std::string part = std::string(module) + std::string(kParts[i]);
      const size_t at = name.find(part);
      if (at != std::string::npos) return QkvPart{at, i, name.substr(at + part.size()), std::string(module)};
    }
  return {};
}

// Mamba2 mixer tensors (NemotronH: "...mixer.{in_proj,conv1d,A_log,D,dt_bias,norm,out_proj}"): the part
// after "mixer." when `name` is one, else "".
inline std::string mamba_part(const std::string& name) {
  static constexpr std::string_view kParts[] = {"in_proj.weight", "conv1d.weight", "conv1d.bias", "A_log",
                                                "D",              "dt_bias",       "norm.weight", "out_proj.weight"};
  const size_t at = name.rfind("mixer.");
  if (at == std::string::npos) return "";
  const std::string part = name.substr(at + 6);
  for (std::string_view p : kParts)
    if (part == p) return part;
  return "";
}

// Gated delta net tensors (Qwen3-Next: in_proj_qkvz, in_proj_ba; Qwen3.5: in_proj_qkv, in_proj_z,
// in_proj_b, in_proj_a; both conv1d, A_log, dt_bias, norm, out_proj): the part after "linear_attn.", else "".
inline std::string gdn_part(const std::string& name) {
  static constexpr std::string_view kParts[] = {
      "in_proj_qkvz.weight", "in_proj_ba.weight", "in_proj_qkv.weight", "in_proj_z.weight", "in_proj_b.weight",
      "in_proj_a.weight",    "conv1d.weight",     "A_log",              "dt_bias",          "norm.weight",
      "out_proj.weight"};
  const size_t at = name.rfind("linear_attn.");
  if (at == std::string::npos) return "";
  const std::string part = name.substr(at + 12);
  for (std::string_view p : kParts)
    if (part == p) return part;
  return "";
}

}  // namespace reshard::names
