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
  for (const auto& [prefix, by_part] : mixers) {
    const auto& parts = by_part;  // clang 14 cannot capture a structured binding
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

std::map<std::string, GdnShape> gdn_shapes(const std::vector<LogicalParam>& params, Problems& problems) {
  std::map<std::string, std::map<std::string, const LogicalParam*>> layers;
  for (const LogicalParam& p : params) {
    const std::string part = names::gdn_part(p.name);
    if (!part.empty()) layers[p.name.substr(0, p.name.size() - part.size())][part] = &p;
  }
  std::map<std::string, GdnShape> out;
  for (const auto& [prefix, by_part] : layers) {
    const auto& parts = by_part;
    auto get = [&](const char* part) -> const LogicalParam* {
      auto it = parts.find(part);
      return it == parts.end() ? nullptr : it->second;
    };
    const LogicalParam *conv = get("conv1d.weight"), *a = get("A_log"), *norm = get("norm.weight"),
                       *o = get("out_proj.weight");
    if (!conv || !a || !norm || !o || o->shape.n != 2) continue;
    GdnShape g{0, o->shape[1], a->shape[0]};
    if (g.value_dim != g.value_heads * norm->shape[0] || conv->shape[0] <= g.value_dim ||
        (conv->shape[0] - g.value_dim) % 2 != 0) {
      problems.add(prefix + ": conv1d " + conv->shape.str() + ", A_log " + a->shape.str() + ", norm " +
                   norm->shape.str() + " and out_proj " + o->shape.str() +
                   " are not a gated delta net (conv1d rows = 2 key_dim + value_dim, value_dim = heads x head dim)");
      continue;
    }
    g.key_dim = (conv->shape[0] - g.value_dim) / 2;
    out[prefix] = g;
  }
  return out;
}

Placement gdn_placement(const GdnShape& g, int64_t key_heads, const std::string& part, bool megatron) {
  const std::vector<int64_t> qkv{g.key_dim, g.key_dim, g.value_dim};
  if (part == "conv1d.weight" || part == "in_proj_qkv.weight") return Placement::split(0, qkv);
  if (!megatron || key_heads <= 0) return Placement::shard(0);
  const int64_t dk = g.key_dim / key_heads, ratio = g.value_heads / key_heads, dv = g.value_dim / g.value_heads;
  if (part == "in_proj_qkvz.weight") return Placement::grouped(0, key_heads, {dk, dk, ratio * dv, ratio * dv});
  if (part == "in_proj_ba.weight") return Placement::grouped(0, key_heads, {ratio, ratio});
  return Placement::shard(0);
}

}  // namespace reshard
