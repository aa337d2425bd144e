// Layout conformance (verify.h): a plan's layouts must be the engine's. The model is rebuilt from the
// plan's params (their HF members and shapes), planned again without transfers, and every param's
// path, meshes, placements and storage compared with what the plan says: a plan whose vllm storage is
// not vLLM's layout (made by an older reshard, or edited) is refused though it may be self-consistent.
#include <map>

#include "reshard/core/error.h"
#include "reshard/core/planner.h"
#include "reshard/core/verify.h"

namespace reshard {
namespace {

std::string placements(const Layout& l) {
  std::string s = "[";
  for (size_t i = 0; i < l.placements.size(); ++i) s += (i ? ", " : "") + l.placements[i].str();
  return s + "]";
}

// The HF tensors behind the plan's params, in plan order. Grouped experts give one tensor per member
// (the param's shape less its expert dim); pre-fused HF experts (gate_up_proj, one member for the gate
// and the up param) give their fused tensor once.
ModelMeta model_of(const Plan& plan) {
  ModelMeta m;
  m.name = plan.model_name;
  std::map<std::string, size_t> seen;
  for (const ParamPlan& p : plan.params) {
    const bool grouped = p.members.size() > 1 || (p.members.size() == 1 && p.members[0] != p.name);
    if (!grouped) {
      m.tensors.push_back({p.name, p.shape, p.dtype});
      continue;
    }
    if (p.members.size() == static_cast<size_t>(p.shape[0]) && p.shape.n >= 2 && p.members.size() > 1) {
      Dims one = Dims::zeros(p.shape.n - 1);
      for (int d = 1; d < p.shape.n; ++d) one[d - 1] = p.shape[d];
      for (const std::string& name : p.members) m.tensors.push_back({name, one, p.dtype});
      continue;
    }
    auto [it, fresh] = seen.try_emplace(p.members[0], m.tensors.size());
    if (fresh) {
      m.tensors.push_back({p.members[0], p.shape, p.dtype});
    } else if (p.shape.n >= 2) {  // the second half of a fused gate_up_proj
      m.tensors[it->second].shape[1] += p.shape[1];
    }
  }
  return m;
}

}  // namespace

void verify_layouts(const Plan& plan, const std::function<void(const std::string&)>& problem) {
  // Block-FP8 sources of a Megatron destination drop their scales from the plan, so the model cannot
  // be rebuilt from it: their layouts are checked by the planner's own tests only.
  for (const ParamPlan& p : plan.params)
    if (p.src_dequant) return;
  Plan expected;
  try {
    expected = plan_layouts(model_of(plan), plan.system, plan.options);
  } catch (const Error& e) {
    problem(std::string("the plan's model, parallelism and options are not a valid configuration: ") + e.what());
    return;
  }
  std::map<std::string, const ParamPlan*> by_name;
  for (const ParamPlan& p : expected.params) by_name.emplace(p.name, &p);
  const std::string engine = plan.options.gen_layout == GenLayout::Vllm       ? "vLLM's"
                             : plan.options.gen_layout == GenLayout::Megatron ? "Megatron-Core's"
                                                                              : "the hf layout's";
  for (const ParamPlan& p : plan.params) {
    auto it = by_name.find(p.name);
    if (it == by_name.end()) {
      problem("param " + p.name + ": not a param of the plan's model as the planner groups it");
      continue;
    }
    const ParamPlan& e = *it->second;
    const std::string where = "param " + p.name + ": ";
    if (p.path != e.path) {
      problem(where + "path " + to_string(p.path) + ", the rules give " + to_string(e.path));
      continue;
    }
    if (p.dst_name != e.dst_name || p.dst_transform != e.dst_transform)
      problem(where + "lands as '" + p.dst_name + "' (transform '" + p.dst_transform + "'), " + engine + " name is '" +
              e.dst_name + "' (transform '" + e.dst_transform + "')");
    if (p.path != Path::Bulk) continue;
    if (p.src.mesh.ranks != e.src.mesh.ranks || placements(p.src) != placements(e.src))
      problem(where + "train layout " + placements(p.src) + " over ranks differs from Megatron's " + placements(e.src));
    if (p.dst.mesh.ranks != e.dst.mesh.ranks || p.dst.mesh.dim_sizes != e.dst.mesh.dim_sizes)
      problem(where + "gen mesh differs from " + engine + " (" + std::to_string(e.dst.mesh.size()) + " ranks)");
    else if (placements(p.dst) != placements(e.dst))
      problem(where + "gen placements " + placements(p.dst) + " differ from " + engine + " " + placements(e.dst));
    if (p.dst_storage != e.dst_storage || p.dst_fuse_dim != e.dst_fuse_dim || p.dst_fuse_index != e.dst_fuse_index ||
        p.dst_fuse_groups != e.dst_fuse_groups || p.dst_split_dim != e.dst_split_dim)
      problem(where + "lands in " + p.dst_storage + " (fuse dim " + std::to_string(p.dst_fuse_dim) + ", member " +
              std::to_string(p.dst_fuse_index) + "), " + engine + " layout has " + e.dst_storage + " (fuse dim " +
              std::to_string(e.dst_fuse_dim) + ", member " + std::to_string(e.dst_fuse_index) + ")");
  }
}

}  // namespace reshard
