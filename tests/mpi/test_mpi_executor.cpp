// The executor end to end inside one process per rank: plans built in code from the test models,
// run with the plan and the golden path, every destination byte checked; traffic against the
// plan; agreement errors reach every rank. Cases that do not fit the world size are skipped.
#include <gtest/gtest.h>

#include <algorithm>

#include "reshard/core/model.h"
#include "reshard/core/planner.h"
#include "reshard/core/stats.h"
#include "ceiling.h"
#include "reshard/exec/control.h"
#include "executor.h"
#include "report.h"
#include "reshard/exec/runner.h"

namespace reshard {
namespace {

Control& control() {
  static Control c;
  return c;
}

struct Case {
  const char* name;
  const char* model;
  int train_gpus;
  Parallelism train;
  int gen_gpus;
  Parallelism gen;
  PlanOptions options;
};

Parallelism par(int tp, int pp = 1, int ep = 1) {
  Parallelism p;
  p.tp = tp;
  p.pp = pp;
  p.ep = ep;
  return p;
}

PlanOptions opts(BulkMode bulk, GenLayout layout, FanoutMode fanout, int head_dim = 0) {
  PlanOptions o;
  o.head_dim = head_dim;
  o.bulk = bulk;
  o.gen_layout = layout;
  o.fanout = fanout;
  o.bucket_bytes = 64 << 10;  // several buckets, several roots
  return o;
}

Plan make_plan(const Case& c) {
  SystemConfig sys{c.train, c.gen};
  sys.train.num_gpus = c.train_gpus;
  sys.gen.num_gpus = c.gen_gpus;
  return plan_reshard(load_model(std::string(RESHARD_TEST_DATA) + "/" + c.model), sys, c.options);
}

const Case kCases[] = {
    {"dense_dp2_to_tp2", "tiny-dense.json", 2, par(1), 2, par(2), opts(BulkMode::Ffn, GenLayout::Hf, FanoutMode::Auto)},
    {"dense_pp2_to_dp2_twophase", "tiny-dense.json", 2, par(1, 2), 2, par(1),
     opts(BulkMode::All, GenLayout::Vllm, FanoutMode::TwoPhase)},
    {"moe_ep2_to_tp2_all", "tiny-moe.json", 2, par(1, 1, 2), 2, par(2),
     opts(BulkMode::All, GenLayout::Vllm, FanoutMode::Auto, 16)},
    {"dense_tp2_to_tp2dp2_twophase", "vllm-qwen2.json", 2, par(2), 4, par(2),
     opts(BulkMode::Ffn, GenLayout::Vllm, FanoutMode::TwoPhase)},
    {"moe_ep4_to_tp4_all", "tiny-moe.json", 4, par(1, 1, 4), 4, par(4),
     opts(BulkMode::All, GenLayout::Hf, FanoutMode::Auto)},
    {"moe_pp2ep2_to_tp2dp2_direct", "tiny-moe.json", 4, par(1, 2, 2), 4, par(2),
     opts(BulkMode::Ffn, GenLayout::Vllm, FanoutMode::Direct)},
    // tiny-dense (5 heads in 2 groups) is no GQA model Megatron would build at train tp 2 with --bulk all.
    {"gqa_tp2pp2_to_tp2dp2_twophase", "tiny-gqa.json", 4, par(2, 2), 4, par(2),
     opts(BulkMode::All, GenLayout::Hf, FanoutMode::TwoPhase)},
};

class ExecutorCase : public ::testing::TestWithParam<Case> {};

TEST_P(ExecutorCase, PlanAndGoldenDeliverEveryByte) {
  Control& ctl = control();
  const Case& c = GetParam();
  if (c.train_gpus + c.gen_gpus != ctl.size()) GTEST_SKIP() << c.name << " needs " << c.train_gpus + c.gen_gpus << " ranks";
  const Plan plan = make_plan(c);
  auto transport = make_transport("mpi", ctl);
  auto memory = make_memory_for(*transport);
  // Tiny batches and staging: splitting, staging reuse and batch cuts all get exercised.
  BatchPolicy o;
  o.streams = 2;
  o.batch_ops = 5;
  o.batch_bytes = 16 << 10;
  o.staging_bytes = 8 << 10;
  transport->setup(plan.groups, o.streams);
  Executor ex(plan, ctl.rank(), *transport, *memory, o);
  ex.fill_sources();
  for (Algo algo : {Algo::Reshard, Algo::Golden}) {
    ex.poison_destinations();
    ex.run(algo);
    int64_t wrong = 0;
    for (int64_t w : ex.count_wrong()) wrong += w;
    EXPECT_EQ(ctl.sum(wrong), 0) << c.name << " " << to_string(algo);
  }
  // Phase by phase gives the same bytes as the interleaved run.
  ex.snapshot_destinations();
  ex.poison_destinations();
  for (int ph = 0; ph < phase_count(plan); ++ph) ex.run_phase(Algo::Reshard, ph);
  int64_t diff = 0;
  for (int64_t d : ex.count_different_from_snapshot()) diff += d;
  EXPECT_EQ(ctl.sum(diff), 0);
  // What the ranks sent is what the plan says they send.
  const PlanStats st = compute_stats(plan);
  const Traffic tr = ex.traffic(Algo::Reshard, -1);
  const RankStats& rs = st.ranks[ctl.rank()];
  EXPECT_EQ(tr.sent, rs.bulk_send_bytes + rs.misc_send_bytes);
  // Receivers: bulk bytes plus every bucket (train non-roots receive and discard).
  EXPECT_EQ(tr.received, rs.bulk_recv_bytes + rs.misc_recv_bytes);
  EXPECT_GT(ex.batches_posted(), 0);
}

INSTANTIATE_TEST_SUITE_P(Plans, ExecutorCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

// The two ceilings on host memory and the MPI transport (the sendrecv one is NCCL's on GPUs): each
// phase row gets the busiest rank's receive bytes and a positive time; gen ranks spread over the
// train ranks for sendrecv.
TEST(Ceiling, BothKindsMoveEachRanksReceiveBytes) {
  Control& ctl = control();
  // 2 train ranks (dp 2), the rest gen tp 2: with 6 or 8 ranks a train rank serves several gen ranks.
  const Case c{"ceiling", "tiny-dense.json", 2, par(1), ctl.size() - 2, par(2),
               opts(BulkMode::All, GenLayout::Hf, FanoutMode::Auto)};
  if (ctl.size() < 4 || ctl.size() % 2 != 0) GTEST_SKIP() << "needs an even world of at least 4 ranks";
  const Plan plan = make_plan(c);
  for (int g = plan.train_world(); g < plan.world(); ++g) {
    EXPECT_GE(ceiling_peer(plan, g), 0);
    EXPECT_LT(ceiling_peer(plan, g), plan.train_world());
  }
  EXPECT_EQ(ceiling_peer(plan, plan.train_world()), 0);
  auto transport = make_transport("mpi", ctl);
  auto memory = make_memory_for(*transport);
  transport->setup(plan.groups, 1);
  EXPECT_EQ(ceiling_kind_for(*transport, *memory), CeilingKind::SendRecv);  // run --ceiling on, host memory
  const auto lb = compute_phase_lower_bounds(plan).received;
  for (CeilingKind kind : {CeilingKind::Copy, CeilingKind::SendRecv}) {
    std::vector<PhaseRow> rows(lb.size() + 1);
    add_ceiling(ctl, plan, *memory, *transport, kind, rows, 0, 1);
    std::vector<int64_t> total(plan.world(), 0);  // per rank over all phases
    for (size_t ph = 0; ph < lb.size(); ++ph) {
      const int64_t busiest = *std::max_element(lb[ph].begin(), lb[ph].end());
      EXPECT_EQ(rows[ph].ceiling_bytes, busiest) << to_string(kind) << " phase " << ph;
      EXPECT_EQ(rows[ph].has_ceiling(), busiest > 0) << to_string(kind) << " phase " << ph;
      for (int r = 0; r < plan.world(); ++r) total[r] += lb[ph][r];
    }
    EXPECT_EQ(rows.back().ceiling_bytes, *std::max_element(total.begin(), total.end())) << to_string(kind);
    EXPECT_GT(rows.back().ceiling_gbps(), 0) << to_string(kind);
  }
  EXPECT_EQ(memory->current_bytes(), 0);  // the scratch blocks are freed
}

TEST(Agreement, DifferentPlansFailEveryRankWithOneMessage) {
  Control& ctl = control();
  Case c = kCases[0];
  c.train_gpus = ctl.size() / 2;
  c.gen_gpus = ctl.size() - c.train_gpus;
  c.gen = par(c.gen_gpus);
  Plan plan = make_plan(c);
  if (ctl.rank() == 1) plan.fingerprint = "0123456789abcdef";
  try {
    check_plan_agreement(ctl, plan, "p.json");
    ADD_FAILURE() << "mismatched fingerprints accepted";
  } catch (const AgreedError& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    EXPECT_NE(std::string(e.what()).find("different plans"), std::string::npos) << e.what();
  }
}

TEST(Agreement, WorldSizeMustMatchThePlan) {
  Control& ctl = control();
  Case c = kCases[0];
  c.train_gpus = 1;
  c.gen_gpus = ctl.size();  // one rank too many for this world
  c.train = par(1);
  c.gen = par(1);
  const Plan plan = make_plan(c);
  try {
    check_plan_agreement(ctl, plan, "p.json");
    ADD_FAILURE() << "world size mismatch accepted";
  } catch (const AgreedError& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    EXPECT_NE(std::string(e.what()).find("mpirun -np " + std::to_string(ctl.size() + 1)), std::string::npos) << e.what();
  }
}

TEST(Agreement, OneRankFailingIsKnownEverywhere) {
  Control& ctl = control();
  try {
    ctl.agree(ctl.rank() == ctl.size() - 1 ? 3 : 0, "last rank is unwell");
    ADD_FAILURE() << "no error";
  } catch (const AgreedError& e) {
    EXPECT_EQ(e.code(), ErrorCode::Runtime);
    EXPECT_STREQ(e.what(), "last rank is unwell");
  }
}

}  // namespace
}  // namespace reshard
