// Name rules, expert grouping and the placements the planner derives from them.
#include <gtest/gtest.h>

#include "reshard/core/dst_layout.h"
#include "reshard/core/grouping.h"
#include "reshard/core/planner.h"
#include "reshard/core/rules.h"

namespace reshard {
namespace {

TensorMeta T(std::string name, Dims shape, DType dt = DType::BF16) { return {std::move(name), shape, dt}; }

TEST(Rules, SeedBulkRule) {
  auto path = [](const std::string& n, int nd = 2) {
    return classify_param(n, nd, false, BulkMode::Ffn, {}).path;
  };
  EXPECT_EQ(path("model.layers.0.mlp.gate_proj.weight"), Path::Bulk);
  EXPECT_EQ(path("model.layers.0.mlp.up_proj.weight"), Path::Bulk);
  EXPECT_EQ(path("model.layers.0.mlp.down_proj.weight"), Path::Bulk);
  EXPECT_EQ(path("model.layers.3.mlp.shared_experts.gate_proj.weight"), Path::Misc);
  EXPECT_EQ(path("model.layers.3.mlp.shared_expert.up_proj.weight"), Path::Misc);
  EXPECT_EQ(path("mtp.layers.0.mlp.down_proj.weight"), Path::Misc);
  EXPECT_EQ(path("model.layers.0.self_attn.q_proj.weight"), Path::Misc);
  EXPECT_EQ(path("model.layers.0.mlp.gate.weight"), Path::Misc);
}

TEST(Rules, BulkAllKeepsScalesAndUnknownMisc) {
  auto r = [](const std::string& n, int nd = 2) { return classify_param(n, nd, false, BulkMode::All, {}); };
  EXPECT_EQ(r("model.layers.0.self_attn.q_proj.weight").path, Path::Bulk);
  EXPECT_EQ(r("model.layers.0.self_attn.q_proj.weight").train_tp_dim, 0);
  EXPECT_EQ(r("model.layers.0.self_attn.o_proj.weight").train_tp_dim, 1);
  EXPECT_EQ(r("model.layers.0.input_layernorm.weight", 1).train_tp_dim, -1);
  EXPECT_EQ(r("model.layers.3.mlp.shared_experts.down_proj.weight").path, Path::Bulk);
  EXPECT_EQ(r("model.layers.0.self_attn.q_a_proj.weight_scale_inv").path, Path::Misc);
  EXPECT_EQ(r("backbone.layers.0.mixer.A_log", 1).path, Path::Misc);
}

TEST(Rules, VllmFusedStorages) {
  const auto layout = make_destination_layout(GenLayout::Vllm);
  Problems pr;
  // gate_up_proj only where the MLP has a gate (an ungated up_proj keeps its own tensor)
  layout->prepare({{"m.layers.0.mlp.gate_proj.weight", {}, Dims{8, 8}, DType::BF16, false}}, SystemConfig{},
                  PlanOptions{}, pr);
  ASSERT_TRUE(pr.empty());
  auto r = [&](const std::string& n, bool expert) {
    return layout->assign(n, classify_param(n, expert ? 3 : 2, expert, BulkMode::All, {}), expert ? 3 : 2);
  };
  EXPECT_EQ(r("m.layers.0.mlp.up_proj.weight", false).storage, "m.layers.0.mlp.gate_up_proj.weight");
  EXPECT_EQ(r("m.layers.0.mlp.up_proj.weight", false).fuse_index, 1);
  EXPECT_EQ(r("m.layers.0.mlp.experts.gate_proj.weight", true).storage, "m.layers.0.mlp.experts.w13_weight");
  EXPECT_EQ(r("m.layers.0.mlp.experts.gate_proj.weight", true).fuse_dim, 1);
  EXPECT_EQ(r("m.layers.0.mlp.experts.down_proj.weight", true).storage, "m.layers.0.mlp.experts.w2_weight");
  EXPECT_EQ(r("m.layers.0.self_attn.v_proj.weight", false).storage, "m.layers.0.self_attn.qkv_proj.weight");
  EXPECT_EQ(r("m.layers.0.self_attn.v_proj.weight", false).fuse_index, 2);
  EXPECT_EQ(r("m.layers.0.self_attn.o_proj.weight", false).storage, "");  // its own tensor
  EXPECT_EQ(make_destination_layout(GenLayout::Hf)->assign("m.layers.0.mlp.up_proj.weight",
                                                           classify_param("m.layers.0.mlp.up_proj.weight", 2, false,
                                                                          BulkMode::All, {}),
                                                           2)
                .storage,
            "");
}

TEST(Rules, MegatronStorages) {
  const auto layout = make_destination_layout(GenLayout::Megatron);
  Problems pr;
  PlanOptions o;
  o.bulk = BulkMode::All;
  layout->prepare({{"model.layers.0.self_attn.q_proj.weight", {}, Dims{64, 32}, DType::BF16, false},
                   {"model.layers.0.self_attn.k_proj.weight", {}, Dims{16, 32}, DType::BF16, false},
                   {"model.layers.0.self_attn.v_proj.weight", {}, Dims{16, 32}, DType::BF16, false},
                   {"model.layers.0.self_attn.q_norm.weight", {}, Dims{8}, DType::BF16, false}},
                  SystemConfig{}, o, pr);
  ASSERT_TRUE(pr.empty()) << pr.list()[0];
  auto r = [&](const std::string& n, bool expert) {
    return layout->assign(n, classify_param(n, expert ? 3 : 2, expert, BulkMode::All, {}), expert ? 3 : 2);
  };
  const StorageAssignment up = r("model.layers.1.mlp.up_proj.weight", false);
  EXPECT_EQ(up.storage, "decoder.layers.1.mlp.linear_fc1.weight");
  EXPECT_EQ(up.fuse_dim, 0);
  EXPECT_EQ(up.fuse_index, 1);
  EXPECT_EQ(r("model.layers.1.mlp.down_proj.weight", false).storage, "decoder.layers.1.mlp.linear_fc2.weight");
  EXPECT_EQ(r("model.layers.1.mlp.shared_expert.gate_proj.weight", false).storage,
            "decoder.layers.1.mlp.shared_experts.linear_fc1.weight");
  const StorageAssignment eg = r("model.layers.2.mlp.experts.gate_proj.weight", true);
  EXPECT_EQ(eg.storage, "decoder.layers.2.mlp.experts.linear_fc1.weight");
  EXPECT_EQ(eg.fuse_dim, 1);
  EXPECT_EQ(eg.split_dim, 0);
  const StorageAssignment ed = r("model.layers.2.mlp.experts.down_proj.weight", true);
  EXPECT_EQ(ed.storage, "decoder.layers.2.mlp.experts.linear_fc2.weight");
  EXPECT_EQ(ed.fuse_dim, -1);
  EXPECT_EQ(ed.split_dim, 0);
  const StorageAssignment k = r("model.layers.0.self_attn.k_proj.weight", false);
  EXPECT_EQ(k.storage, "decoder.layers.0.self_attention.linear_qkv.weight");
  EXPECT_EQ(k.fuse_index, 1);
  EXPECT_EQ(k.fuse_groups, 2);  // 16 k rows / head dim 8 (q_norm)
  EXPECT_EQ(r("model.layers.0.self_attn.o_proj.weight", false).storage,
            "decoder.layers.0.self_attention.linear_proj.weight");
}

TEST(Rules, MegatronQkvNeedsHeadDim) {
  const auto layout = make_destination_layout(GenLayout::Megatron);
  Problems pr;
  PlanOptions o;
  o.bulk = BulkMode::All;
  layout->prepare({{"model.layers.0.self_attn.q_proj.weight", {}, Dims{64, 32}, DType::BF16, false},
                   {"model.layers.0.self_attn.k_proj.weight", {}, Dims{16, 32}, DType::BF16, false},
                   {"model.layers.0.self_attn.v_proj.weight", {}, Dims{16, 32}, DType::BF16, false}},
                  SystemConfig{}, o, pr);
  ASSERT_EQ(pr.list().size(), 1u);
  EXPECT_NE(pr.list()[0].find("pass --head-dim N"), std::string::npos) << pr.list()[0];
  Problems pr2;
  o.head_dim = 16;  // 1 group of 4 q heads
  make_destination_layout(GenLayout::Megatron)
      ->prepare({{"model.layers.0.self_attn.q_proj.weight", {}, Dims{60, 32}, DType::BF16, false},
                 {"model.layers.0.self_attn.k_proj.weight", {}, Dims{16, 32}, DType::BF16, false},
                 {"model.layers.0.self_attn.v_proj.weight", {}, Dims{16, 32}, DType::BF16, false}},
                SystemConfig{}, o, pr2);
  ASSERT_EQ(pr2.list().size(), 1u);
  EXPECT_NE(pr2.list()[0].find("q_proj: 60 rows are not 1 query groups of whole heads of 16 (--head-dim) (model.layers.0.self_attn.q_proj.weight)"), std::string::npos)
      << pr2.list()[0];
}

TEST(Rules, CustomRulesFirstAndErrorsCollected) {
  Problems pr;
  auto rules = parse_rules(R"({"rules": [{"match": "mixer\\.in_proj", "path": "bulk", "train_shard_dim": 0, "gen_shard_dim": 1}]})",
                           "r.json", pr);
  ASSERT_TRUE(pr.empty());
  ParamRule r = classify_param("backbone.layers.0.mixer.in_proj.weight", 2, false, BulkMode::Ffn, rules);
  EXPECT_EQ(r.path, Path::Bulk);
  EXPECT_EQ(r.gen_tp_dim, 1);
  parse_rules(R"([{"match": "(", "path": "x"}, {"path": "bulk"}])", "bad.json", pr);
  EXPECT_EQ(pr.list().size(), 3u);
}

TEST(Grouping, ExpertsStackInFirstMemberPosition) {
  Problems pr;
  std::vector<TensorMeta> ts = {T("a.norm.weight", {4})};
  for (int e = 0; e < 3; ++e)
    for (const char* p : {"gate_proj", "up_proj", "down_proj"})
      ts.push_back(T("m.layers.0.mlp.experts." + std::to_string(e) + "." + p + ".weight",
                     std::string(p) == "down_proj" ? Dims{8, 6} : Dims{6, 8}));
  auto g = group_params(ts, pr);
  ASSERT_TRUE(pr.empty());
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[1].name, "m.layers.0.mlp.experts.gate_proj.weight");
  EXPECT_EQ(g[1].shape, (Dims{3, 6, 8}));
  EXPECT_EQ(g[3].shape, (Dims{3, 8, 6}));
  EXPECT_EQ(g[1].members.size(), 3u);
}

TEST(Grouping, GapsDuplicatesAndDisagreeingShapesAllReported) {
  Problems pr;
  std::vector<TensorMeta> ts = {T("x.experts.0.up_proj.weight", {4, 4}), T("x.experts.2.up_proj.weight", {4, 4}),
                                T("y.experts.0.down_proj.weight", {4, 4}), T("y.experts.1.down_proj.weight", {4, 5}),
                                T("z.experts.0.gate_proj.weight", {4, 4}), T("z.experts.0.gate_proj.weight", {4, 4})};
  group_params(ts, pr);
  ASSERT_EQ(pr.list().size(), 3u);
  EXPECT_NE(pr.list()[0].find("appears twice"), std::string::npos);
}

TEST(Grouping, PreFusedGateUpSplitsAndUpOnlyIsValid) {
  Problems pr;
  auto g = group_params({T("m.experts.gate_up_proj", {4, 12, 8}), T("m.experts.down_proj", {4, 8, 6}),
                         T("n.experts.0.up_proj.weight", {6, 8}), T("n.experts.1.up_proj.weight", {6, 8})},
                        pr);
  ASSERT_TRUE(pr.empty());
  ASSERT_EQ(g.size(), 4u);
  EXPECT_EQ(g[0].name, "m.experts.gate_proj.weight");
  EXPECT_EQ(g[0].shape, (Dims{4, 6, 8}));
  EXPECT_EQ(g[1].name, "m.experts.up_proj.weight");
  EXPECT_EQ(g[2].name, "m.experts.down_proj.weight");
  EXPECT_EQ(g[3].shape, (Dims{2, 6, 8}));
}

// Placements: experts S(0) over EP and S(1)/S(2) over ETP on the train side; gen EP on the tp axis.
TEST(Placements, ExpertsTrainEtpAndGenEp) {
  ModelMeta m;
  m.name = "moe";
  for (int e = 0; e < 4; ++e)
    for (const char* p : {"gate_proj", "down_proj"})
      m.tensors.push_back(T("model.layers.0.mlp.experts." + std::to_string(e) + "." + p + ".weight", {8, 8}));
  SystemConfig s;
  s.train = Parallelism{8, 2, 1, 2, 2, 1, 0};  // tp=2 ep=2 etp=2 -> edp=2
  s.gen = Parallelism{4, 4, 1, 4, 1, 1, 0};    // gen ep = tp = 4
  Plan plan = plan_reshard(m, s, PlanOptions{});
  const ParamPlan& gate = plan.params[0];
  const ParamPlan& down = plan.params[1];
  EXPECT_EQ(gate.src.mesh.dim_names, (std::vector<std::string>{"edp", "ep", "etp"}));
  EXPECT_EQ(gate.src.placements[1].str(), "S(0)");
  EXPECT_EQ(gate.src.placements[2].str(), "S(1)");
  EXPECT_EQ(down.src.placements[2].str(), "S(2)");
  EXPECT_EQ(gate.dst.placements[0].str(), "S(0)");
  // Train rank 1 is etp=1, ep=0: experts [0,2), rows [4,8).
  Box b = gate.src.local_box(gate.shape, 1);
  EXPECT_EQ(b.offset, (Dims{0, 4, 0}));
  EXPECT_EQ(b.extent, (Dims{2, 4, 8}));
}

TEST(Placements, UnevenShardsFlagged) {
  ModelMeta m;
  m.tensors = {T("model.layers.0.mlp.gate_proj.weight", {10, 4})};
  SystemConfig s;
  s.train = Parallelism{1, 1, 1, 1, 1, 1, 0};
  s.gen = Parallelism{4, 4, 1, 1, 1, 1, 0};
  Plan plan = plan_reshard(m, s, PlanOptions{});
  EXPECT_TRUE(plan.params[0].uneven);
  EXPECT_EQ(plan.params[0].dst.local_box(plan.params[0].shape, 3).extent, (Dims{1, 4}));
}

}  // namespace
}  // namespace reshard
