// The order of work (schedule.h): fan-out levels and where lagged fan-out units go, by hand.
#include <gtest/gtest.h>

#include "reshard/core/schedule.h"

namespace reshard {
namespace {

// Four bulk params of one stage; param 0 has three fan-outs: rank 1 roots [0, 4) to {1, 2, 3}; rank 2
// (a member of that group) roots [0, 2) on to {2, 6}; rank 5 roots [4, 8) to {5, 7}.
Plan lagged_plan() {
  Plan p;
  p.system.train.num_gpus = 1;
  p.system.gen.num_gpus = 7;
  p.groups = {CommGroup{"fan.a", 0, {1, 2, 3}}, CommGroup{"fan.b", 0, {2, 6}}, CommGroup{"fan.c", 0, {5, 7}}};
  for (int i = 0; i < 4; ++i) {
    ParamPlan param;
    param.name = "w" + std::to_string(i);
    param.shape = Dims{8};
    param.path = Path::Bulk;
    p.params.push_back(param);
  }
  p.params[0].fanout_begin = 0;
  p.params[0].fanout_count = 3;
  p.fanouts = {FanoutOp{0, 1, 0, 0, Box{Dims{0}, Dims{4}}, Dims{0}}, FanoutOp{0, 2, 1, 0, Box{Dims{0}, Dims{2}}, Dims{0}},
               FanoutOp{0, 5, 2, 0, Box{Dims{4}, Dims{4}}, Dims{0}}};
  return p;
}

TEST(Schedule, AFanOutRootedWhereALowerLevelDeliveredIsOneLevelUp) {
  EXPECT_EQ(fanout_levels(lagged_plan()), (std::vector<int>{0, 1, 0}));
}

TEST(Schedule, FanOutLevelsGoInLagUnitsAfterTheirTransfersAndEachLevelLagMore) {
  // Lag 2: level 0 is due once 1 + 2 = 3 units of the stage are placed (after w2), level 1 once
  // 1 + 4 = 5 are (never: four transfer units), so at the end.
  const std::vector<WorkUnit> units = work_units(lagged_plan(), 1, 2);
  ASSERT_EQ(units.size(), 6u);
  const std::vector<std::tuple<bool, int, uint32_t>> want = {
      {false, 0, 0}, {false, 0, 1}, {false, 0, 2}, {true, 0, 0}, {false, 0, 3}, {true, 1, 0}};
  for (size_t i = 0; i < units.size(); ++i)
    EXPECT_EQ(std::make_tuple(units[i].fanouts, units[i].level, units[i].index), want[i]) << "unit " << i;
  // Lag 0: each level right after the param's transfers.
  const std::vector<WorkUnit> now = work_units(lagged_plan(), 1, 0);
  ASSERT_EQ(now.size(), 6u);
  EXPECT_TRUE(now[1].fanouts && now[1].level == 0);
  EXPECT_TRUE(now[2].fanouts && now[2].level == 1);
  EXPECT_FALSE(now[3].fanouts);
}

}  // namespace
}  // namespace reshard
