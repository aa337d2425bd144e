// --gen-layout vllm: vLLM's local tensors, each rule following the vLLM source named beside it
// (docs/layouts.md has the per-rank tables). Paths are under vllm/model_executor/ unless named.
//
//   dense / shared gate, up -> "{stem}gate_up_proj.weight" = [gate_r; up_r]   layers/linear.py
//                                                     MergedColumnParallelLinear.weight_loader
//   routed experts gate, up -> "{stem}w13_weight" [E_r, 2 I_r, H] = [w1; w3]  layers/fused_moe/layer.py
//                 down      -> "{stem}w2_weight"  [E_r, H, I_r]                FusedMoE._load_w13/_load_w2
//   q, k, v weight and bias -> "self_attn.qkv_proj.{weight,bias}" = [q_r; k_r; v_r], with tp > KV heads
//                              rank r holding KV head r / (tp / KV)            layers/linear.py
//                                                     QKVParallelLinear (num_kv_head_replicas)
//   embed_tokens / lm_head  -> vocab padded to a multiple of 64, Vp / tp rows  layers/vocab_parallel_embedding.py
//                              per rank, zero tail                             pad_vocab_size, VocabParallelEmbedding
//   MLA q_a_proj, kv_a_proj_with_mqa -> "self_attn.fused_qkv_a_proj.weight", replicated   models/deepseek_v2.py
//                                                     DeepseekV2MLAAttention, load_weights stacked_params_mapping
//   experts over EP         -> linear (first E % ep ranks one more) or round_robin (e % ep)
//                                                     layers/fused_moe/layer.py determine_expert_map
//   multimodal Qwen3-VL / Qwen3.5 names -> hf_to_vllm_mapper prefixes           models/qwen3_vl.py
//
// vLLM divides exactly (vllm/distributed/utils.py divide(): "N is not divisible by tp"); prepare()
// refuses every such config, naming the rule and the numbers.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "dst_layouts.h"
#include "names.h"
#include "ssm.h"

namespace reshard {
namespace {

constexpr int64_t kVocabPadding = 64;  // vocab_parallel_embedding.py DEFAULT_VOCAB_PADDING_SIZE

int64_t pad_vocab(int64_t v) { return (v + kVocabPadding - 1) / kVocabPadding * kVocabPadding; }

std::string n(int64_t v) { return std::to_string(v); }

// Qwen3-VL / Qwen3.5 hf_to_vllm_mapper (models/qwen3_vl.py Qwen3VLForConditionalGeneration): prefixes
// applied in order.
constexpr std::pair<std::string_view, std::string_view> kMultimodalPrefixes[] = {
    {"model.visual.", "visual."},
    {"lm_head.", "language_model.lm_head."},
    {"model.language_model.", "language_model.model."},
};

bool is_vocab(const std::string& name) {
  return names::contains(name, "embed_tokens.") || names::contains(name, "embeddings.") ||
         names::starts_with(name, "lm_head.") || names::contains(name, "language_model.lm_head.") ||
         names::ends_with(name, ".lm_head.weight");
}

class VllmLayout final : public DestinationLayout {
 public:
  GenLayout kind() const override { return GenLayout::Vllm; }
  bool sectioned_mixers() const override { return true; }

  void prepare(const std::vector<LogicalParam>& params, const SystemConfig& system, const PlanOptions& options,
               Problems& problems) override {
    tp_ = std::max(system.gen.tp, 1);
    ep_ = system.gen.ep;
    placement_ = options.gen_expert_placement;
    std::map<std::string, const LogicalParam*> by_name;
    for (const LogicalParam& p : params) by_name.emplace(p.name, &p);
    for (const LogicalParam& p : params) {
      if (names::starts_with(p.name, "model.language_model.")) multimodal_ = true;
      if (names::starts_with(p.name, "backbone.")) nemotron_h_ = true;
      if (names::ffn_proj(p.name) == names::Proj::Gate) gated_.insert(names::ffn_stem(p.name));
    }
    if (options.bulk == BulkMode::All) check_mamba(params, options, refused_mamba_);
    if (options.bulk == BulkMode::All) check_gdn(params, options, refused_mamba_);
    GroupedProblems refused;
    check_attention(params, by_name, options, refused, problems);
    check_mla(params, by_name, refused);
    check_ffn(params, refused);
    check_vocab(params, refused);
    check_experts(params, options, problems);
    refused.flush(problems);
    for (const std::string& s : refused_mamba_) problems.add(s);
  }

  void place(const std::string& name, const Dims& shape, const ParamRule& rule,
             std::map<std::string, Placement>& dst) const override {
    auto tp = dst.find("tp");
    if (rule.rule == "attn_qkv" && tp != dst.end() && !tp->second.replicate()) {
      const names::QkvPart part = names::qkv_part(name);
      auto kv = kv_heads_.find(name.substr(0, part.at));
      if (part.which > 0 && kv != kv_heads_.end() && kv->second < tp_)  // one KV head per tp / KV ranks
        tp->second = Placement::blocks(0, kv->second);
      return;
    }
    if (rule.rule == "vocab" && tp != dst.end() && tp->second.shard_dim == 0 && shape.n >= 1) {
      const int64_t padded = pad_vocab(shape[0]);
      if (padded != shape[0] || shape[0] % tp_ != 0) tp->second = Placement::pad(0, padded);
      return;
    }
    if (rule.expert && ep_ > 1 && tp != dst.end() && tp->second.shard_dim == 0 && shape.n >= 1) {
      if (placement_ == ExpertPlacement::RoundRobin) tp->second = Placement::cyclic(0);
      else if (shape[0] % ep_ != 0) tp->second = Placement::balanced(0);  // equal to torch.chunk otherwise
    }
  }

  StorageAssignment assign(const std::string& name, const ParamRule& rule, int) const override {
    using names::Proj;
    StorageAssignment a;
    if (rule.rule == "ffn" || rule.rule == "shared_expert" || rule.rule == "expert") {
      const Proj proj = names::ffn_proj(name);
      const bool grouped = rule.rule == "expert";
      if (proj == Proj::None) return renamed(name);
      const std::string stem = vllm_name(names::ffn_stem(name));
      // An ungated MLP (NemotronH ReLU^2: up_proj, down_proj) keeps its own up_proj; ungated experts
      // still land in w13_weight (FusedMoE with is_act_and_mul False).
      if (proj == Proj::Up && !grouped && !gated_.count(names::ffn_stem(name))) return renamed(name);
      if (proj == Proj::Down) {
        a.storage = grouped ? stem + "w2_weight" : vllm_name(name);
        return a;
      }
      a.storage = stem + (grouped ? "w13_weight" : "gate_up_proj.weight");
      a.fuse_dim = grouped ? 1 : 0;  // experts: dim 0 is the expert dim
      a.fuse_index = proj == Proj::Gate ? 0 : 1;
      return a;
    }
    if (rule.rule == "attn_qkv") {
      const names::QkvPart q = names::qkv_part(name);
      if (q.at == std::string::npos) return renamed(name);
      a.storage = vllm_name(name.substr(0, q.at)) + q.module + "qkv_proj." + q.suffix;
      a.fuse_dim = 0;
      a.fuse_index = q.which;
      return a;
    }
    // Qwen3.5 (models/qwen3_5.py stacked mapping): in_proj_qkv -> in_proj_qkvz shards (0, 1, 2), in_proj_z
    // -> 3; in_proj_b -> in_proj_ba 0, in_proj_a -> 1. Qwen3-Next's in_proj_qkvz / in_proj_ba are themselves.
    if (rule.rule == "gdn_in") {
      const std::string part = names::gdn_part(name);
      const std::string prefix = name.substr(0, name.size() - part.size());
      for (const auto& [from, to, index] : {std::tuple<std::string_view, std::string_view, int>{"in_proj_qkv.weight", "in_proj_qkvz.weight", 0},
                                            {"in_proj_z.weight", "in_proj_qkvz.weight", 1},
                                            {"in_proj_b.weight", "in_proj_ba.weight", 0},
                                            {"in_proj_a.weight", "in_proj_ba.weight", 1}})
        if (part == from) {
          a.storage = vllm_name(prefix) + std::string(to);
          a.fuse_dim = 0;
          a.fuse_index = index;
          return a;
        }
      return renamed(name);
    }
    if (rule.rule == "attn_down") {
      for (const auto& [part, index] : {std::pair<std::string_view, int>{"self_attn.q_a_proj.weight", 0},
                                        {"self_attn.kv_a_proj_with_mqa.weight", 1}}) {
        if (!names::ends_with(name, part)) continue;
        const std::string prefix = names::stem(name, part);
        if (!fused_qkv_a_.count(prefix)) break;  // no q_lora_rank: kv_a_proj_with_mqa stays itself
        a.storage = vllm_name(prefix) + "self_attn.fused_qkv_a_proj.weight";
        a.fuse_dim = 0;
        a.fuse_index = index;
        return a;
      }
    }
    return renamed(name);
  }

 private:
  // A param that lands as itself, under vLLM's name where vLLM renames it.
  StorageAssignment renamed(const std::string& name) const {
    StorageAssignment a;
    const std::string v = vllm_name(name);
    if (v != name) a.storage = v;
    return a;
  }

  std::string vllm_name(std::string s) const {
    if (multimodal_)
      for (const auto& [from, to] : kMultimodalPrefixes)
        if (names::starts_with(s, from)) s = std::string(to) + s.substr(from.size());
    // models/nemotron_h.py NemotronHForCausalLM.hf_to_vllm_mapper: "backbone" -> "model",
    // "embeddings" -> "embed_tokens" ("A_log" -> "A" too, but A_log stays misc: vLLM stores -exp).
    if (nemotron_h_) {
      if (names::starts_with(s, "backbone.")) s = "model." + s.substr(9);
      const size_t at = s.find(".embeddings.");
      if (at != std::string::npos) s.replace(at, 12, ".embed_tokens.");
    }
    return s;
  }

  // MambaMixer2 (layers/mamba/mamba_mixer2.py __init__): "Tensor parallel world size must divide num
  // heads."; "If tensor parallel world size does not divide num_groups, then num_groups must equal 1.";
  // Mixer2RMSNormGated: "Tensor parallel world size must divide hidden size."
  void check_mamba(const std::vector<LogicalParam>& params, const PlanOptions& options, std::vector<std::string>& out) const {
    Problems quiet;  // shape problems are the planner's to report
    const std::map<std::string, MambaShape> mixers = mamba_shapes(params, quiet);
    if (mixers.empty() || tp_ <= 1) return;
    const MambaShape& m = mixers.begin()->second;
    const std::string where = " (layers/mamba/mamba_mixer2.py MambaMixer2, " + n(static_cast<int64_t>(mixers.size())) +
                              " mixers)";
    if (m.heads % tp_ != 0)
      out.push_back("vLLM refuses: \"Tensor parallel world size must divide num heads.\" (" + n(m.heads) +
                    " heads, tp " + n(tp_) + ")" + where);
    if (m.inner % tp_ != 0)
      out.push_back("vLLM refuses: \"Tensor parallel world size must divide hidden size.\" (d_inner " + n(m.inner) +
                    ", tp " + n(tp_) + ")" + where);
    const int g = options.ssm_groups;
    if (g > 0 && g % tp_ != 0 && g != 1)
      out.push_back("vLLM refuses: \"If tensor parallel world size does not divide num_groups, then num_groups must "
                    "equal 1.\" (n_groups " + n(g) + ", tp " + n(tp_) + ")" + where);
  }

  // QKVParallelLinear (layers/linear.py): num_heads = divide(H, tp); tp >= KV: num_kv_head_replicas =
  // divide(tp, KV), else divide(KV, tp). ModelConfig.verify_with_parallel_config (vllm/config/model.py)
  // refuses H % tp first.
  void check_attention(const std::vector<LogicalParam>& params, const std::map<std::string, const LogicalParam*>& by_name,
                       const PlanOptions& options, GroupedProblems& refused, Problems& problems) {
    std::string from;
    const int64_t head_dim = find_head_dim(params, options, from);
    bool need_head_dim = false;
    for (const LogicalParam& p : params) {
      const names::QkvPart part = names::qkv_part(p.name);
      if (part.which != 1 || part.suffix != "weight" || p.shape.n != 2) continue;
      const std::string prefix = p.name.substr(0, part.at);
      auto q = by_name.find(prefix + part.module + "q_proj.weight");
      if (q == by_name.end()) continue;
      if (head_dim <= 0) {
        need_head_dim = true;
        continue;
      }
      const int64_t q_rows = q->second->shape[0], k_rows = p.shape[0];
      if (q_rows % head_dim != 0 || k_rows % head_dim != 0) {
        refused.add("q_proj " + n(q_rows) + " / k_proj " + n(k_rows) + " rows are not whole heads of head dim " +
                        n(head_dim) + " (" + from + ")",
                    prefix);
        continue;
      }
      const int64_t heads = q_rows / head_dim, kv = k_rows / head_dim;
      if (heads % tp_ != 0)
        refused.add("vLLM refuses: total number of attention heads (" + n(heads) +
                        ") must be divisible by tensor parallel size (" + n(tp_) +
                        ") (vllm/config/model.py ModelConfig.verify_with_parallel_config)",
                    prefix);
      else if (kv <= tp_ && tp_ % kv != 0)
        refused.add("vLLM refuses: tp " + n(tp_) + " is not divisible by the " + n(kv) +
                        " KV heads (QKVParallelLinear: num_kv_head_replicas = divide(tp, KV heads), layers/linear.py)",
                    prefix);
      else if (kv > tp_ && kv % tp_ != 0)
        refused.add("vLLM refuses: the " + n(kv) + " KV heads are not divisible by tp " + n(tp_) +
                        " (QKVParallelLinear: num_kv_heads = divide(KV heads, tp), layers/linear.py)",
                    prefix);
      kv_heads_[prefix] = static_cast<int>(kv);
    }
    if (need_head_dim && options.bulk == BulkMode::All)
      problems.add("--gen-layout vllm --bulk all: QKVParallelLinear gives each rank whole KV heads and needs the head "
                   "dim: pass --head-dim N (the model has no self_attn.q_norm/k_norm to infer it from)");
  }

  // DeepseekV2MLAAttention (models/deepseek_v2.py): assert num_heads % tp == 0. Heads from the shapes:
  // q_b rows = H (nope + rope), kv_b rows = H (nope + v), o_proj cols = H v, rope = kv_a rows - kv_lora
  // (kv_a_layernorm), so H = (q_b rows + o cols - kv_b rows) / rope. With q_lora_rank (a q_a_proj)
  // q_a_proj and kv_a_proj_with_mqa are one replicated fused_qkv_a_proj.
  void check_mla(const std::vector<LogicalParam>& params, const std::map<std::string, const LogicalParam*>& by_name,
                 GroupedProblems& refused) {
    auto get = [&](const std::string& name) -> const LogicalParam* {
      auto it = by_name.find(name);
      return it == by_name.end() ? nullptr : it->second;
    };
    for (const LogicalParam& p : params) {
      if (!names::ends_with(p.name, "self_attn.kv_a_proj_with_mqa.weight")) continue;
      const std::string prefix = names::stem(p.name, "self_attn.kv_a_proj_with_mqa.weight");
      if (get(prefix + "self_attn.q_a_proj.weight")) fused_qkv_a_.insert(prefix);
      const LogicalParam* norm = get(prefix + "self_attn.kv_a_layernorm.weight");
      const LogicalParam* kv_b = get(prefix + "self_attn.kv_b_proj.weight");
      const LogicalParam* o = get(prefix + "self_attn.o_proj.weight");
      const LogicalParam* q = get(prefix + "self_attn.q_b_proj.weight");
      if (!q) q = get(prefix + "self_attn.q_proj.weight");
      if (!norm || !kv_b || !o || !q || p.shape.n != 2 || o->shape.n != 2) continue;
      const int64_t rope = p.shape[0] - norm->shape[0];
      const int64_t h_rope = q->shape[0] + o->shape[1] - kv_b->shape[0];
      if (rope <= 0 || h_rope <= 0 || h_rope % rope != 0) continue;
      const int64_t heads = h_rope / rope;
      if (heads % tp_ != 0)
        refused.add("vLLM refuses: " + n(heads) + " MLA heads are not divisible by tp " + n(tp_) +
                        " (models/deepseek_v2.py DeepseekV2MLAAttention: assert num_heads % tp_size == 0)",
                    prefix);
    }
  }

  // Dense and shared FFN: MergedColumnParallelLinear asserts every output size % tp == 0, RowParallelLinear
  // divides the input size (layers/linear.py). Routed experts without EP: FusedMoE asserts
  // intermediate_size % tp == 0 (layers/fused_moe/layer.py).
  void check_ffn(const std::vector<LogicalParam>& params, GroupedProblems& refused) const {
    for (const LogicalParam& p : params) {
      const names::Proj proj = names::ffn_proj(p.name);
      if (proj == names::Proj::None || names::starts_with(p.name, "mtp.")) continue;
      const int base = p.grouped_expert ? 1 : 0;
      if (p.shape.n < base + 2) continue;
      if (p.grouped_expert && ep_ > 1) continue;  // EP: each expert whole on its rank
      const int dim = proj == names::Proj::Down ? base + 1 : base;
      const int64_t size = p.shape[dim];
      if (size % tp_ == 0) continue;
      const std::string what = p.grouped_expert ? "FusedMoE: assert intermediate_size % tp_size == 0 (layers/fused_moe/layer.py)"
                               : proj == names::Proj::Down
                                   ? "RowParallelLinear: input_size_per_partition = divide(input_size, tp) (layers/linear.py)"
                                   : "MergedColumnParallelLinear: assert every output size % tp == 0 (layers/linear.py)";
      refused.add("vLLM refuses: intermediate size " + n(size) + " is not divisible by tp " + n(tp_) + " (" + what + ")",
                  names::ffn_stem(p.name) + "*");
    }
  }

  // VocabParallelEmbedding / ParallelLMHead: the vocab padded to a multiple of 64, then
  // vocab_range_from_global_vocab_size divides it over tp (layers/vocab_parallel_embedding.py).
  void check_vocab(const std::vector<LogicalParam>& params, GroupedProblems& refused) const {
    for (const LogicalParam& p : params) {
      if (!is_vocab(p.name) || p.shape.n < 1 || p.grouped_expert) continue;
      const int64_t padded = pad_vocab(p.shape[0]);
      if (padded % tp_ != 0)
        refused.add("vLLM refuses: the vocab " + n(p.shape[0]) + " padded to a multiple of 64 is " + n(padded) +
                        ", not divisible by tp " + n(tp_) +
                        " (layers/vocab_parallel_embedding.py: vocab_range_from_global_vocab_size divides it)",
                    p.name);
    }
  }

  // round_robin is honoured only for grouped-topk routing (num_expert_group > 1) without redundant
  // experts or EPLB (layers/fused_moe/layer.py determine_expert_placement_strategy); otherwise vLLM
  // falls back to linear with a warning, and the plan would be wrong. The metadata carries no
  // num_expert_group: grouped-topk (noaux_tc) models are told by their e_score_correction_bias.
  void check_experts(const std::vector<LogicalParam>& params, const PlanOptions& options, Problems& problems) const {
    if (options.gen_expert_placement != ExpertPlacement::RoundRobin) return;
    bool grouped_topk = false, experts = false;
    for (const LogicalParam& p : params) {
      grouped_topk = grouped_topk || names::ends_with(p.name, "e_score_correction_bias");
      experts = experts || p.grouped_expert;
    }
    if (!experts) return;
    if (!grouped_topk)
      problems.add("--gen-expert-placement round_robin: vLLM honours it only for grouped-topk models "
                   "(num_expert_group > 1, layers/fused_moe/layer.py determine_expert_placement_strategy) and "
                   "falls back to linear otherwise; this model has no e_score_correction_bias (use linear)");
    if (ep_ <= 1)
      problems.add("--gen-expert-placement round_robin needs gen ep > 1 (vLLM builds an expert map only with EP)");
  }

  // QwenGatedDeltaNetAttention (layers/mamba/gdn/qwen_gdn_linear_attn.py): A_log = divide(value heads,
  // tp), MergedColumnParallelLinear asserts key_dim and value_dim % tp; the forward views a rank's
  // in_proj as key heads / tp groups, so the key heads must divide too.
  void check_gdn(const std::vector<LogicalParam>& params, const PlanOptions& options, std::vector<std::string>& out) const {
    Problems quiet;
    const std::map<std::string, GdnShape> layers = gdn_shapes(params, quiet);
    if (layers.empty() || tp_ <= 1) return;
    const GdnShape& g = layers.begin()->second;
    const std::string where = " (layers/mamba/gdn/qwen_gdn_linear_attn.py QwenGatedDeltaNetAttention, " +
                              n(static_cast<int64_t>(layers.size())) + " layers)";
    if (g.value_heads % tp_ != 0)
      out.push_back("vLLM refuses: " + n(g.value_heads) + " value heads are not divisible by tp " + n(tp_) + where);
    if (g.key_dim % tp_ != 0 || g.value_dim % tp_ != 0)
      out.push_back("vLLM refuses: key_dim " + n(g.key_dim) + " / value_dim " + n(g.value_dim) +
                    " are not divisible by tp " + n(tp_) + where);
    if (options.linear_key_heads > 0 && options.linear_key_heads % tp_ != 0)
      out.push_back("vLLM cannot run it: " + n(options.linear_key_heads) + " key heads over tp " + n(tp_) +
                    " cut a key-head group (its forward views in_proj as key heads / tp groups)" + where);
  }

  int tp_ = 1, ep_ = 1;
  ExpertPlacement placement_ = ExpertPlacement::Linear;
  bool multimodal_ = false, nemotron_h_ = false;
  std::set<std::string> gated_;               // FFN stems with a gate_proj
  std::vector<std::string> refused_mamba_;
  std::map<std::string, int> kv_heads_;  // attention prefix -> KV heads
  std::set<std::string> fused_qkv_a_;    // MLA prefixes with a q_a_proj (q_lora_rank set)
};

}  // namespace

std::unique_ptr<DestinationLayout> make_vllm_layout() { return std::make_unique<VllmLayout>(); }

}  // namespace reshard
