// SystemModel::latency_per_busy_rank: the latency is the host's busy hand-off measured with every rank
// of the domain working, and a hand-off waits only for the working ranks sharing its cores, so a walk's
// batches pay latency x (the domain's ranks with ops in the walk) / (its ranks). Worked by hand on 2 MLP
// weights from train PP2 (ranks 0 and 1, one layer each) to one gen rank (rank 2): bulk stage s moves
// layer s from train rank s to rank 2, so 2 of the 3 ranks work in each stage, all 3 in the whole walk.
// Links free (1e9 GB/s), no launch or per-op costs: a stage is one batch on each of its two ranks, and
// takes its latency alone.
#include <gtest/gtest.h>

#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "test_support.h"

namespace reshard {
namespace {

constexpr double kLatencyUs = 30;

Plan two_stages() {
  return plan_reshard(test::small_mlp(2, "sim-busy"), test::system_of(2, 2, 1, 1, 1, 1), PlanOptions{});
}

SystemModel free_links(bool per_busy_rank) {
  SystemModel m = test::unit_links("busy-test", 0);
  m.nvlink_gbps = m.nic_gbps = 1e9;
  m.nvlink_latency_us = m.nic_latency_us = kLatencyUs;
  m.batch.window = 1;
  m.latency_per_busy_rank = per_busy_rank;
  return m;
}

double phase_seconds(const SimResult& r, const std::string& name) {
  for (const SimPhase& p : r.phases)
    if (p.name == name) return p.seconds;
  ADD_FAILURE() << "no phase " << name;
  return -1;
}

TEST(SimulateBusy, AStagePaysItsWorkingRanksShareOfTheHandOff) {
  const Plan p = two_stages();
  ASSERT_EQ(p.world(), 3);
  const SimResult all = simulate(p, free_links(false)), busy = simulate(p, free_links(true));
  for (const char* stage : {"bulk.pp0", "bulk.pp1"}) {
    EXPECT_NEAR(phase_seconds(all, stage), 30e-6, 1e-12) << stage;
    EXPECT_NEAR(phase_seconds(busy, stage), 30e-6 * 2 / 3, 1e-12) << stage;  // ranks {s, 2} of 3
  }
}

// The whole walk has every rank working (stage 0's, stage 1's and the misc bucket's): the hand-off as
// measured, the same as without the flag.
TEST(SimulateBusy, EveryRankWorkingPaysTheWholeHandOff) {
  const Plan p = two_stages();
  EXPECT_NEAR(simulate(p, free_links(true)).total_seconds, simulate(p, free_links(false)).total_seconds, 1e-12);
}

// Ranks in other domains do not count: each rank in its own domain (gpus_per_node 1), every rank that
// works is its whole domain, so nothing is scaled.
TEST(SimulateBusy, TheShareIsPerDomain) {
  const Plan p = two_stages();
  SystemModel m = free_links(true);
  m.gpus_per_node = 1;
  SystemModel plain = free_links(false);
  plain.gpus_per_node = 1;
  EXPECT_NEAR(phase_seconds(simulate(p, m), "bulk.pp0"), phase_seconds(simulate(p, plain), "bulk.pp0"), 1e-12);
}

}  // namespace
}  // namespace reshard
