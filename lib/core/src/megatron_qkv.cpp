#include "megatron_qkv.h"

#include "names.h"

namespace reshard {

std::map<std::string, QkvShape> qkv_shapes(const std::vector<LogicalParam>& params, int64_t head_dim,
                                           const std::string& head_dim_from, Problems& problems) {
  std::map<std::string, QkvShape> out;
  if (head_dim <= 0) return out;
  std::map<std::string, const LogicalParam*> q, k, v;  // attention prefix -> weight
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
    out[prefix] = QkvShape{groups, q_rows / groups, head_dim};
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

Placement qkv_placement(const QkvShape& s, int which, int tp) {
  if (s.groups % tp == 0) return Placement::shard(0);
  const int64_t rows[] = {s.q_rows, s.head_dim, s.head_dim};
  const int64_t before = which == 0 ? 0 : which == 1 ? s.q_rows : s.q_rows + s.head_dim;
  const int64_t period = s.q_rows + 2 * s.head_dim;
  return Placement::fused(0, s.groups, before, rows[which], period - before - rows[which]);
}

}  // namespace reshard
