// --gen-layout megatron (docs/layouts.md): gen expert mesh (etp, ep, edp), per-expert fused fc1/fc2
// storages, interleaved linear_qkv, the validation it relaxes and keeps, block-FP8 planned as logical
// BF16, plan I/O of the new fields, and the real-model plans of the issue.
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>
#include <random>
#include <string_view>

#include "reshard/core/dst_layout.h"
#include "reshard/core/planner.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/stats.h"
#include "reshard/core/storage.h"
#include "reshard/core/verify.h"
#include "test_support.h"

namespace reshard {
namespace {

SystemConfig sys(int tg, const std::string& train, int gg, const std::string& gen) {
  SystemConfig s;
  Problems pr;
  s.train.num_gpus = tg;
  s.gen.num_gpus = gg;
  parse_parallelism_spec(train, "train", s.train, pr);
  parse_parallelism_spec(gen, "gen", s.gen, pr);
  EXPECT_TRUE(pr.empty());
  return s;
}

PlanOptions megatron(BulkMode bulk = BulkMode::Ffn) {
  PlanOptions o;
  o.gen_layout = GenLayout::Megatron;
  o.bulk = bulk;
  return o;
}

// Two layers: GQA attention (8 q heads, 2 kv groups, head dim 8, q_norm), a dense MLP in layer 0 and
// 4 experts in layer 1.
ModelMeta small_model() {
  ModelMeta m;
  m.name = "small";
  auto add = [&](std::string n, Dims s) { m.tensors.push_back({std::move(n), s, DType::BF16}); };
  add("model.embed_tokens.weight", {50, 32});
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "self_attn.q_proj.weight", {64, 32});
    add(p + "self_attn.k_proj.weight", {16, 32});
    add(p + "self_attn.v_proj.weight", {16, 32});
    add(p + "self_attn.o_proj.weight", {32, 64});
    add(p + "self_attn.q_norm.weight", {8});
    if (l == 0) {
      add(p + "mlp.gate_proj.weight", {40, 32});
      add(p + "mlp.up_proj.weight", {40, 32});
      add(p + "mlp.down_proj.weight", {32, 40});
    } else {
      for (int e = 0; e < 4; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        add(x + "gate_proj.weight", {24, 32});
        add(x + "up_proj.weight", {24, 32});
        add(x + "down_proj.weight", {32, 24});
      }
    }
  }
  add("model.norm.weight", {32});
  return m;
}

// By value: a reference parameter bound to a temporary string makes GCC 13 warn that the returned
// reference may dangle (-Wdangling-reference), though it refers into `plan`.
const ParamPlan& param(const Plan& plan, std::string_view name) {
  for (const ParamPlan& p : plan.params)
    if (p.name == name) return p;
  throw std::runtime_error("no param " + std::string(name));
}

const LocalStorage* storage(const std::vector<LocalStorage>& list, const std::string& name) {
  for (const LocalStorage& s : list)
    if (s.name == name) return &s;
  return nullptr;
}

void expect_verifies(const Plan& plan) {
  const VerifyReport v = verify_plan(plan);
  EXPECT_TRUE(v.ok()) << v.problem_count << " problems; first: " << (v.problems.empty() ? "" : v.problems[0]);
}

TEST(Megatron, ExpertsOnEtpEpEdpMeshOneStoragePerLocalExpert) {
  // Train ep=2 on 2 ranks; gen tp=2, ep=2, etp=2 on 4 ranks (2..5): experts over ep, fc1 rows and fc2
  // columns over etp.
  const Plan plan = plan_reshard(small_model(), sys(2, "ep=2", 4, "tp=2,ep=2,etp=2"), megatron());
  expect_verifies(plan);
  const ParamPlan& gate = param(plan, "model.layers.1.mlp.experts.gate_proj.weight");
  EXPECT_EQ(gate.dst.mesh.dim_names, (std::vector<std::string>{"ep", "etp"}));
  EXPECT_EQ(gate.dst.placements[0].str(), "S(0)");
  EXPECT_EQ(gate.dst.placements[1].str(), "S(1)");
  EXPECT_EQ(gate.dst_storage, "decoder.layers.1.mlp.experts.linear_fc1.weight");
  EXPECT_EQ(gate.dst_split_dim, 0);
  EXPECT_EQ(param(plan, "model.layers.1.mlp.experts.down_proj.weight").dst.placements[1].str(), "S(2)");

  // Gen rank 5 = (ep 1, etp 1): experts 2, 3, rows 12..23 of gate and of up, columns 12..23 of down.
  const std::vector<LocalStorage> st = dst_storages(plan, 5);
  for (int e = 0; e < 2; ++e) {
    const LocalStorage* fc1 = storage(st, "decoder.layers.1.mlp.experts.linear_fc1.weight" + std::to_string(e));
    ASSERT_NE(fc1, nullptr);
    EXPECT_EQ(fc1->shape, (Dims{1, 24, 32}));  // [gate_local; up_local] of one expert
    ASSERT_EQ(fc1->members.size(), 2u);
    EXPECT_EQ(fc1->members[0].box, (Box{Dims{2 + e, 12, 0}, Dims{1, 12, 32}}));
    EXPECT_EQ(fc1->members[1].offset, (Dims{0, 12, 0}));
    const LocalStorage* fc2 = storage(st, "decoder.layers.1.mlp.experts.linear_fc2.weight" + std::to_string(e));
    ASSERT_NE(fc2, nullptr);
    EXPECT_EQ(fc2->shape, (Dims{1, 32, 12}));
  }
  EXPECT_EQ(storage(st, "decoder.layers.1.mlp.experts.linear_fc1.weight2"), nullptr);
  // Every transfer lands in one expert's tensor and names it.
  for (const Transfer& t : plan.transfers) {
    const ParamPlan& p = plan.params[t.param];
    if (p.dst_split_dim < 0) continue;
    EXPECT_EQ(t.box.extent[0], 1);
    EXPECT_EQ(t.dst_storage, t.box.offset[0] % 2);
    EXPECT_EQ(t.dst_local[0], 0);
  }
  // Dense fc1 fuses gate and up per tp rank.
  const LocalStorage* fc1 = storage(st, "decoder.layers.0.mlp.linear_fc1.weight");
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->shape, (Dims{40, 32}));
}

TEST(Megatron, InterleavedQkvPerQueryGroup) {
  // tp=1: both groups on one rank: [q0 (32 rows); k0 (8); v0 (8); q1; k1; v1].
  const Plan one = plan_reshard(small_model(), sys(2, "tp=2", 2, "tp=1"), megatron(BulkMode::All));
  expect_verifies(one);
  const ParamPlan& k = param(one, "model.layers.0.self_attn.k_proj.weight");
  EXPECT_EQ(k.dst_storage, "decoder.layers.0.self_attention.linear_qkv.weight");
  EXPECT_EQ(k.dst_fuse_groups, 2);
  const std::vector<LocalStorage> st = dst_storages(one, 2);
  const LocalStorage* qkv = storage(st, "decoder.layers.0.self_attention.linear_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->shape, (Dims{96, 32}));
  ASSERT_EQ(qkv->members.size(), 6u);  // q, k, v: one piece per group each
  const DstMap map(one);
  const auto index_of = [&](const ParamPlan& p) { return static_cast<uint32_t>(&p - one.params.data()); };
  const uint32_t q_index = index_of(param(one, "model.layers.0.self_attn.q_proj.weight"));
  const uint32_t k_index = index_of(k);
  const uint32_t v_index = k_index + 1;
  EXPECT_EQ(map.locate(q_index, 0, Box{Dims{40, 0}, Dims{8, 32}})->offset, (Dims{56, 0}));  // q1 row 8
  EXPECT_EQ(map.locate(k_index, 0, Box{Dims{8, 0}, Dims{8, 32}})->offset, (Dims{80, 0}));   // k1
  EXPECT_EQ(map.locate(v_index, 0, Box{Dims{0, 0}, Dims{8, 32}})->offset, (Dims{40, 0}));   // v0
  EXPECT_FALSE(map.locate(k_index, 0, Box{Dims{4, 0}, Dims{8, 32}}));  // crosses k0/k1
  // Transfers never cross a group.
  for (const Transfer& t : one.transfers) {
    if (one.params[t.param].dst_fuse_groups > 1) {
      EXPECT_TRUE(map.locate(t.param, 0, t.box)) << t.box.str();
    }
  }

  // tp=2: one group per rank: [q_g (32); k_g (8); v_g (8)].
  const Plan two = plan_reshard(small_model(), sys(2, "tp=2", 2, "tp=2"), megatron(BulkMode::All));
  expect_verifies(two);
  const std::vector<LocalStorage> qkv2_all = dst_storages(two, 3);
  const LocalStorage* qkv2 = storage(qkv2_all, "decoder.layers.1.self_attention.linear_qkv.weight");
  ASSERT_NE(qkv2, nullptr);
  EXPECT_EQ(qkv2->shape, (Dims{48, 32}));
}

// transformer_config.py: query groups % tp == 0 or tp % query groups == 0, heads % tp == 0. At gen tp 4
// (2 groups) each rank holds a quarter of the fused [q_g (32); k_g (8); v_g (8)] x 2 rows: 24.
TEST(Megatron, QkvGroupsAgainstGenTp) {
  const Plan four = plan_reshard(small_model(), sys(2, "tp=2", 4, "tp=4"), megatron(BulkMode::All));
  expect_verifies(four);
  const std::vector<LocalStorage> rank3 = dst_storages(four, 3);
  const LocalStorage* qkv = storage(rank3, "decoder.layers.1.self_attention.linear_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->shape, (Dims{24, 32}));
  try {
    plan_reshard(small_model(), sys(2, "tp=2", 3, "tp=3"), megatron(BulkMode::All));
    FAIL() << "expected a config error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    EXPECT_NE(std::string(e.what()).find("Megatron-Core refuses: 8 attention heads and 2 query groups over gen tp 3"),
              std::string::npos)
        << e.what();
  }
}

TEST(Megatron, GenEpEtpOnlyWithMegatron) {
  PlanOptions hf;
  try {
    plan_reshard(small_model(), sys(2, "ep=2", 4, "tp=2,ep=4,etp=2"), hf);
    FAIL() << "expected a config error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("gen: ep 4 must be 1 or equal tp = 2"), std::string::npos) << m;
    EXPECT_NE(m.find("gen: etp must be 1 on the generation side, got 2"), std::string::npos) << m;
  }
  try {
    plan_reshard(small_model(), sys(2, "ep=2", 4, "tp=1,ep=4,etp=2"), megatron());
    FAIL() << "expected a config error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible by etp*ep*pp = 8"), std::string::npos) << e.what();
  }
  try {
    plan_reshard(small_model(), sys(2, "ep=2", 4, "tp=2,pp=2"), megatron());
    FAIL() << "expected a config error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gen: pp must be 1 with --gen-layout megatron"), std::string::npos)
        << e.what();
  }
  expect_verifies(plan_reshard(small_model(), sys(2, "ep=2", 4, "tp=1,ep=4"), megatron()));
}

TEST(Megatron, BlockFp8PlannedAsLogicalBf16) {
  ModelMeta m;
  m.name = "fp8";
  m.tensors = {{"model.layers.0.mlp.gate_proj.weight", {256, 128}, DType::F8_E4M3},
               {"model.layers.0.mlp.gate_proj.weight_scale_inv", {2, 1}, DType::F32},
               {"model.layers.0.mlp.up_proj.weight", {256, 128}, DType::F8_E4M3},
               {"model.layers.0.mlp.up_proj.weight_scale_inv", {2, 1}, DType::F32},
               {"model.layers.0.self_attn.o_proj.weight", {128, 128}, DType::F8_E4M3},
               {"model.layers.0.self_attn.o_proj.weight_scale_inv", {1, 1}, DType::F32},
               {"model.norm.weight", {128}, DType::BF16}};
  const Plan plan = plan_reshard(m, sys(2, "tp=2", 2, "tp=2"), megatron());
  expect_verifies(plan);
  ASSERT_EQ(plan.params.size(), 4u);  // the scales stay on the source
  for (const ParamPlan& p : plan.params) {
    EXPECT_EQ(p.dtype, DType::BF16) << p.name;
    EXPECT_EQ(p.src_dequant, p.name != "model.norm.weight") << p.name;
  }
  EXPECT_EQ(param(plan, "model.layers.0.self_attn.o_proj.weight").path, Path::Misc);
  // Round trip keeps the flag; the sources hold e4m3 shards plus the float32 blocks they touch.
  const Plan back = decode_plan(encode_plan(plan, PlanFormat::Json), "p.json");
  EXPECT_TRUE(back.params[0].src_dequant);
  for (const LocalStorage& s : src_storages(back, 1)) {
    const bool fp8 = plan.params[s.members[0].param].src_dequant;
    EXPECT_EQ(s.block_fp8, fp8) << s.name;
    EXPECT_EQ(s.dtype, fp8 ? DType::F8_E4M3 : DType::BF16) << s.name;
    if (fp8) {
      EXPECT_EQ(s.scale_bytes(), s.scale_shape.product() * 4) << s.name;
    }
    EXPECT_FALSE(s.mxfp8()) << s.name;
  }
  // gate_proj [256, 128] over tp 2: rank 1 holds rows 128..255, i.e. scale block row 1 only.
  for (const LocalStorage& s : src_storages(back, 1))
    if (s.name == "model.layers.0.mlp.gate_proj.weight") {
      EXPECT_EQ(s.scale_shape, (Dims{1, 1}));
    }

  PlanOptions fp8 = megatron();
  fp8.gen_precision = GenPrecision::Fp8;
  try {
    plan_reshard(m, sys(2, "tp=2", 2, "tp=2"), fp8);
    FAIL() << "expected a config error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not supported with --gen-layout megatron"), std::string::npos) << e.what();
  }
}

TEST(Megatron, Mxfp8DenseAndPerExpert) {
  PlanOptions o = megatron();
  o.gen_precision = GenPrecision::Mxfp8;
  ModelMeta dense;
  dense.name = "dense";
  dense.tensors = {{"model.layers.0.mlp.gate_proj.weight", {64, 32}, DType::BF16},
                   {"model.layers.0.mlp.up_proj.weight", {64, 32}, DType::BF16},
                   {"model.layers.0.mlp.down_proj.weight", {32, 64}, DType::BF16}};
  const Plan plan = plan_reshard(dense, sys(2, "tp=2", 2, "tp=2"), o);
  expect_verifies(plan);
  EXPECT_TRUE(param(plan, "model.layers.0.mlp.gate_proj.weight").mxfp8);
  EXPECT_EQ(param(plan, "model.layers.0.mlp.gate_proj.weight").scale_storage,
            "decoder.layers.0.mlp.linear_fc1.weight_scale");
  ModelMeta moe = dense;
  for (int e = 0; e < 2; ++e)
    for (const char* proj : {"gate_proj", "up_proj", "down_proj"})
      moe.tensors.push_back({"model.layers.1.mlp.experts." + std::to_string(e) + "." + proj + ".weight",
                             proj[0] == 'd' ? Dims{32, 64} : Dims{64, 32}, DType::BF16});
  // Per-expert storages quantize per member: each expert tensor has its own scale tensor.
  const Plan per_expert = plan_reshard(moe, sys(2, "ep=2", 2, "tp=1,ep=2"), o);
  expect_verifies(per_expert);
  std::vector<std::string> scales;
  for (const LocalStorage& s : dst_storages(per_expert, 3))
    if (s.mxfp8() && s.name.find("experts") != std::string::npos) {
      EXPECT_EQ(s.scale_name, s.name + "_scale");
      EXPECT_EQ(s.scale_shape[s.scale_shape.n - 1] * 32, s.shape[s.shape.n - 1]) << s.name;
      scales.push_back(s.scale_name);
    }
  EXPECT_EQ(scales.size(), 2u);  // fc1 and fc2 of rank 3's one local expert
}

TEST(Megatron, PlanRoundTripAndCorruptStorageCaught) {
  const Plan plan = plan_reshard(small_model(), sys(2, "ep=2", 4, "tp=2,ep=2,etp=2"), megatron(BulkMode::All));
  const std::vector<uint8_t> json = encode_plan(plan, PlanFormat::Json);
  const Plan back = decode_plan(json, "p.json");
  EXPECT_EQ(encode_plan(back, PlanFormat::Json), json);
  EXPECT_EQ(encode_plan(decode_plan(encode_plan(back, PlanFormat::Cbor), "p.cbor"), PlanFormat::Json), json);
  const std::string text(json.begin(), json.end());
  EXPECT_NE(text.find("\"split_dim\": 0"), std::string::npos);
  EXPECT_NE(text.find("\"groups\": 2"), std::string::npos);
  expect_verifies(back);

  // A transfer into the wrong expert's tensor is caught by static verify.
  Plan bad = back;
  for (Transfer& t : bad.transfers)
    if (bad.params[t.param].dst_split_dim >= 0) {
      t.dst_storage ^= 1;
      break;
    }
  const VerifyReport v = verify_plan(bad);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.problems[0].find("destination storage decoder.layers.1.mlp.experts.linear_fc"), std::string::npos)
      << v.problems[0];
}

// Random small MoE + GQA configs: plans verify, and on every gen rank the storages are tiled exactly
// by their members (no gap, no overlap) whatever the mix of tp, ep, etp, edp.
TEST(Megatron, RandomConfigsVerifyAndTileStorages) {
  std::mt19937 rng(777);
  for (int iter = 0; iter < 60; ++iter) {
    auto pick = [&](std::initializer_list<int> xs) { return *(xs.begin() + rng() % xs.size()); };
    ModelMeta m;
    m.name = "random";
    const int64_t hidden = pick({8, 12}), inter = pick({6, 10, 14});
    auto add = [&](std::string n, Dims sh) { m.tensors.push_back({std::move(n), sh, DType::BF16}); };
    for (int l = 0; l < 2; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      add(p + "self_attn.q_proj.weight", {16, hidden});  // 4 heads of 4, 2 groups
      add(p + "self_attn.k_proj.weight", {8, hidden});
      add(p + "self_attn.v_proj.weight", {8, hidden});
      add(p + "self_attn.o_proj.weight", {hidden, 16});
      for (int e = 0; e < 8; ++e) {
        const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
        add(x + "gate_proj.weight", {inter, hidden});
        add(x + "up_proj.weight", {inter, hidden});
        add(x + "down_proj.weight", {hidden, inter});
      }
      add(p + "mlp.shared_expert.gate_proj.weight", {inter, hidden});
      add(p + "mlp.shared_expert.up_proj.weight", {inter, hidden});
      add(p + "mlp.shared_expert.down_proj.weight", {hidden, inter});
    }
    const int gtp = pick({1, 2}), gep = pick({1, 2, 4, 8}), getp = pick({1, 2});
    const int ggpus = std::lcm(gtp, gep * getp) * pick({1, 2});
    const std::string train = pick({0, 1}) ? "ep=2" : "tp=2,ep=2";
    PlanOptions o = megatron(BulkMode::All);
    o.head_dim = 4;
    o.fanout = static_cast<FanoutMode>(rng() % 3);
    const std::string gen = "tp=" + std::to_string(gtp) + ",ep=" + std::to_string(gep) + ",etp=" + std::to_string(getp);
    SCOPED_TRACE("config " + std::to_string(iter) + ": gen " + std::to_string(ggpus) + " GPUs " + gen);
    const Plan plan = plan_reshard(m, sys(4, train, ggpus, gen), o);
    expect_verifies(plan);
    for (int r = plan.train_world(); r < plan.world(); ++r)
      for (const LocalStorage& st : dst_storages(plan, r)) {
        int64_t members = 0;
        for (const StorageMember& x : st.members) members += x.box.elements();
        EXPECT_EQ(members, st.shape.product()) << st.name << " on rank " << r;
      }
  }
}

using test::test_model;

TEST(Megatron, Qwen3_30B_EP8PP2_to_TP4EP4ETP1) {
  const std::string path = test_model("qwen3-30b-a3b.json");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " absent";
  const Plan plan =
      plan_reshard(load_model(path), sys(16, "pp=2,ep=8", 16, "tp=4,ep=4,etp=1"), megatron(BulkMode::All));
  expect_verifies(plan);
  const ParamPlan& gate = param(plan, "model.layers.47.mlp.experts.gate_proj.weight");
  EXPECT_EQ(gate.dst.mesh.dim_names, (std::vector<std::string>{"edp", "ep"}));
  const std::vector<LocalStorage> st = dst_storages(plan, 16 + 5);  // ep 1, edp 1: experts 32..63
  const LocalStorage* fc1 = storage(st, "decoder.layers.47.mlp.experts.linear_fc1.weight31");
  ASSERT_NE(fc1, nullptr);
  EXPECT_EQ(fc1->shape, (Dims{1, 1536, 2048}));
  EXPECT_EQ(fc1->members[0].box.offset[0], 63);
  EXPECT_EQ(storage(st, "decoder.layers.47.mlp.experts.linear_fc1.weight32"), nullptr);
  const LocalStorage* qkv = storage(st, "decoder.layers.0.self_attention.linear_qkv.weight");
  ASSERT_NE(qkv, nullptr);
  EXPECT_EQ(qkv->shape, (Dims{1024 + 128 + 128, 2048}));  // 32 q heads, 4 groups, head dim 128; tp 4
  EXPECT_NEAR(compute_stats(plan).bulk_fraction, 1.0, 0.01);
}

TEST(Megatron, DeepSeekV3_PP16EP16_to_TP8EP32ETP1) {
  const std::string path = test_model("deepseek-v3-bf16.json");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " absent";
  PlanOptions o = megatron(BulkMode::All);  // MLA attention: no q/k/v to interleave
  o.exclude = {"^model\\.layers\\.61\\."};  // the MTP layer
  o.first_stage_layers = 3;
  o.last_stage_layers = 2;
  const Plan plan = plan_reshard(load_model(path), sys(256, "pp=16,ep=16", 256, "tp=8,ep=32,etp=1"), o);
  expect_verifies(plan);
  const std::vector<LocalStorage> st = dst_storages(plan, 256 + 37);  // ep 5: experts 40..47
  const LocalStorage* fc2 = storage(st, "decoder.layers.3.mlp.experts.linear_fc2.weight7");
  ASSERT_NE(fc2, nullptr);
  EXPECT_EQ(fc2->shape, (Dims{1, 7168, 2048}));
  EXPECT_EQ(fc2->members[0].box.offset[0], 47);
  // Shared experts and the first dense layers fuse fc1 over tp=8.
  const LocalStorage* dense = storage(st, "decoder.layers.0.mlp.linear_fc1.weight");
  ASSERT_NE(dense, nullptr);
  EXPECT_EQ(dense->shape, (Dims{2 * 18432 / 8, 7168}));
  const LocalStorage* shared = storage(st, "decoder.layers.3.mlp.shared_experts.linear_fc1.weight");
  ASSERT_NE(shared, nullptr);
  EXPECT_EQ(shared->shape, (Dims{2 * 2048 / 8, 7168}));
}

}  // namespace
}  // namespace reshard

namespace reshard {
namespace {

// Megatron's etp default (megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__:
// expert_tensor_parallel_size = tensor_model_parallel_size when unset) and its expert grid
// (parallel_state.py initialize_model_parallel: RankGenerator order tp-ep-dp-pp, etp fastest). 8 GPUs,
// tp=2, ep=4, so etp=2: rank r has etp rank r % 2 and ep rank r / 2; 128 experts, 32 per EP rank
// (moe_layer.py BaseMoELayer: num_local_experts = E / ep); fc1 rows split over etp (experts.py
// TEGroupedMLP). Qwen3-30B-A3B's moe_intermediate 768: train rank 1 holds experts [0, 32), rows
// [384, 768) of gate and of up; rank 6 experts [96, 128), rows [0, 384).
TEST(Megatron, EtpDefaultsToTpOnTheTrainSide) {
  ModelMeta m;
  m.name = "moe";
  for (int e = 0; e < 128; ++e)
    for (const char* proj : {"gate_proj", "up_proj"})
      m.tensors.push_back({"model.layers.0.mlp.experts." + std::to_string(e) + "." + proj + ".weight",
                           Dims{768, 64}, DType::BF16});
  SystemConfig s;
  s.train.num_gpus = 8;
  s.train.tp = 2;
  s.train.ep = 4;
  s.gen.num_gpus = 2;
  s.gen.tp = 2;
  const Plan plan = plan_reshard(m, s, PlanOptions{});
  EXPECT_EQ(plan.system.train.etp, 2);
  EXPECT_TRUE(plan.system.train.etp_default);
  EXPECT_FALSE(plan.system.gen.etp_default);  // a vLLM / hf destination has no etp
  const ParamPlan& gate = plan.params[0];
  ASSERT_EQ(gate.name, "model.layers.0.mlp.experts.gate_proj.weight");
  const auto box_of = [&](int rank) {
    for (const LocalStorage& st : src_storages(plan, rank))
      if (st.name == gate.name) return st.members.at(0).box.str();
    return std::string("none");
  };
  EXPECT_EQ(box_of(1), "[0:32, 384:768, 0:64]");
  EXPECT_EQ(box_of(6), "[96:128, 0:384, 0:64]");
  EXPECT_TRUE(verify_plan(plan).ok());
  // Given explicitly, etp is the user's.
  s.train.etp = 1;
  const Plan one = plan_reshard(m, s, PlanOptions{});
  EXPECT_FALSE(one.system.train.etp_default);
  for (const LocalStorage& st : src_storages(one, 1))
    if (st.name == gate.name) {
      EXPECT_EQ(st.members.at(0).box.str(), "[32:64, 0:768, 0:64]");
    }
}

}  // namespace
}  // namespace reshard

namespace reshard {
namespace {

// Megatron's padded vocab (megatron/training/vocab_utils.py calculate_padded_vocab_size: a multiple of
// make_vocab_size_divisible_by x tp; megatron/core/tensor_parallel/layers.py VocabParallelEmbedding:
// rank r holds rows [r Vp / tp, (r + 1) Vp / tp), the padding at the end). Vocab 151936 with 128:
// train tp 8 pads to 152576 (149 x 1024), 19072 rows a rank, rank 7 holds [133504, 151936) and 640
// padding rows; a Megatron destination at tp 4 pads to 152064 (297 x 512), 38016 a rank, its rank 3
// [114048, 151936) and 128 padding rows.
TEST(Megatron, PaddedVocabOnBothSides) {
  ModelMeta m;
  m.name = "vocab";
  m.tensors = {{"model.embed_tokens.weight", Dims{151936, 64}, DType::BF16}, {"model.norm.weight", Dims{64}, DType::BF16}};
  SystemConfig s;
  s.train.num_gpus = 8;
  s.train.tp = 8;
  s.gen.num_gpus = 4;
  s.gen.tp = 4;
  PlanOptions o;
  o.bulk = BulkMode::All;
  o.gen_layout = GenLayout::Megatron;
  o.train_vocab_pad = 128;
  o.gen_vocab_pad = 128;
  const Plan plan = plan_reshard(m, s, o);
  ASSERT_TRUE(verify_plan(plan).ok());
  for (const LocalStorage& st : src_storages(plan, 7))
    if (st.name == "model.embed_tokens.weight") {
      EXPECT_EQ(st.shape.str(), "[19072, 64]");
      EXPECT_EQ(st.members.at(0).box.str(), "[133504:151936, 0:64]");
    }
  bool seen = false;
  for (const LocalStorage& st : dst_storages(plan, 8 + 3))
    if (st.members.size() == 1 && plan.params[st.members[0].param].name == "model.embed_tokens.weight") {
      EXPECT_EQ(st.shape.str(), "[38016, 64]");
      EXPECT_EQ(st.members[0].box.str(), "[114048:151936, 0:64]");
      seen = true;
    }
  EXPECT_TRUE(seen);
  // vLLM pads to 64 on its own: Megatron's padding is not a vLLM option.
  o.gen_layout = GenLayout::Vllm;
  EXPECT_THROW(plan_reshard(m, s, o), Error);
}

}  // namespace
}  // namespace reshard
