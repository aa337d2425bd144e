// Per-phase lower bounds (compute_phase_lower_bounds): hand-computed on a small plan, and consistent
// with compute_stats' totals and with the plan's own bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "reshard/core/planner.h"
#include "reshard/core/stats.h"
#include "test_support.h"

namespace reshard {
namespace {

// Two decoder layers with only an MLP (bulk under --bulk ffn), an embedding and a final norm (misc).
ModelMeta two_layer_mlp() {
  ModelMeta m;
  m.name = "two-layer-mlp";
  m.tensors.push_back({"model.embed_tokens.weight", Dims{8, 4}, DType::BF16});     // 64 B
  m.tensors.push_back({"model.layers.0.mlp.gate_proj.weight", Dims{6, 4}, DType::BF16});   // 48 B
  m.tensors.push_back({"model.layers.0.mlp.down_proj.weight", Dims{4, 6}, DType::BF16});   // 48 B
  m.tensors.push_back({"model.layers.1.mlp.gate_proj.weight", Dims{10, 4}, DType::BF16});  // 80 B
  m.tensors.push_back({"model.layers.1.mlp.down_proj.weight", Dims{4, 10}, DType::BF16});  // 80 B
  m.tensors.push_back({"model.norm.weight", Dims{4}, DType::F32});                 // 16 B
  return m;
}

// A small MoE model over two train stages, so stages, experts and replicas all differ (13-row experts:
// uneven over ep/tp).
ModelMeta small_moe(int layers, int experts) { return test::small_moe(layers, experts, 13, "small-moe"); }

using test::system_of;

// Train pp=2 (dp=2: each stage's two ranks hold every tensor of the stage whole), gen tp=2.
TEST(PhaseLowerBounds, HandComputed) {
  const Plan plan = plan_reshard(two_layer_mlp(), system_of(4, 2, 1, 1, 2, 2), PlanOptions{});
  ASSERT_EQ(plan.world(), 6);
  ASSERT_EQ(plan.train_world(), 4);
  // Megatron order (tp, dp, pp): stage 0 is ranks 0-1, stage 1 ranks 2-3; gen ranks 4-5.
  const PhaseLowerBounds lb = compute_phase_lower_bounds(plan);
  ASSERT_EQ(lb.phases(), 3);  // bulk.pp0, bulk.pp1, misc
  // bulk.pp0: 96 B of MLP leave stage 0 once, shared by its two holders (48 B each); each gen rank
  // receives half of each matrix (24 + 24 B).
  EXPECT_EQ(lb.moved[0], (std::vector<int64_t>{48, 48, 0, 0, 48, 48}));
  EXPECT_EQ(lb.received[0], (std::vector<int64_t>{0, 0, 0, 0, 48, 48}));
  // bulk.pp1: 160 B, the same way.
  EXPECT_EQ(lb.moved[1], (std::vector<int64_t>{0, 0, 80, 80, 80, 80}));
  EXPECT_EQ(lb.received[1], (std::vector<int64_t>{0, 0, 0, 0, 80, 80}));
  // misc: one bucket per stage (embedding 64 B from stage 0, norm 16 B from stage 1); each root
  // sends its bucket, every gen rank receives both.
  ASSERT_EQ(plan.buckets.size(), 2u);
  std::vector<int64_t> misc{0, 0, 0, 0, 80, 80};
  for (const MiscBucket& b : plan.buckets) misc[b.root] += b.bytes;
  EXPECT_EQ(plan.buckets[0].bytes + plan.buckets[1].bytes, 80);
  EXPECT_LT(plan.buckets[0].root, 2);
  EXPECT_GE(plan.buckets[1].root, 2);
  EXPECT_EQ(lb.moved[2], misc);
  EXPECT_EQ(lb.received[2], (std::vector<int64_t>{0, 0, 0, 0, 80, 80}));
  EXPECT_EQ(lb.stage_unique, (std::vector<int64_t>{96, 160, 0}));

  const PlanStats st = compute_stats(plan);
  const std::vector<int64_t> per_rank{48, 48, 80, 80, 128, 128};
  for (int r = 0; r < plan.world(); ++r)
    EXPECT_EQ(st.ranks[r].lower_bound_bytes, per_rank[r]) << "rank " << r;
  // A gen rank's 128 B beat every stage's unique bytes spread over its ranks (96/2, 160/2).
  EXPECT_EQ(st.lower_bound_bytes, 128);
}

// The per-phase tables sum to compute_stats' per-rank bounds and partition the plan's bytes.
TEST(PhaseLowerBounds, SumsMatchStats) {
  for (const SystemConfig& sys : {system_of(8, 2, 1, 4, 4, 4), system_of(8, 2, 2, 2, 2, 1),
                                  system_of(4, 1, 2, 2, 8, 2)}) {
    const Plan plan = plan_reshard(small_moe(4, 8), sys, PlanOptions{});
    const PhaseLowerBounds lb = compute_phase_lower_bounds(plan);
    const PlanStats st = compute_stats(plan);
    const int stages = std::max(plan.system.train.pp, 1);
    ASSERT_EQ(lb.phases(), stages + 1);
    ASSERT_EQ(lb.received.size(), lb.moved.size());
    ASSERT_EQ(lb.stage_unique.size(), lb.moved.size());
    const int64_t misc_bytes = std::accumulate(plan.buckets.begin(), plan.buckets.end(), int64_t{0},
                                               [](int64_t a, const MiscBucket& b) { return a + b.bytes; });
    ASSERT_GT(misc_bytes, 0);
    int64_t bound = 0;
    for (int r = 0; r < plan.world(); ++r) {
      const bool gen = r >= plan.train_world();
      int64_t moved = 0, received = 0;
      for (int ph = 0; ph < stages; ++ph) {
        moved += lb.moved[ph][r];
        received += lb.received[ph][r];
      }
      EXPECT_EQ(moved, st.ranks[r].lower_bound_bytes) << "rank " << r;
      // A gen rank must receive all it moves; a train rank receives nothing.
      EXPECT_EQ(received, gen ? moved : 0) << "rank " << r;
      EXPECT_EQ(lb.received[stages][r], gen ? misc_bytes : 0) << "rank " << r;
      if (gen) bound = std::max(bound, moved);
    }
    // Each bulk phase: the gen ranks together receive every bulk byte of the stage once per gen
    // replica, and the distinct src boxes add up to the stage's bulk bytes.
    std::vector<int64_t> stage_bytes(stages + 1, 0);
    for (const ParamPlan& p : plan.params)
      if (p.path == Path::Bulk) stage_bytes[p.pp_stage] += p.bytes();
    const int64_t gen_replicas = plan.system.gen.dp;
    ASSERT_GT(gen_replicas, 0);
    for (int ph = 0; ph < stages; ++ph) {
      int64_t gen_total = 0;
      for (int r = plan.train_world(); r < plan.world(); ++r) gen_total += lb.received[ph][r];
      EXPECT_EQ(gen_total, stage_bytes[ph] * gen_replicas) << "phase " << ph;
      EXPECT_EQ(lb.stage_unique[ph], stage_bytes[ph]) << "phase " << ph;
      bound = std::max(bound, lb.stage_unique[ph] * stages / plan.train_world());
    }
    EXPECT_EQ(lb.stage_unique[stages], 0);
    EXPECT_EQ(bound, st.lower_bound_bytes);
  }
}

}  // namespace
}  // namespace reshard
