// --gen-layout vllm against vLLM's loaders. Every expected table below is worked out by hand from the
// vLLM source named beside it (paths under vllm/model_executor/), never computed by the code under
// test: per gen rank, each local tensor's shape and, for every piece, the HF param, its global rows
// (Box::str, begin:end per dim) and where it starts in the local tensor. Models: tests/data/vllm-*.json
// (scripts/tiny_models.py), whose names and shape relations follow the HF modeling code.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "reshard/core/after_loading.h"
#include "reshard/core/error.h"
#include "reshard/core/model.h"
#include "reshard/core/storage.h"
#include "reshard/core/verify.h"
#include "layout_tables.h"
#include "test_support.h"

namespace reshard {
namespace {

using test::sys;
using test::test_data;

using test::expect_rank;
using test::expect_src;
using test::has;
using test::Piece;
using test::plan_of;
using test::refusal;
using test::Tensor;

Parallelism par(int tp, int ep = 1) {
  Parallelism p;
  p.tp = tp;
  p.ep = ep;
  return p;
}

PlanOptions vllm(BulkMode bulk, int head_dim = 0) {
  PlanOptions o;
  o.bulk = bulk;
  o.gen_layout = GenLayout::Vllm;
  o.head_dim = head_dim;
  return o;
}

const std::string L0 = "model.layers.0.";

// Qwen2: 4 heads of 16, 2 KV heads, q/k/v biases, intermediate 128, vocab 1000; gen tp 4.
// layers/linear.py QKVParallelLinear: num_heads = 4/4 = 1; tp 4 >= 2 KV heads, so num_kv_heads = 1 and
// num_kv_head_replicas = 4/2 = 2; weight_loader: k/v shard_rank = tp_rank // 2. Local qkv_proj =
// [q 16 | k 16 | v 16] rows; the bias (loaded by the same weight_loader, output_dim 0) likewise.
// RowParallelLinear o_proj / down_proj: columns tp_rank * in/4. MergedColumnParallelLinear gate_up:
// [gate rows r*32.. | up rows r*32..]. vocab_parallel_embedding.py: pad_vocab_size(1000, 64) = 1024,
// 256 rows per rank, rank 3 holds [768, 1000) and 24 zero rows.
TEST(VllmLayout, Qwen2KvHeadReplicasBiasesAndPaddedVocabAtTp4) {
  const Plan plan = plan_of("vllm-qwen2.json", 2, par(2), 4, par(4), vllm(BulkMode::All, 16));
  const std::string q = L0 + "self_attn.q_proj.", k = L0 + "self_attn.k_proj.", v = L0 + "self_attn.v_proj.";
  // gen rank r is global rank 2 + r
  expect_rank(plan, 3, {  // tp rank 1: q head 1, KV head 0
                           {L0 + "self_attn.qkv_proj.weight", "[48, 64]",
                            {{q + "weight", "[16:32, 0:64]", "[0, 0]"},
                             {k + "weight", "[0:16, 0:64]", "[16, 0]"},
                             {v + "weight", "[0:16, 0:64]", "[32, 0]"}}},
                           {L0 + "self_attn.qkv_proj.bias", "[48]",
                            {{q + "bias", "[16:32]", "[0]"}, {k + "bias", "[0:16]", "[16]"}, {v + "bias", "[0:16]", "[32]"}}},
                           {L0 + "self_attn.o_proj.weight", "[64, 16]", {{L0 + "self_attn.o_proj.weight", "[0:64, 16:32]", "[0, 0]"}}},
                           {L0 + "mlp.gate_up_proj.weight", "[64, 64]",
                            {{L0 + "mlp.gate_proj.weight", "[32:64, 0:64]", "[0, 0]"},
                             {L0 + "mlp.up_proj.weight", "[32:64, 0:64]", "[32, 0]"}}},
                           {L0 + "mlp.down_proj.weight", "[64, 32]", {{L0 + "mlp.down_proj.weight", "[0:64, 32:64]", "[0, 0]"}}},
                           {"model.embed_tokens.weight", "[256, 64]", {{"model.embed_tokens.weight", "[256:512, 0:64]", "[0, 0]"}}},
                       });
  expect_rank(plan, 4, {  // tp rank 2: q head 2, KV head 1
                           {L0 + "self_attn.qkv_proj.weight", "[48, 64]",
                            {{q + "weight", "[32:48, 0:64]", "[0, 0]"},
                             {k + "weight", "[16:32, 0:64]", "[16, 0]"},
                             {v + "weight", "[16:32, 0:64]", "[32, 0]"}}},
                           {L0 + "self_attn.qkv_proj.bias", "[48]",
                            {{q + "bias", "[32:48]", "[0]"}, {k + "bias", "[16:32]", "[16]"}, {v + "bias", "[16:32]", "[32]"}}},
                       });
  expect_rank(plan, 5, {  // tp rank 3: KV head 1, the vocab's last 232 rows + 24 padding rows
                           {L0 + "self_attn.qkv_proj.weight", "[48, 64]",
                            {{q + "weight", "[48:64, 0:64]", "[0, 0]"},
                             {k + "weight", "[16:32, 0:64]", "[16, 0]"},
                             {v + "weight", "[16:32, 0:64]", "[32, 0]"}}},
                           {"model.embed_tokens.weight", "[256, 64]", {{"model.embed_tokens.weight", "[768:1000, 0:64]", "[0, 0]"}}},
                           {"lm_head.weight", "[256, 64]", {{"lm_head.weight", "[768:1000, 0:64]", "[0, 0]"}}},
                       });
}

// At tp 1 vLLM still pads: VocabParallelEmbedding's local weight is [pad_vocab_size(1000) = 1024, 64].
TEST(VllmLayout, VocabIsPaddedEvenAtTp1) {
  const Plan plan = plan_of("vllm-qwen2.json", 1, par(1), 1, par(1), vllm(BulkMode::All, 16));
  expect_rank(plan, 1, {{"model.embed_tokens.weight", "[1024, 64]", {{"model.embed_tokens.weight", "[0:1000, 0:64]", "[0, 0]"}}},
                        {"lm_head.weight", "[1024, 64]", {{"lm_head.weight", "[0:1000, 0:64]", "[0, 0]"}}}});
}

// The example: vocab 151665 over tp 4 -> padded 151680, rank 0 holds [0, 37920).
TEST(VllmLayout, PaddedVocabBlocksOfARealVocab) {
  ModelMeta m;
  m.name = "vocab";
  m.tensors = {{"model.embed_tokens.weight", Dims{151665, 64}, DType::BF16}, {"model.norm.weight", Dims{64}, DType::BF16}};
  const Plan plan = plan_reshard(m, sys(1, par(1), 4, par(4)), vllm(BulkMode::All));
  ASSERT_TRUE(verify_plan(plan).ok());
  expect_rank(plan, 1, {{"model.embed_tokens.weight", "[37920, 64]", {{"model.embed_tokens.weight", "[0:37920, 0:64]", "[0, 0]"}}}});
  expect_rank(plan, 4, {{"model.embed_tokens.weight", "[37920, 64]",
                         {{"model.embed_tokens.weight", "[113760:151665, 0:64]", "[0, 0]"}}}});
}

// vLLM divides exactly; each refusal names the rule and the numbers (vllm/config/model.py
// ModelConfig.verify_with_parallel_config; layers/linear.py QKVParallelLinear, MergedColumnParallelLinear;
// layers/vocab_parallel_embedding.py). Shipped Qwen3-4B (32 heads, 8 KV, intermediate 9728, vocab 151936).
TEST(VllmLayout, RefusesWhatVllmRefusesOnTheDefaultPath) {
  ModelMeta qwen3_4b = load_model(std::string(RESHARD_SOURCE_DIR) + "/plans/qwen3-4b.json");
  auto refuse = [&](int gen_tp) {
    try {
      plan_reshard(qwen3_4b, sys(1, par(1), gen_tp, par(gen_tp)), vllm(BulkMode::Ffn));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string tp3 = refuse(3);
  EXPECT_TRUE(has(tp3, "total number of attention heads (32) must be divisible by tensor parallel size (3)")) << tp3;
  EXPECT_TRUE(has(tp3, "intermediate size 9728 is not divisible by tp 3 (MergedColumnParallelLinear")) << tp3;
  EXPECT_TRUE(has(tp3, "intermediate size 9728 is not divisible by tp 3 (RowParallelLinear")) << tp3;
  EXPECT_TRUE(has(tp3, "padded to a multiple of 64 is 151936, not divisible by tp 3")) << tp3;
  EXPECT_TRUE(has(tp3, "and 35 more")) << tp3;  // 36 layers, one line
  const std::string tp64 = refuse(64);
  EXPECT_TRUE(has(tp64, "attention heads (32) must be divisible by tensor parallel size (64)")) << tp64;
  EXPECT_EQ(refuse(8), "");
  // --gen-layout hf keeps torch.chunk semantics.
  PlanOptions hf;
  EXPECT_NO_THROW(plan_reshard(qwen3_4b, sys(1, par(1), 3, par(3)), hf));
  // KV heads: 12 ranks over 8 KV heads (QKVParallelLinear: divide(12, 8)) is refused, 16 over 8 is not.
  ModelMeta gqa;
  gqa.name = "gqa";
  gqa.tensors = {{L0 + "self_attn.q_proj.weight", Dims{384, 64}, DType::BF16},
                 {L0 + "self_attn.k_proj.weight", Dims{128, 64}, DType::BF16},
                 {L0 + "self_attn.v_proj.weight", Dims{128, 64}, DType::BF16},
                 {L0 + "self_attn.q_norm.weight", Dims{16}, DType::BF16}};
  try {
    plan_reshard(gqa, sys(1, par(1), 12, par(12)), vllm(BulkMode::All));
    ADD_FAILURE() << "12 over 8 KV heads was planned";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "tp 12 is not divisible by the 8 KV heads")) << e.what();
  }
}

// Qwen3-MoE, 6 experts over gen EP 4 (the tp axis). layers/fused_moe/layer.py determine_expert_map,
// linear: base 6 // 4 = 1, remainder 2, so ranks 0, 1 hold 2 experts from r*1 + min(r, 2) = 0, 2 and
// ranks 2, 3 one, from 4 and 5. With EP the experts are not TP-cut: w13_weight [E_r, 2*32, 64] = [w1; w3]
// along dim 1 (_load_w13), w2_weight [E_r, 64, 32].
TEST(VllmLayout, LinearExpertMapGivesTheFirstRanksOneMore) {
  const Plan plan = plan_of("vllm-qwen3-moe.json", 2, par(1, 2), 4, par(4, 4), vllm(BulkMode::Ffn));
  const std::string x = L0 + "mlp.experts.";
  const std::string g = x + "gate_proj.weight", u = x + "up_proj.weight", d = x + "down_proj.weight";
  expect_rank(plan, 2, {{x + "w13_weight", "[2, 64, 64]", {{g, "[0:2, 0:32, 0:64]", "[0, 0, 0]"}, {u, "[0:2, 0:32, 0:64]", "[0, 32, 0]"}}},
                        {x + "w2_weight", "[2, 64, 32]", {{d, "[0:2, 0:64, 0:32]", "[0, 0, 0]"}}}});
  expect_rank(plan, 3, {{x + "w13_weight", "[2, 64, 64]", {{g, "[2:4, 0:32, 0:64]", "[0, 0, 0]"}, {u, "[2:4, 0:32, 0:64]", "[0, 32, 0]"}}}});
  expect_rank(plan, 4, {{x + "w13_weight", "[1, 64, 64]", {{g, "[4:5, 0:32, 0:64]", "[0, 0, 0]"}, {u, "[4:5, 0:32, 0:64]", "[0, 32, 0]"}}},
                        {x + "w2_weight", "[1, 64, 32]", {{d, "[4:5, 0:64, 0:32]", "[0, 0, 0]"}}}});
  expect_rank(plan, 5, {{x + "w2_weight", "[1, 64, 32]", {{d, "[5:6, 0:64, 0:32]", "[0, 0, 0]"}}}});
  // round_robin is honoured only for grouped-topk models (determine_expert_placement_strategy).
  PlanOptions rr = vllm(BulkMode::Ffn);
  rr.gen_expert_placement = ExpertPlacement::RoundRobin;
  EXPECT_TRUE(has(refusal("vllm-qwen3-moe.json", 2, par(1, 2), 4, par(4, 4), rr), "honours it only for grouped-topk"));
}

// DeepSeek-V3 MLA, gen tp 2 = ep 2, --bulk all, round_robin. models/deepseek_v2.py
// DeepseekV2MLAAttention: with q_lora_rank, fused_qkv_a_proj (disable_tp: replicated) =
// [q_a_proj 32 rows; kv_a_proj_with_mqa 32 + 8 rows] (load_weights stacked_params_mapping 0, 1);
// q_b_proj / kv_b_proj ColumnParallel by heads (4 heads: 2 per rank, 24 and 32 rows each), o_proj
// RowParallel (16 columns per head). Experts round_robin (determine_expert_map): rank r holds experts
// r, r + 2, r + 4, r + 6 at local 0..3. Shared experts: DeepseekV2MLP gate_up_proj, TP-cut.
TEST(VllmLayout, DeepSeekMlaFusedQkvAAndRoundRobinExperts) {
  PlanOptions o = vllm(BulkMode::All);
  o.gen_expert_placement = ExpertPlacement::RoundRobin;
  const Plan plan = plan_of("vllm-deepseek-mla.json", 2, par(1, 2), 2, par(2, 2), o);
  const std::string a = L0 + "self_attn.", L1 = "model.layers.1.", x = L1 + "mlp.experts.";
  const std::string g = x + "gate_proj.weight", u = x + "up_proj.weight", d = x + "down_proj.weight";
  expect_rank(plan, 2, {{a + "fused_qkv_a_proj.weight", "[72, 64]",
                         {{a + "q_a_proj.weight", "[0:32, 0:64]", "[0, 0]"}, {a + "kv_a_proj_with_mqa.weight", "[0:40, 0:64]", "[32, 0]"}}},
                        {a + "q_b_proj.weight", "[48, 32]", {{a + "q_b_proj.weight", "[0:48, 0:32]", "[0, 0]"}}},
                        {a + "kv_b_proj.weight", "[64, 32]", {{a + "kv_b_proj.weight", "[0:64, 0:32]", "[0, 0]"}}},
                        {a + "o_proj.weight", "[64, 32]", {{a + "o_proj.weight", "[0:64, 0:32]", "[0, 0]"}}},
                        {x + "w13_weight", "[4, 64, 64]",
                         {{g, "[0:1, 0:32, 0:64]", "[0, 0, 0]"}, {g, "[2:3, 0:32, 0:64]", "[1, 0, 0]"},
                          {g, "[4:5, 0:32, 0:64]", "[2, 0, 0]"}, {g, "[6:7, 0:32, 0:64]", "[3, 0, 0]"},
                          {u, "[0:1, 0:32, 0:64]", "[0, 32, 0]"}, {u, "[2:3, 0:32, 0:64]", "[1, 32, 0]"},
                          {u, "[4:5, 0:32, 0:64]", "[2, 32, 0]"}, {u, "[6:7, 0:32, 0:64]", "[3, 32, 0]"}}},
                        {L1 + "mlp.shared_experts.gate_up_proj.weight", "[32, 64]",
                         {{L1 + "mlp.shared_experts.gate_proj.weight", "[0:16, 0:64]", "[0, 0]"},
                          {L1 + "mlp.shared_experts.up_proj.weight", "[0:16, 0:64]", "[16, 0]"}}}});
  expect_rank(plan, 3, {{a + "fused_qkv_a_proj.weight", "[72, 64]",
                         {{a + "q_a_proj.weight", "[0:32, 0:64]", "[0, 0]"}, {a + "kv_a_proj_with_mqa.weight", "[0:40, 0:64]", "[32, 0]"}}},
                        {a + "q_b_proj.weight", "[48, 32]", {{a + "q_b_proj.weight", "[48:96, 0:32]", "[0, 0]"}}},
                        {a + "o_proj.weight", "[64, 32]", {{a + "o_proj.weight", "[0:64, 32:64]", "[0, 0]"}}},
                        {x + "w2_weight", "[4, 64, 32]",
                         {{d, "[1:2, 0:64, 0:32]", "[0, 0, 0]"}, {d, "[3:4, 0:64, 0:32]", "[1, 0, 0]"},
                          {d, "[5:6, 0:64, 0:32]", "[2, 0, 0]"}, {d, "[7:8, 0:64, 0:32]", "[3, 0, 0]"}}}});
  // After loading: MLA's W_UK_T / W_UV and the MoE kernels' w13 conversions are named.
  const std::vector<std::string> notes = after_loading_notes(plan);
  ASSERT_EQ(notes.size(), 2u);  // --bulk all: nothing is misc here
  EXPECT_TRUE(has(notes[0], "process_weights_after_loading"));
  EXPECT_TRUE(has(notes[1], "[w3; w1]"));
  // 4 MLA heads over tp 8: DeepseekV2MLAAttention asserts num_heads % tp_size == 0.
  EXPECT_TRUE(has(refusal("vllm-deepseek-mla.json", 2, par(1, 2), 8, par(8), vllm(BulkMode::Ffn)),
                  "4 MLA heads are not divisible by tp 8"));
}

// Mixtral: models/mixtral.py get_expert_mapping (w1 gate, w3 up, w2 down) into FusedMoE's
// w13_weight / w2_weight; without EP the experts are TP-cut: intermediate 48 / 2 = 24 rows of w1 and
// of w3 per rank (_load_w13: narrow(shard_dim, 24 * tp_rank, 24)), w2 columns likewise. The router
// block_sparse_moe.gate is a ReplicatedLinear.
TEST(VllmLayout, MixtralExpertsAreBulkAndFused) {
  const Plan plan = plan_of("vllm-mixtral.json", 2, par(1, 2), 2, par(2), vllm(BulkMode::All, 16));
  const std::string x = L0 + "block_sparse_moe.experts.";
  expect_rank(plan, 3, {{x + "w13_weight", "[4, 48, 64]",
                         {{x + "w1.weight", "[0:4, 24:48, 0:64]", "[0, 0, 0]"}, {x + "w3.weight", "[0:4, 24:48, 0:64]", "[0, 24, 0]"}}},
                        {x + "w2_weight", "[4, 64, 24]", {{x + "w2.weight", "[0:4, 0:64, 24:48]", "[0, 0, 0]"}}},
                        {L0 + "block_sparse_moe.gate.weight", "[4, 64]",
                         {{L0 + "block_sparse_moe.gate.weight", "[0:4, 0:64]", "[0, 0]"}}}});
  // On the default path the experts are the bulk: 2 layers x 4 experts x 3 x 48 x 64 x 2 bytes.
  const Plan ffn = plan_of("vllm-mixtral.json", 2, par(1, 2), 2, par(2), vllm(BulkMode::Ffn));
  int64_t bulk = 0;
  for (const ParamPlan& p : ffn.params)
    if (p.path == Path::Bulk) bulk += p.bytes();
  EXPECT_EQ(bulk, 2 * 4 * 3 * 48 * 64 * 2);
}

// Qwen3-VL / Qwen3.5: models/qwen3_vl.py hf_to_vllm_mapper renames "model.language_model." ->
// "language_model.model." and "lm_head." -> "language_model.lm_head."; the 5-d vision patch_embed is
// planned (misc, under its HF name for vLLM's load_weights).
TEST(VllmLayout, MultimodalNamesAreVllmsParameterNames) {
  const Plan plan = plan_of("vllm-qwen3-vl.json", 2, par(2), 2, par(2), vllm(BulkMode::All));
  const std::string h = "model.language_model.layers.0.", v = "language_model.model.layers.0.";
  expect_rank(plan, 2, {{v + "self_attn.qkv_proj.weight", "[64, 64]",
                         {{h + "self_attn.q_proj.weight", "[0:32, 0:64]", "[0, 0]"},
                          {h + "self_attn.k_proj.weight", "[0:16, 0:64]", "[32, 0]"},
                          {h + "self_attn.v_proj.weight", "[0:16, 0:64]", "[48, 0]"}}},
                        {v + "mlp.gate_up_proj.weight", "[128, 64]",
                         {{h + "mlp.gate_proj.weight", "[0:64, 0:64]", "[0, 0]"}, {h + "mlp.up_proj.weight", "[0:64, 0:64]", "[64, 0]"}}},
                        {"language_model.model.embed_tokens.weight", "[512, 64]",
                         {{"model.language_model.embed_tokens.weight", "[0:512, 0:64]", "[0, 0]"}}},
                        {"language_model.lm_head.weight", "[512, 64]", {{"lm_head.weight", "[0:512, 0:64]", "[0, 0]"}}},
                        {"model.visual.patch_embed.proj.weight", "[32, 3, 2, 4, 4]",
                         {{"model.visual.patch_embed.proj.weight", "[0:32, 0:3, 0:2, 0:4, 0:4]", "[0, 0, 0, 0, 0]"}}}});
}

// NemotronH Mamba2, n_groups 2, d_state 16 (B, C 32 rows each), d_inner 64, 8 heads; train tp 2 and gen
// tp 2, --bulk all. Megatron-Core MambaMixer (megatron/core/ssm/mamba_mixer.py: in_proj partition_sizes
// [d_inner, d_inner, G N, G N, heads] / tp, conv1d [x, B, C]) and vLLM MambaMixer2
// (layers/mamba/mamba_mixer2.py, mamba_v2_sharded_weight_loader: each section sharded on its own, then
// concatenated) cut alike: rank r holds z [32r, +32) -> 0, x [64 + 32r, +32) -> 32, B [128 + 16r, +16)
// -> 64, C [160 + 16r, +16) -> 80, dt [192 + 4r, +4) -> 96; conv1d x [32r, +32) -> 0, B [64 + 16r, +16)
// -> 32, C [96 + 16r, +16) -> 48. Mixer2RMSNormGated's weight is sharded, out_proj by column. Names:
// models/nemotron_h.py hf_to_vllm_mapper ("backbone" -> "model", "embeddings" -> "embed_tokens").
TEST(VllmLayout, NemotronHMamba2SectionsOnBothSides) {
  PlanOptions o = vllm(BulkMode::All, 16);
  o.ssm_groups = 2;
  const Plan plan = plan_of("vllm-nemotron-h.json", 2, par(2), 2, par(2), o);
  const std::string h = "backbone.layers.0.mixer.", v = "model.layers.0.mixer.";
  expect_rank(plan, 3, {{v + "in_proj.weight", "[100, 64]",
                         {{h + "in_proj.weight", "[32:64, 0:64]", "[0, 0]"},
                          {h + "in_proj.weight", "[96:128, 0:64]", "[32, 0]"},
                          {h + "in_proj.weight", "[144:160, 0:64]", "[64, 0]"},
                          {h + "in_proj.weight", "[176:192, 0:64]", "[80, 0]"},
                          {h + "in_proj.weight", "[196:200, 0:64]", "[96, 0]"}}},
                        {v + "conv1d.weight", "[64, 1, 4]",
                         {{h + "conv1d.weight", "[32:64, 0:1, 0:4]", "[0, 0, 0]"},
                          {h + "conv1d.weight", "[80:96, 0:1, 0:4]", "[32, 0, 0]"},
                          {h + "conv1d.weight", "[112:128, 0:1, 0:4]", "[48, 0, 0]"}}},
                        {v + "conv1d.bias", "[64]",
                         {{h + "conv1d.bias", "[32:64]", "[0]"}, {h + "conv1d.bias", "[80:96]", "[32]"},
                          {h + "conv1d.bias", "[112:128]", "[48]"}}},
                        {v + "norm.weight", "[32]", {{h + "norm.weight", "[32:64]", "[0]"}}},
                        {v + "out_proj.weight", "[64, 32]", {{h + "out_proj.weight", "[0:64, 32:64]", "[0, 0]"}}},
                        {"model.layers.1.mixer.qkv_proj.weight", "[64, 64]",
                         {{"backbone.layers.1.mixer.q_proj.weight", "[32:64, 0:64]", "[0, 0]"},
                          {"backbone.layers.1.mixer.k_proj.weight", "[16:32, 0:64]", "[32, 0]"},
                          {"backbone.layers.1.mixer.v_proj.weight", "[16:32, 0:64]", "[48, 0]"}}},
                        // ungated (ReLU^2): up_proj stays itself; experts' w13_weight holds up alone
                        {"model.layers.2.mixer.shared_experts.up_proj.weight", "[24, 64]",
                         {{"backbone.layers.2.mixer.shared_experts.up_proj.weight", "[24:48, 0:64]", "[0, 0]"}}},
                        {"model.layers.2.mixer.experts.w13_weight", "[4, 16, 64]",
                         {{"backbone.layers.2.mixer.experts.up_proj.weight", "[0:4, 16:32, 0:64]", "[0, 0, 0]"}}},
                        {"model.embed_tokens.weight", "[512, 64]", {{"backbone.embeddings.weight", "[512:1000, 0:64]", "[0, 0]"}}}});
  // The source (Megatron, train rank 1) holds the same sections in its local in_proj.
  for (const LocalStorage& s : src_storages(plan, 1))
    if (s.name == h + "in_proj.weight") {
      EXPECT_EQ(s.shape.str(), "[100, 64]");
      ASSERT_EQ(s.members.size(), 5u);
      EXPECT_EQ(s.members[2].box.str(), "[144:160, 0:64]");
      EXPECT_EQ(s.members[2].offset.str(), "[64, 0]");
    }
  // A_log, D, dt_bias go through vLLM's load_weights (vLLM stores A = -exp(A_log)): misc, all the rest bulk.
  int64_t misc = 0;
  for (const ParamPlan& p : plan.params)
    if (p.path == Path::Misc) misc += p.shape.product();
  EXPECT_EQ(misc, 3 * 8);
}

// n_groups 1 over gen tp 2: vLLM duplicates the group (mamba_v2_sharded_weight_loader with
// duplicate_groups): every rank holds the whole B [128, 160) -> 64 and C [160, 192) -> 96 (d_state 32);
// z, x, dt as before. Megatron cannot train it at tp 2 (ngroups % tp), so train tp 1.
TEST(VllmLayout, NemotronHOneGroupIsDuplicatedOnEveryRank) {
  PlanOptions o = vllm(BulkMode::All, 16);
  o.ssm_groups = 1;
  const Plan plan = plan_of("vllm-nemotron-h.json", 1, par(1), 2, par(2), o);
  const std::string h = "backbone.layers.0.mixer.", v = "model.layers.0.mixer.";
  for (int r = 0; r < 2; ++r)
    expect_rank(plan, 1 + r, {{v + "in_proj.weight", "[132, 64]",
                               {{h + "in_proj.weight", r ? "[32:64, 0:64]" : "[0:32, 0:64]", "[0, 0]"},
                                {h + "in_proj.weight", r ? "[96:128, 0:64]" : "[64:96, 0:64]", "[32, 0]"},
                                {h + "in_proj.weight", "[128:160, 0:64]", "[64, 0]"},
                                {h + "in_proj.weight", "[160:192, 0:64]", "[96, 0]"},
                                {h + "in_proj.weight", r ? "[196:200, 0:64]" : "[192:196, 0:64]", "[128, 0]"}}}});
  EXPECT_TRUE(has(refusal("vllm-nemotron-h.json", 2, par(2), 2, par(2), o), "Megatron-Core refuses: MambaMixer needs n_groups 1"));
  o.ssm_groups = 0;
  EXPECT_TRUE(has(refusal("vllm-nemotron-h.json", 1, par(1), 2, par(2), o), "pass --ssm-groups N"));
  o.ssm_groups = 2;  // 2 groups over tp 4: vLLM refuses
  EXPECT_TRUE(has(refusal("vllm-nemotron-h.json", 1, par(1), 4, par(4), o), "then num_groups must equal 1"));
}

// Qwen3-Next gated delta net: 4 key heads of 8, 8 value heads of 8 (key_dim 32, value_dim 64); HF
// in_proj_qkvz is grouped per key head, 48 rows each: [q 8 | k 8 | v 16 | z 16]; in_proj_ba [b 2 | a 2].
// Train tp 2 (Megatron-Core GatedDeltaNet; Bridge qwen3_next_bridge.py GDNLinearMapping): rank 1 holds
// key heads 2, 3, section-major: q rows 96.., 144.. then k, v, z. Gen tp 2 (vLLM
// qwen_gdn_linear_attn.py: in_proj_qkvz / in_proj_ba one section each): rank 1 holds the contiguous
// rows [96, 192) and [8, 16); conv1d per [q 32 | k 32 | v 64] section; out_proj by column.
TEST(VllmLayout, Qwen3NextGatedDeltaNetOnBothSides) {
  PlanOptions o = vllm(BulkMode::All);
  o.linear_key_heads = 4;
  const Plan plan = plan_of("vllm-qwen3-next.json", 2, par(2), 2, par(2), o);
  const std::string a = L0 + "linear_attn.", qkvz = a + "in_proj_qkvz.weight", ba = a + "in_proj_ba.weight";
  expect_src(plan, 1, {qkvz, "[96, 64]",
                       {{qkvz, "[96:104, 0:64]", "[0, 0]"}, {qkvz, "[144:152, 0:64]", "[8, 0]"},
                        {qkvz, "[104:112, 0:64]", "[16, 0]"}, {qkvz, "[152:160, 0:64]", "[24, 0]"},
                        {qkvz, "[112:128, 0:64]", "[32, 0]"}, {qkvz, "[160:176, 0:64]", "[48, 0]"},
                        {qkvz, "[128:144, 0:64]", "[64, 0]"}, {qkvz, "[176:192, 0:64]", "[80, 0]"}}});
  expect_src(plan, 1, {ba, "[8, 64]",
                       {{ba, "[8:10, 0:64]", "[0, 0]"}, {ba, "[12:14, 0:64]", "[2, 0]"},
                        {ba, "[10:12, 0:64]", "[4, 0]"}, {ba, "[14:16, 0:64]", "[6, 0]"}}});
  expect_rank(plan, 3, {{qkvz, "[96, 64]", {{qkvz, "[96:192, 0:64]", "[0, 0]"}}},
                        {ba, "[8, 64]", {{ba, "[8:16, 0:64]", "[0, 0]"}}},
                        {a + "conv1d.weight", "[64, 1, 4]",
                         {{a + "conv1d.weight", "[16:32, 0:1, 0:4]", "[0, 0, 0]"},
                          {a + "conv1d.weight", "[48:64, 0:1, 0:4]", "[16, 0, 0]"},
                          {a + "conv1d.weight", "[96:128, 0:1, 0:4]", "[32, 0, 0]"}}},
                        {a + "out_proj.weight", "[64, 32]", {{a + "out_proj.weight", "[0:64, 32:64]", "[0, 0]"}}}});
  // The gated norm (Megatron zero-centred), A_log and dt_bias through load_weights: 8 + 8 + 8 elements.
  int64_t misc = 0;
  for (const ParamPlan& p : plan.params)
    if (p.path == Path::Misc) misc += p.shape.product();
  EXPECT_EQ(misc, 24);
  o.linear_key_heads = 0;
  EXPECT_TRUE(has(refusal("vllm-qwen3-next.json", 2, par(2), 2, par(2), o), "pass --linear-key-heads N"));
  o.linear_key_heads = 4;
  EXPECT_TRUE(has(refusal("vllm-qwen3-next.json", 1, par(1), 8, par(8), o), "4 key heads over tp 8"));
}

// Qwen3.5: in_proj_qkv is flat [q 32 | k 32 | v 64], so both engines cut it per section; vLLM merges it
// with in_proj_z into in_proj_qkvz = [q_r | k_r | v_r | z_r] and in_proj_b, in_proj_a into in_proj_ba
// (models/qwen3_5.py stacked mapping (0, 1, 2), 3; 0, 1), under language_model.model. names.
TEST(VllmLayout, Qwen35GatedDeltaNetMerges) {
  PlanOptions o = vllm(BulkMode::All);
  o.linear_key_heads = 4;
  const Plan plan = plan_of("vllm-qwen3.5.json", 2, par(2), 2, par(2), o);
  const std::string h = "model.language_model.layers.0.linear_attn.", v = "language_model.model.layers.0.linear_attn.";
  expect_src(plan, 1, {h + "in_proj_qkv.weight", "[64, 64]",
                       {{h + "in_proj_qkv.weight", "[16:32, 0:64]", "[0, 0]"},
                        {h + "in_proj_qkv.weight", "[48:64, 0:64]", "[16, 0]"},
                        {h + "in_proj_qkv.weight", "[96:128, 0:64]", "[32, 0]"}}});
  expect_rank(plan, 3, {{v + "in_proj_qkvz.weight", "[96, 64]",
                         {{h + "in_proj_qkv.weight", "[16:32, 0:64]", "[0, 0]"},
                          {h + "in_proj_qkv.weight", "[48:64, 0:64]", "[16, 0]"},
                          {h + "in_proj_qkv.weight", "[96:128, 0:64]", "[32, 0]"},
                          {h + "in_proj_z.weight", "[32:64, 0:64]", "[64, 0]"}}},
                        {v + "in_proj_ba.weight", "[8, 64]",
                         {{h + "in_proj_b.weight", "[4:8, 0:64]", "[0, 0]"}, {h + "in_proj_a.weight", "[4:8, 0:64]", "[4, 0]"}}}});
}

// verify proves a plan against vLLM's layout, not only against itself: the layouts the planner gave
// before these rules (KV heads cut into fractions, MLA halves in storages vLLM does not have) are refused.
TEST(VllmLayout, VerifyRefusesAPlanWhoseLayoutIsNotVllms) {
  Plan plan = plan_of("vllm-qwen2.json", 2, par(2), 4, par(4), vllm(BulkMode::All, 16));
  for (ParamPlan& p : plan.params)
    if (p.name == L0 + "self_attn.k_proj.weight") p.dst.placements[0] = Placement::shard(0);
  VerifyReport r = verify_plan(plan, 100);
  ASSERT_FALSE(r.ok());
  bool named = false;
  for (const std::string& s : r.problems)
    named = named || has(s, "k_proj.weight: gen placements [S(0)] differ from vLLM's [S(0,blocks=2)]");
  EXPECT_TRUE(named) << r.problems[0];

  Plan mla = plan_of("vllm-deepseek-mla.json", 2, par(1, 2), 2, par(2, 2), vllm(BulkMode::All));
  for (ParamPlan& p : mla.params)
    if (p.name == L0 + "self_attn.kv_a_proj_with_mqa.weight") {
      p.dst_storage = p.name;
      p.dst_fuse_dim = -1;
      p.dst_fuse_index = 0;
    }
  r = verify_plan(mla, 100);
  named = false;
  for (const std::string& s : r.problems)
    named = named || has(s, "vLLM's layout has model.layers.0.self_attn.fused_qkv_a_proj.weight (fuse dim 0, member 1)");
  EXPECT_TRUE(named) << (r.problems.empty() ? "verify passed" : r.problems[0]);
}

}  // namespace
}  // namespace reshard
