// Precision pairs in the planner and the plan file: block-FP8 scale grouping
// and siblings, --scales bulk block alignment, MXFP8 params and their storages,
// refused pairs, and the FP8-valid pattern.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "reshard/core/grouping.h"
#include "reshard/core/model.h"
#include "reshard/core/pattern.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/planner.h"
#include "reshard/core/stats.h"
#include "reshard/core/storage.h"
#include "reshard/core/verify.h"
#include "test_support.h"

namespace reshard {
namespace {

using test::sys;
std::string data(const std::string &f) { return test::test_data(f); }

std::string config_error_of(const ModelMeta &m, const SystemConfig &s,
                            const PlanOptions &o) {
  try {
    plan_reshard(m, s, o);
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    return e.what();
  }
  ADD_FAILURE() << "planning succeeded";
  return "";
}

const ParamPlan *find(const Plan &p, const std::string &name) {
  for (const ParamPlan &x : p.params)
    if (x.name == name)
      return &x;
  return nullptr;
}

TEST(Precision, ExpertScalesGroupLikeTheirWeights) {
  const ModelMeta m = load_model(data("tiny-fp8.json"));
  Problems pr;
  const std::vector<LogicalParam> ps = group_params(m.tensors, pr);
  ASSERT_TRUE(pr.empty());
  const LogicalParam *s = nullptr;
  for (const LogicalParam &p : ps)
    if (p.name == "model.layers.1.mlp.experts.down_proj.weight_scale_inv")
      s = &p;
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->shape, (Dims{4, 2, 2}));
  EXPECT_EQ(s->dtype, DType::F32);
  EXPECT_EQ(s->members.size(), 4u);
  EXPECT_EQ(s->members[3],
            "model.layers.1.mlp.experts.3.down_proj.weight_scale_inv");
}

TEST(Precision, Fp8ScalesMiscByDefaultAndBulkWhenAligned) {
  const ModelMeta m = load_model(data("tiny-fp8.json"));
  Parallelism t, g;
  t.ep = 2;
  g.tp = 2;
  Plan misc = plan_reshard(m, sys(2, t, 2, g), PlanOptions{});
  const ParamPlan *w =
      find(misc, "model.layers.1.mlp.experts.gate_proj.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->path, Path::Bulk);
  EXPECT_EQ(w->dtype, DType::F8_E4M3);
  EXPECT_EQ(
      find(misc, "model.layers.1.mlp.experts.gate_proj.weight_scale_inv")->path,
      Path::Misc);
  EXPECT_TRUE(verify_plan(misc).ok());

  PlanOptions o;
  o.scales = ScalesPath::Bulk;
  o.bulk = BulkMode::All;
  Plan bulk = plan_reshard(m, sys(2, t, 2, g), o);
  const ParamPlan *s =
      find(bulk, "model.layers.1.mlp.experts.gate_proj.weight_scale_inv");
  const ParamPlan *sw =
      find(bulk, "model.layers.1.mlp.experts.gate_proj.weight");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->path, Path::Bulk);
  EXPECT_EQ(s->rule, "fp8_scale");
  EXPECT_EQ(s->src.placements[0].str(), sw->src.placements[0].str());
  // Block units: gen rank holds weight rows [128, 256) of expert dim 1, so
  // scale rows [1, 2).
  for (int f = 0; f < sw->dst.mesh.size(); ++f) {
    const Box wb = sw->dst.local_box(sw->shape, f),
              sb = s->dst.local_box(s->shape, f);
    for (int d = 1; d < 3; ++d) {
      EXPECT_EQ(sb.offset[d] * 128, wb.offset[d]);
      EXPECT_EQ(std::min(sb.extent[d] * 128, wb.extent[d]), wb.extent[d]);
    }
  }
  EXPECT_FALSE(
      find(bulk, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv")
          ->path == Path::Misc);
  EXPECT_TRUE(verify_plan(bulk).ok());
  EXPECT_GT(compute_stats(bulk).bulk_fraction,
            compute_stats(misc).bulk_fraction);

  // Round trip keeps the options.
  const Plan back = decode_plan(encode_plan(bulk, PlanFormat::Json), "p.json");
  EXPECT_EQ(back.options.scales, ScalesPath::Bulk);
  EXPECT_EQ(encode_plan(back, PlanFormat::Json),
            encode_plan(bulk, PlanFormat::Json));
}

TEST(Precision, ScalesBulkNamesEveryMisalignedBoundary) {
  const ModelMeta m = load_model(data("tiny-fp8.json"));
  Parallelism t, g;
  t.ep = 2;
  g.tp = 4; // 256 rows over 4: boundaries 64, 192 are not on 128-blocks
  PlanOptions o;
  o.scales = ScalesPath::Bulk;
  const std::string e = config_error_of(m, sys(2, t, 4, g), o);
  EXPECT_NE(e.find("model.layers.1.mlp.experts.down_proj.weight: gen (dst) "
                   "shard boundaries along dim 2 (size 256) "
                   "not on a 128-block boundary: 64, 192"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("model.layers.1.mlp.experts.gate_proj.weight: gen (dst)"),
            std::string::npos)
      << e;
  EXPECT_EQ(e.find("model.layers.0.mlp.gate_proj.weight:"), std::string::npos)
      << e; // 512 / 4 = 128: aligned
}

TEST(Precision, UnsupportedPairsAreRefusedByName) {
  const ModelMeta fp8 = load_model(data("tiny-fp8.json"));
  const ModelMeta bf16 = load_model(data("tiny-mx.json"));
  Parallelism t, g;
  t.tp = 2;
  g.tp = 2;
  PlanOptions o;
  o.gen_precision = GenPrecision::Mxfp8;
  EXPECT_NE(
      config_error_of(fp8, sys(2, t, 2, g), o)
          .find("precision pair block-fp8 train -> mxfp8 gen is not supported"),
      std::string::npos);
  o.gen_precision = GenPrecision::Bf16;
  EXPECT_NE(config_error_of(fp8, sys(2, t, 2, g), o)
                .find("block-fp8 train -> bf16 gen"),
            std::string::npos);
  o.gen_precision = GenPrecision::Fp8;
  EXPECT_NE(
      config_error_of(bf16, sys(2, t, 2, g), o).find("bf16 train -> fp8 gen"),
      std::string::npos);
  o = PlanOptions{};
  o.scales = ScalesPath::Bulk;
  EXPECT_NE(config_error_of(bf16, sys(2, t, 2, g), o)
                .find("--scales bulk: the model has no block-FP8 weights"),
            std::string::npos);
}

TEST(Precision, Fp8WeightNeedsItsScaleSibling) {
  const ModelMeta m = parse_model_json(R"({"params": {
      "model.layers.0.mlp.gate_proj.weight": {"shape": [256, 300], "dtype": "float8_e4m3fn"},
      "model.layers.0.mlp.up_proj.weight": {"shape": [256, 300], "dtype": "float8_e4m3fn"},
      "model.layers.0.mlp.up_proj.weight_scale_inv": {"shape": [2, 2], "dtype": "float32"}}})",
                                       "m.json");
  Parallelism t, g;
  const std::string e = config_error_of(m, sys(1, t, 1, g), PlanOptions{});
  EXPECT_NE(e.find("model.layers.0.mlp.gate_proj.weight: float8_e4m3fn weight "
                   "has no float32 "
                   "model.layers.0.mlp.gate_proj.weight_scale_inv sibling of "
                   "shape [2, 3]"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("model.layers.0.mlp.up_proj.weight_scale_inv: block-FP8 "
                   "scale is float32 [2, 2], expected float32 [2, 3]"),
            std::string::npos)
      << e;
}

TEST(Precision, Mxfp8ParamsStoragesAndPlanFile) {
  const ModelMeta m = load_model(data("tiny-mx.json"));
  Parallelism t, g;
  t.ep = 2;
  g.tp = 2;
  PlanOptions o;
  o.gen_precision = GenPrecision::Mxfp8;
  o.bulk = BulkMode::All;
  o.gen_layout = GenLayout::Vllm;
  o.head_dim = 4;  // 50 heads, 16 KV heads: vLLM takes tp 2
  Plan plan = plan_reshard(m, sys(2, t, 4, g), o);
  EXPECT_TRUE(verify_plan(plan).ok());
  const ParamPlan *gate =
      find(plan, "model.layers.1.mlp.experts.gate_proj.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_TRUE(gate->mxfp8);
  EXPECT_EQ(gate->scale_storage, "model.layers.1.mlp.experts.w13_weight_scale");
  EXPECT_FALSE(
      find(plan, "model.embed_tokens.weight")->mxfp8); // vocab stays BF16
  EXPECT_FALSE(find(plan, "model.layers.0.input_layernorm.weight")->mxfp8);
  EXPECT_FALSE(find(plan, "model.layers.1.mlp.gate.weight")->mxfp8); // router
  bool saw = false;
  for (const LocalStorage &s : dst_storages(plan, 2)) {
    if (s.name != "model.layers.1.mlp.experts.w13_weight")
      continue;
    saw = true;
    EXPECT_EQ(s.dtype, DType::F8_E4M3);
    EXPECT_EQ(s.shape,
              (Dims{4, 64, 192})); // gate + up halves over tp=2, fused on dim 1
    EXPECT_EQ(s.scale_shape, (Dims{4, 64, 6}));
    EXPECT_EQ(s.bytes(), 4 * 64 * 192);
  }
  EXPECT_TRUE(saw);
  const std::vector<uint8_t> js = encode_plan(plan, PlanFormat::Json);
  const nlohmann::json doc = nlohmann::json::parse(js.begin(), js.end());
  EXPECT_EQ(doc["inputs"]["options"]["gen_precision"], "mxfp8");
  bool found = false;
  for (const auto &p : doc["params"])
    if (p["name"] == "model.layers.1.mlp.experts.gate_proj.weight") {
      found = true;
      EXPECT_EQ(p["gen_precision"], "mxfp8");
      EXPECT_EQ(p["scale_storage"],
                "model.layers.1.mlp.experts.w13_weight_scale");
    }
  EXPECT_TRUE(found);
  const Plan back = decode_plan(js, "p.json");
  EXPECT_EQ(encode_plan(back, PlanFormat::Cbor),
            encode_plan(plan, PlanFormat::Cbor));
  EXPECT_TRUE(find(back, "model.layers.1.mlp.experts.gate_proj.weight")->mxfp8);

  // Plans written before precision pairs (no such keys) load with the defaults.
  nlohmann::json old = doc;
  old["inputs"]["options"].erase("gen_precision");
  old["inputs"]["options"].erase("scales");
  for (auto &p : old["params"]) {
    p.erase("gen_precision");
    p.erase("scale_storage");
  }
  const std::string text = old.dump();
  const Plan legacy =
      decode_plan(std::vector<uint8_t>(text.begin(), text.end()), "old.json");
  EXPECT_EQ(legacy.options.gen_precision, GenPrecision::Auto);
  EXPECT_EQ(legacy.options.scales, ScalesPath::Misc);
  EXPECT_FALSE(
      find(legacy, "model.layers.1.mlp.experts.gate_proj.weight")->mxfp8);
}

TEST(Precision, Mxfp8NeedsKDivisibleBy32OnEveryShard) {
  const ModelMeta m = load_model(data("tiny-mx.json"));
  Parallelism t, g;
  g.tp = 4; // down_proj K = 320 over 4 -> 80; experts' K = 64 over 4 -> 16
  PlanOptions o;
  o.gen_precision = GenPrecision::Mxfp8;
  const std::string e = config_error_of(m, sys(1, t, 4, g), o);
  EXPECT_NE(e.find("model.layers.0.mlp.down_proj.weight: gen shards have K "
                   "(last dim) extents 80 of 320, not divisible by 32"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("model.layers.1.mlp.experts.down_proj.weight: gen shards "
                   "have K (last dim) extents 16 of 64"),
            std::string::npos)
      << e;
}

TEST(Precision, DeepSeekV3Fp8Pp16Ep16ToTp32Dp8) {
  const std::string path =
      std::string(RESHARD_TEST_MODELS_DIR) + "/deepseek-v3-fp8.json";
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " absent";
  const ModelMeta m = load_model(path);
  Parallelism t, g;
  t.pp = 16;
  t.ep = 16;
  g.tp = 32;
  PlanOptions o;
  o.exclude = {"^model\\.layers\\.61\\."};
  o.first_stage_layers = 3;
  o.last_stage_layers = 2;
  o.gen_precision = GenPrecision::Fp8;
  // TP32 cuts 18432 dense rows into 576 and 2048 expert rows into 64: vLLM refuses fp8 partitions
  // that are not whole 128-blocks (fp8_utils.py validate_fp8_block_shape), and so do we.
  const std::string e = config_error_of(m, sys(256, t, 256, g), o);
  EXPECT_NE(e.find("gen (dst) shard boundaries along dim 0 (size 18432) at 576, 1728, 2880"), std::string::npos)
      << e.substr(0, 2000);
  EXPECT_NE(e.find("gen (dst) shard boundaries along dim 1 (size 2048) at 64, 192, 320"), std::string::npos);
  // TP16 gen (DP16) keeps every boundary on a block (1152 = 9 x 128, 2048 / 16 = 128).
  g.tp = 16;
  const Plan plan = plan_reshard(m, sys(256, t, 256, g), o);
  const VerifyReport v = verify_plan(plan);
  EXPECT_TRUE(v.ok()) << (v.problems.empty() ? "" : v.problems[0]);
  const ParamPlan *s =
      find(plan, "model.layers.3.mlp.experts.gate_proj.weight_scale_inv");
  ASSERT_NE(s, nullptr); // 256 per-expert scales grouped into one misc param
  EXPECT_EQ(s->shape, (Dims{256, 16, 56}));
  EXPECT_EQ(s->path, Path::Misc);
  EXPECT_EQ(find(plan, "model.layers.3.mlp.experts.gate_proj.weight")->dtype,
            DType::F8_E4M3);
  // --scales bulk: scales go bulk and the plan verifies.
  o.scales = ScalesPath::Bulk;
  const Plan tp16 = plan_reshard(m, sys(256, t, 256, g), o);
  EXPECT_TRUE(verify_plan(tp16).ok());
  EXPECT_EQ(
      find(tp16, "model.layers.3.mlp.experts.gate_proj.weight_scale_inv")->path,
      Path::Bulk);
}

TEST(Precision, Fp8ValidPatternHasNoNanBytes) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t w =
        i < 256 ? 0x0101010101010101ull * static_cast<uint64_t>(i) : rng();
    const uint64_t v = fp8_valid_word(w);
    for (int b = 0; b < 8; ++b) {
      const auto in = static_cast<uint8_t>(w >> (8 * b)),
                 out = static_cast<uint8_t>(v >> (8 * b));
      EXPECT_EQ(out, fp8_valid_byte(in));
      EXPECT_NE(out & 0x7F, 0x7F);
      if ((in & 0x7F) != 0x7F) {
        EXPECT_EQ(out, in);
      }
    }
  }
}

} // namespace
} // namespace reshard

namespace reshard {
namespace {

// A float16 / float32 model is moved as trained: `auto` lands it as is; bf16, fp8 and mxfp8 would need a
// cast, and NeMo RL refuses MXFP8 from anything but BF16 (nemo_rl/weight_sync/nccl_reshard_utils.py
// check_nccl_reshard_refit_support: "requires policy.precision='bfloat16'").
TEST(Precision, Float16AndFloat32ModelsLandAsTrainedOnly) {
  for (DType dt : {DType::F16, DType::F32}) {
    ModelMeta m;
    m.name = "wide";
    m.tensors = {{"model.layers.0.mlp.gate_proj.weight", Dims{64, 64}, dt},
                 {"model.layers.0.mlp.up_proj.weight", Dims{64, 64}, dt},
                 {"model.layers.0.mlp.down_proj.weight", Dims{64, 64}, dt},
                 {"model.norm.weight", Dims{64}, dt}};
    SystemConfig s;
    s.train.num_gpus = 1;
    s.gen.num_gpus = 2;
    s.gen.tp = 2;
    PlanOptions o;
    const Plan plan = plan_reshard(m, s, o);
    EXPECT_EQ(plan.params[0].dtype, dt);
    const std::string name = dt == DType::F16 ? "float16" : "float32";
    for (GenPrecision g : {GenPrecision::Mxfp8, GenPrecision::Bf16, GenPrecision::Fp8}) {
      o.gen_precision = g;
      try {
        plan_reshard(m, s, o);
        ADD_FAILURE() << to_string(g) << " on a " << name << " model was planned";
      } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("on a " + name + " model"), std::string::npos) << what;
        if (g == GenPrecision::Mxfp8) {
          EXPECT_NE(what.find("requires policy.precision='bfloat16'"), std::string::npos) << what;
        }
      }
    }
  }
}

}  // namespace
}  // namespace reshard
