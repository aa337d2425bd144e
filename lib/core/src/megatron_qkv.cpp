#include "megatron_qkv.h"

#include "names.h"

namespace reshard {

std::map<std::string, QkvShape> qkv_shapes(const std::vector<LogicalParam>& params, int64_t head_dim,
                                           const std::string& head_dim_from, Problems& problems) {
  std::map<std::string, QkvShape> out;
  if (head_dim <= 0) return out;
  std::map<std::string, const LogicalParam*> q, k, v;  // attention prefix -> weight
  std::map<std::string, const LogicalParam*> by_name;
  for (const LogicalParam& p : params) by_name.emplace(p.name, &p);
  for (const LogicalParam& p : params) {
    const names::QkvPart part = names::qkv_part(p.name);
    if (part.at == std::string::npos || part.suffix != "weight" || p.shape.n != 2) continue;
    (part.which == 0 ? q : part.which == 1 ? k : v)[p.name.substr(0, part.at)] = &p;
  }
  const std::string hd = std::to_string(head_dim) + " (" + head_dim_from + ")";
  GroupedProblems bad;  // one line per distinct shape problem, over the layers
  for (const auto& [prefix, kp] : k) {
    const int64_t rows = kp->shape[0];
    if (rows % head_dim != 0) {
      bad.add("k_proj: " + std::to_string(rows) + " rows are not a multiple of head dim " + hd, kp->name);
      continue;
    }
    const int64_t groups = rows / head_dim;
    auto qi = q.find(prefix), vi = v.find(prefix);
    if (qi == q.end() || vi == v.end()) {
      bad.add("linear_qkv needs q_proj and v_proj beside k_proj", kp->name);
      continue;
    }
    if (vi->second->shape[0] != rows) {
      bad.add("v_proj: " + std::to_string(vi->second->shape[0]) + " rows, k_proj has " + std::to_string(rows) +
                  " (linear_qkv needs one k and one v head per query group)",
              vi->second->name);
      continue;
    }
    const int64_t q_rows = qi->second->shape[0];
    if (q_rows % (groups * head_dim) != 0) {
      bad.add("q_proj: " + std::to_string(q_rows) + " rows are not " + std::to_string(groups) +
                  " query groups of whole heads of " + hd,
              qi->second->name);
      continue;
    }
    QkvShape shape{groups, q_rows / groups, head_dim, false};
    const std::string module = names::qkv_part(kp->name).module;
    if (auto o = by_name.find(prefix + module + "o_proj.weight"); o != by_name.end() && o->second->shape.n == 2)
      shape.gated = q_rows == 2 * o->second->shape[1];
    if (shape.gated && (q_rows / 2) % (groups * head_dim) != 0) {
      bad.add("q_proj: " + std::to_string(q_rows) + " gated rows are not " + std::to_string(groups) +
                  " query groups of whole [q; gate] heads of " + hd,
              qi->second->name);
      continue;
    }
    out[prefix] = shape;
  }
  bad.flush(problems);
  return out;
}

std::string qkv_tp_problem(const QkvShape& s, int tp, const std::string& side) {
  const int64_t heads = s.heads();
  if (heads % tp == 0 && (s.groups % tp == 0 || tp % s.groups == 0)) return "";
  return "Megatron-Core refuses: " + std::to_string(heads) + " attention heads and " + std::to_string(s.groups) +
         " query groups over " + side + " tp " + std::to_string(tp) +
         " (needs heads % tp == 0 and query groups % tp == 0 or tp % query groups == 0; "
         "megatron/core/transformer/transformer_config.py)";
}

bool qkv_interleaves(const QkvShape& s, int tp) { return s.groups % tp == 0 && !s.gated; }

Placement qkv_placement(const QkvShape& s, int which, int tp, bool exact) {
  if (!exact && s.groups % tp == 0) return Placement::shard(0);
  const int64_t period = s.q_rows + 2 * s.head_dim, hd = s.head_dim;
  std::vector<std::pair<int64_t, int64_t>> runs;  // (rows, position in the fused group)
  if (which == 1) {
    runs = {{hd, s.q_rows}};
  } else if (which == 2) {
    runs = {{hd, s.q_rows + hd}};
  } else if (!s.gated) {
    runs = {{s.q_rows, 0}};
  } else {  // HF head j: q_j then z_j; Megatron: all q heads, then all z heads
    const int64_t n = s.q_rows / (2 * hd);
    for (int64_t j = 0; j < n; ++j) runs.insert(runs.end(), {{hd, j * hd}, {hd, (n + j) * hd}});
  }
  return Placement::fused(0, s.groups, period, runs);
}

}  // namespace reshard
