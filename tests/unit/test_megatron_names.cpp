// --gen-layout megatron names every tensor as Megatron-Core does, per Megatron-Bridge's mapping lists
// (NVIDIA-NeMo/Megatron-Bridge 067f987d, src/megatron/bridge/models/...; file beside each table). The
// tables are copied by hand from those lists, never computed by the code under test: for a bulk param
// its dst storage, for a misc param the whole tensor's name ("" where Bridge fuses it on receive).
#include <gtest/gtest.h>

#include <utility>

#include "layout_tables.h"
#include "reshard/core/planner.h"

namespace reshard {
namespace {

using test::plan_of;

Parallelism tp(int n) {
  Parallelism p;
  p.tp = n;
  return p;
}

PlanOptions megatron(BulkMode bulk) {
  PlanOptions o;
  o.gen_layout = GenLayout::Megatron;
  o.bulk = bulk;
  return o;
}

// Where an HF param lands: its bulk storage, or its misc whole tensor's Megatron name.
std::string lands(const Plan& plan, const std::string& hf) {
  for (const ParamPlan& p : plan.params)
    if (p.name == hf) return p.path == Path::Bulk ? p.dst_storage : p.dst_name;
  return "<no param " + hf + ">";
}

void expect_names(const Plan& plan, const std::vector<std::pair<std::string, std::string>>& table) {
  for (const auto& [hf, megatron] : table) EXPECT_EQ(lands(plan, hf), megatron) << hf;
}

// qwen/qwen3_moe_bridge.py (attention as qwen3_bridge.py).
TEST(MegatronNames, Qwen3Moe) {
  const Plan plan = plan_of("vllm-qwen3-moe.json", 2, tp(1), 2, tp(2), megatron(BulkMode::Ffn));
  expect_names(plan, {
      {"model.embed_tokens.weight", "embedding.word_embeddings.weight"},
      {"model.layers.0.input_layernorm.weight", "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight"},
      {"model.layers.0.post_attention_layernorm.weight", "decoder.layers.0.pre_mlp_layernorm.weight"},
      {"model.layers.0.self_attn.q_norm.weight", "decoder.layers.0.self_attention.q_layernorm.weight"},
      {"model.layers.0.self_attn.k_norm.weight", "decoder.layers.0.self_attention.k_layernorm.weight"},
      {"model.layers.0.self_attn.o_proj.weight", "decoder.layers.0.self_attention.linear_proj.weight"},
      {"model.layers.0.self_attn.q_proj.weight", ""},  // QKVMapping fuses it into linear_qkv
      {"model.layers.0.mlp.gate.weight", "decoder.layers.0.mlp.router.weight"},
      {"model.layers.1.mlp.experts.gate_proj.weight", "decoder.layers.1.mlp.experts.linear_fc1.weight"},
      {"model.layers.1.mlp.experts.down_proj.weight", "decoder.layers.1.mlp.experts.linear_fc2.weight"},
      {"model.norm.weight", "decoder.final_layernorm.weight"},
      {"lm_head.weight", "output_layer.weight"},
  });
}

// deepseek/common.py get_common_mapping_list: MLA keeps a separate input_layernorm; dense layers fuse
// post_attention_layernorm into linear_fc1, MoE layers keep pre_mlp_layernorm; MTP layers
// model.layers.{L+k} -> mtp.layers.k.mtp_model_layer.
TEST(MegatronNames, DeepSeekMlaAndMtp) {
  const Plan plan = plan_of("vllm-deepseek-mla.json", 2, tp(1), 2, tp(2), megatron(BulkMode::Ffn));
  expect_names(plan, {
      {"model.layers.0.input_layernorm.weight", "decoder.layers.0.input_layernorm.weight"},
      {"model.layers.0.post_attention_layernorm.weight", "decoder.layers.0.mlp.linear_fc1.layer_norm_weight"},
      {"model.layers.1.post_attention_layernorm.weight", "decoder.layers.1.pre_mlp_layernorm.weight"},
      {"model.layers.0.self_attn.q_a_proj.weight", "decoder.layers.0.self_attention.linear_q_down_proj.weight"},
      {"model.layers.0.self_attn.q_b_proj.weight", "decoder.layers.0.self_attention.linear_q_up_proj.weight"},
      {"model.layers.0.self_attn.q_a_layernorm.weight",
       "decoder.layers.0.self_attention.linear_q_up_proj.layer_norm_weight"},
      {"model.layers.0.self_attn.kv_a_proj_with_mqa.weight",
       "decoder.layers.0.self_attention.linear_kv_down_proj.weight"},
      {"model.layers.0.self_attn.kv_b_proj.weight", "decoder.layers.0.self_attention.linear_kv_up_proj.weight"},
      {"model.layers.0.self_attn.kv_a_layernorm.weight",
       "decoder.layers.0.self_attention.linear_kv_up_proj.layer_norm_weight"},
      {"model.layers.1.mlp.gate.e_score_correction_bias", "decoder.layers.1.mlp.router.expert_bias"},
      {"model.layers.1.mlp.shared_experts.down_proj.weight", "decoder.layers.1.mlp.shared_experts.linear_fc2.weight"},
  });
  PlanOptions o = megatron(BulkMode::Ffn);
  o.mtp_layers = {1};
  const Plan mtp = plan_of("vllm-deepseek-mla.json", 2, tp(1), 2, tp(2), o);
  expect_names(mtp, {
      {"model.layers.1.input_layernorm.weight", "mtp.layers.0.mtp_model_layer.input_layernorm.weight"},
      {"model.layers.1.self_attn.q_a_proj.weight", "mtp.layers.0.mtp_model_layer.self_attention.linear_q_down_proj.weight"},
      {"model.layers.1.mlp.gate.weight", "mtp.layers.0.mtp_model_layer.mlp.router.weight"},
  });
}

// nemotronh/nemotron_h_bridge.py: backbone.layers.N -> decoder.layers.N, the block's norm fused into its
// first linear by block kind (M: mixer.in_proj, *: linear_qkv, E: pre_mlp_layernorm), MoE under mlp.
TEST(MegatronNames, NemotronH) {
  const Plan plan = plan_of("vllm-nemotron-h.json", 2, tp(1), 2, tp(2), megatron(BulkMode::Ffn));
  expect_names(plan, {
      {"backbone.embeddings.weight", "embedding.word_embeddings.weight"},
      {"backbone.layers.0.norm.weight", "decoder.layers.0.mixer.in_proj.layer_norm_weight"},
      {"backbone.layers.0.mixer.A_log", "decoder.layers.0.mixer.A_log"},
      {"backbone.layers.0.mixer.out_proj.weight", "decoder.layers.0.mixer.out_proj.weight"},
      {"backbone.layers.1.norm.weight", "decoder.layers.1.self_attention.linear_qkv.layer_norm_weight"},
      {"backbone.layers.1.mixer.o_proj.weight", "decoder.layers.1.self_attention.linear_proj.weight"},
      {"backbone.layers.2.norm.weight", "decoder.layers.2.pre_mlp_layernorm.weight"},
      {"backbone.layers.2.mixer.gate.weight", "decoder.layers.2.mlp.router.weight"},
      {"backbone.layers.2.mixer.gate.e_score_correction_bias", "decoder.layers.2.mlp.router.expert_bias"},
      {"backbone.layers.2.mixer.experts.up_proj.weight", "decoder.layers.2.mlp.experts.linear_fc1.weight"},
      {"backbone.layers.2.mixer.shared_experts.down_proj.weight", "decoder.layers.2.mlp.shared_experts.linear_fc2.weight"},
      {"backbone.norm_f.weight", "decoder.final_norm.weight"},  // MCore HybridStack.final_norm
  });
}

// qwen_vl/qwen35_vl_bridge.py with qwen/qwen35_bridge.py helpers (hf_prefix "model.language_model.",
// megatron_prefix "language_model."); GDN norm -> out_norm through RMSNorm2ZeroCenteredRMSNormMapping
// (Megatron keeps value - 1): misc even with --bulk all, and the plan says so.
TEST(MegatronNames, Qwen35VisionLanguage) {
  PlanOptions o = megatron(BulkMode::All);
  o.linear_key_heads = 2;
  const Plan plan = plan_of("vllm-qwen3.5.json", 2, tp(1), 2, tp(1), o);
  expect_names(plan, {
      {"model.visual.patch_embed.proj.weight", "vision_model.patch_embed.proj.weight"},
      {"model.language_model.embed_tokens.weight", "language_model.embedding.word_embeddings.weight"},
      {"model.language_model.layers.0.input_layernorm.weight",
       "language_model.decoder.layers.0.self_attention.in_proj.layer_norm_weight"},
      {"model.language_model.layers.0.linear_attn.in_proj_qkv.weight",
       "language_model.decoder.layers.0.self_attention.in_proj.weight"},
      {"model.language_model.layers.0.linear_attn.in_proj_a.weight",
       "language_model.decoder.layers.0.self_attention.in_proj.weight"},
      {"model.language_model.layers.0.linear_attn.norm.weight",
       "language_model.decoder.layers.0.self_attention.out_norm.weight"},
      {"model.language_model.layers.0.post_attention_layernorm.weight",
       "language_model.decoder.layers.0.mlp.linear_fc1.layer_norm_weight"},
      {"model.language_model.layers.0.mlp.up_proj.weight", "language_model.decoder.layers.0.mlp.linear_fc1.weight"},
      {"model.language_model.layers.1.self_attn.q_proj.weight",
       "language_model.decoder.layers.1.self_attention.linear_qkv.weight"},
      {"model.language_model.norm.weight", "language_model.decoder.final_layernorm.weight"},
      {"lm_head.weight", "language_model.output_layer.weight"},
  });
  for (const ParamPlan& p : plan.params)
    if (p.name == "model.language_model.layers.0.linear_attn.norm.weight") {
      EXPECT_EQ(p.path, Path::Misc);
      EXPECT_EQ(p.dst_transform, "zero_centered");
    }
  // in_proj: [q; k; v] then z, b, a, each the rank's own part (GDNLinearMappingSeparate).
  for (const auto& [part, index] : std::vector<std::pair<std::string, int>>{
           {"in_proj_qkv", 0}, {"in_proj_z", 1}, {"in_proj_b", 2}, {"in_proj_a", 3}})
    for (const ParamPlan& p : plan.params)
      if (p.name == "model.language_model.layers.0.linear_attn." + part + ".weight") {
        EXPECT_EQ(p.dst_fuse_dim, 0) << part;
        EXPECT_EQ(p.dst_fuse_index, index) << part;
      }
}

// qwen_vl/qwen3_vl_bridge.py vision mappings.
TEST(MegatronNames, Qwen3VlVision) {
  const Plan plan = plan_of("vllm-qwen3-vl.json", 2, tp(1), 2, tp(2), megatron(BulkMode::Ffn));
  expect_names(plan, {
      {"model.visual.blocks.0.attn.qkv.weight", ""},  // ConcatenatedQKVMapping interleaves it
      {"model.visual.blocks.0.attn.proj.weight", "vision_model.decoder.layers.0.self_attention.linear_proj.weight"},
      {"model.visual.merger.linear_fc1.weight", "vision_model.merger.linear_fc1.weight"},
      {"model.visual.patch_embed.proj.bias", "vision_model.patch_embed.proj.bias"},
      {"model.language_model.layers.1.self_attn.q_norm.weight",
       "language_model.decoder.layers.1.self_attention.q_layernorm.weight"},
  });
}

}  // namespace
}  // namespace reshard
