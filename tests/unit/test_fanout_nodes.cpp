// Node-aware two-phase fan-out (planner_bulk.cpp plan_node_aware): with --gpus-per-node, each byte
// enters each node once, over a lane (one replica per node), and is forwarded inside the node.
// Tables worked out by hand; see the comments for the arithmetic.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "reshard/core/stats.h"
#include "reshard/core/model.h"
#include "reshard/core/verify.h"
#include "test_support.h"

namespace reshard {
namespace {

// One dense FFN weight [8, 4] bf16; train DP2 (ranks 0, 1 hold it whole), gen DP4 (ranks 2..5 each
// hold it whole). Two GPUs a node: node 0 = {0, 1}, node 1 = {2, 3}, node 2 = {4, 5}.
Plan four_replicas(int gpus_per_node) {
  ModelMeta m;
  m.name = "fanout-nodes";
  m.tensors.push_back({"model.layers.0.mlp.down_proj.weight", Dims{8, 4}, DType::BF16});
  PlanOptions o;
  o.fanout = FanoutMode::TwoPhase;
  o.gpus_per_node = gpus_per_node;
  return plan_reshard(m, test::sys(2, Parallelism{}, 4, Parallelism{}), o);
}

struct Row {
  int src, dst;
  std::string box;
};
struct Fan {
  int root;
  std::vector<int> group;
  std::string box;
};

TEST(FanoutNodes, EachByteEntersEachNodeOnceThenNvlink) {
  const Plan plan = four_replicas(2);
  ASSERT_TRUE(verify_plan(plan).ok());
  // Replicas by node: node 1 = [2, 3], node 2 = [4, 5]; lanes = 2 (lane 0 = {2, 4}, lane 1 = {3, 5});
  // 4 lane roots, so the one piece is striped into 4 row blocks of 2, each to the least-received
  // root k = (lane j, node t), k = j * 2 + t: rows [0,2) -> 2, [2,4) -> 4, [4,6) -> 3, [6,8) -> 5; each
  // from the least-loaded holder, alternating 0, 1.
  const std::vector<Row> transfers = {{0, 2, "[0:2, 0:4]"}, {1, 4, "[2:4, 0:4]"}, {0, 3, "[4:6, 0:4]"}, {1, 5, "[6:8, 0:4]"}};
  // Lane broadcasts first (one member a node), then inside each node from its lane member.
  const std::vector<Fan> fanouts = {
      {2, {2, 4}, "[0:2, 0:4]"}, {4, {2, 4}, "[2:4, 0:4]"}, {3, {3, 5}, "[4:6, 0:4]"}, {5, {3, 5}, "[6:8, 0:4]"},
      {2, {2, 3}, "[0:2, 0:4]"}, {4, {4, 5}, "[0:2, 0:4]"}, {2, {2, 3}, "[2:4, 0:4]"}, {4, {4, 5}, "[2:4, 0:4]"},
      {3, {2, 3}, "[4:6, 0:4]"}, {5, {4, 5}, "[4:6, 0:4]"}, {3, {2, 3}, "[6:8, 0:4]"}, {5, {4, 5}, "[6:8, 0:4]"}};
  ASSERT_EQ(plan.transfers.size(), transfers.size());
  for (size_t i = 0; i < transfers.size(); ++i) {
    EXPECT_EQ(plan.transfers[i].src, transfers[i].src) << i;
    EXPECT_EQ(plan.transfers[i].dst, transfers[i].dst) << i;
    EXPECT_EQ(plan.transfers[i].box.str(), transfers[i].box) << i;
  }
  ASSERT_EQ(plan.fanouts.size(), fanouts.size());
  for (size_t i = 0; i < fanouts.size(); ++i) {
    EXPECT_EQ(plan.fanouts[i].root, fanouts[i].root) << i;
    EXPECT_EQ(plan.groups[plan.fanouts[i].group].ranks, fanouts[i].group) << i;
    EXPECT_EQ(plan.fanouts[i].box.str(), fanouts[i].box) << i;
  }
  EXPECT_EQ(plan.options.gpus_per_node, 2);
}

TEST(FanoutNodes, UnknownNodesKeepOneFlatGroup) {
  const Plan plan = four_replicas(0);
  ASSERT_TRUE(verify_plan(plan).ok());
  ASSERT_EQ(plan.fanouts.size(), 4u);  // one broadcast per row block, over all four replicas
  for (const FanoutOp& f : plan.fanouts) EXPECT_EQ(plan.groups[f.group].ranks, (std::vector<int>{2, 3, 4, 5}));
  EXPECT_NE(four_replicas(2).fingerprint, plan.fingerprint);  // the node size is an input of the plan
}

TEST(FanoutNodes, OneReplicaANodeOrOneNodeStaysFlat) {
  // Eight GPUs a node: one node holds every replica, flat over NVLink. One a node: one replica a node,
  // so the one lane is the whole group: flat.
  for (int gpn : {8, 1}) {
    const Plan plan = four_replicas(gpn);
    ASSERT_TRUE(verify_plan(plan).ok()) << gpn;
    for (const FanoutOp& f : plan.fanouts) EXPECT_EQ(plan.groups[f.group].ranks.size(), 4u) << gpn;
  }
}

// The simulator's NCCL ring (op_cost.cpp OpCoster::broadcast): a group with two members on the root's node leaves
// it and comes back. 16-byte row blocks, two GPUs a node (NIC bytes counted on the sending side):
//   phase one: 4 transfers of 16 B from node 0 to nodes 1, 2 = 64 B;
//   flat group {2, 3 | 4, 5}: each member sends its share 16 / 2 = 8 B (the root's node re-entered, so
//   the tail node sends too): 4 x 8 = 32 B per broadcast, 4 broadcasts = 128 B; total 192 B;
//   lanes {2 | 4}, {3 | 5}: one member a node, no re-entry: the root's node sends 16 B once, 4 x 16 =
//   64 B; node broadcasts stay on NVLink; total 128 B.
TEST(FanoutNodes, TheSimulatedRingReentersTheRootsNodeOnlyInFlatGroups) {
  SystemModel m;
  m.gpus_per_node = 2;
  EXPECT_EQ(simulate(four_replicas(0), m).nic_bytes, 192);
  EXPECT_EQ(simulate(four_replicas(2), m).nic_bytes, 128);
}

// Misc buckets with --gpus-per-node: train DP4 on nodes {0, 1}, {2, 3}, gen DP2 on {4, 5}; the one
// bucket is rooted at rank 0 and goes to the train ranks of its node (NIC striping) and the gen ranks:
// {0, 1, 4, 5}. Ranks 2 and 3 hold it already and receive nothing. Without nodes: group 0, everyone.
TEST(FanoutNodes, MiscBucketsGoToTheRootsNodeAndTheGenRanks) {
  ModelMeta m;
  m.name = "misc-nodes";
  m.tensors.push_back({"model.norm.weight", Dims{16}, DType::BF16});
  m.tensors.push_back({"model.layers.0.mlp.down_proj.weight", Dims{8, 4}, DType::BF16});
  PlanOptions o;
  o.gpus_per_node = 2;
  const Plan plan = plan_reshard(m, test::sys(4, Parallelism{}, 2, Parallelism{}), o);
  ASSERT_TRUE(verify_plan(plan).ok());
  ASSERT_EQ(plan.buckets.size(), 1u);
  EXPECT_EQ(plan.buckets[0].root, 0);
  EXPECT_EQ(plan.groups[plan.buckets[0].group].ranks, (std::vector<int>{0, 1, 4, 5}));
  o.gpus_per_node = 0;
  const Plan blind = plan_reshard(m, test::sys(4, Parallelism{}, 2, Parallelism{}), o);
  EXPECT_EQ(blind.groups[blind.buckets[0].group].ranks, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

// --fanout auto chooses for the whole plan: Qwen3-4B (shipped in plans/) DP2 -> TP1 x PP2 x DP2. Each
// param alone prefers direct (its two gen replicas and two train holders tie, direct has fewer
// messages), but then each train rank sends every param of both gen stages twice: 2 x 2.50 GiB
// against the plan's bound of 2.50 GiB, efficiency 0.50. All two-phase: each train rank sends each
// byte once, 1.00.
TEST(FanoutChoice, AutoChoosesForTheWholePlan) {
  const ModelMeta model = load_model(std::string(RESHARD_SOURCE_DIR) + "/plans/qwen3-4b.json");
  Parallelism gen;
  gen.pp = 2;
  PlanOptions o;
  const Plan plan = plan_reshard(model, test::sys(2, Parallelism{}, 4, gen), o);
  const PlanStats auto_stats = compute_stats(plan);
  EXPECT_NEAR(auto_stats.efficiency, 1.0, 1e-9);
  EXPECT_EQ(auto_stats.lower_bound_bytes, 2689597440);
  EXPECT_EQ(auto_stats.busiest_bytes, 2689597440);
  for (const ParamPlan& p : plan.params)
    if (p.path == Path::Bulk) {
      EXPECT_EQ(p.fanout, Fanout::TwoPhase) << p.name;
    }
  o.fanout = FanoutMode::Direct;
  const PlanStats direct = compute_stats(plan_reshard(model, test::sys(2, Parallelism{}, 4, gen), o));
  EXPECT_EQ(direct.busiest_bytes, 5379194880);
  EXPECT_NEAR(direct.efficiency, 0.5, 1e-3);
  EXPECT_EQ(plan.options.fanout, FanoutMode::Auto);  // the plan records what was asked
}

}  // namespace
}  // namespace reshard
