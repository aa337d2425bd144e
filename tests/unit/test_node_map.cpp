// A launch's placement against the plan's node map (node_map.h). Each case is a literal table: the
// host of every rank, as mpirun would place them, and what the plan's --gpus-per-node says.
#include <gtest/gtest.h>

#include "reshard/core/node_map.h"

namespace reshard {
namespace {

using S = NodeMapCheck::Status;

TEST(NodeMap, BlocksOfThePlansSizeMatch) {
  // --map-by ppr:2:node on three hosts, plan --gpus-per-node 2: nodes {0,1} {2,3} {4,5}.
  const NodeMapCheck c = check_node_map({"a", "a", "b", "b", "c", "c"}, 2);
  EXPECT_EQ(c.status, S::Matches);
  EXPECT_EQ(c.launch_ranks_per_host, 2);
  EXPECT_EQ(c.hosts, 3);
  EXPECT_EQ(node_map_advice(c), "");
}

TEST(NodeMap, AShortLastNodeMatches) {
  // 12 ranks, 8 a node: the second host holds ranks 8..11, the plan's node 1 likewise.
  const NodeMapCheck c = check_node_map({"a", "a", "a", "a", "a", "a", "a", "a", "b", "b", "b", "b"}, 8);
  EXPECT_EQ(c.status, S::Matches);
  EXPECT_EQ(c.launch_ranks_per_host, 8);
}

TEST(NodeMap, OneHostMatchesAPlanOfOneNode) {
  EXPECT_EQ(check_node_map({"a", "a", "a", "a"}, 4).status, S::Matches);
  EXPECT_EQ(check_node_map({"a", "a", "a", "a"}, 8).status, S::Matches);
}

TEST(NodeMap, OneHostDiffersFromAPlanOfTwoNodes) {
  // Plan --gpus-per-node 2 (nodes {0,1} {2,3}), all four ranks on host a: rank 2 is the first on a
  // host the plan gave to node 0.
  const NodeMapCheck c = check_node_map({"a", "a", "a", "a"}, 2);
  EXPECT_EQ(c.status, S::Differs);
  EXPECT_EQ(c.launch_ranks_per_host, 4);
  EXPECT_EQ(c.detail, "ranks 0 and 2 run on one host (a) but the plan puts them on nodes 0 and 1");
  EXPECT_EQ(node_map_advice(c),
            "warning: this launch does not place ranks as the plan's node map says (--gpus-per-node 2: rank r on node "
            "r / 2): ranks 0 and 2 run on one host (a) but the plan puts them on nodes 0 and 1. Every byte still lands "
            "right, but fan-outs cross nodes where the plan meant NVLink: plan with --gpus-per-node 4 (this launch's 4 "
            "ranks a host), or place 2 consecutive ranks on each node (Open MPI: --map-by ppr:2:node)");
}

TEST(NodeMap, RoundRobinPlacementDiffers) {
  // --map-by node on three hosts: rank r on host r % 3. Ranks 0 and 1 share plan node 0.
  const NodeMapCheck c = check_node_map({"a", "b", "c", "a", "b", "c"}, 2);
  EXPECT_EQ(c.status, S::Differs);
  EXPECT_EQ(c.launch_ranks_per_host, 0);
  EXPECT_EQ(c.detail, "ranks 0 and 1 share node 0 of the plan but run on hosts a and b");
  // No block size describes the launch, so the advice names only the placement.
  EXPECT_NE(node_map_advice(c).find("nodes where the plan meant NVLink: place 2 consecutive ranks on each node"),
            std::string::npos);
}

TEST(NodeMap, SmallerBlocksThanThePlanDiffer) {
  // Plan 4 a node, launch 2 a host: ranks 1 and 2 share node 0 but not a host.
  const NodeMapCheck c = check_node_map({"a", "a", "b", "b", "c", "c", "d", "d"}, 4);
  EXPECT_EQ(c.status, S::Differs);
  EXPECT_EQ(c.launch_ranks_per_host, 2);
  EXPECT_EQ(c.detail, "ranks 1 and 2 share node 0 of the plan but run on hosts a and b");
}

TEST(NodeMap, AHostComingBackLaterDiffers) {
  // Blocks of 2, but host a holds ranks 0, 1 and 5: rank 5 sits on node 0's host.
  const NodeMapCheck c = check_node_map({"a", "a", "b", "b", "c", "a"}, 2);
  EXPECT_EQ(c.status, S::Differs);
  EXPECT_EQ(c.launch_ranks_per_host, 0);
  EXPECT_EQ(c.detail, "ranks 0 and 5 run on one host (a) but the plan puts them on nodes 0 and 2");
}

TEST(NodeMap, NodeBlindPlanOverSeveralHostsGetsAHint) {
  const NodeMapCheck c = check_node_map({"a", "a", "b", "b"}, 0);
  EXPECT_EQ(c.status, S::Unknown);
  EXPECT_EQ(c.launch_ranks_per_host, 2);
  EXPECT_EQ(node_map_advice(c),
            "note: the plan is node-blind (made without --gpus-per-node) and this launch places 2 ranks a host on 2 "
            "hosts: plan with --gpus-per-node 2 so that two-phase fan-outs cross each node once per byte");
  // One host, or hosts in no blocks: nothing to suggest.
  EXPECT_EQ(node_map_advice(check_node_map({"a", "a"}, 0)), "");
  EXPECT_EQ(node_map_advice(check_node_map({"a", "b", "a", "b"}, 0)), "");
}

}  // namespace
}  // namespace reshard
