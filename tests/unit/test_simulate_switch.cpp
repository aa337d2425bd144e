// The context-switch term of `reshard simulate` (SystemModel::switch_us, simulate.h "Shared memory
// system"): processes time-slicing one GPU without MPS, checked by hand on small plans.
#include <gtest/gtest.h>

#include <string>

#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "reshard/core/system_presets.h"
#include "test_support.h"

namespace reshard {
namespace {


void expect_same_times(const SimResult& a, const SimResult& b, const std::string& what) {
  ASSERT_EQ(a.phases.size(), b.phases.size()) << what;
  for (size_t i = 0; i < a.phases.size(); ++i) EXPECT_EQ(a.phases[i].seconds, b.phases[i].seconds) << what;
  EXPECT_EQ(a.total_seconds, b.total_seconds) << what;
  EXPECT_EQ(a.bulk_seconds, b.bulk_seconds) << what;
}

TEST(SimulateSwitch, EachTransportPassOfEveryRankWaitsForASwitch) {
  // 1 train -> 2 gen (TP2), one batch: each gen rank pulls from rank 0 on one stream (one pass); both
  // launch, so the shared GPU pays two switches, each rank one of them.
  const Plan p = test::small_mlp_plan(8, "sim-switch", 1, 2, 2);
  const SimResult one = simulate(p, test::time_sliced_gpu("switch-test", 30));
  const SimPhase bulk = one.phases.front();
  EXPECT_EQ(bulk.switches, 2);
  EXPECT_TRUE(bulk.shared_bound);
  EXPECT_NEAR(bulk.seconds, 2 * 30e-6, 1e-9);
  // The total holds the same passes (the norm's bucket rides in the gen ranks' one batch).
  EXPECT_EQ(one.total_switches, 2);
  // Batches of 2 ops: 4 batches per gen rank, a pass each.
  SystemModel m = test::time_sliced_gpu("switch-test", 30);
  m.batch.batch_ops = 2;
  const SimResult four = simulate(p, m);
  const SimPhase batched = four.phases.front();
  EXPECT_EQ(batched.switches, 8);
  // The norm's bucket, alone in a batch of its own, is one more pass of each gen rank in the total.
  const SimPhase& misc = four.phases.back();
  ASSERT_EQ(misc.name, "misc");
  EXPECT_EQ(misc.switches, 2);
  EXPECT_EQ(four.total_switches, 10);
  EXPECT_NEAR(batched.seconds, 8 * 30e-6, 1e-9);
}

TEST(SimulateSwitch, OneLaunchingRankNeverSwitches) {
  // 1 train -> 1 gen: the train rank launches nothing (box ops), so the GPU stays with the gen rank.
  const Plan p = test::small_mlp_plan(8, "sim-switch", 1, 1, 1);
  const SimResult r = simulate(p, test::time_sliced_gpu("switch-test", 30));
  EXPECT_EQ(r.phases.front().switches, 0);
  expect_same_times(r, simulate(p, test::time_sliced_gpu("switch-test", 0)), "one launching rank");
}

TEST(SimulateSwitch, PacksAndUnpacksShareTheirRanksTimeSlice) {
  // Staged transport: the train rank packs 8 strided halves (8 launches back to back, no pass), each
  // gen rank makes one pass. Three ranks launch; only the two passes switch.
  const Plan p = test::small_mlp_plan(4, "sim-switch", 1, 2, 2);
  SystemModel m = test::time_sliced_gpu("switch-test", 30);
  m.box_ops = false;
  m.per_launch_us = 10;
  const SimPhase bulk = simulate(p, m).phases.front();
  EXPECT_EQ(bulk.switches, 2);
  EXPECT_NEAR(bulk.seconds, 10 * 10e-6 + 2 * 30e-6, 1e-9);
}

TEST(SimulateSwitch, NoTermWithoutSerialIssueOrAtZero) {
  // Under MPS (no serial issue) or with switch_us 0 every prediction is the model's without the term.
  for (const SystemModel& preset : system_presets())
    for (Algo algo : {Algo::Reshard, Algo::Golden}) {
      SystemModel base = preset;
      base.algo = algo;
      base.switch_us = 0;
      SystemModel with = base;
      with.switch_us = 25;
      const Plan p = test::small_mlp_plan(16, "sim-switch", 2, 2, 2);
      const SimResult r0 = simulate(p, base), r1 = simulate(p, with);
      if (!preset.serial_issue) {
        expect_same_times(r0, r1, preset.name);
      } else {
        EXPECT_GT(r1.total_seconds, r0.total_seconds) << preset.name;
        EXPECT_LE(r1.lower_bound_seconds, r1.total_seconds) << preset.name;
      }
      for (const SimPhase& ph : r0.phases) EXPECT_EQ(ph.switches, 0) << preset.name;
    }
}

TEST(SimulateSwitch, PresetsAndValidation) {
  // One context under MPS: nothing to switch.
  EXPECT_EQ(find_system_preset("h200-shared-1gpu-mps").switch_us, 0);
  EXPECT_GE(find_system_preset("h200-shared-1gpu").switch_us, 0);
  for (const SystemModel& preset : system_presets()) {
    if (!preset.serial_issue) {
      EXPECT_EQ(preset.switch_us, 0) << preset.name;
    }
  }
  SystemModel m = test::time_sliced_gpu("switch-test", -1);
  Problems problems;
  validate_system_model(m, problems);
  ASSERT_EQ(problems.list().size(), 1u);
  EXPECT_NE(problems.list().front().find("--switch-us"), std::string::npos);
}

TEST(SimulateSwitch, JsonCarriesTheParameterAndTheCount) {
  const Plan p = test::small_mlp_plan(8, "sim-switch", 1, 2, 2);
  const auto j = simulation_json(p, simulate(p, test::time_sliced_gpu("switch-test", 30)));
  EXPECT_EQ(j["system"]["switch_us"].get<double>(), 30);
  EXPECT_EQ(j["phases"][0]["switches"].get<int64_t>(), 2);
}

}  // namespace
}  // namespace reshard
