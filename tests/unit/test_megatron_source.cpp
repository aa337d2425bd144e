// Megatron-Core as the training side (and linear_qkv as a destination), against Megatron-LM d98e8a64 /
// Megatron-Bridge 067f987d. Every table is worked out by hand from the source named beside it, never
// computed by the code under test: per rank, its local tensors' pieces (HF param, global rows, where
// they start in the local tensor), or which ranks hold a layer.
#include <gtest/gtest.h>

#include "layout_tables.h"
#include "reshard/core/planner.h"
#include "reshard/core/rules.h"

namespace reshard {
namespace {

using test::expect_rank;
using test::expect_src;
using test::has;
using test::plan_of;
using test::refusal;
using test::Tensor;

Parallelism par(const std::string& spec) {
  Parallelism p;
  Problems pr;
  parse_parallelism_spec(spec, "test", p, pr);
  EXPECT_TRUE(pr.empty());
  return p;
}

PlanOptions all(GenLayout layout, int head_dim) {
  PlanOptions o;
  o.bulk = BulkMode::All;
  o.gen_layout = layout;
  o.head_dim = head_dim;
  return o;
}

const ParamPlan& param(const Plan& plan, const std::string& name) {
  for (const ParamPlan& p : plan.params)
    if (p.name == name) return p;
  ADD_FAILURE() << "no param " << name;
  return plan.params.front();
}

std::vector<int> ranks_of(const ParamPlan& p) {
  std::vector<int> r = p.src.mesh.ranks;
  std::sort(r.begin(), r.end());
  return r;
}

// megatron/core/transformer/transformer_config.py allows tp % num_query_groups == 0; linear_qkv stays
// one ColumnParallelLinear over the fused [q_g; k_g; v_g] rows (attention.py SelfAttention,
// tensor_parallel/layers.py), so rank r holds fused rows [r F / tp, (r + 1) F / tp), which need not
// fall on head or group boundaries. Qwen3-30B-A3B: 32 q heads, 4 groups, head dim 128 (q_norm):
// a group is 1024 q + 128 k + 128 v = 1280 rows, F = 5120, 640 per rank at train tp 8.
TEST(MegatronSource, TpAboveQueryGroupsHoldsFusedChunks) {
  PlanOptions o = all(GenLayout::Hf, 0);
  o.exclude = {"layers\\.([1-9]|[1-4][0-9])\\.", "experts"};  // layer 0's attention is enough
  const Plan plan = plan_reshard(load_model(std::string(RESHARD_SOURCE_DIR) + "/plans/qwen3-30b-a3b.json"),
                                 test::sys(8, par("tp=8"), 1, par("tp=1")), o);
  const std::string a = "model.layers.0.self_attn.";
  // rank 0: fused [0, 640) = q rows [0, 640) (heads 0-4, head 4 stored but unused); no k, no v.
  expect_src(plan, 0, {a + "q_proj.weight", "[640, 2048]", {{a + "q_proj.weight", "[0:640, 0:2048]", "[0, 0]"}}});
  EXPECT_TRUE(param(plan, a + "k_proj.weight").src.local_pieces(Dims{512, 2048}, 0).empty());
  // rank 1: fused [640, 1280) = q [640, 1024) at 0, k [0, 128) at 384, v [0, 128) at 512.
  expect_src(plan, 1, {a + "q_proj.weight", "[640, 2048]", {{a + "q_proj.weight", "[640:1024, 0:2048]", "[0, 0]"}}});
  expect_src(plan, 1, {a + "k_proj.weight", "[640, 2048]", {{a + "k_proj.weight", "[0:128, 0:2048]", "[384, 0]"}}});
  expect_src(plan, 1, {a + "v_proj.weight", "[640, 2048]", {{a + "v_proj.weight", "[0:128, 0:2048]", "[512, 0]"}}});
  // rank 6: fused [3840, 4480) = group 3's q [3072, 3712); rank 7: fused [4480, 5120) = q [3712, 4096)
  // at 0, k [384, 512) at 384, v [384, 512) at 512.
  expect_src(plan, 6, {a + "q_proj.weight", "[640, 2048]", {{a + "q_proj.weight", "[3072:3712, 0:2048]", "[0, 0]"}}});
  expect_src(plan, 7, {a + "q_proj.weight", "[640, 2048]", {{a + "q_proj.weight", "[3712:4096, 0:2048]", "[0, 0]"}}});
  expect_src(plan, 7, {a + "v_proj.weight", "[640, 2048]", {{a + "v_proj.weight", "[384:512, 0:2048]", "[512, 0]"}}});
  EXPECT_TRUE(verify_plan(plan).ok());
}

// The same cut as a destination: --gen-layout megatron lands q, k, v and their biases in one
// linear_qkv per layer whose local tensor is the rank's fused chunk. vllm-qwen2 with head dim 16:
// 4 heads, 2 groups; a group is 32 q + 16 k + 16 v = 64 rows, F = 128, 32 per rank at gen tp 4.
TEST(MegatronSource, TpAboveQueryGroupsAsADestination) {
  const Plan plan = plan_of("vllm-qwen2.json", 4, par("tp=4"), 4, par("tp=4"), all(GenLayout::Megatron, 16));
  const std::string a = "model.layers.0.self_attn.", qkv = "decoder.layers.0.self_attention.linear_qkv.";
  // gen rank 0 (global 4): q [0, 32); rank 1: k [0, 16) at 0, v [0, 16) at 16; rank 2: q [32, 64);
  // rank 3: k [16, 32), v [16, 32).
  expect_rank(plan, 4, {{qkv + "weight", "[32, 64]", {{a + "q_proj.weight", "[0:32, 0:64]", "[0, 0]"}}},
                        {qkv + "bias", "[32]", {{a + "q_proj.bias", "[0:32]", "[0]"}}}});
  expect_rank(plan, 5, {{qkv + "weight", "[32, 64]",
                         {{a + "k_proj.weight", "[0:16, 0:64]", "[0, 0]"}, {a + "v_proj.weight", "[0:16, 0:64]", "[16, 0]"}}},
                        {qkv + "bias", "[32]", {{a + "k_proj.bias", "[0:16]", "[0]"}, {a + "v_proj.bias", "[0:16]", "[16]"}}}});
  expect_rank(plan, 6, {{qkv + "weight", "[32, 64]", {{a + "q_proj.weight", "[32:64, 0:64]", "[0, 0]"}}}});
  expect_rank(plan, 7, {{qkv + "weight", "[32, 64]",
                         {{a + "k_proj.weight", "[16:32, 0:64]", "[0, 0]"}, {a + "v_proj.weight", "[16:32, 0:64]", "[16, 0]"}}}});
  // The train side (tp 4) holds the same chunks under HF names.
  expect_src(plan, 1, {a + "v_proj.weight", "[32, 64]", {{a + "v_proj.weight", "[0:16, 0:64]", "[16, 0]"}}});
}

TEST(MegatronSource, QueryGroupRefusalsNameMegatronsRule) {
  // vllm-qwen3-moe: 4 heads of 16 (q_norm), 2 groups: train tp 3 divides neither; gen tp 8 divides
  // no heads (8 % 2 == 0 would do for the groups).
  const std::string e = refusal("vllm-qwen3-moe.json", 3, par("tp=3"), 8, par("tp=8"), all(GenLayout::Megatron, 0));
  EXPECT_TRUE(has(e, "Megatron-Core refuses: 4 attention heads and 2 query groups over train tp 3")) << e;
  EXPECT_TRUE(has(e, "Megatron-Core refuses: 4 attention heads and 2 query groups over gen tp 8")) << e;
  EXPECT_TRUE(has(e, "(model.layers.0. and 1 more)")) << e;
  // tiny-dense: 5 heads of 32 in 2 groups is no GQA block at all.
  const std::string g = refusal("tiny-dense.json", 2, par("tp=2"), 2, par("tp=2"), all(GenLayout::Megatron, 0));
  EXPECT_TRUE(has(g, "160 rows are not 2 query groups of whole heads of 32")) << g;
}

// megatron/core/parallel_state.py RankGenerator: rank = tp + TP (cp + CP (ep + EP (dp + DP pp))) by
// default, rank = tp + TP (cp + CP (ep + EP (pp + PP dp))) with --use-tp-pp-dp-mapping. World 8,
// tp 2, pp 2, dp 2: stage 0 = {0, 1, 2, 3} / {0, 1, 4, 5}; stage 1 = {4, 5, 6, 7} / {2, 3, 6, 7}.
TEST(MegatronSource, RankOrders) {
  PlanOptions o;  // tiny-dense: 4 layers, 2 per stage
  const Plan dp_pp = plan_of("tiny-dense.json", 8, par("tp=2,pp=2"), 2, par("tp=2"), o);
  EXPECT_EQ(ranks_of(param(dp_pp, "model.layers.0.mlp.up_proj.weight")), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(ranks_of(param(dp_pp, "model.layers.3.mlp.up_proj.weight")), (std::vector<int>{4, 5, 6, 7}));
  o.train_order = RankOrder::TpCpEpPpDp;
  const Plan pp_dp = plan_of("tiny-dense.json", 8, par("tp=2,pp=2"), 2, par("tp=2"), o);
  EXPECT_EQ(ranks_of(param(pp_dp, "model.layers.0.mlp.up_proj.weight")), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(ranks_of(param(pp_dp, "model.layers.3.mlp.up_proj.weight")), (std::vector<int>{2, 3, 6, 7}));
  // tp coordinate within a stage-1 rank group: rank 2 and 6 hold rows [0, 346) of the 692-row... up_proj
  // is [346, 160] cut over tp 2: ranks 2, 6 rows [0, 173), ranks 3, 7 rows [173, 346).
  const ParamPlan& up = param(pp_dp, "model.layers.3.mlp.up_proj.weight");
  EXPECT_EQ(up.src.local_box(up.shape, up.src.mesh.flat_index_of_rank(6)).str(), "[0:173, 0:160]");
  EXPECT_EQ(up.src.local_box(up.shape, up.src.mesh.flat_index_of_rank(7)).str(), "[173:346, 0:160]");
  // Experts (tiny-moe, etp 1, ep 2): expert order tp-ep-pp-dp; world 8, pp 2: ep groups [0,1] [2,3]
  // [4,5] [6,7], stage 0 = {0, 1, 4, 5}. etp x ep must equal tp x cp there (2 = 2).
  const Plan moe = [] {
    PlanOptions m;
    m.train_order = RankOrder::TpCpEpPpDp;
    return plan_of("tiny-moe.json", 8, par("tp=2,pp=2,ep=2,etp=1"), 2, par("tp=2"), m);
  }();
  const ParamPlan& experts = param(moe, "model.layers.0.mlp.experts.up_proj.weight");
  EXPECT_EQ(ranks_of(experts), (std::vector<int>{0, 1, 4, 5}));
  EXPECT_EQ(experts.src.local_box(experts.shape, experts.src.mesh.flat_index_of_rank(5)).offset[0],
            experts.shape[0] / 2);  // ep coordinate 1
  PlanOptions bad;
  bad.train_order = RankOrder::TpCpEpPpDp;
  const std::string e = refusal("tiny-moe.json", 8, par("tp=2,pp=2,ep=2"), 2, par("tp=2"), bad);  // etp 2 x ep 2 != 2
  EXPECT_TRUE(has(e, "--train-order tp-cp-ep-pp-dp needs etp x ep = tp x cp")) << e;
}

// Virtual pipeline stages on the plan (stages.h has the split's own tables): tiny-dense's 4 layers on
// pp 2, vpp 2: one per chunk, layers 0, 2 on pp 0 and 1, 3 on pp 1; embeddings on the first stage,
// final norm and lm_head on the last (training.py build_model: pre_process / post_process).
TEST(MegatronSource, VirtualPipelineOnThePlan) {
  const Plan plan = plan_of("tiny-dense.json", 4, par("tp=1,pp=2,vpp=2"), 2, par("tp=2"), PlanOptions{});
  EXPECT_EQ(param(plan, "model.layers.0.mlp.up_proj.weight").pp_stage, 0);
  EXPECT_EQ(param(plan, "model.layers.1.mlp.up_proj.weight").pp_stage, 1);
  EXPECT_EQ(param(plan, "model.layers.2.mlp.up_proj.weight").pp_stage, 0);
  EXPECT_EQ(param(plan, "model.layers.3.mlp.up_proj.weight").pp_stage, 1);
  EXPECT_EQ(param(plan, "model.embed_tokens.weight").pp_stage, 0);
  EXPECT_EQ(param(plan, "model.norm.weight").pp_stage, 1);
  EXPECT_EQ(param(plan, "lm_head.weight").pp_stage, 1);
  EXPECT_EQ(plan.system.train.vpp, 2);
  // The layout string gives the same plan, fingerprinted apart.
  PlanOptions o;
  o.pipeline_layout = "Et|t|t|tL";
  const Plan layout = plan_of("tiny-dense.json", 4, par("tp=1,pp=2"), 2, par("tp=2"), o);
  for (int l = 0; l < 4; ++l) {
    const std::string n = "model.layers." + std::to_string(l) + ".mlp.up_proj.weight";
    EXPECT_EQ(param(layout, n).pp_stage, param(plan, n).pp_stage) << n;
  }
  EXPECT_NE(layout.fingerprint, plan.fingerprint);
}

// Megatron-Bridge's VL models build the vision tower only where pre_process (qwen_vl/modelling_qwen3_vl/
// model.py Qwen3VLModel.__init__): the first stage; vLLM builds it on every stage (qwen3_vl.py).
TEST(MegatronSource, VisionTowerOnTheFirstStage) {
  const Plan plan = plan_of("vllm-qwen3-vl.json", 2, par("pp=2"), 2, par("tp=1,pp=2"), PlanOptions{});
  for (const ParamPlan& p : plan.params) {
    if (p.name.rfind("model.visual.", 0) != 0) continue;
    EXPECT_EQ(p.pp_stage, 0) << p.name;
    EXPECT_EQ(p.gen_pp_stage, -1) << p.name;  // every gen stage
  }
  EXPECT_EQ(param(plan, "model.language_model.layers.1.mlp.up_proj.weight").pp_stage, 1);
}

}  // namespace
}  // namespace reshard

namespace reshard {
namespace {

// Output-gated attention (vllm-qwen3-next: q_proj 128 rows = 2 x o_proj's 64, head dim 16, 4 heads,
// 2 groups). HF q_proj per head [q_h; z_h] (modeling_qwen3_next.py Qwen3NextAttention.forward);
// Megatron's linear_qkv per group [q heads; z heads; k; v] (attention.py
// get_query_key_value_tensors; Megatron-Bridge QKVMapping merge_qkv_weights with
// attention_output_gate): group 0 = q_proj [0:16] [32:48] (q0, q1), [16:32] [48:64] (z0, z1), k, v.
TEST(MegatronSource, OutputGatedLinearQkv) {
  PlanOptions o = all(GenLayout::Megatron, 0);
  o.exclude = {"linear_attn"};  // the gated delta net layer has its own tests
  const Plan plan = plan_of("vllm-qwen3-next.json", 2, par("tp=2"), 2, par("tp=2"), o);
  const std::string a = "model.layers.1.self_attn.", qkv = "decoder.layers.1.self_attention.linear_qkv.weight";
  expect_rank(plan, 2, {{qkv, "[96, 64]",
                         {{a + "q_proj.weight", "[0:16, 0:64]", "[0, 0]"},
                          {a + "q_proj.weight", "[32:48, 0:64]", "[16, 0]"},
                          {a + "q_proj.weight", "[16:32, 0:64]", "[32, 0]"},
                          {a + "q_proj.weight", "[48:64, 0:64]", "[48, 0]"},
                          {a + "k_proj.weight", "[0:16, 0:64]", "[64, 0]"},
                          {a + "v_proj.weight", "[0:16, 0:64]", "[80, 0]"}}}});
  expect_rank(plan, 3, {{qkv, "[96, 64]",
                         {{a + "q_proj.weight", "[64:80, 0:64]", "[0, 0]"},
                          {a + "q_proj.weight", "[96:112, 0:64]", "[16, 0]"},
                          {a + "q_proj.weight", "[80:96, 0:64]", "[32, 0]"},
                          {a + "q_proj.weight", "[112:128, 0:64]", "[48, 0]"},
                          {a + "k_proj.weight", "[16:32, 0:64]", "[64, 0]"},
                          {a + "v_proj.weight", "[16:32, 0:64]", "[80, 0]"}}}});
  // gen tp 4 > 2 groups: 48 fused rows each; rank 0 = group 0's [q0; q1; z0] = q_proj [0:16] [32:48] [16:32].
  const Plan four = plan_of("vllm-qwen3-next.json", 2, par("tp=2"), 4, par("tp=4"), o);
  expect_rank(four, 2, {{qkv, "[48, 64]",
                         {{a + "q_proj.weight", "[0:16, 0:64]", "[0, 0]"},
                          {a + "q_proj.weight", "[32:48, 0:64]", "[16, 0]"},
                          {a + "q_proj.weight", "[16:32, 0:64]", "[32, 0]"}}}});
  expect_rank(four, 3, {{qkv, "[48, 64]",
                         {{a + "q_proj.weight", "[48:64, 0:64]", "[0, 0]"},
                          {a + "k_proj.weight", "[0:16, 0:64]", "[16, 0]"},
                          {a + "v_proj.weight", "[0:16, 0:64]", "[32, 0]"}}}});
}

}  // namespace
}  // namespace reshard
