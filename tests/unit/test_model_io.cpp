#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "reshard/core/error.h"
#include "reshard/core/model.h"
#include "reshard/core/planner.h"

namespace reshard {
namespace {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class ModelIo : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("reshard_model_io_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  // A safetensors file: `length` is the header length written (a liar when it differs).
  std::string write_safetensors(const std::string& name, const std::string& header, size_t data_bytes,
                                uint64_t length) {
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
    bytes += header;
    bytes += std::string(data_bytes, '\x5a');
    return write(name, bytes);
  }
  std::string write_safetensors(const std::string& name, const std::string& header, size_t data_bytes) {
    return write_safetensors(name, header, data_bytes, header.size());
  }

  fs::path dir_;
};

// Runs `f`, expects a Config error, returns its message.
template <class F>
std::string config_error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an Error";
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::vector<std::string> names(const ModelMeta& m) {
  std::vector<std::string> out;
  for (const TensorMeta& t : m.tensors) out.push_back(t.name);
  return out;
}

TEST_F(ModelIo, UnwrappedJsonKeepsFileOrder) {
  const std::string text = R"({
    "z.weight": {"shape": [4, 8], "dtype": "bfloat16"},
    "a.bias": {"shape": [4], "dtype": "torch.float32"},
    "m.scale": {"shape": [], "dtype": "F8_E4M3"}
  })";
  ModelMeta m = load_model(write("tiny-model.json", text));
  EXPECT_EQ(m.name, "tiny-model");
  EXPECT_EQ(names(m), (std::vector<std::string>{"z.weight", "a.bias", "m.scale"}));
  EXPECT_EQ(m.tensors[0].shape, (Dims{4, 8}));
  EXPECT_EQ(m.tensors[0].dtype, DType::BF16);
  EXPECT_EQ(m.tensors[0].bytes(), 64);
  EXPECT_EQ(m.tensors[1].dtype, DType::F32);
  EXPECT_EQ(m.tensors[2].shape.n, 0);
  EXPECT_EQ(m.tensors[2].bytes(), 1);
}

TEST_F(ModelIo, WrappedJsonTakesModelName) {
  const std::string text = R"({"model": "Org/Tiny", "source": "test",
    "params": {"b": {"shape": [2, 3], "dtype": "BF16"}, "a": {"shape": [3], "dtype": "float16"}}})";
  ModelMeta m = parse_model_json(text, "/x/y/tiny.json");
  EXPECT_EQ(m.name, "Org/Tiny");
  EXPECT_EQ(m.origin, "/x/y/tiny.json");
  EXPECT_EQ(names(m), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(m.tensors[1].dtype, DType::F16);
}

TEST_F(ModelIo, EveryProblemReportedAtOnce) {
  const std::string text = R"({"params": {
    "ok": {"shape": [2], "dtype": "bfloat16"},
    "bad_dtype": {"shape": [2], "dtype": "bfloat17"},
    "neg": {"shape": [2, -3], "dtype": "float32"},
    "no_shape": {"dtype": "float32"},
    "no_dtype": {"shape": [1]},
    "nine_dims": {"shape": [1, 1, 1, 1, 1, 1, 1, 1, "x"], "dtype": "float32"},
    "huge": {"shape": [4294967296, 4294967296], "dtype": "float32"},
    "wrong_type": {"shape": "4", "dtype": 7},
    "not_object": [1, 2]
  }})";
  const std::string msg = config_error_of([&] { parse_model_json(text, "m.json"); });
  EXPECT_TRUE(has(msg, "m.json")) << msg;
  EXPECT_TRUE(has(msg, "'bad_dtype'") && has(msg, "bfloat17")) << msg;
  EXPECT_TRUE(has(msg, "'neg'") && has(msg, "-3")) << msg;
  EXPECT_TRUE(has(msg, "'no_shape': missing shape")) << msg;
  EXPECT_TRUE(has(msg, "'no_dtype': missing dtype")) << msg;
  EXPECT_TRUE(has(msg, "'nine_dims'")) << msg;
  EXPECT_TRUE(has(msg, "'huge'") && has(msg, "int64")) << msg;
  EXPECT_TRUE(has(msg, "'wrong_type': shape must be an array")) << msg;
  EXPECT_TRUE(has(msg, "'wrong_type': dtype must be a string")) << msg;
  EXPECT_TRUE(has(msg, "'not_object'")) << msg;
  EXPECT_FALSE(has(msg, "'ok'")) << msg;
  // One line per problem after the heading.
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\n'), 9) << msg;
}

TEST_F(ModelIo, MalformedJsonNamesFileAndPosition) {
  const std::string text = "{\"a\": {\"shape\": [1], \"dtype\": \"bfloat16\"},,}";
  const std::string path = write("broken.json", text);
  const std::string msg = config_error_of([&] { load_model(path); });
  EXPECT_TRUE(has(msg, path)) << msg;
  EXPECT_TRUE(has(msg, "byte " + std::to_string(text.find(",,") + 2))) << msg;
}

TEST_F(ModelIo, DuplicateAndEmptyAndMissing) {
  const std::string dup = R"({"a": {"shape": [1], "dtype": "bfloat16"}, "a": {"shape": [2], "dtype": "bfloat16"}})";
  EXPECT_TRUE(has(config_error_of([&] { parse_model_json(dup, "d.json"); }), "duplicate key 'a'"));
  EXPECT_TRUE(has(config_error_of([&] { parse_model_json("{}", "e.json"); }), "no tensors"));
  EXPECT_TRUE(has(config_error_of([&] { parse_model_json(R"({"params": {}})", "e.json"); }), "no tensors"));
  EXPECT_TRUE(has(config_error_of([&] { parse_model_json("[1]", "arr.json"); }), "arr.json"));
  const std::string missing = (dir_ / "nope.json").string();
  EXPECT_TRUE(has(config_error_of([&] { load_model(missing); }), "cannot open model " + missing));
}

TEST_F(ModelIo, SafetensorsHeaderSortedByDataOffset) {
  // Header keys deliberately out of data order; b occupies bytes [0, 24), a [24, 32).
  const std::string header =
      R"({"__metadata__": {"format": "pt"},
          "a": {"dtype": "F32", "shape": [2], "data_offsets": [24, 32]},
          "b": {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 24]}})";
  ModelMeta m = load_model(write_safetensors("model-00001.safetensors", header, 32));
  EXPECT_EQ(m.name, "model-00001");
  EXPECT_EQ(names(m), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(m.tensors[0].shape, (Dims{3, 4}));
  EXPECT_EQ(m.tensors[0].dtype, DType::BF16);
  EXPECT_EQ(m.tensors[1].dtype, DType::F32);
}

TEST_F(ModelIo, SafetensorsLyingLengthIsClearError) {
  const std::string header = R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})";
  // Claims an exabyte-scale header: must fail on the check, not on an allocation.
  const std::string path = write_safetensors("liar.safetensors", header, 8, uint64_t{1} << 60);
  const std::string msg = config_error_of([&] { read_safetensors(path); });
  EXPECT_TRUE(has(msg, path) && has(msg, "exceeds the file size")) << msg;
  const std::string tiny = write("tiny.safetensors", "abc");
  EXPECT_TRUE(has(config_error_of([&] { read_safetensors(tiny); }), "too short"));
}

TEST_F(ModelIo, SafetensorsBadEntries) {
  const std::string header =
      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]},
          "b": {"dtype": "F32", "shape": [2], "data_offsets": [12, 100]},
          "c": {"dtype": "Q4", "shape": [2], "data_offsets": [12, 14]},
          "d": {"dtype": "F32", "shape": [1]}})";
  const std::string msg = config_error_of([&] { read_safetensors(write_safetensors("bad.safetensors", header, 20)); });
  EXPECT_TRUE(has(msg, "'a': data_offsets [0,12] span 12 bytes") && has(msg, "needs 8")) << msg;
  EXPECT_TRUE(has(msg, "'b': data_offsets [12,100] lie outside the 20-byte data section")) << msg;
  EXPECT_TRUE(has(msg, "'c': unknown dtype 'Q4'")) << msg;
  EXPECT_TRUE(has(msg, "'d': missing data_offsets")) << msg;
  const std::string bad_json = write_safetensors("badjson.safetensors", "{\"a\": }", 0);
  EXPECT_TRUE(has(config_error_of([&] { read_safetensors(bad_json); }), "malformed JSON at byte"));
}

TEST_F(ModelIo, SafetensorsIndexKeepsWeightMapOrder) {
  write_safetensors("model-00001-of-00002.safetensors",
                    R"({"x": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [8, 16]},
                        "w": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]}})",
                    16);
  write_safetensors("model-00002-of-00002.safetensors",
                    R"({"y": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}})", 12);
  const std::string index = write("model.safetensors.index.json", R"({"metadata": {"total_size": 28},
    "weight_map": {"y": "model-00002-of-00002.safetensors", "x": "model-00001-of-00002.safetensors",
                   "w": "model-00001-of-00002.safetensors"}})");
  ModelMeta m = load_model(index);
  EXPECT_EQ(m.name, "model");
  EXPECT_EQ(names(m), (std::vector<std::string>{"y", "x", "w"}));
  EXPECT_EQ(m.tensors[0].dtype, DType::F32);
  EXPECT_EQ(m.tensors[1].shape, (Dims{2, 2}));
}

TEST_F(ModelIo, AnIndexAndAShardAreRecognisedByContentUnderAnyName) {
  write_safetensors("shard-a", R"({"w": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 12]}})", 12);
  const ModelMeta shard = load_model((dir_ / "shard-a").string());
  EXPECT_EQ(names(shard), (std::vector<std::string>{"w"}));
  EXPECT_EQ(shard.tensors[0].shape, (Dims{2, 3}));
  const std::string index = write("weights.json", R"({"metadata": {"total_size": 12}, "weight_map": {"w": "shard-a"}})");
  const ModelMeta m = load_model(index);
  EXPECT_EQ(names(m), (std::vector<std::string>{"w"}));
  EXPECT_EQ(m.tensors[0].dtype, DType::BF16);
}

TEST_F(ModelIo, SafetensorsIndexMismatches) {
  write_safetensors("s1.safetensors", R"({"x": {"dtype": "BF16", "shape": [4], "data_offsets": [0, 8]},
                                          "extra": {"dtype": "BF16", "shape": [1], "data_offsets": [8, 10]}})",
                    10);
  const std::string index = write("m.safetensors.index.json",
                                  R"({"weight_map": {"x": "s1.safetensors", "gone": "s1.safetensors",
                                                     "z": "absent.safetensors"}})");
  const std::string msg = config_error_of([&] { load_model(index); });
  EXPECT_TRUE(has(msg, "'gone' is listed in weight_map under s1.safetensors")) << msg;
  EXPECT_TRUE(has(msg, "'extra' is in shard s1.safetensors but not in weight_map")) << msg;
  EXPECT_TRUE(has(msg, "cannot open") && has(msg, "absent.safetensors")) << msg;
}

TEST(ModelReal, Qwen3_4BWhenPresent) {
  const std::string path = std::string(RESHARD_TEST_MODELS_DIR) + "/qwen3-4b.json";
  ASSERT_TRUE(fs::exists(path)) << "absent: " << path;
  ModelMeta m = load_model(path);
  EXPECT_EQ(m.name, "Qwen/Qwen3-4B");
  EXPECT_EQ(m.tensors.size(), 398u);
  EXPECT_EQ(m.tensors.front().name, "model.embed_tokens.weight");
  int64_t elements = 0;
  for (const TensorMeta& t : m.tensors) elements += t.shape.product();
  EXPECT_EQ(elements, 4022468096);  // README: 4.022 B
}

// A tensor of more dims than a plan holds is read, and refused only if --exclude keeps it: the
// exclusion is the first check (a vision tower's oddities never block planning the language model).
TEST(ModelDims, TooManyDimsIsRefusedOnlyWhenKept) {
  const ModelMeta m = parse_model_json(R"({"params": {
    "visual.odd.weight": {"shape": [1, 1, 1, 1, 1, 1, 1, 1, 2], "dtype": "bfloat16"},
    "model.layers.0.mlp.down_proj.weight": {"shape": [8, 8], "dtype": "bfloat16"}}})",
                                       "m.json");
  ASSERT_EQ(m.tensors.size(), 2u);
  EXPECT_EQ(m.tensors[0].too_many_dims, 9);
  SystemConfig s;
  s.train.num_gpus = 1;
  s.gen.num_gpus = 2;
  s.gen.tp = 2;
  PlanOptions o;
  try {
    plan_reshard(m, s, o);
    ADD_FAILURE() << "planned a 9-d tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'visual.odd.weight' has 9 dims; at most 8"), std::string::npos) << e.what();
  }
  o.exclude = {"^visual\\."};
  EXPECT_EQ(plan_reshard(m, s, o).params.size(), 1u);
}

}  // namespace
}  // namespace reshard
