// --gen-layout megatron: Megatron-Core's local tensors (docs/layouts.md).
//   dense / shared-expert gate, up -> "{layer}.mlp[.shared_experts].linear_fc1.weight" = [gate_local; up_local]
//   dense / shared-expert down     -> "....linear_fc2.weight"
//   grouped experts gate, up       -> "{layer}.mlp.experts.linear_fc1.weight{e}", one per local expert e,
//                                     each [1, gate_local + up_local, H] (dim 0 is the expert dim)
//   grouped experts down           -> "{layer}.mlp.experts.linear_fc2.weight{e}"
//   q, k, v (--bulk all)           -> "{layer}.self_attention.linear_qkv.{weight,bias}", interleaved per
//                                     query group: [q_g; k_g; v_g] for each local group g
//   o_proj                         -> "{layer}.self_attention.linear_proj.weight"
// where "{layer}" is the HF "model.layers.N" renamed "decoder.layers.N". Other params keep their HF
// names (a rename only; their local tensors are the hf layout's). Gen experts live on Megatron's
// expert mesh (etp, ep, edp), independent of tp.
#include <map>

#include "dst_layouts.h"
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
  void prepare(const std::vector<LogicalParam>& params, const SystemConfig&, const PlanOptions& options,
               Problems& problems) override {
    if (options.bulk != BulkMode::All) return;  // q/k/v stay misc
    std::string head_dim_from;
    const int64_t head_dim = find_head_dim(params, options, head_dim_from);
    std::map<std::string, const LogicalParam*> q, k, v;  // attention prefix -> weight
    for (const LogicalParam& p : params) {
      const names::QkvPart part = names::qkv_part(p.name);
      if (part.at == std::string::npos || part.suffix != "weight" || p.shape.n != 2) continue;
      (part.which == 0 ? q : part.which == 1 ? k : v)[p.name.substr(0, part.at)] = &p;
    }
    if (k.empty()) return;
    if (head_dim <= 0) {
      problems.add("--gen-layout megatron --bulk all: linear_qkv interleaves q, k, v per query group and needs the "
                   "head dim: pass --head-dim N (the model has no self_attn.q_norm/k_norm to infer it from)");
      return;
    }
    const std::string hd = std::to_string(head_dim) + " (" + head_dim_from + ")";
    for (const auto& [prefix, kp] : k) {
      const int64_t rows = kp->shape[0];
      if (rows % head_dim != 0) {
        problems.add(kp->name + ": " + std::to_string(rows) + " rows are not a multiple of head dim " + hd);
        continue;
      }
      const int64_t groups = rows / head_dim;
      auto qi = q.find(prefix), vi = v.find(prefix);
      if (qi == q.end() || vi == v.end()) {
        problems.add(kp->name + ": linear_qkv needs q_proj and v_proj beside it");
        continue;
      }
      if (vi->second->shape[0] != rows)
        problems.add(vi->second->name + ": " + std::to_string(vi->second->shape[0]) + " rows, k_proj has " +
                     std::to_string(rows) + " (linear_qkv needs one k and one v head per query group)");
      const int64_t q_rows = qi->second->shape[0];
      if (q_rows % (groups * head_dim) != 0)
        problems.add(qi->second->name + ": " + std::to_string(q_rows) + " rows are not " + std::to_string(groups) +
                     " query groups of whole heads of " + hd);
      groups_[prefix] = static_cast<int>(groups);
    }
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
      auto g = groups_.find(prefix);
      if (g == groups_.end()) return a;  // no k_proj: not a GQA block, keep the param's own tensor
      a.storage = megatron_path(prefix) + "self_attention.linear_qkv." + part.suffix;
      a.fuse_dim = 0;
      a.fuse_index = part.which;
      a.fuse_groups = g->second;
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
  std::map<std::string, int> groups_;  // "model.layers.N." -> query groups
};

}  // namespace

std::unique_ptr<DestinationLayout> make_megatron_layout() { return std::make_unique<MegatronLayout>(); }

}  // namespace reshard
