// cuda-ipc push mode in `reshard simulate` (SystemModel::ipc_push, simulate.h "Copies"): the sender
// copies, a broadcast root fans one read out to the members keeping the same pieces; checked by hand
// on small plans against pull mode.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "reshard/core/system_presets.h"
#include "test_support.h"

namespace reshard {
namespace {

// Copies at 1 GB/s and nothing else (test::one_shared_gpu), in push or pull mode.
SystemModel one_gpu(bool push) {
  SystemModel m = test::one_shared_gpu("push-test", 1);
  m.ipc_push = push;
  return m;
}

const SimPhase& phase(const SimResult& r, const std::string& name) {
  for (const SimPhase& p : r.phases)
    if (p.name == name) return p;
  throw std::runtime_error("no phase " + name);
}

int64_t bulk_bytes(const Plan& p) {
  int64_t b = 0;
  for (const ParamPlan& param : p.params)
    if (param.path == Path::Bulk) b += param.bytes();
  return b;
}

TEST(SimulatePush, MiscBroadcastIsOneFanOutCopyOnTheRoot) {
  // Misc only (one norm), 1 train -> k gen ranks: every gen rank keeps the bucket. Pull: each copies it
  // (k reads + k writes); push: the root reads it once and writes it k times, (1 + k) / 2 copies' worth.
  for (int k : {1, 2, 3, 7}) {
    const Plan p = test::small_mlp_plan(0, "sim-push", 1, k, 1);
    ASSERT_EQ(p.buckets.size(), 1u);
    const int64_t bucket = p.buckets[0].bytes;
    const int root = p.buckets[0].root;
    const SimResult pull = simulate(p, one_gpu(false)), push = simulate(p, one_gpu(true));
    EXPECT_EQ(phase(pull, "misc").shared_copy_bytes, bucket * k) << k;
    EXPECT_EQ(phase(push, "misc").shared_copy_bytes, bucket * (1 + k) / 2) << k;
    EXPECT_EQ(push.copy_bytes, bucket * (1 + k) / 2) << k;
    // Every copy and launch is the root's: one copy (one piece, one fan-out), one batched launch.
    SystemModel m = one_gpu(true);
    m.per_launch_us = 1e6;  // the launch decides the slowest rank
    const SimPhase misc = phase(simulate(p, m), "misc");
    EXPECT_EQ(misc.slowest_rank, root) << k;
    EXPECT_EQ(misc.copies, 1) << k;
    EXPECT_EQ(misc.launches, 1) << k;
  }
}

TEST(SimulatePush, OnOneGpuTheCopiesTimeTheBytesNotALink) {
  // Misc only, 1 train -> 7 gen ranks on one GPU at 1 GB/s, every other cost 0: the root's fan-out
  // reads the bucket once and writes it 7 times, 4 copies' worth, and that is the whole phase. A linear
  // broadcast over links would time the root's 7 sends on its "NVLink", 7 buckets' worth, but on one
  // GPU that link is the same memory the copies move (the H200 8-rank misc at window 1 measured
  // 5.1-5.5 ms against 11.5 predicted that way, 5.5 now: results/gpu/window_direct/).
  const Plan p = test::small_mlp_plan(0, "sim-push", 1, 7, 1);
  ASSERT_EQ(p.buckets.size(), 1u);
  const double bucket = static_cast<double>(p.buckets[0].bytes);
  const SimPhase misc = phase(simulate(p, one_gpu(true)), "misc");
  EXPECT_NEAR(misc.seconds, bucket * 4 / 1e9, 1e-12);
  // Pull: the 7 members each copy the bucket, 7 copies' worth through the shared memory.
  EXPECT_NEAR(phase(simulate(p, one_gpu(false)), "misc").seconds, bucket * 7 / 1e9, 1e-12);
}

TEST(SimulatePush, AFanOutReadsOncePerEightMembers) {
  // 1 train -> 10 gen ranks: the executor's fan-out writes at most 8 destinations per read, so the
  // root copies the bucket as 2 fan-outs: 2 reads + 10 writes.
  const Plan p = test::small_mlp_plan(0, "sim-push", 1, 10, 1);
  ASSERT_EQ(p.buckets.size(), 1u);
  SystemModel m = one_gpu(true);
  m.per_launch_us = 1e6;
  const SimPhase misc = phase(simulate(p, m), "misc");
  EXPECT_EQ(misc.shared_copy_bytes, p.buckets[0].bytes * (2 + 10) / 2);
  EXPECT_EQ(misc.copies, 2);
  EXPECT_EQ(misc.launches, 1);
}

TEST(SimulatePush, TransfersAreCopiedBySendersOnePassPerReceiver) {
  // 1 train -> TP2: the same bytes are copied once in both modes, but by the sender in push: its copies
  // go out in one launch per (batch, stream, receiver), and the receivers launch nothing.
  const int n = 8;
  const Plan p = test::small_mlp_plan(n, "sim-push", 1, 2, 2);
  SystemModel m = one_gpu(true);
  m.per_launch_us = 1e6;
  const SimPhase push = simulate(p, m).phases.front();
  m.ipc_push = false;
  const SimPhase pull = simulate(p, m).phases.front();
  EXPECT_EQ(push.shared_copy_bytes, pull.shared_copy_bytes);
  EXPECT_EQ(push.slowest_rank, 0);
  EXPECT_EQ(push.copies, static_cast<int64_t>(p.transfers.size()));
  EXPECT_EQ(push.launches, 2);
  EXPECT_NE(pull.slowest_rank, 0);  // pull: a gen rank, one launch for its one peer
  EXPECT_EQ(pull.launches, 1);
}

TEST(SimulatePush, SwitchPassesAreTheSendersOnes) {
  // One time-sliced GPU. 1 train -> TP2: push has one launching rank (the sender): no switch; pull has
  // two (the receivers), a pass each. DP2 -> TP2: both train ranks send in push, a pass per receiver.
  SystemModel m = one_gpu(true);
  m.copy_gbps = m.shared_copy_gbps = 1e9;
  m.serial_issue = true;
  m.switch_us = 30;
  const Plan one = test::small_mlp_plan(8, "sim-push", 1, 2, 2);
  EXPECT_EQ(simulate(one, m).phases.front().switches, 0);
  m.ipc_push = false;
  EXPECT_EQ(simulate(one, m).phases.front().switches, 2);
  m.ipc_push = true;
  const Plan two = test::small_mlp_plan(8, "sim-push", 2, 2, 2);
  std::set<std::pair<int, int>> pairs;  // (sender, receiver): one pass each (one batch, one stream)
  std::set<int> senders;
  for (const Transfer& t : two.transfers) {
    pairs.emplace(t.src, t.dst);
    senders.insert(t.src);
  }
  ASSERT_EQ(senders.size(), 2u);
  const SimPhase bulk = simulate(two, m).phases.front();
  EXPECT_EQ(bulk.switches, static_cast<int64_t>(pairs.size()));
  EXPECT_NEAR(bulk.seconds, static_cast<double>(pairs.size()) * 30e-6, 1e-9);
  // Misc: only the bucket root copies, so no switch in push; pull: every gen rank copies.
  EXPECT_EQ(phase(simulate(two, m), "misc").switches, 0);
  m.ipc_push = false;
  EXPECT_EQ(phase(simulate(two, m), "misc").switches, 2);
}

TEST(SimulatePush, GoldenRootFansTheShardOutIntoEveryStaging) {
  // Golden over the param's group {train 0, gen 1, gen 2}: every shard reaches both gen ranks' staging.
  // Pull: 2 copies of each shard (one per member) + the unpacks; push: 1.5 (1 read + 2 writes) + the
  // same unpacks, which stay the members'.
  const Plan p = test::small_mlp_plan(8, "sim-push", 1, 2, 2);
  SystemModel m = one_gpu(false);
  m.algo = Algo::Golden;
  const SimPhase pull = simulate(p, m).phases.front();
  m.ipc_push = true;
  const SimPhase push = simulate(p, m).phases.front();
  EXPECT_EQ(pull.shared_copy_bytes - push.shared_copy_bytes, bulk_bytes(p) / 2);
  m.per_launch_us = 1;
  m.nvlink_gbps = m.nic_gbps = m.copy_gbps = m.shared_copy_gbps = 1e9;
  // Each gen rank unpacks its half of every strided weight (a launch each) in both modes.
  const SimPhase unpacks = simulate(p, m).phases.front();
  EXPECT_NE(unpacks.slowest_rank, 0);
  EXPECT_EQ(unpacks.launches, 8);
}

TEST(SimulatePush, OnlyCudaIpcHasAMode) {
  // Without box ops (MPI, NCCL, the NVLink/NIC presets) ipc_push changes nothing.
  const Plan p = test::small_mlp_plan(16, "sim-push", 2, 2, 2);
  for (const SystemModel& preset : system_presets()) {
    if (preset.box_ops) continue;
    SystemModel pull = preset, push = preset;
    push.ipc_push = true;
    const SimResult a = simulate(p, pull), b = simulate(p, push);
    EXPECT_EQ(a.total_seconds, b.total_seconds) << preset.name;
    EXPECT_EQ(a.copy_bytes, b.copy_bytes) << preset.name;
  }
  EXPECT_FALSE(SystemModel{}.ipc_push);  // a hand-built model is pull, as before push existed
}

TEST(SimulatePush, PushIsFasterOnTheSharedGpuAndAboveTheLowerBound) {
  for (const char* name : {"h200-shared-1gpu", "h200-shared-1gpu-mps", "h100-shared-1gpu"})
    for (Algo algo : {Algo::Reshard, Algo::Golden})
      for (int n : {1, 64}) {
        SystemModel m = find_system_preset(name);
        m.algo = algo;
        const Plan p = test::small_mlp_plan(n, "sim-push", 2, 4, 2);
        const SimResult pull = simulate(p, m);
        m.ipc_push = true;
        const SimResult push = simulate(p, m);
        EXPECT_LT(push.copy_bytes, pull.copy_bytes) << name;
        EXPECT_LE(phase(push, "misc").seconds, phase(pull, "misc").seconds) << name;
        EXPECT_GT(push.lower_bound_seconds, 0) << name;
        EXPECT_LE(push.lower_bound_seconds, push.total_seconds * (1 + 1e-9))
            << name << " " << to_string(algo);
        EXPECT_LE(push.lower_bound_seconds, pull.lower_bound_seconds) << name;
      }
}

TEST(SimulatePush, JsonNamesTheMode) {
  const Plan p = test::small_mlp_plan(2, "sim-push", 1, 2, 2);
  EXPECT_EQ(simulation_json(p, simulate(p, one_gpu(true)))["system"]["ipc_mode"].get<std::string>(), "push");
  EXPECT_EQ(simulation_json(p, simulate(p, one_gpu(false)))["system"]["ipc_mode"].get<std::string>(), "pull");
}

}  // namespace
}  // namespace reshard
