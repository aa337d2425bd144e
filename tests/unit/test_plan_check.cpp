// check_plan_matches_model (reshard inspect --model) and the in-memory safetensors entry point.
#include <gtest/gtest.h>

#include <string>

#include "reshard/core/error.h"
#include "reshard/core/model.h"
#include "reshard/core/plan_check.h"
#include "reshard/core/planner.h"

namespace reshard {
namespace {

ModelMeta small_model(DType norm_dtype) {
  ModelMeta m;
  m.name = "small";
  m.origin = "small.json";
  m.tensors = {{"model.layers.0.mlp.up_proj.weight", Dims::from({8, 4}), DType::BF16},
               {"model.norm.weight", Dims::from({4}), norm_dtype}};
  return m;
}

Plan plan_for(const ModelMeta& m) {
  SystemConfig sys;
  sys.train.num_gpus = 2;
  sys.gen.num_gpus = 2;
  sys.gen.tp = 2;
  return plan_reshard(m, sys, PlanOptions{});
}

TEST(PlanCheck, AcceptsTheModelThePlanWasMadeFor) {
  const ModelMeta m = small_model(DType::F32);
  const Plan plan = plan_for(m);
  EXPECT_EQ(plan.model_digest, model_digest(m));
  EXPECT_NO_THROW(check_plan_matches_model(plan, m, "plan.json"));
}

TEST(PlanCheck, RefusesAnotherModelNamingBothDigests) {
  const ModelMeta made_for = small_model(DType::F32), other = small_model(DType::BF16);
  const Plan plan = plan_for(made_for);
  try {
    check_plan_matches_model(plan, other, "plan.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("plan.json was made for another model"), std::string::npos) << msg;
    EXPECT_NE(msg.find(model_digest(made_for)), std::string::npos) << msg;
    EXPECT_NE(msg.find(model_digest(other)), std::string::npos) << msg;
    EXPECT_NE(msg.find("small.json"), std::string::npos) << msg;
  }
}

std::string safetensors_bytes(const std::string& header, uint64_t length, size_t data_bytes) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  return bytes + header + std::string(data_bytes, '\0');
}

TEST(SafetensorsHeader, ParsesFromMemory) {
  const std::string header = R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
                             R"("a":{"dtype":"BF16","shape":[2,2],"data_offsets":[0,8]}})";
  const std::string bytes = safetensors_bytes(header, header.size(), 16);
  const ModelMeta m = parse_safetensors_header(bytes, bytes.size(), "mem.safetensors");
  ASSERT_EQ(m.tensors.size(), 2u);
  EXPECT_EQ(m.tensors[0].name, "a");  // data order, not header order
  EXPECT_EQ(m.name, "mem");
  // The header alone is enough when the file size is known.
  const ModelMeta prefix = parse_safetensors_header(bytes.substr(0, 8 + header.size()), bytes.size(), "mem");
  EXPECT_EQ(prefix.tensors.size(), 2u);
}

TEST(SafetensorsHeader, RefusesLyingLengthsAndShortInput) {
  const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  const std::string lying = safetensors_bytes(header, uint64_t{1} << 40, 4);
  EXPECT_THROW(parse_safetensors_header(lying, lying.size(), "x"), Error);
  EXPECT_THROW(parse_safetensors_header("abc", 3, "x"), Error);
  EXPECT_THROW(parse_safetensors_header("abc", 100, "x"), Error);  // fewer than 8 bytes given
  const std::string ok = safetensors_bytes(header, header.size(), 4);
  EXPECT_THROW(parse_safetensors_header(ok.substr(0, 20), ok.size(), "x"), Error);  // header cut
  EXPECT_THROW(parse_safetensors_header(ok, ok.size() - 1, "x"), Error);            // more bytes than the file
}

}  // namespace
}  // namespace reshard
