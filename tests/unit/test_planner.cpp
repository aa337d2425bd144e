// Planner: meshes, placements, grouping, stages, and the seed-table bulk fractions on real models.
#include <gtest/gtest.h>

#include <filesystem>

#include "reshard/core/grouping.h"
#include "reshard/core/planner.h"
#include "reshard/core/schedule.h"
#include "reshard/core/stages.h"
#include "reshard/core/stats.h"
#include "reshard/core/verify.h"
#include "test_support.h"

namespace reshard {
namespace {

using test::test_model;
using test::sys;

TEST(Mesh, OrderTpFastestThenDpThenPp) {
  Mesh m = make_mesh({{"tp", 2}, {"dp", 2}, {"pp", 2}}, 0);
  ASSERT_EQ(m.dim_names, (std::vector<std::string>{"pp", "dp", "tp"}));
  EXPECT_EQ(m.coords(5), (std::vector<int>{1, 0, 1}));
  Mesh s = m.slice("pp", 1);
  EXPECT_EQ(s.ranks, (std::vector<int>{4, 5, 6, 7}));
}

TEST(Mesh, SizeOneDimsDroppedAndOffset) {
  Mesh m = make_mesh({{"tp", 4}, {"dp", 1}}, 16);
  ASSERT_EQ(m.dim_names, (std::vector<std::string>{"tp"}));
  EXPECT_EQ(m.ranks.front(), 16);
  EXPECT_EQ(m.flat_index_of_rank(18), 2);
  EXPECT_EQ(m.flat_index_of_rank(3), -1);
}

TEST(Stages, VllmRemainderBeforeLast) {
  auto s = vllm_layer_stages(10, 4);  // 2,3,3,2
  EXPECT_EQ(std::count(s.begin(), s.end(), 0), 2);
  EXPECT_EQ(std::count(s.begin(), s.end(), 1), 3);
  EXPECT_EQ(std::count(s.begin(), s.end(), 2), 3);
  EXPECT_EQ(std::count(s.begin(), s.end(), 3), 2);
}

TEST(Planner, SeedQwen3_4B_DP8toTP8) {
  const std::string path = test_model("qwen3-4b.json");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " absent";
  Parallelism t, g;
  g.tp = 8;
  Plan plan = plan_reshard(load_model(path), sys(8, t, 8, g), PlanOptions{});
  PlanStats st = compute_stats(plan);
  EXPECT_NEAR(st.bulk_fraction * 100, 66.9, 0.05);
  VerifyReport v = verify_plan(plan);
  EXPECT_TRUE(v.ok()) << (v.problems.empty() ? "" : v.problems[0]);
  EXPECT_NEAR(st.efficiency, 1.0, 1e-9);
}

TEST(Planner, SeedQwen3_30B_EP8PP2toTP8DP2) {
  const std::string path = test_model("qwen3-30b-a3b.json");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " absent";
  Parallelism t, g;
  t.pp = 2;
  t.ep = 8;
  g.tp = 8;
  Plan plan = plan_reshard(load_model(path), sys(16, t, 16, g), PlanOptions{});
  PlanStats st = compute_stats(plan);
  EXPECT_NEAR(st.bulk_fraction * 100, 95.0, 0.05);
  VerifyReport v = verify_plan(plan);
  EXPECT_TRUE(v.ok()) << (v.problems.empty() ? "" : v.problems[0]);
}

// verify names a box a gen rank receives twice (find_overlap over its received boxes): a plan whose
// second piece of a param repeats the first is refused, with both boxes in the message.
TEST(Planner, VerifyNamesABoxReceivedTwice) {
  // Train TP2 to one gen rank: each down_proj arrives as two column halves, one from each train rank.
  Plan plan = plan_reshard(test::small_mlp(2, "twice"), test::system_of(2, 1, 2, 1, 1, 1), PlanOptions{});
  ASSERT_TRUE(verify_plan(plan).ok());
  bool changed = false;
  for (const ParamPlan& param : plan.params) {
    if (param.path != Path::Bulk || param.transfer_count < 2) continue;
    Transfer& a = plan.transfers[param.transfer_begin];
    Transfer& b = plan.transfers[param.transfer_begin + 1];
    if (a.dst != b.dst) continue;
    b = a;
    changed = true;
    break;
  }
  ASSERT_TRUE(changed) << "no bulk param sent in two pieces to one rank";
  const VerifyReport v = verify_plan(plan);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.problems.front().find("received twice (overlaps"), std::string::npos) << v.problems.front();
}

}  // namespace
}  // namespace reshard

namespace reshard {
namespace {

// Units go to stream (stage % streams) and are taken round-robin over the stages: stage 0 and 1
// alternate, whatever the number of streams (one stream: 0, 2, 1, 3, then the bucket).
TEST(Schedule, WorkUnitsRoundRobinOverStageStreams) {
  ModelMeta m;
  m.name = "two-stage";
  for (int l = 0; l < 4; ++l) m.tensors.push_back({"model.layers." + std::to_string(l) + ".mlp.up_proj.weight", {4, 4}, DType::BF16});
  m.tensors.push_back({"model.norm.weight", {4}, DType::BF16});
  Parallelism t, g;
  t.pp = 2;
  Plan plan = plan_reshard(m, sys(2, t, 1, g), PlanOptions{});
  const std::vector<WorkUnit> two = work_units(plan, 2);
  ASSERT_EQ(two.size(), 5u);  // 4 bulk params + 1 misc bucket
  std::vector<int> streams;
  for (const WorkUnit& u : two) streams.push_back(u.stream);
  EXPECT_EQ(streams, (std::vector<int>{0, 1, 0, 1, 1}));
  EXPECT_EQ(two[1].index, 2u);  // layer 2 is the first param of stage 1
  EXPECT_TRUE(two.back().bucket);
  const std::vector<WorkUnit> one = work_units(plan, 1);
  std::vector<uint32_t> order;
  for (const WorkUnit& u : one) order.push_back(u.index);
  EXPECT_EQ(order, (std::vector<uint32_t>{0, 2, 1, 3, 0}));
  for (const WorkUnit& u : one) EXPECT_EQ(u.stream, 0);
}

}  // namespace
}  // namespace reshard

namespace reshard {
namespace {

// DeepSeek-V3's checkpoint lists its MTP module as model.layers.61 (eh_proj, enorm, hnorm): 62
// "decoder layers" do not split over pp=16, and the message says which layer to mark.
TEST(Planner, DeepSeekMtpLayerIsNamedWhenTheSplitFails) {
  const std::string path = test::test_model("deepseek-v3-bf16.json");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " absent";
  Parallelism t, g;
  t.pp = 16;
  t.ep = 16;
  g.tp = 32;
  try {
    plan_reshard(load_model(path), test::sys(256, t, 256, g), PlanOptions{});
    FAIL() << "62 layers over pp=16 planned";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("62 layers are not divisible by pp=16"), std::string::npos) << what;
    EXPECT_NE(what.find("model.layers.61 has eh_proj"), std::string::npos) << what;
    EXPECT_NE(what.find("pass --mtp-layers 61"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace reshard
