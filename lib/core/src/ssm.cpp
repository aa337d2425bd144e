#include "ssm.h"

#include "names.h"

namespace reshard {

std::map<std::string, MambaShape> mamba_shapes(const std::vector<LogicalParam>& params, Problems& problems) {
  std::map<std::string, std::map<std::string, const LogicalParam*>> mixers;  // prefix -> part -> param
  for (const LogicalParam& p : params) {
    const std::string part = names::mamba_part(p.name);
    if (!part.empty()) mixers[p.name.substr(0, p.name.size() - part.size())][part] = &p;
  }
  std::map<std::string, MambaShape> out;
  for (const auto& [prefix, parts] : mixers) {
    auto get = [&](const char* part) -> const LogicalParam* {
      auto it = parts.find(part);
      return it == parts.end() ? nullptr : it->second;
    };
    const LogicalParam *in = get("in_proj.weight"), *conv = get("conv1d.weight"), *norm = get("norm.weight"),
                       *a = get("A_log");
    if (!in || !conv || !norm || !a) continue;  // not a Mamba2 mixer: its tensors stay as the rules say
    MambaShape m{norm->shape[0], (conv->shape[0] - norm->shape[0]) / 2, a->shape[0]};
    if (conv->shape[0] <= m.inner || (conv->shape[0] - m.inner) % 2 != 0 ||
        in->shape[0] != 2 * m.inner + 2 * m.groups_state + m.heads) {
      problems.add(prefix + ": in_proj " + in->shape.str() + ", conv1d " + conv->shape.str() + ", norm " +
                   norm->shape.str() + " and A_log " + a->shape.str() +
                   " are not a Mamba2 mixer (in_proj rows = 2 d_inner + 2 G N + heads, conv1d rows = d_inner + 2 G N)");
      continue;
    }
    out[prefix] = m;
  }
  return out;
}

std::vector<int64_t> mamba_sections(const MambaShape& m, const std::string& part, bool duplicate_groups) {
  const int64_t gn = duplicate_groups ? -m.groups_state : m.groups_state;
  if (part == "in_proj.weight") return {m.inner, m.inner, gn, gn, m.heads};  // z, x, B, C, dt
  if (part == "conv1d.weight" || part == "conv1d.bias") return {m.inner, gn, gn};  // x, B, C
  return {};
}

}  // namespace reshard
