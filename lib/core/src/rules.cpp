#include "reshard/core/rules.h"

#include <nlohmann/json.hpp>

#include "json_checks.h"
#include "names.h"

namespace reshard {
namespace {

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

int shard_dim_from_json(const nlohmann::json& v, const std::string& where, Problems& problems) {
  if (v.is_null()) return -1;
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxDims) {
    problems.add(where + ": expected null or an integer in [0, " + std::to_string(kMaxDims) + "), got " + v.dump());
    return -1;
  }
  return v.get<int>();
}

}  // namespace

int layer_index(const std::string& name) {
  size_t pos = 0;
  while ((pos = name.find("layers.", pos)) != std::string::npos) {
    if (pos == 0 || name[pos - 1] == '.') {
      size_t i = pos + 7, j = i;
      while (j < name.size() && std::isdigit(static_cast<unsigned char>(name[j]))) ++j;
      if (j > i && j - i < 9 && (j == name.size() || name[j] == '.')) return std::stoi(name.substr(i, j - i));
    }
    pos += 7;
  }
  return -1;
}

std::vector<CustomRule> parse_rules(const std::string& json_text, const std::string& origin, Problems& problems) {
  std::vector<CustomRule> out;
  nlohmann::json doc;
  try {
    check_json_depth(json_text, origin);
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    problems.add(origin + ": malformed JSON at byte " + std::to_string(e.byte));
    return out;
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large for a double
    problems.add(origin + ": malformed JSON: " + e.what());
    return out;
  }
  const nlohmann::json* list = &doc;
  if (doc.is_object() && doc.contains("rules")) list = &doc["rules"];
  if (!list->is_array()) {
    problems.add(origin + ": expected a list of rules or {\"rules\": [...]}");
    return out;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    const auto& r = (*list)[i];
    const std::string where = origin + ": rules[" + std::to_string(i) + "]";
    if (!r.is_object() || !r.contains("match") || !r["match"].is_string()) {
      problems.add(where + ": needs a string \"match\" regex");
      continue;
    }
    CustomRule c;
    c.pattern = r["match"].get<std::string>();
    std::string error;
    c.re = UserRegex::compile(c.pattern, error);
    const bool regex_ok = c.re.valid();
    if (!regex_ok) problems.add(where + ": bad regex '" + c.pattern + "': " + error);
    // Checked by hand: json::value() would throw json's own type_error for a non-string path.
    const nlohmann::json* path = r.contains("path") ? &r["path"] : nullptr;
    if (path == nullptr || *path == "bulk") c.path = Path::Bulk;
    else if (*path == "misc") c.path = Path::Misc;
    else problems.add(where + ": path must be \"bulk\" or \"misc\", got " + path->dump());
    if (r.contains("train_shard_dim")) c.train_shard_dim = shard_dim_from_json(r["train_shard_dim"], where + ".train_shard_dim", problems);
    if (r.contains("gen_shard_dim")) c.gen_shard_dim = shard_dim_from_json(r["gen_shard_dim"], where + ".gen_shard_dim", problems);
    if (r.contains("expert")) {
      if (!r["expert"].is_boolean()) problems.add(where + ".expert: expected true or false");
      else c.expert = r["expert"].get<bool>();
    }
    for (const auto& [key, value] : r.items())
      if (key != "match" && key != "path" && key != "train_shard_dim" && key != "gen_shard_dim" && key != "expert")
        problems.add(where + ": unknown key '" + key + "'");
    if (regex_ok) out.push_back(std::move(c));
  }
  return out;
}

ParamRule classify_param(const std::string& name, int ndim, bool grouped_expert, BulkMode bulk,
                         const std::vector<CustomRule>& custom) {
  ParamRule r;
  for (const CustomRule& c : custom) {
    if (!c.re.search(name)) continue;
    r.path = c.path;
    r.rule = "custom:" + c.pattern;
    r.expert = c.expert;
    r.train_tp_dim = c.train_shard_dim < ndim ? c.train_shard_dim : -1;
    r.gen_tp_dim = c.gen_shard_dim < ndim ? c.gen_shard_dim : -1;
    return r;
  }
  const bool shared = contains(name, "shared_expert");
  const bool mtp = name.rfind("mtp.", 0) == 0;

  // FFN projections: the seed's bulk rule.
  const names::Proj proj = names::ffn_proj(name);
  const bool is_down = proj == names::Proj::Down;
  if (proj != names::Proj::None && !mtp) {
    const bool ffn_bulk = !shared;
    if (!ffn_bulk && bulk == BulkMode::Ffn) {
      r.rule = "shared_expert";
      return r;
    }
    r.path = Path::Bulk;
    r.expert = grouped_expert;
    r.rule = grouped_expert ? "expert" : (shared ? "shared_expert" : "ffn");
    const int base = grouped_expert ? 1 : 0;  // experts: dim 0 is the expert dim
    r.train_tp_dim = r.gen_tp_dim = is_down ? base + 1 : base;
    if (ndim == 1) r.train_tp_dim = r.gen_tp_dim = -1;
    return r;
  }
  if (bulk == BulkMode::Ffn || mtp) {
    r.rule = mtp ? "mtp" : "misc";
    return r;
  }

  // --bulk all: every tensor with a known box layout on both sides.
  if (contains(name, "scale_inv") || ends_with(name, "_scale") || contains(name, ".scale")) {
    r.rule = "fp8_scale";
    return r;
  }
  auto bulk_rule = [&](const char* rule, int dim) {
    r.path = Path::Bulk;
    r.rule = rule;
    r.train_tp_dim = r.gen_tp_dim = ndim >= 2 ? dim : -1;  // 1-D tensors replicated
    return r;
  };
  // q/k/v biases are sharded like their weights (vLLM QKVParallelLinear loads them into qkv_proj.bias
  // with the weight's offsets, layers/linear.py weight_loader; Megatron's linear_qkv bias likewise).
  for (const char* qkv : {"self_attn.q_proj.", "self_attn.k_proj.", "self_attn.v_proj.", "mixer.q_proj.",
                          "mixer.k_proj.", "mixer.v_proj."})
    if (contains(name, qkv)) {
      bulk_rule("attn_qkv", 0);
      r.train_tp_dim = r.gen_tp_dim = 0;
      return r;
    }
  if (contains(name, "q_b_proj.") || contains(name, "kv_b_proj.")) return bulk_rule("attn_up", 0);
  // Mamba2 mixers: in_proj and conv1d are cut per section (the sections come from the shapes, planner),
  // the gated norm by channel, out_proj by column; Megatron-Core MambaMixer and vLLM MambaMixer2 alike.
  // A_log, D and dt_bias stay misc: Megatron holds them in float32 (Bridge casts on export) and vLLM
  // stores A = -exp(A_log) (layers/mamba/mamba_mixer2.py composed_weight_loader): they go through
  // vLLM's load_weights.
  // Gated delta nets: in_proj tensors by row (the planner gives the engines' groups and sections),
  // conv1d per section, out_proj by column. A_log, dt_bias and the norm stay misc: Megatron's GDN
  // stores the norm zero-centred (Bridge adds 1 on export) and its A_log / dt_bias dtypes are its own.
  if (const std::string part = names::gdn_part(name); !part.empty()) {
    if (names::starts_with(part, "in_proj")) return bulk_rule("gdn_in", 0);
    if (part == "conv1d.weight") return bulk_rule("gdn_conv", 0);
    if (part == "out_proj.weight") return bulk_rule("gdn_out", 1);
    r.rule = "gdn_param";
    return r;
  }
  if (const std::string part = names::mamba_part(name); !part.empty()) {
    if (part == "in_proj.weight") return bulk_rule("ssm_in", 0);
    if (part == "conv1d.weight" || part == "conv1d.bias") {
      bulk_rule("ssm_conv", 0);
      r.train_tp_dim = r.gen_tp_dim = 0;
      return r;
    }
    if (part == "norm.weight") {
      bulk_rule("ssm_norm", 0);
      r.train_tp_dim = r.gen_tp_dim = 0;
      return r;
    }
    if (part == "out_proj.weight") return bulk_rule("ssm_out", 1);
    r.rule = "ssm_param";
    return r;
  }
  if (contains(name, "o_proj.")) return bulk_rule("attn_out", 1);
  if (contains(name, "q_a_proj.") || contains(name, "kv_a_proj_with_mqa.")) return bulk_rule("attn_down", -1);
  if (contains(name, "embed_tokens.") || contains(name, "embeddings.") || name.rfind("lm_head.", 0) == 0)
    return bulk_rule("vocab", 0);
  if (contains(name, "norm")) return bulk_rule("norm", -1);
  // Routers and Qwen2-MoE / Qwen3-Next's shared_expert_gate: replicated (vLLM ReplicatedLinear).
  if (contains(name, "mlp.gate.") || contains(name, "mixer.gate.") || contains(name, "block_sparse_moe.gate.") ||
      contains(name, "shared_expert_gate.") || contains(name, "router"))
    return bulk_rule("router", -1);
  r.rule = "unknown";
  return r;
}

}  // namespace reshard
