// --gen-layout megatron: Megatron-Core's local tensors (docs/layouts.md).
//   dense / shared-expert gate, up -> "{layer}.mlp[.shared_experts].linear_fc1.weight" = [gate_local; up_local]
//   dense / shared-expert down     -> "....linear_fc2.weight"
//   grouped experts gate, up       -> "{layer}.mlp.experts.linear_fc1.weight{e}", one per local expert e,
//                                     each [1, gate_local + up_local, H] (dim 0 is the expert dim)
//   grouped experts down           -> "{layer}.mlp.experts.linear_fc2.weight{e}"
//   q, k, v (--bulk all)           -> "{layer}.self_attention.linear_qkv.{weight,bias}", interleaved per
//                                     query group: [q_g; k_g; v_g] for each local group g; with
//                                     tp > query groups, the rank's contiguous chunk of those rows
//   o_proj                         -> "{layer}.self_attention.linear_proj.weight"
// where "{layer}" is the HF "model.layers.N" renamed "decoder.layers.N". Other params keep their HF
// names (a rename only; their local tensors are the hf layout's). Gen experts live on Megatron's
// expert mesh (etp, ep, edp), independent of tp.
#include <map>

#include <algorithm>

#include "dst_layouts.h"
#include "megatron_qkv.h"
#include "names.h"

namespace reshard {
namespace {

// HF module path -> Megatron's: "model.layers.N." -> "decoder.layers.N.", "self_attn." ->
// "self_attention.", Qwen2-MoE's "shared_expert." -> "shared_experts.".
std::string megatron_path(std::string s) {
  if (names::starts_with(s, "model.layers.")) s = "decoder." + s.substr(6);
  for (const auto& [from, to] : {std::pair<std::string_view, std::string_view>{"self_attn.", "self_attention."},
                                 {"shared_expert.", "shared_experts."}}) {
    const size_t at = s.find(from);
    if (at != std::string::npos) s.replace(at, from.size(), to);
  }
  return s;
}

class MegatronLayout final : public DestinationLayout {
 public:
  GenLayout kind() const override { return GenLayout::Megatron; }
  bool expert_mesh() const override { return true; }
  bool sectioned_mixers() const override { return true; }

  // linear_qkv needs the query groups of each attention layer: k rows / head_dim.
  void prepare(const std::vector<LogicalParam>& params, const SystemConfig& system, const PlanOptions& options,
               Problems& problems) override {
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

  StorageAssignment assign(const std::string& name, const ParamRule& rule, int ndim) const override {
    using names::Proj;
    StorageAssignment a;
    if (rule.rule == "ffn" || rule.rule == "shared_expert" || rule.rule == "expert") {
      const Proj proj = names::ffn_proj(name);
      if (proj == Proj::None) return a;
      const bool grouped = rule.rule == "expert";
      const std::string stem = megatron_path(names::ffn_stem(name));
      a.storage = stem + (proj == Proj::Down ? "linear_fc2.weight" : "linear_fc1.weight");
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
      const std::string prefix = name.substr(0, part.at);
      auto g = qkv_.find(prefix);
      if (g == qkv_.end()) return a;  // no k_proj: not a GQA block, keep the param's own tensor
      a.storage = megatron_path(prefix) + "self_attention.linear_qkv." + part.suffix;
      if (!qkv_interleaves(g->second, tp_)) return a;  // fused chunks: the cut places the rows
      a.fuse_dim = 0;
      a.fuse_index = part.which;
      a.fuse_groups = static_cast<int>(g->second.groups);
      return a;
    }
    if (rule.rule == "attn_out") {
      const size_t at = name.find("self_attn.o_proj.");
      if (at != std::string::npos)
        a.storage = megatron_path(name.substr(0, at)) + "self_attention.linear_proj." +
                    name.substr(at + std::string_view("self_attn.o_proj.").size());
    }
    return a;
  }

 private:
  std::map<std::string, QkvShape> qkv_;  // "model.layers.N.self_attn." -> its groups
  int tp_ = 1;
};

}  // namespace

std::unique_ptr<DestinationLayout> make_megatron_layout() { return std::make_unique<MegatronLayout>(); }

}  // namespace reshard
