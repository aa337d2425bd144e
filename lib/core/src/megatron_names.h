// Megatron-Core's parameter names for HF names, private to lib/core: Megatron-Bridge's mappings
// (NVIDIA-NeMo/Megatron-Bridge 067f987d, src/megatron/bridge/models/: qwen/qwen3_bridge.py,
// qwen/qwen3_moe_bridge.py, deepseek/common.py, nemotronh/nemotron_h_bridge.py,
// qwen/qwen3_next_bridge.py, qwen/qwen35_bridge.py, qwen_vl/qwen3_vl_bridge.py; docs/layouts.md).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "reshard/core/grouping.h"

namespace reshard {

class MegatronNames {
 public:
  // `mtp_layers`: the HF model.layers.N that are DeepSeek's MTP module (mtp.layers.K, K in order).
  MegatronNames(const std::vector<LogicalParam>& params, const std::vector<int>& mtp_layers);

  // The Megatron tensor an HF param lands in; "" when Megatron has none (an MTP layer's copy of the
  // embedding or output layer, which it shares). Fused params (q/k/v, gate/up, GDN in_proj) name the
  // fused tensor.
  std::string name(const std::string& hf) const;
  // The Megatron module of an HF module prefix ("model.layers.3.mlp.experts." ->
  // "decoder.layers.3.mlp.experts."; NemotronH "backbone.layers.2.mixer.experts." -> ".mlp.experts.").
  std::string module(const std::string& hf_prefix) const;
  // Megatron keeps value - 1 where HF keeps value (param_mapping.py RMSNorm2ZeroCenteredRMSNormMapping:
  // the gated delta net's norm -> out_norm, Qwen3-Next and Qwen3.5).
  static bool zero_centered(const std::string& hf);

 private:
  struct Layer {
    bool mla = false, moe = false, gdn = false, mamba = false, attention = false, mlp = false;
  };
  // The layer prefix's Megatron prefix ("model.language_model.layers.3." -> "language_model.decoder.layers.3.")
  // and its kind; false when `hf` is not inside a layer.
  bool split_layer(const std::string& hf, std::string& megatron_prefix, std::string& rest, Layer& layer) const;
  std::string layer_part(const std::string& rest, const Layer& layer) const;
  // A module inside a layer: "mlp.shared_expert." -> "mlp.shared_experts.", NemotronH "mixer.experts.3." ->
  // "mlp.experts.", "self_attn." -> "self_attention.".
  static std::string module_part(const std::string& rest);

  std::map<std::string, Layer> layers_;  // HF layer prefix ("model.layers.3.") -> kind
  std::map<int, int> mtp_;               // HF layer -> MTP index
  bool vl_ = false;                      // model.language_model.*: Megatron's language_model.*
};

}  // namespace reshard
