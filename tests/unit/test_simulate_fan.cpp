// MPI broadcasts as libnbc runs them (SystemModel::fan_gbps): a rank's sends of one broadcast at once
// take the link's time for the first and bytes / fan_gbps for each further one, a binomial member
// forwards once it holds the whole message, and each member's part is done on its own. Worked by hand
// from Open MPI 4.1's nbc_ibcast.c (bcast_sched_binomial: a virtual rank receives from its parent,
// then sends to all its children at once) on one misc bucket over 8 ranks (1 train + 7 gen).
#include <gtest/gtest.h>

#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "test_support.h"

namespace reshard {
namespace {

Plan bucket_over(int gen) { return test::bucket_over(gen, "sim-fan"); }

// Single copy, binomial above 4 members.
SystemModel libnbc(double fan_gbps) {
  SystemModel m = test::unit_links("fan-test", 5);
  m.fan_gbps = fan_gbps;
  return m;
}

// u = bucket / 1 GB/s. k sends at once take T(k) = u + (k - 1) u / 2 at fan 2 GB/s: T(1) = u,
// T(2) = 1.5u, T(3) = 2u. Children: v0 -> 1, 2, 4; v1 -> 3, 5; v2 -> 6; v3 -> 7. Held at: v1, v2, v4
// 2u; v3, v5 3.5u; v6 3u; v7 4.5u (v0 -> v1 -> v3 -> v7). The root's link carries T(3) worth: 2 buckets.
// Without the fan rate the old model stands: the root sends 3 buckets from the start, 3u.
TEST(SimulateFan, BinomialMembersForwardOnceTheyHoldTheMessage) {
  const Plan p = bucket_over(7);
  ASSERT_EQ(p.buckets.size(), 1u);
  ASSERT_EQ(p.groups[p.buckets[0].group].ranks.size(), 8u);
  const int64_t b = p.buckets[0].bytes;
  const double u = static_cast<double>(b) / 1e9;
  const SimResult r = simulate(p, libnbc(2));
  EXPECT_NEAR(r.misc_seconds, 4.5 * u, 1e-12);
  EXPECT_EQ(r.busiest_link_bytes, 2 * b);
  const SimResult old = simulate(p, libnbc(0));
  EXPECT_NEAR(old.misc_seconds, 3 * u, 1e-12);
  EXPECT_EQ(old.busiest_link_bytes, 3 * b);
}

// The same bucket in two messages of b/2 (--batch-bytes b/2), each batch waited for (window 1): a
// member posts the second once its own part of the first is done, not the whole tree. With u' = u/2,
// message 1 is done at v0 u, v1 1.75u, v2 1.5u, v3 2.25u, v4 u, v5 1.75u, v6 1.5u, v7 2.25u. Message 2:
// the root holds it at u (when it posts) and its sends end at 2u; v1 posts at 1.75u, receives u' from
// its parent's hold (u) on but no earlier than it posted: 2.25u, holds at max(2u, 2.25u) = 2.25u, its
// sends (1.5u') end at 3u; v3 posts at 2.25u, receives 2.25u..2.75u, holds at 3u (v1's sends), sends
// to v7 until 3.5u; v7 posts at 2.25u, receives from v3's hold (3u) to 3.5u: the walk ends at 3.5u,
// where whole trees one after the other would take 2 x 2.25u.
TEST(SimulateFan, ConsecutiveBroadcastsOverlapAcrossTheTree) {
  const Plan p = bucket_over(7);
  const int64_t b = p.buckets[0].bytes;
  ASSERT_EQ(b % 2, 0);
  const double u = static_cast<double>(b) / 1e9;
  SystemModel m = libnbc(2);
  m.batch.window = 1;
  m.batch.batch_bytes = b / 2;
  m.batch.staging_bytes = b;
  const SimResult r = simulate(p, m);
  EXPECT_NEAR(r.misc_seconds, 3.5 * u, 1e-12);
}

// With a hand-off L per message (--latency-us): each hop of the tree waits one (a member holds the
// message L after its parent's sends are through), and a member with children is done L after its own
// sends (when they hold it); a leaf is done when it holds. One bucket: the chain v0 -> v1 -> v3 -> v7
// takes the depth's 3 hand-offs: v7 holds at 4.5u + 3L, and v3 is done then (4.5u + 2L, + L): the
// old flat charge (ceil(log2 8) = 3 per member) gave the same for one message.
TEST(SimulateFan, OneBroadcastTakesTheTreesDepthInHandOffs) {
  const Plan p = bucket_over(7);
  const double u = test::bucket_seconds(p), L = u / 4;
  SystemModel m = libnbc(2);
  m.nvlink_latency_us = m.nic_latency_us = L * 1e6;
  EXPECT_NEAR(simulate(p, m).misc_seconds, 4.5 * u + 3 * L, 1e-9 * u);
}

// ConsecutiveBroadcastsOverlapAcrossTheTree with L = u/4. Message 1 (u' = u/2; T(1) = u/2,
// T(2) = 0.75u, T(3) = u), ends (done + L with children): v0 u + L; v1 1.75u + 2L; v2 1.5u + 2L;
// v4 u + L (holds at v0's done + L); v3 2.25u + 3L; v5 1.75u + 2L; v6 1.5u + 2L; v7 2.25u + 3L.
// Message 2, each member posting at its end: v0 holds at u + L, its sends end at 2u + L; v1 posts at
// 1.75u + 2L, holds at 2u + 2L but receives until 2.25u + 2L, its sends end at 3u + 2L; v3 posts at
// 2.25u + 3L, holds at v1's done + L = 3u + 3L, its send ends at 3.5u + 3L, it ends at 3.5u + 4L; v7
// holds at 3.5u + 4L. The walk ends at 3.5u + 4L = 4.5u: the messages pipeline down the tree, where
// the flat depth per member and message (the old charge) ended at 3.5u + 6L.
TEST(SimulateFan, ConsecutiveBroadcastsPayAHandOffPerHopNotTheDepthPerMessage) {
  const Plan p = bucket_over(7);
  const int64_t b = p.buckets[0].bytes;
  ASSERT_EQ(b % 2, 0);
  const double u = static_cast<double>(b) / 1e9, L = u / 4;
  SystemModel m = libnbc(2);
  m.nvlink_latency_us = m.nic_latency_us = L * 1e6;
  m.batch.window = 1;
  m.batch.batch_bytes = b / 2;
  m.batch.staging_bytes = b;
  EXPECT_NEAR(simulate(p, m).misc_seconds, 3.5 * u + 4 * L, 1e-9 * u);
}

// Linear (at most 4 members): the root's 3 sends at once take T(3) = 2u; every member holds the
// bucket then.
TEST(SimulateFan, LinearRootSendsAtTheFanRate) {
  const Plan p = bucket_over(3);
  ASSERT_EQ(p.groups[p.buckets[0].group].ranks.size(), 4u);
  const double u = test::bucket_seconds(p);
  EXPECT_NEAR(simulate(p, libnbc(2)).misc_seconds, 2 * u, 1e-12);
  EXPECT_NEAR(simulate(p, libnbc(0)).misc_seconds, 3 * u, 1e-12);
}

TEST(SimulateFan, ANegativeRateIsRefused) {
  SystemModel m = libnbc(-1);
  Problems problems;
  validate_system_model(m, problems);
  ASSERT_EQ(problems.list().size(), 1u);
  EXPECT_NE(problems.list()[0].find("--fan-gbps"), std::string::npos) << problems.list()[0];
}

}  // namespace
}  // namespace reshard
