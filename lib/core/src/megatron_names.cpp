#include "megatron_names.h"

#include <cctype>
#include <utility>

#include "names.h"
#include "reshard/core/rules.h"

namespace reshard {
namespace {

using names::contains;
using names::ends_with;
using names::starts_with;

// The HF roots in front of "layers.N.": (HF root, Megatron root).
constexpr std::pair<std::string_view, std::string_view> kRoots[] = {
    {"model.language_model.", "language_model."}, {"backbone.", ""}, {"model.", ""}, {"mtp.", "mtp."}};

// "X.layers.N." of `hf` (its length), or 0.
size_t layer_prefix(const std::string& hf, std::string_view root) {
  if (!starts_with(hf, root) || hf.compare(root.size(), 7, "layers.") != 0) return 0;
  size_t i = root.size() + 7;
  while (i < hf.size() && std::isdigit(static_cast<unsigned char>(hf[i]))) ++i;
  return i < hf.size() && hf[i] == '.' && i > root.size() + 7 ? i + 1 : 0;
}

// One-to-one renames inside a layer, after the layer prefix (qwen3_bridge.py, deepseek/common.py,
// qwen3_next_bridge.py, nemotron_h_bridge.py mapping lists).
constexpr std::pair<std::string_view, std::string_view> kLayerRenames[] = {
    {"self_attn.q_norm.weight", "self_attention.q_layernorm.weight"},
    {"self_attn.k_norm.weight", "self_attention.k_layernorm.weight"},
    {"self_attn.o_proj.weight", "self_attention.linear_proj.weight"},
    {"self_attn.q_a_proj.weight", "self_attention.linear_q_down_proj.weight"},
    {"self_attn.q_b_proj.weight", "self_attention.linear_q_up_proj.weight"},
    {"self_attn.q_a_layernorm.weight", "self_attention.linear_q_up_proj.layer_norm_weight"},
    {"self_attn.kv_a_proj_with_mqa.weight", "self_attention.linear_kv_down_proj.weight"},
    {"self_attn.kv_b_proj.weight", "self_attention.linear_kv_up_proj.weight"},
    {"self_attn.kv_a_layernorm.weight", "self_attention.linear_kv_up_proj.layer_norm_weight"},
    {"mlp.gate.weight", "mlp.router.weight"},
    {"mlp.gate.e_score_correction_bias", "mlp.router.expert_bias"},
    {"mlp.shared_expert_gate.weight", "mlp.shared_experts.gate_weight"},
    {"linear_attn.conv1d.weight", "self_attention.conv1d.weight"},
    {"linear_attn.A_log", "self_attention.A_log"},
    {"linear_attn.dt_bias", "self_attention.dt_bias"},
    {"linear_attn.out_proj.weight", "self_attention.out_proj.weight"},
    {"linear_attn.norm.weight", "self_attention.out_norm.weight"},
    // NemotronH: attention, router and latent projections under "mixer."
    {"mixer.o_proj.weight", "self_attention.linear_proj.weight"},
    {"mixer.gate.weight", "mlp.router.weight"},
    {"mixer.gate.e_score_correction_bias", "mlp.router.expert_bias"},
    {"mixer.fc1_latent_proj.weight", "mlp.fc1_latent_proj.weight"},
    {"mixer.fc2_latent_proj.weight", "mlp.fc2_latent_proj.weight"},
    // DeepSeek's MTP layer extras (deepseek/common.py MTP mappings)
    {"enorm.weight", "enorm.weight"},
    {"hnorm.weight", "hnorm.weight"},
    {"eh_proj.weight", "eh_proj.weight"},
};

// Qwen3-VL's vision tower (qwen_vl/qwen3_vl_bridge.py vision mappings): HF "model.visual." parts.
constexpr std::pair<std::string_view, std::string_view> kVisionRenames[] = {
    {"attn.qkv.", "self_attention.linear_qkv."},
    {"attn.proj.", "self_attention.linear_proj."},
    {"norm1.weight", "self_attention.linear_qkv.layer_norm_weight"},
    {"norm1.bias", "self_attention.linear_qkv.layer_norm_bias"},
    {"norm2.weight", "mlp.linear_fc1.layer_norm_weight"},
    {"norm2.bias", "mlp.linear_fc1.layer_norm_bias"},
    {"mlp.", "mlp."},
};

}  // namespace

MegatronNames::MegatronNames(const std::vector<LogicalParam>& params, const std::vector<int>& mtp_layers) {
  for (size_t k = 0; k < mtp_layers.size(); ++k) mtp_.emplace(mtp_layers[k], static_cast<int>(k));
  for (const LogicalParam& p : params) {
    const std::string& n = p.name;
    vl_ = vl_ || starts_with(n, "model.language_model.");
    for (const auto& [root, unused] : kRoots) {
      const size_t at = layer_prefix(n, root);
      if (at == 0) continue;
      Layer& l = layers_[n.substr(0, at)];
      const std::string rest = n.substr(at);
      l.mla = l.mla || starts_with(rest, "self_attn.q_a_proj.") || starts_with(rest, "self_attn.kv_a_proj_with_mqa.");
      l.moe = l.moe || starts_with(rest, "mlp.gate.") || starts_with(rest, "mlp.experts.") ||
              starts_with(rest, "mixer.experts.") || starts_with(rest, "mixer.gate.");
      l.gdn = l.gdn || starts_with(rest, "linear_attn.");
      l.mamba = l.mamba || starts_with(rest, "mixer.in_proj.");
      l.attention = l.attention || starts_with(rest, "mixer.q_proj.");
      l.mlp = l.mlp || starts_with(rest, "mixer.up_proj.");
      break;
    }
  }
}

bool MegatronNames::zero_centered(const std::string& hf) { return ends_with(hf, "linear_attn.norm.weight"); }

bool MegatronNames::split_layer(const std::string& hf, std::string& prefix, std::string& rest, Layer& layer) const {
  for (const auto& [root, megatron_root] : kRoots) {
    const size_t at = layer_prefix(hf, root);
    if (at == 0) continue;
    const int index = layer_index(hf.substr(0, at));
    rest = hf.substr(at);
    auto l = layers_.find(hf.substr(0, at));
    layer = l == layers_.end() ? Layer{} : l->second;
    const std::string lm = vl_ ? "language_model." : "";
    if (root == "mtp.") {  // Qwen3-Next / Qwen3.5: mtp.layers.K -> mtp.layers.K.mtp_model_layer.
      prefix = lm + "mtp.layers." + std::to_string(index) + ".mtp_model_layer.";
    } else if (auto m = mtp_.find(index); m != mtp_.end() && root == "model.") {
      // DeepSeek: model.layers.{L+k} -> mtp.layers.k; its own extras sit beside mtp_model_layer.
      const std::string mtp = "mtp.layers." + std::to_string(m->second) + ".";
      const bool extra = rest == "enorm.weight" || rest == "hnorm.weight" || rest == "eh_proj.weight" ||
                         starts_with(rest, "shared_head.") || starts_with(rest, "embed_tokens.");
      prefix = extra ? mtp : mtp + "mtp_model_layer.";
    } else {
      prefix = std::string(megatron_root) + "decoder.layers." + std::to_string(index) + ".";
    }
    return true;
  }
  return false;
}

std::string MegatronNames::layer_part(const std::string& rest, const Layer& l) const {
  for (const auto& [from, to] : kLayerRenames)
    if (rest == from) return std::string(to);
  if (rest == "input_layernorm.weight")  // TE fuses it into the next linear; MLA keeps a TENorm
    return l.mla ? "input_layernorm.weight"
                 : l.gdn ? "self_attention.in_proj.layer_norm_weight" : "self_attention.linear_qkv.layer_norm_weight";
  if (rest == "post_attention_layernorm.weight")
    return l.moe ? "pre_mlp_layernorm.weight" : "mlp.linear_fc1.layer_norm_weight";
  if (rest == "norm.weight")  // NemotronH's per-block norm, fused into the block's first linear
    return l.mamba       ? "mixer.in_proj.layer_norm_weight"
           : l.attention ? "self_attention.linear_qkv.layer_norm_weight"
           : l.moe       ? "pre_mlp_layernorm.weight"
                         : "mlp.linear_fc1.layer_norm_weight";
  if (rest == "shared_head.norm.weight") return "final_layernorm.weight";
  if (starts_with(rest, "shared_head.head.") || starts_with(rest, "embed_tokens.")) return "";  // shared
  if (starts_with(rest, "mixer.") && l.mamba)  // MambaMixer keeps HF's names
    return rest;
  const names::QkvPart qkv = names::qkv_part(rest);
  if (qkv.at != std::string::npos) return "self_attention.linear_qkv." + qkv.suffix;
  if (l.mla && rest == "self_attn.q_proj.weight") return "self_attention.linear_q_proj.weight";
  if (starts_with(rest, "linear_attn.in_proj")) return "self_attention.in_proj.weight";
  const names::Proj proj = names::ffn_proj(rest);
  if (proj != names::Proj::None) {
    // Grouped experts: one tensor per local expert, "...experts.linear_fc1.weight<e>" (storage split).
    return module_part(names::ffn_stem(rest)) + (proj == names::Proj::Down ? "linear_fc2.weight" : "linear_fc1.weight");
  }
  return rest;
}

std::string MegatronNames::module_part(const std::string& rest) {
  // "mlp." / "mlp.shared_expert." / "mixer.experts." ... -> Megatron's mlp modules.
  std::string s = rest;
  if (starts_with(s, "mixer.")) s = "mlp." + s.substr(6);
  if (starts_with(s, "mlp.shared_expert.")) s = "mlp.shared_experts." + s.substr(18);
  if (starts_with(s, "self_attn.")) s = "self_attention." + s.substr(10);
  // "mlp.experts.3." (one HF expert) -> "mlp.experts." (the grouped tensor's module)
  if (starts_with(s, "mlp.experts.")) s = "mlp.experts.";
  return s;
}

std::string MegatronNames::module(const std::string& hf_prefix) const {
  std::string prefix, rest;
  Layer l;
  if (!split_layer(hf_prefix, prefix, rest, l)) return hf_prefix;
  return prefix + module_part(rest);
}

std::string MegatronNames::name(const std::string& hf) const {
  const std::string lm = vl_ ? "language_model." : "";
  if (starts_with(hf, "model.visual.")) {
    std::string rest = hf.substr(13);
    if (starts_with(rest, "blocks.")) {
      const size_t dot = rest.find('.', 7);
      const std::string block = rest.substr(7, dot - 7), part = dot == std::string::npos ? "" : rest.substr(dot + 1);
      for (const auto& [from, to] : kVisionRenames)
        if (starts_with(part, from))
          return "vision_model.decoder.layers." + block + "." + std::string(to) + part.substr(from.size());
      return "vision_model.decoder.layers." + block + "." + part;
    }
    if (starts_with(rest, "merger.norm.")) return "vision_model.merger.patch_norm." + rest.substr(12);
    return "vision_model." + rest;
  }
  for (const auto& [hf_name, megatron] : std::initializer_list<std::pair<std::string_view, std::string_view>>{
           {"model.embed_tokens.weight", "embedding.word_embeddings.weight"},
           {"model.language_model.embed_tokens.weight", "embedding.word_embeddings.weight"},
           {"backbone.embeddings.weight", "embedding.word_embeddings.weight"},
           {"model.norm.weight", "decoder.final_layernorm.weight"},
           {"model.language_model.norm.weight", "decoder.final_layernorm.weight"},
           {"backbone.norm_f.weight", "decoder.final_norm.weight"},  // HybridStack.final_norm
           {"lm_head.weight", "output_layer.weight"},
           {"mtp.fc.weight", "mtp.layers.0.eh_proj.weight"},
           {"mtp.pre_fc_norm_embedding.weight", "mtp.layers.0.enorm.weight"},
           {"mtp.pre_fc_norm_hidden.weight", "mtp.layers.0.hnorm.weight"},
           {"mtp.norm.weight", "mtp.layers.0.final_layernorm.weight"}})
    if (hf == hf_name) return lm + std::string(megatron);
  std::string prefix, rest;
  Layer l;
  if (!split_layer(hf, prefix, rest, l)) return hf;
  const std::string part = layer_part(rest, l);
  return part.empty() ? "" : prefix + part;
}

}  // namespace reshard
