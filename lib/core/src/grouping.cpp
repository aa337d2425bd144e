#include "reshard/core/grouping.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

namespace reshard {
namespace {

struct ExpertName {
  std::string prefix;  // "...experts"
  int expert = -1;
  std::string proj;    // gate_proj | up_proj | down_proj, or Mixtral's w1 | w3 | w2 (names.h families)
  std::string suffix;  // "weight", or "weight_scale_inv" (block-FP8 scales group like their weights)
};

// Hand-rolled match of (.+\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj|w1|w3|w2)\.(weight|weight_scale_inv):
// std::regex is too slow for 90k-tensor checkpoints.
bool parse_expert_name(const std::string& n, ExpertName& out) {
  std::string suffix;
  for (const char* s : {"weight", "weight_scale_inv"}) {
    const std::string dotted = std::string(".") + s;
    if (n.size() >= dotted.size() && n.compare(n.size() - dotted.size(), dotted.size(), dotted) == 0) suffix = s;
  }
  if (suffix.empty()) return false;
  const std::string body = n.substr(0, n.size() - suffix.size() - 1);
  const size_t dot = body.rfind('.');
  if (dot == std::string::npos) return false;
  const std::string proj = body.substr(dot + 1);
  if (proj != "gate_proj" && proj != "up_proj" && proj != "down_proj" && proj != "w1" && proj != "w2" && proj != "w3")
    return false;
  const size_t dot2 = body.rfind('.', dot - 1);
  if (dot2 == std::string::npos) return false;
  const std::string num = body.substr(dot2 + 1, dot - dot2 - 1);
  if (num.empty() || !std::all_of(num.begin(), num.end(), [](unsigned char c) { return std::isdigit(c); }))
    return false;
  const std::string prefix = body.substr(0, dot2);
  static constexpr std::string_view kExperts = ".experts";
  if (prefix.size() <= kExperts.size() || prefix.compare(prefix.size() - kExperts.size(), kExperts.size(), kExperts) != 0)
    return false;
  // An expert's name with an index past 999999: an expert (refused by the caller), not a dense weight.
  out = {prefix, num.size() > 6 ? -1 : std::stoi(num), proj, suffix};
  return true;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<LogicalParam> group_params(const std::vector<TensorMeta>& tensors, Problems& problems) {
  std::vector<LogicalParam> out;
  struct Group {
    size_t out_index;
    std::map<int, size_t> experts;  // expert id -> tensor index
  };
  std::unordered_map<std::string, Group> groups;  // grouped name -> group

  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorMeta& t = tensors[i];
    ExpertName en;
    if (parse_expert_name(t.name, en) && en.expert < 0) {
      problems.add(t.name + ": expert index beyond 999999 (at most a million experts per group)");
      continue;
    }
    if (en.expert >= 0) {
      const std::string gname = en.prefix + "." + en.proj + "." + en.suffix;
      auto [it, fresh] = groups.try_emplace(gname, Group{out.size(), {}});
      if (fresh) {
        LogicalParam p;
        p.name = gname;
        p.dtype = t.dtype;
        p.grouped_expert = true;
        out.push_back(std::move(p));
      }
      if (!it->second.experts.emplace(en.expert, i).second)
        problems.add("expert group " + gname + ": expert " + std::to_string(en.expert) + " appears twice");
      continue;
    }
    // Pre-fused HF experts: experts.gate_up_proj [E, 2I, H] and experts.down_proj [E, H, I].
    if (ends_with(t.name, ".experts.gate_up_proj") && t.shape.n == 3) {
      if (t.shape[1] % 2 != 0) {
        problems.add(t.name + ": fused gate_up dim 1 (" + std::to_string(t.shape[1]) + ") is odd, cannot split into gate and up");
        continue;
      }
      const std::string prefix = t.name.substr(0, t.name.size() - std::string_view("gate_up_proj").size());
      for (const char* proj : {"gate_proj.weight", "up_proj.weight"}) {
        LogicalParam p{prefix + proj, {t.name}, t.shape, t.dtype, true};
        p.shape[1] /= 2;
        out.push_back(std::move(p));
      }
      continue;
    }
    if (ends_with(t.name, ".experts.down_proj") && t.shape.n == 3) {
      out.push_back(LogicalParam{t.name + ".weight", {t.name}, t.shape, t.dtype, true});
      continue;
    }
    out.push_back(LogicalParam{t.name, {t.name}, t.shape, t.dtype, false});
  }

  for (auto& [gname, g] : groups) {
    LogicalParam& p = out[g.out_index];
    const int count = static_cast<int>(g.experts.size());
    const int max_id = g.experts.rbegin()->first;
    if (max_id + 1 != count) {
      std::string missing;
      int shown = 0;
      for (int e = 0; e <= max_id && shown < 8; ++e)
        if (!g.experts.count(e)) missing += (shown++ ? ", " : "") + std::to_string(e);
      problems.add("expert group " + gname + ": experts 0.." + std::to_string(max_id) + " expected, missing " + missing);
    }
    const TensorMeta& first = tensors[g.experts.begin()->second];
    for (const auto& [e, ti] : g.experts) {
      const TensorMeta& t = tensors[ti];
      if (t.shape != first.shape || t.dtype != first.dtype) {
        problems.add("expert group " + gname + ": expert " + std::to_string(e) + " has shape " + t.shape.str() + " " +
                     std::string(dtype_name(t.dtype)) + ", expert " + std::to_string(g.experts.begin()->first) +
                     " has " + first.shape.str() + " " + std::string(dtype_name(first.dtype)));
        break;
      }
    }
    if (first.shape.n + 1 > kMaxDims) {
      problems.add("expert group " + gname + ": expert tensors have " + std::to_string(first.shape.n) + " dims, too many to group");
      continue;
    }
    p.shape = Dims::zeros(first.shape.n + 1);
    p.shape[0] = count;
    for (int d = 0; d < first.shape.n; ++d) p.shape[d + 1] = first.shape[d];
    p.members.reserve(g.experts.size());
    for (const auto& [e, ti] : g.experts) p.members.push_back(tensors[ti].name);
  }
  return out;
}

}  // namespace reshard
