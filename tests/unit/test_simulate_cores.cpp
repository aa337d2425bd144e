// SystemModel::host_cores: without single copy (copy-in/copy-out) a transfer moves only while both of
// its ends run, so where a domain holds more ranks than the host has cores each rank's transfers (the
// link rates and the broadcast fan rate) move at cores / ranks of their rate. Worked by hand on one misc
// bucket over 1 train + `gen` gen ranks, links at 1 GB/s, no latency or per-op costs.
#include <gtest/gtest.h>

#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "test_support.h"

namespace reshard {
namespace {

Plan bucket_over(int gen) { return test::bucket_over(gen, "sim-cores"); }

SystemModel copy_in_copy_out(int64_t host_cores) {
  SystemModel m = test::unit_links("cores-test", 9);  // 8 members: a pipelined ring
  m.sender_copies = true;
  m.host_cores = host_cores;
  return m;
}

// The ring over 8 ranks: a middle member moves its b in and its b out through one rate: 2u at
// u = b / 1 GB/s. On 4 cores each rank keeps 4/8 of it: 4u. 8 or more cores change nothing.
TEST(SimulateCores, MoreRanksThanCoresSlowEachRanksTransfers) {
  const Plan p = bucket_over(7);
  ASSERT_EQ(p.groups[p.buckets[0].group].ranks.size(), 8u);
  const double u = test::bucket_seconds(p);
  EXPECT_NEAR(simulate(p, copy_in_copy_out(0)).misc_seconds, 2 * u, 1e-12);
  EXPECT_NEAR(simulate(p, copy_in_copy_out(8)).misc_seconds, 2 * u, 1e-12);
  EXPECT_NEAR(simulate(p, copy_in_copy_out(16)).misc_seconds, 2 * u, 1e-12);
  EXPECT_NEAR(simulate(p, copy_in_copy_out(4)).misc_seconds, 4 * u, 1e-12);
}

// A linear broadcast over 4 ranks with fan 2 GB/s: the root's 3 sends at once take u + 2 x u / 2 = 2u
// (test_simulate_fan.cpp). On 2 cores the link is 0.5 GB/s and the fan 1 GB/s: 2u + 2 x u = 4u.
TEST(SimulateCores, TheFanRateTakesTheSameShare) {
  const Plan p = bucket_over(3);
  ASSERT_EQ(p.groups[p.buckets[0].group].ranks.size(), 4u);
  const double u = test::bucket_seconds(p);
  SystemModel m = copy_in_copy_out(0);
  m.fan_gbps = 2;
  EXPECT_NEAR(simulate(p, m).misc_seconds, 2 * u, 1e-12);
  m.host_cores = 2;
  EXPECT_NEAR(simulate(p, m).misc_seconds, 4 * u, 1e-12);
}

// With single copy the receiver copies alone (CMA), so the cores are no input: refused, by name.
TEST(SimulateCores, RefusedWithSingleCopyAndBelowZero) {
  SystemModel m = copy_in_copy_out(4);
  m.sender_copies = false;
  Problems problems;
  validate_system_model(m, problems);
  ASSERT_EQ(problems.list().size(), 1u);
  EXPECT_NE(problems.list()[0].find("--host-cores 4 applies only without single copy"), std::string::npos)
      << problems.list()[0];
  Problems negative;
  validate_system_model(copy_in_copy_out(-1), negative);
  ASSERT_EQ(negative.list().size(), 1u);
  EXPECT_NE(negative.list()[0].find("--host-cores must be non-negative, got -1"), std::string::npos);
}

}  // namespace
}  // namespace reshard
