// --gen-layout vllm: vLLM's fused local tensors. Dense gate/up -> "{stem}gate_up_proj.weight" (dim 0),
// grouped experts gate/up -> "{stem}w13_weight" (dim 1) and down -> "{stem}w2_weight", attention
// q/k/v -> "self_attn.qkv_proj.{weight,bias}" (dim 0, concatenated: [q_local; k_local; v_local]).
#include "dst_layouts.h"
#include "names.h"

namespace reshard {
namespace {

class VllmLayout final : public DestinationLayout {
 public:
  GenLayout kind() const override { return GenLayout::Vllm; }

  StorageAssignment assign(const std::string& name, const ParamRule& rule, int) const override {
    using names::Proj;
    StorageAssignment a;
    if (rule.rule == "ffn" || rule.rule == "shared_expert" || rule.rule == "expert") {
      const Proj proj = names::ffn_proj(name);
      const bool grouped = rule.rule == "expert";
      if (proj == Proj::None) return a;
      const std::string stem = names::stem(name, names::proj_suffix(proj));
      if (proj == Proj::Down) {
        if (grouped) a.storage = stem + "w2_weight";
        return a;
      }
      a.storage = stem + (grouped ? "w13_weight" : "gate_up_proj.weight");
      a.fuse_dim = grouped ? 1 : 0;  // experts: dim 0 is the expert dim
      a.fuse_index = proj == Proj::Gate ? 0 : 1;
      return a;
    }
    if (rule.rule == "attn_qkv") {
      const names::QkvPart q = names::qkv_part(name);
      if (q.at == std::string::npos) return a;
      a.storage = name.substr(0, q.at) + "self_attn.qkv_proj." + q.suffix;
      a.fuse_dim = 0;
      a.fuse_index = q.which;
    }
    return a;
  }
};

}  // namespace

std::unique_ptr<DestinationLayout> make_vllm_layout() { return std::make_unique<VllmLayout>(); }

}  // namespace reshard
