// Plan serialization: JSON <-> CBOR round trips, determinism, strict reading, atomic saving.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/plan_enums.h"
#include "reshard/core/plan_io.h"

namespace reshard {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Mesh mesh(std::vector<std::string> names, std::vector<int> sizes, std::vector<int> ranks) {
  Mesh m;
  m.dim_names = std::move(names);
  m.dim_sizes = std::move(sizes);
  m.ranks = std::move(ranks);
  return m;
}

Placement shard(int dim) { return Placement::shard(dim); }
Placement replicate() { return Placement{}; }

// A one-layer dense model, train tp=1 dp=2 (ranks 0-1) -> gen tp=2 (ranks 2-3), plus a grouped
// expert param on a 2-d mesh, a 0-d mesh, an uneven split and a two-phase fan-out, so every branch
// of the format is exercised.
Plan tiny_plan() {
  Plan plan;
  plan.generator = "reshard test";
  plan.fingerprint = "0123456789abcdef";
  plan.model_name = "tiny";
  plan.model_digest = "fedcba9876543210";
  plan.model_tensors = 7;
  plan.system.train = {2, 1, 1, 1, 1, 1, 2};
  plan.system.gen = {2, 2, 1, 1, 1, 1, 1};
  plan.options.fanout = FanoutMode::Auto;
  plan.options.exclude = {"^lm_head\\."};
  plan.options.mtp_layers = {1};
  plan.options.layer_to_stage = {0};
  plan.options.rules_json = R"({"rules": [{"match": "gate", "path": "bulk", "train_dim": 0}], "a": 1.5})";

  plan.groups = {{"misc", -1, {0, 1, 2, 3}}, {"bulk", 0, {0, 1, 2, 3}}, {"fanout", -1, {2, 3}}};

  auto add_bulk = [&](ParamPlan p, std::vector<Transfer> ts, std::vector<FanoutOp> fs) {
    const auto index = static_cast<uint32_t>(plan.params.size());
    p.path = Path::Bulk;
    p.group = 1;
    p.transfer_begin = plan.transfers.size();
    p.transfer_count = ts.size();
    for (Transfer& t : ts) plan.transfers.push_back((t.param = index, t));
    p.fanout_begin = plan.fanouts.size();
    p.fanout_count = fs.size();
    for (FanoutOp& f : fs) plan.fanouts.push_back((f.param = index, f));
    plan.params.push_back(std::move(p));
  };
  auto add_misc = [&](std::string name, Dims shape, int64_t offset) {
    ParamPlan p;
    p.name = name;
    p.members = {name};
    p.rule = "misc";
    p.shape = shape;
    p.path = Path::Misc;
    p.bucket = 0;
    p.bucket_offset = offset;
    plan.params.push_back(std::move(p));
  };

  add_misc("model.embed_tokens.weight", {16, 8}, 0);

  ParamPlan gate;
  gate.name = gate.dst_storage = "model.layers.0.mlp.gate_proj.weight";
  gate.members = {gate.name};
  gate.rule = "ffn";
  gate.shape = {6, 8};
  gate.src = {mesh({"dp"}, {2}, {0, 1}), {replicate()}};
  gate.dst = {mesh({"tp"}, {2}, {2, 3}), {shard(0)}};
  add_bulk(gate,
           {{0, 0, 2, 0, Box{{0, 0}, {3, 8}}, {0, 0}, {0, 0}}, {0, 1, 3, 0, Box{{3, 0}, {3, 8}}, {3, 0}, {0, 0}}},
           {});

  ParamPlan down;
  down.name = down.dst_storage = "model.layers.0.mlp.down_proj.weight";
  down.members = {down.name};
  down.rule = "ffn";
  down.dtype = DType::F32;
  down.shape = {8, 5};
  down.uneven = true;
  down.src = {mesh({"dp"}, {2}, {0, 1}), {replicate()}};
  down.dst = {mesh({"tp"}, {2}, {2, 3}), {shard(1)}};
  add_bulk(down,
           {{0, 1, 2, 0, Box{{0, 0}, {8, 3}}, {0, 0}, {0, 0}}, {0, 0, 3, 0, Box{{0, 3}, {8, 2}}, {0, 3}, {0, 0}}},
           {});

  // Grouped experts on a 2-d source mesh; gen replicas exchange halves in phase two.
  ParamPlan experts;
  experts.name = "model.layers.0.mlp.experts.up_proj.weight";
  experts.members = {"model.layers.0.mlp.experts.0.up_proj.weight",
                     "model.layers.0.mlp.experts.1.up_proj.weight"};
  experts.rule = "expert";
  experts.shape = {2, 4, 8};
  experts.dst_storage = "model.layers.0.mlp.experts.w13_weight";
  experts.dst_fuse_dim = 1;
  experts.dst_fuse_index = 1;
  experts.fanout = Fanout::TwoPhase;
  experts.src = {mesh({"ep", "etp"}, {1, 2}, {0, 1}), {shard(0), shard(1)}};
  experts.dst = {mesh({"dp"}, {2}, {2, 3}), {replicate()}};
  add_bulk(
      experts,
      {{0, 0, 2, 0, Box{{0, 0, 0}, {2, 2, 8}}, {0, 0, 0}, {0, 4, 0}},
       {0, 1, 3, 0, Box{{0, 2, 0}, {2, 2, 8}}, {0, 0, 0}, {0, 6, 0}}},
      {{0, 2, 2, 0, Box{{0, 0, 0}, {2, 2, 8}}, {0, 4, 0}}, {0, 3, 2, 0, Box{{0, 2, 0}, {2, 2, 8}}, {0, 6, 0}}});

  // A 0-d mesh: one rank holds the whole tensor.
  ParamPlan norm;
  norm.name = norm.dst_storage = "model.layers.0.post_attention_layernorm.weight";
  norm.members = {norm.name};
  norm.rule = "norm";
  norm.shape = {8};
  norm.src = {mesh({}, {}, {1}), {}};
  norm.dst = {mesh({"tp"}, {2}, {2, 3}), {replicate()}};
  add_bulk(norm, {{0, 1, 2, 0, Box{{0}, {8}}, {0}, {0}}, {0, 1, 3, 0, Box{{0}, {8}}, {0}, {0}}}, {});

  add_misc("model.norm.weight", {8}, 256);
  plan.buckets = {{0, 0, 0, 256 + 16, {0, 5}}};
  return plan;
}

std::string text(const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }
std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// Decoding must fail with Error(Config) whose message contains every one of `parts`.
void expect_config_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << parts.front() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config) << e.what();
    for (const auto& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

// Edits the JSON document of tiny_plan() and decodes the result.
void expect_edit_rejected(const std::function<void(json&)>& edit, const std::vector<std::string>& parts) {
  json doc = json::parse(text(encode_plan(tiny_plan(), PlanFormat::Json)));
  edit(doc);
  const std::vector<uint8_t> bytes = bytes_of(doc.dump());
  expect_config_error([&] { decode_plan(bytes, "edited.json"); }, parts);
}

TEST(PlanIo, JsonCborJsonRoundTripIsByteIdentical) {
  const Plan plan = tiny_plan();
  const std::vector<uint8_t> json1 = encode_plan(plan, PlanFormat::Json);
  const Plan from_json = decode_plan(json1, "a.json");
  const std::vector<uint8_t> cbor1 = encode_plan(from_json, PlanFormat::Cbor);
  const Plan from_cbor = decode_plan(cbor1, "a.cbor");
  EXPECT_EQ(text(json1), text(encode_plan(from_cbor, PlanFormat::Json)));
  EXPECT_EQ(cbor1, encode_plan(from_cbor, PlanFormat::Cbor));
  EXPECT_EQ(cbor1, encode_plan(plan, PlanFormat::Cbor));
  EXPECT_LT(cbor1.size(), json1.size());
}

TEST(PlanIo, DecodedPlanKeepsEveryField) {
  const Plan plan = tiny_plan();
  const Plan got = decode_plan(encode_plan(plan, PlanFormat::Cbor), "a.cbor");
  EXPECT_EQ(got.generator, plan.generator);
  EXPECT_EQ(got.fingerprint, plan.fingerprint);
  EXPECT_EQ(got.model_name, plan.model_name);
  EXPECT_EQ(got.model_digest, plan.model_digest);
  EXPECT_EQ(got.model_tensors, plan.model_tensors);
  EXPECT_EQ(got.system.gen.tp, 2);
  EXPECT_EQ(got.system.train.dp, 2);
  EXPECT_EQ(got.options.exclude, plan.options.exclude);
  EXPECT_EQ(got.options.mtp_layers, plan.options.mtp_layers);
  EXPECT_EQ(got.options.layer_to_stage, plan.options.layer_to_stage);
  EXPECT_EQ(json::parse(got.options.rules_json), json::parse(plan.options.rules_json));
  ASSERT_EQ(got.params.size(), plan.params.size());
  for (size_t i = 0; i < plan.params.size(); ++i) {
    const ParamPlan &a = plan.params[i], &b = got.params[i];
    SCOPED_TRACE(a.name);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.members, a.members);
    EXPECT_EQ(b.rule, a.rule);
    EXPECT_EQ(b.dtype, a.dtype);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.path, a.path);
    EXPECT_EQ(b.bucket, a.bucket);
    EXPECT_EQ(b.bucket_offset, a.bucket_offset);
    EXPECT_EQ(b.src.mesh.dim_names, a.src.mesh.dim_names);
    EXPECT_EQ(b.src.mesh.dim_sizes, a.src.mesh.dim_sizes);
    EXPECT_EQ(b.src.mesh.ranks, a.src.mesh.ranks);
    EXPECT_EQ(b.dst.mesh.ranks, a.dst.mesh.ranks);
    ASSERT_EQ(b.src.placements.size(), a.src.placements.size());
    for (size_t d = 0; d < a.src.placements.size(); ++d) {
      EXPECT_EQ(b.src.placements[d].shard_dim, a.src.placements[d].shard_dim);
    }
    EXPECT_EQ(b.dst_storage, a.dst_storage);
    EXPECT_EQ(b.dst_fuse_dim, a.dst_fuse_dim);
    EXPECT_EQ(b.dst_fuse_index, a.dst_fuse_index);
    EXPECT_EQ(b.fanout, a.fanout);
    EXPECT_EQ(b.uneven, a.uneven);
    ASSERT_EQ(b.transfer_count, a.transfer_count);
    for (uint64_t t = 0; t < a.transfer_count; ++t) {
      const Transfer &x = plan.transfers[a.transfer_begin + t], &y = got.transfers[b.transfer_begin + t];
      EXPECT_EQ(y.param, i);
      EXPECT_EQ(y.src, x.src);
      EXPECT_EQ(y.dst, x.dst);
      EXPECT_EQ(y.box, x.box);
      EXPECT_EQ(y.src_local, x.src_local);
      EXPECT_EQ(y.dst_local, x.dst_local);
    }
    ASSERT_EQ(b.fanout_count, a.fanout_count);
    for (uint64_t f = 0; f < a.fanout_count; ++f) {
      const FanoutOp &x = plan.fanouts[a.fanout_begin + f], &y = got.fanouts[b.fanout_begin + f];
      EXPECT_EQ(y.param, i);
      EXPECT_EQ(y.root, x.root);
      EXPECT_EQ(y.group, x.group);
      EXPECT_EQ(y.box, x.box);
      EXPECT_EQ(y.dst_local, x.dst_local);
    }
  }
  ASSERT_EQ(got.groups.size(), plan.groups.size());
  EXPECT_EQ(got.groups[2].ranks, plan.groups[2].ranks);
  EXPECT_EQ(got.groups[0].pp_stage, -1);
  ASSERT_EQ(got.buckets.size(), 1u);
  EXPECT_EQ(got.buckets[0].params, plan.buckets[0].params);
  EXPECT_EQ(got.buckets[0].bytes, plan.buckets[0].bytes);
}

TEST(PlanIo, EncodingIsDeterministic) {
  for (PlanFormat f : {PlanFormat::Json, PlanFormat::Cbor}) {
    EXPECT_EQ(encode_plan(tiny_plan(), f), encode_plan(tiny_plan(), f));
  }
}

TEST(PlanIo, CborCarriesTheSameDocumentAsJson) {
  const Plan plan = tiny_plan();
  const json from_text = json::parse(text(encode_plan(plan, PlanFormat::Json)));
  const json from_cbor = json::from_cbor(encode_plan(plan, PlanFormat::Cbor));
  EXPECT_EQ(from_text, from_cbor) << from_cbor.dump();
}

TEST(PlanIo, DocumentLayout) {
  const Plan plan = tiny_plan();
  const std::string s = text(encode_plan(plan, PlanFormat::Json));
  const json doc = json::parse(s);
  EXPECT_EQ(doc["format"], "reshard-plan");
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["world"], json({{"train", 2}, {"gen", 2}, {"size", 4}}));
  EXPECT_EQ(doc["inputs"]["options"]["rules"]["a"], 1.5);
  const json& params = doc["params"];
  EXPECT_FALSE(params[0].contains("members"));  // members == [name]
  EXPECT_EQ(params[3]["members"].size(), 2u);
  EXPECT_EQ(params[1]["src"]["mesh"], json::parse("[0, 1]"));
  EXPECT_EQ(params[1]["dst"]["placements"], json::parse(R"j(["S(0)"])j"));
  EXPECT_EQ(params[3]["src"]["mesh"], json::parse("[[0, 1]]"));  // 2-d, dims[0] outermost
  EXPECT_EQ(params[4]["src"]["mesh"], json::parse("[1]"));       // 0-d: one rank in a list
  EXPECT_EQ(params[4]["src"]["dims"], json::array());
  EXPECT_EQ(params[1]["transfers"][1], json::parse("[1, 3, [3, 0], [3, 8], [3, 0], [0, 0]]"));
  EXPECT_EQ(params[3]["fanouts"][0], json::parse("[2, 2, [0, 0, 0], [2, 2, 8], [0, 4, 0]]"));
  EXPECT_EQ(params[3]["dst_storage"],
            json({{"name", "model.layers.0.mlp.experts.w13_weight"}, {"fuse_dim", 1}, {"index", 1}}));
  EXPECT_EQ(params[0]["bucket"], 0);
  EXPECT_FALSE(params[0].contains("transfers"));
  // Stats: written for people, consistent with the plan.
  const json& stats = doc["stats"];
  EXPECT_EQ(stats["transfers"], plan.transfers.size());
  EXPECT_EQ(stats["fanout_ops"], plan.fanouts.size());
  EXPECT_EQ(stats["ranks"].size(), 4u);
  EXPECT_EQ(stats["ranks"][0].size(), stats["rank_fields"].size());
  EXPECT_TRUE(stats["bulk_fraction"].is_number_float());
  EXPECT_TRUE(stats["efficiency"].is_number_float());
  // One param per line: the params array opens a line per element.
  EXPECT_NE(s.find("\n  {\"name\": \"model.layers.0.mlp.gate_proj.weight\""), std::string::npos) << s;
  EXPECT_EQ(s.back(), '\n');
}

TEST(PlanIo, TruncatedInputIsAConfigErrorWithPosition) {
  const Plan plan = tiny_plan();
  const std::vector<uint8_t> js = encode_plan(plan, PlanFormat::Json);
  const std::vector<uint8_t> cb = encode_plan(plan, PlanFormat::Cbor);
  expect_config_error(
      [&] {
        decode_plan({js.begin(), js.begin() + js.size() / 2}, "cut.json");
      },
      {"cut.json: ", "line "});
  expect_config_error(
      [&] {
        decode_plan({cb.begin(), cb.begin() + cb.size() / 2}, "cut.cbor");
      },
      {"cut.cbor: ", "byte "});
  // Every cut point, in both formats, is rejected cleanly.
  for (const auto* full : {&js, &cb}) {
    const size_t whole = full->size() - (full == &js ? 1 : 0);  // the JSON text ends in a newline
    for (size_t n = 0; n < whole; n += 7) {
      std::vector<uint8_t> part(full->begin(), full->begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_THROW(decode_plan(part, "cut"), Error) << n;
    }
  }
  expect_config_error([&] { decode_plan(bytes_of("  \n"), "empty.json"); }, {"empty.json: empty plan file"});
  expect_config_error([&] { decode_plan(bytes_of("{\"format\": \"reshard-plan\",}"), "bad.json"); },
                      {"bad.json: ", "column"});
}

// Corrupt bytes anywhere give a clean Error (or, where the damage keeps the document valid, a plan),
// never a crash or a foreign exception.
TEST(PlanIo, CorruptBytesAreRejectedCleanly) {
  const Plan plan = tiny_plan();
  uint64_t x = 0x9e3779b97f4a7c15ull;
  auto next = [&x] { return x ^= x << 13, x ^= x >> 7, x ^= x << 17; };
  for (PlanFormat f : {PlanFormat::Json, PlanFormat::Cbor}) {
    const std::vector<uint8_t> good = encode_plan(plan, f);
    for (int i = 0; i < 400; ++i) {
      std::vector<uint8_t> bad = good;
      bad[next() % bad.size()] = static_cast<uint8_t>(next());
      try {
        decode_plan(bad, "corrupt");
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::Config) << e.what();
      }
    }
  }
}

TEST(PlanIo, VersionAndFormatAreChecked) {
  expect_edit_rejected([](json& d) { d["version"] = 2; },
                       {"edited.json: plan version 2 is newer than this reshard supports (1)"});
  expect_edit_rejected([](json& d) { d["format"] = "something-else"; }, {"edited.json: not a reshard plan"});
  expect_edit_rejected([](json& d) { d.erase("format"); }, {"not a reshard plan"});
  expect_edit_rejected([](json& d) { d["version"] = "1"; }, {"version: expected integer, got string"});
}

TEST(PlanIo, MissingOrMistypedKeysNameTheJsonPath) {
  expect_edit_rejected([](json& d) { d["params"][1].erase("dtype"); },
                       {"edited.json: params[1]: missing key 'dtype'"});
  expect_edit_rejected([](json& d) { d["params"][2]["pp_stage"] = "0"; },
                       {"params[2].pp_stage: expected integer, got string"});
  expect_edit_rejected([](json& d) { d["params"][1]["transfers"][1] = json::parse("[0, 2]"); },
                       {"edited.json: params[1].transfers[1]: expected array of 6"});
  expect_edit_rejected([](json& d) { d["params"][1]["transfers"][0][2] = 5; },
                       {"params[1].transfers[0]: expected array of 6"});
  expect_edit_rejected([](json& d) { d["params"][1]["transfers"] = 3; },
                       {"params[1].transfers: expected array"});
  expect_edit_rejected([](json& d) { d["params"][1].erase("transfers"); },
                       {"params[1]: missing key 'transfers'"});
  expect_edit_rejected([](json& d) { d["params"][3]["fanouts"][0] = json::parse("[2, 2, [0, 0, 0]]"); },
                       {"params[3].fanouts[0]: expected array of 5"});
  expect_edit_rejected([](json& d) { d["params"][1]["dtype"] = "float7"; },
                       {"params[1].dtype: unknown dtype 'float7'"});
  expect_edit_rejected([](json& d) { d["params"][1]["path"] = "fast"; },
                       {"params[1].path: unknown path 'fast'"});
  expect_edit_rejected([](json& d) { d["params"][1]["src"]["placements"][0] = "X"; },
                       {"params[1].src.placements[0]"});
  expect_edit_rejected([](json& d) { d["inputs"]["options"].erase("bucket_bytes"); },
                       {"inputs.options: missing key 'bucket_bytes'"});
  expect_edit_rejected([](json& d) { d["inputs"]["gen"]["tp"] = 1.5; },
                       {"inputs.gen.tp: expected integer, got number"});
}

TEST(PlanIo, IndicesAndShapesAreValidated) {
  expect_edit_rejected([](json& d) { d["params"][1]["transfers"][0][1] = 4; },
                       {"params[1].transfers[0]: dst rank 4 outside [0, 4)"});
  expect_edit_rejected([](json& d) { d["params"][1]["transfers"][0][2] = json::parse("[0]"); },
                       {"params[1].transfers[0]: offset [0] has 1 dims; the param has 2"});
  expect_edit_rejected([](json& d) { d["params"][1]["transfers"][0][3] = json::parse("[7, 8]"); },
                       {"params[1].transfers[0]: box offset [0, 0] extent [7, 8] is outside shape [6, 8]"});
  expect_edit_rejected([](json& d) { d["params"][1]["group"] = 3; },
                       {"params[1].group: value 3 outside [0, 2]"});
  expect_edit_rejected([](json& d) { d["params"][3]["fanouts"][0][1] = 9; },
                       {"params[3].fanouts[0]: group 9 outside [0, 3)"});
  expect_edit_rejected([](json& d) { d["buckets"][0]["params"][1] = 6; },
                       {"buckets[0].params[1]: value 6 outside [0, 5]"});
  expect_edit_rejected([](json& d) { d["params"][0]["bucket"] = 1; },
                       {"params[0].bucket: value 1 outside [0, 0]"});
  expect_edit_rejected([](json& d) { d["groups"][2]["ranks"][0] = -1; },
                       {"groups[2].ranks[0]: value -1 outside [0, 3]"});
  expect_edit_rejected([](json& d) { d["params"][1]["dst"]["mesh"] = json::parse("[2, 7]"); },
                       {"params[1].dst.mesh[1]: value 7 outside [0, 3]"});
  expect_edit_rejected([](json& d) { d["params"][3]["src"]["mesh"] = json::parse("[[0, 1], [2]]"); },
                       {"params[3].src.mesh[1]: has 1 entries; mesh dim 'etp' has 2"});
  expect_edit_rejected([](json& d) { d["params"][1]["dst"]["placements"][0] = "S(2)"; },
                       {"params[1].dst.placements[0]: S(2) shards dim 2 of a 2-d tensor"});
  expect_edit_rejected([](json& d) { d["params"][0]["transfers"] = json::array(); },
                       {"params[0]: a misc param has transfers"});
  expect_edit_rejected([](json& d) { d["world"]["size"] = 5; }, {"world: train 2, gen 2, size 5 disagree"});
  // Sizes past int64 would wrap to small, self-consistent ones: refused where they are read.
  expect_edit_rejected([](json& d) { d["params"][0]["shape"] = json::parse("[4611686018427387904, 4]"); },
                       {"params[0].shape: [4611686018427387904, 4] has more elements than int64 holds"});
  expect_edit_rejected([](json& d) { d["params"][0]["shape"] = json::parse("[2305843009213693952, 3]"); },
                       {"params[0].shape: [2305843009213693952, 3] of bfloat16 has more bytes than int64 holds"});
  expect_edit_rejected(
      [](json& d) {
        d["params"][0]["shape"] = json::parse("[2305843009213693952, 1]");  // 2^62 bytes, twice
        d["params"][5]["shape"] = json::parse("[2305843009213693952]");
      },
      {"params[5]: the params' bytes up to here sum past what int64 holds"});
  expect_edit_rejected([](json& d) { d["groups"][0]["kind"] = "bogus"; },
                       {"groups[0].kind: unknown group kind 'bogus' (known: misc, bulk, fanout)"});
  expect_edit_rejected([](json& d) { d["params"][5]["bucket_offset"] = 273; },
                       {"params[5].bucket_offset: value 273 outside [0, 272]"});
}

class PlanFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("reshard_plan_io_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
  fs::path dir_;
};

TEST_F(PlanFileTest, SaveLoadBothFormats) {
  const Plan plan = tiny_plan();
  const std::string js = (dir_ / "plan.json").string(), cb = (dir_ / "plan.cbor").string();
  EXPECT_EQ(plan_format_for_path(js), PlanFormat::Json);
  EXPECT_EQ(plan_format_for_path(cb), PlanFormat::Cbor);
  EXPECT_EQ(plan_format_for_path("x.CBOR"), PlanFormat::Cbor);
  EXPECT_EQ(plan_format_for_path("x"), PlanFormat::Json);
  save_plan(plan, js, PlanFormat::Json, false);
  save_plan(plan, cb, PlanFormat::Cbor, false);
  EXPECT_EQ(listing(), (std::vector<std::string>{"plan.cbor", "plan.json"}));  // no temporary left
  // load_plan sniffs the content, not the name.
  fs::rename(cb, dir_ / "cbor-named.json");
  const Plan a = load_plan(js), b = load_plan((dir_ / "cbor-named.json").string());
  EXPECT_EQ(encode_plan(a, PlanFormat::Json), encode_plan(b, PlanFormat::Json));
  EXPECT_EQ(encode_plan(a, PlanFormat::Json), encode_plan(plan, PlanFormat::Json));
}

TEST_F(PlanFileTest, RefusesToOverwriteWithoutForce) {
  const std::string path = (dir_ / "plan.json").string();
  { std::ofstream(path) << "precious"; }
  expect_config_error([&] { save_plan(tiny_plan(), path, PlanFormat::Json, false); },
                      {path + ": the file exists; pass --force to overwrite"});
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "precious");
  save_plan(tiny_plan(), path, PlanFormat::Json, true);
  EXPECT_EQ(load_plan(path).params.size(), tiny_plan().params.size());
  EXPECT_EQ(listing(), std::vector<std::string>{"plan.json"});
}

TEST_F(PlanFileTest, FailedSaveLeavesNothing) {
  Plan bad = tiny_plan();
  bad.options.rules_json = "{not json";
  const std::string path = (dir_ / "plan.json").string();
  EXPECT_THROW(save_plan(bad, path, PlanFormat::Json, false), Error);
  expect_config_error(
      [&] { save_plan(tiny_plan(), (dir_ / "missing" / "plan.json").string(), PlanFormat::Json, false); },
      {"missing does not exist"});
  EXPECT_TRUE(listing().empty());
  expect_config_error([&] { load_plan(path); }, {"cannot open plan " + path});
}

TEST(PlanEnums, NamesRoundTrip) {
  for (Path p : {Path::Bulk, Path::Misc}) EXPECT_EQ(parse_path(to_string(p)), p);
  for (Fanout f : {Fanout::Direct, Fanout::TwoPhase}) EXPECT_EQ(parse_fanout(to_string(f)), f);
  for (BulkMode m : {BulkMode::Ffn, BulkMode::All}) EXPECT_EQ(parse_bulk_mode(to_string(m)), m);
  for (GenLayout l : {GenLayout::Hf, GenLayout::Vllm}) EXPECT_EQ(parse_gen_layout(to_string(l)), l);
  for (FanoutMode m : {FanoutMode::Auto, FanoutMode::Direct, FanoutMode::TwoPhase}) {
    EXPECT_EQ(parse_fanout_mode(to_string(m)), m);
  }
  EXPECT_STREQ(to_string(Fanout::TwoPhase), "two-phase");
  EXPECT_STREQ(to_string(GenLayout::Vllm), "vllm");
  expect_config_error([] { parse_fanout_mode("sometimes"); },
                      {"unknown fanout mode 'sometimes'", "auto, direct, two-phase"});
}

}  // namespace
}  // namespace reshard
