// --gen-layout megatron: Megatron-Core's local tensors under Megatron-Core's names (docs/layouts.md;
// names from Megatron-Bridge's mappings, megatron_names.h).
//   dense / shared-expert gate, up -> "{layer}.mlp[.shared_experts].linear_fc1.weight" = [gate_local; up_local]
//   dense / shared-expert down     -> "....linear_fc2.weight"
//   grouped experts gate, up       -> "{layer}.mlp.experts.linear_fc1.weight{e}", one per local expert e,
//                                     each [1, gate_local + up_local, H] (dim 0 is the expert dim)
//   grouped experts down           -> "{layer}.mlp.experts.linear_fc2.weight{e}"
//   q, k, v (--bulk all)           -> "{layer}.self_attention.linear_qkv.{weight,bias}", interleaved per
//                                     query group: [q_g; k_g; v_g] for each local group g; with
//                                     tp > query groups or a gated q, the rank's chunk of the fused rows
//   gated delta net in_proj parts  -> "{layer}.self_attention.in_proj.weight" = [q; k; v; z; b; a] of the rank
//   everything else                -> its Megatron name (layer norms fused into the next linear,
//                                     routers, MLA projections, MTP, NemotronH, vision, VL prefixes)
// where "{layer}" is "decoder.layers.N" ("language_model.decoder.layers.N" for VL models, "mtp.layers.K
// .mtp_model_layer" for MTP). Misc params keep their whole tensors under the Megatron name where the
// mapping is one to one, and their HF name where Bridge fuses them on receive. Gen experts live on
// Megatron's expert mesh (etp, ep, edp), independent of tp.
#include <algorithm>
#include <map>
#include <optional>

#include "dst_layouts.h"
#include "megatron_names.h"
#include "megatron_qkv.h"
#include "names.h"

namespace reshard {
namespace {

// Position of a gated delta net in_proj part in Megatron's in_proj ([Q; K; V; Z; B; A]).
int gdn_in_index(const std::string& part) {
  if (part == "in_proj_qkvz.weight" || part == "in_proj_qkv.weight") return 0;
  if (part == "in_proj_ba.weight" || part == "in_proj_z.weight") return 1;
  if (part == "in_proj_b.weight") return 2;
  return 3;  // in_proj_a
}

class MegatronLayout final : public DestinationLayout {
 public:
  GenLayout kind() const override { return GenLayout::Megatron; }
  bool expert_mesh() const override { return true; }
  bool sectioned_mixers() const override { return true; }

  // Megatron's names for the model; with --bulk all, linear_qkv's query groups per attention layer.
  void prepare(const std::vector<LogicalParam>& params, const SystemConfig& system, const PlanOptions& options,
               Problems& problems) override {
    names_.emplace(params, options.mtp_layers);
    if (options.bulk != BulkMode::All) return;  // q/k/v stay misc
    std::string head_dim_from;
    const int64_t head_dim = find_head_dim(params, options, head_dim_from);
    bool attention = false;
    for (const LogicalParam& p : params) attention = attention || names::qkv_part(p.name).which == 1;
    if (!attention) return;
    if (head_dim <= 0) {
      problems.add("--gen-layout megatron --bulk all: linear_qkv interleaves q, k, v per query group and needs the "
                   "head dim: pass --head-dim N (the model has no self_attn.q_norm/k_norm to infer it from)");
      return;
    }
    qkv_ = qkv_shapes(params, head_dim, head_dim_from, problems);
    tp_ = system.gen.tp;
    GroupedProblems refused;
    for (const auto& [prefix, shape] : qkv_)
      if (const std::string why = qkv_tp_problem(shape, tp_, "gen"); !why.empty()) refused.add(why, prefix);
    refused.flush(problems);
  }

  // tp > query groups or a gated q: each rank's contiguous chunk of the fused rows (megatron_qkv.h).
  void place(const std::string& name, const Dims&, const ParamRule& rule,
             std::map<std::string, Placement>& dst) const override {
    if (rule.rule != "attn_qkv") return;
    const names::QkvPart part = names::qkv_part(name);
    if (part.at == std::string::npos) return;
    auto s = qkv_.find(name.substr(0, part.at));
    if (s != qkv_.end() && !qkv_interleaves(s->second, tp_)) dst["tp"] = qkv_placement(s->second, part.which, tp_, true);
  }

  StorageAssignment assign(const std::string& name, const ParamRule& rule, int) const override {
    using names::Proj;
    StorageAssignment a;
    if (rule.rule == "ffn" || rule.rule == "shared_expert" || rule.rule == "expert") {
      const Proj proj = names::ffn_proj(name);
      if (proj == Proj::None) return a;
      const bool grouped = rule.rule == "expert";
      a.storage = names_->module(names::ffn_stem(name)) + (proj == Proj::Down ? "linear_fc2.weight" : "linear_fc1.weight");
      if (proj != Proj::Down) {
        a.fuse_dim = grouped ? 1 : 0;
        a.fuse_index = proj == Proj::Gate ? 0 : 1;
      }
      if (grouped) a.split_dim = 0;  // one tensor per local expert: weight0, weight1, ...
      return a;
    }
    if (rule.rule == "attn_qkv") {
      const names::QkvPart part = names::qkv_part(name);
      if (part.at == std::string::npos) return a;
      auto g = qkv_.find(name.substr(0, part.at));
      if (g == qkv_.end()) return a;  // no k_proj: not a GQA block, keep the param's own tensor
      a.storage = names_->name(name);
      if (!qkv_interleaves(g->second, tp_)) return a;  // fused chunks: the cut places the rows
      a.fuse_dim = 0;
      a.fuse_index = part.which;
      a.fuse_groups = static_cast<int>(g->second.groups);
      return a;
    }
    if (rule.rule == "gdn_in") {  // [q; k; v; z] + [b; a] (or qkv, z, b, a), each the rank's own part
      a.storage = names_->name(name);
      a.fuse_dim = 0;
      a.fuse_index = gdn_in_index(names::gdn_part(name));
      return a;
    }
    const std::string renamed = names_->name(name);
    if (!renamed.empty() && renamed != name) a.storage = renamed;
    return a;
  }

  // One-to-one mappings only: a fused tensor (linear_qkv, linear_fc1, in_proj) is Bridge's to build.
  std::string misc_name(const std::string& name) const override {
    // Vision "attn.qkv" is [Q; K; V] in HF and interleaved per group in Megatron (ConcatenatedQKVMapping).
    if (names::qkv_part(name).at != std::string::npos || (names::ffn_proj(name) != names::Proj::None && names::ffn_proj(name) != names::Proj::Down) ||
        names::starts_with(names::gdn_part(name), "in_proj") || names::contains(name, ".attn.qkv."))
      return "";
    const std::string renamed = names_->name(name);
    return renamed == name ? "" : renamed;
  }

  std::string transform(const std::string& name) const override {
    return MegatronNames::zero_centered(name) ? "zero_centered" : "";
  }

 private:
  std::optional<MegatronNames> names_;
  std::map<std::string, QkvShape> qkv_;  // "model.layers.N." -> its groups
  int tp_ = 1;
};

}  // namespace

std::unique_ptr<DestinationLayout> make_megatron_layout() { return std::make_unique<MegatronLayout>(); }

}  // namespace reshard
