// One GPU time-sliced between processes (time_slice.h): the turns its contexts take, worked by hand.
#include <gtest/gtest.h>

#include <stdexcept>

#include "reshard/core/time_slice.h"

namespace reshard {
namespace {

constexpr double us = 1e-6;

TEST(TimeSlice, ContextsWithWorkTakeTurnsEachSwitchedIn) {
  // A and B, 10 us each, ready at 0; switch 5 us, slice 100 us: A switched in (5), done at 15; B
  // switched in (20), done at 30.
  const SliceSchedule s = schedule_time_slices({{0, 0, 10 * us}, {0, 1, 10 * us}}, 2, 100 * us, 5 * us);
  ASSERT_EQ(s.done.size(), 2u);
  EXPECT_NEAR(s.done[0], 15 * us, 1e-12);
  EXPECT_NEAR(s.done[1], 30 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{1, 1}));
  EXPECT_NEAR(s.end, 30 * us, 1e-12);
}

TEST(TimeSlice, ASliceEndsWhileAnotherWaits) {
  // A 30 us, B 10 us, both at 0; slice 10, switch 1: A in at 1, preempted at 11 (20 left); B in at 12,
  // done at 22; A in again at 23, alone now, done at 43.
  const SliceSchedule s = schedule_time_slices({{0, 0, 30 * us}, {0, 1, 10 * us}}, 2, 10 * us, 1 * us);
  EXPECT_NEAR(s.done[0], 43 * us, 1e-12);
  EXPECT_NEAR(s.done[1], 22 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{2, 1}));
}

TEST(TimeSlice, WorkQueuedBeforeAnItemStartsKeepsTheTurn) {
  // A 5 us twice at 0, B 5 us at 0.5; switch 1, slice 100: A in at 1 with both items queued, so its
  // turn runs through them (done 6, 11) although B waits; B in at 12, done at 17.
  const SliceSchedule s =
      schedule_time_slices({{0, 0, 5 * us}, {0, 0, 5 * us}, {0.5 * us, 1, 5 * us}}, 2, 100 * us, 1 * us);
  EXPECT_NEAR(s.done[0], 6 * us, 1e-12);
  EXPECT_NEAR(s.done[1], 11 * us, 1e-12);
  EXPECT_NEAR(s.done[2], 17 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{1, 1}));
}

TEST(TimeSlice, WorkQueuedWhileAnItemRunsWaitsForTheNextTurn) {
  // A 5 us at 0, A 5 us at 3, B 5 us at 4; switch 1, slice 100: A in at 1, its first item started
  // alone, so with B waiting the turn ends when it is done (6), though A's second came at 3 (the GPU
  // runs a context on only while its next work was queued before the current started:
  // results/gpu/turns_h100/); B in at 7, done at 12; A in again at 13, done at 18. Input order is kept.
  const SliceSchedule s =
      schedule_time_slices({{4 * us, 1, 5 * us}, {0, 0, 5 * us}, {3 * us, 0, 5 * us}}, 2, 100 * us, 1 * us);
  EXPECT_NEAR(s.done[1], 6 * us, 1e-12);
  EXPECT_NEAR(s.done[0], 12 * us, 1e-12);
  EXPECT_NEAR(s.done[2], 18 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{2, 1}));
}

TEST(TimeSlice, WorkQueuedWhileAloneRunsOn) {
  // A 5 us at 0 and at 3, B 5 us at 20; switch 1: nobody waits while A runs, so its second item runs
  // on at 6 (done 11) without a switch; B in at 21, done at 26.
  const SliceSchedule s =
      schedule_time_slices({{0, 0, 5 * us}, {3 * us, 0, 5 * us}, {20 * us, 1, 5 * us}}, 2, 100 * us, 1 * us);
  EXPECT_NEAR(s.done[0], 6 * us, 1e-12);
  EXPECT_NEAR(s.done[1], 11 * us, 1e-12);
  EXPECT_NEAR(s.done[2], 26 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{1, 1}));
}

TEST(TimeSlice, AnItemAfterAnotherIsQueuedOnceThatIsDone) {
  // A: 5 us at 0, and 5 us at 0 after it; B 5 us at 0.5; switch 1, slice 100. Without `after` A's turn
  // would run through both (WorkQueuedBeforeAnItemStartsKeepsTheTurn); with it the second is queued
  // only when the first is done (6), and that one started alone, so B waits no longer: B in at 7, done
  // 12; A in again at 13, done 18.
  const SliceSchedule s = schedule_time_slices({{0, 0, 5 * us}, {0, 0, 5 * us, 0}, {0.5 * us, 1, 5 * us}}, 2,
                                               100 * us, 1 * us);
  EXPECT_NEAR(s.done[0], 6 * us, 1e-12);
  EXPECT_NEAR(s.done[1], 18 * us, 1e-12);
  EXPECT_NEAR(s.done[2], 12 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{2, 1}));
}

TEST(TimeSlice, ItemsHeldForOneGoOutTogether) {
  // A: 5 us at 0, then 2 us at 1 and 2 us at 2, both after the first; B 5 us at 0.5; switch 1, slice
  // 100. A in at 1, its first done at 6, when both held items are queued at once; B in at 7, done 12;
  // A in at 13 with both queued, so its turn runs through them: done 15 and 17.
  const SliceSchedule s = schedule_time_slices(
      {{0, 0, 5 * us}, {1 * us, 0, 2 * us, 0}, {2 * us, 0, 2 * us, 0}, {0.5 * us, 1, 5 * us}}, 2, 100 * us, 1 * us);
  EXPECT_NEAR(s.done[0], 6 * us, 1e-12);
  EXPECT_NEAR(s.done[1], 15 * us, 1e-12);
  EXPECT_NEAR(s.done[2], 17 * us, 1e-12);
  EXPECT_NEAR(s.done[3], 12 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{2, 1}));
}

TEST(TimeSlice, AnItemAfterOneDoneAlreadyIsQueuedWhenReady) {
  // A 5 us at 0; A 5 us at 20 after it (done at 6); B 5 us at 30; switch 1: A in at 1, done 6; its
  // second queued at 20 and run without a switch (done 25); B in at 31, done 36.
  const SliceSchedule s =
      schedule_time_slices({{0, 0, 5 * us}, {20 * us, 0, 5 * us, 0}, {30 * us, 1, 5 * us}}, 2, 100 * us, 1 * us);
  EXPECT_NEAR(s.done[0], 6 * us, 1e-12);
  EXPECT_NEAR(s.done[1], 25 * us, 1e-12);
  EXPECT_NEAR(s.done[2], 36 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{1, 1}));
}

TEST(TimeSlice, AfterNamesAnotherItemOfTheSameContext) {
  EXPECT_THROW(schedule_time_slices({{0, 0, 5 * us}, {0, 1, 5 * us, 0}}, 2, 100 * us, 1 * us), std::invalid_argument);
  EXPECT_THROW(schedule_time_slices({{0, 0, 5 * us, 2}}, 1, 100 * us, 1 * us), std::invalid_argument);
  EXPECT_THROW(schedule_time_slices({{0, 0, 5 * us, 0}}, 1, 100 * us, 1 * us), std::invalid_argument);
}

TEST(TimeSlice, AnIdleGpuKeepsTheLastContextLoaded) {
  // A 5 us at 0 and at 100, B 5 us at 200; switch 1: A in once (done 6, 105), B in at 201 (done 206).
  const SliceSchedule s =
      schedule_time_slices({{0, 0, 5 * us}, {100 * us, 0, 5 * us}, {200 * us, 1, 5 * us}}, 2, 100 * us, 1 * us);
  EXPECT_NEAR(s.done[0], 6 * us, 1e-12);
  EXPECT_NEAR(s.done[1], 105 * us, 1e-12);
  EXPECT_NEAR(s.done[2], 206 * us, 1e-12);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{1, 1}));
  EXPECT_NEAR(s.end, 206 * us, 1e-12);
}

TEST(TimeSlice, NoWorkNoSwitches) {
  const SliceSchedule s = schedule_time_slices({}, 3, 100 * us, 1 * us);
  EXPECT_EQ(s.switches_in, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(s.end, 0);
}

}  // namespace
}  // namespace reshard
