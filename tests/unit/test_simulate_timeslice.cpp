// The time-slice term of `reshard simulate` (SystemModel::slice_us, simulate.h "Shared memory system"):
// on a GPU time-sliced between processes, a rank's transport passes of one batch queue in its context
// and share its time slices; copies longer than a slice are preempted and switched in again.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <utility>

#include "reshard/core/model.h"
#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "reshard/core/system_presets.h"
#include "test_support.h"

namespace reshard {
namespace {

// small_mlp(n) (16 x 32 BF16 weights, 1 KiB) from TP2 over 2 train ranks to 2 gen ranks that each hold
// every weight whole: each gen rank receives from both train ranks (two peers, two passes per batch).
Plan two_peer_plan(int n) {
  return plan_reshard(test::small_mlp(n, "sim-slice"), test::system_of(2, 1, 2, 1, 2, 1), PlanOptions{});
}

// 1 train -> 2 gen (TP2): each gen rank receives 8 halves of 512 B from rank 0, 4 KiB, one pass.
Plan one_peer_plan() { return test::small_mlp_plan(8, "sim-slice", 1, 2, 2); }

TEST(SimulateSlice, PassesOfOneBatchShareASlice) {
  // Pull: each gen rank copies from two peers in its one batch: a switch per pass without a slice,
  // one per batch with a slice longer than the copies.
  const Plan p = two_peer_plan(8);
  const SimPhase per_pass = simulate(p, test::time_sliced_gpu("slice-test", 30, 0)).phases.front();
  const SimPhase sliced = simulate(p, test::time_sliced_gpu("slice-test", 30, 1e6)).phases.front();
  EXPECT_EQ(per_pass.switches, 4);
  EXPECT_EQ(sliced.switches, 2);
  EXPECT_NEAR(per_pass.seconds - sliced.seconds, 2 * 30e-6, 1e-9);
  // Push: the two train ranks copy, each to two receivers (two passes) in one batch.
  SystemModel push = test::time_sliced_gpu("slice-test", 30, 0);
  push.ipc_push = true;
  EXPECT_EQ(simulate(p, push).phases.front().switches, 4);
  push.slice_us = 1e6;
  EXPECT_EQ(simulate(p, push).phases.front().switches, 2);
}

TEST(SimulateSlice, CopiesLongerThanASliceAreSwitchedInOncePerSlice) {
  // Copies at 1 GB/s: each gen rank's pass copies 4096 B, 4.096 us of GPU time alone.
  const Plan p = one_peer_plan();
  const double us = 4.096;
  for (const auto& [slice, per_rank] : {std::pair{1.5, 3}, {3.0, 2}, {4.0, 2}, {5.0, 1}, {1e6, 1}}) {
    const SimPhase with = simulate(p, test::time_sliced_gpu("slice-test", 30, slice, 1)).phases.front();
    const SimPhase without = simulate(p, test::time_sliced_gpu("slice-test", 0, slice, 1)).phases.front();
    EXPECT_EQ(with.switches, 2 * per_rank) << "slice " << slice << " us, copies " << us << " us";
    EXPECT_NEAR(with.seconds - without.seconds, 2 * per_rank * 30e-6, 1e-9) << "slice " << slice;
  }
  // Without a slice: one switch per pass, however long.
  EXPECT_EQ(simulate(p, test::time_sliced_gpu("slice-test", 30, 0, 1)).phases.front().switches, 2);
}

TEST(SimulateSlice, BatchesAreSeparateRunsOnlyOneAtATime) {
  // Pull, batches of 2 ops (one weight's two halves, from the two peers, posted at once: one launch),
  // copies free, switches 3 ms. One batch at a time (window 1): at t = 0 the GPU switches into gen rank
  // 2, then 3 (6 ms); the train ranks post the next weight once both gen ranks have pulled the last,
  // and both gen ranks' pulls of it are ready at that same moment. If the GPU starts on the context
  // still loaded, each later weight costs one switch (2 + 7 = 9); if on the other, two (16). Which one
  // it is rests on a tie that the walk settles only to within 10 us a batch (kTurnsSettled), so only
  // the range is checked, and that the GPU never idles: the phase takes its switches' time. Window 2:
  // two weights at a time, 2 + 3 = 5 to 2 x 4 = 8. Windows 8 and 16: all 8 batches are posted at once,
  // each context's passes are all queued when it is switched in, one switch each.
  const Plan p = two_peer_plan(8);
  SystemModel m = test::time_sliced_gpu("slice-test", 3000, 0);
  m.batch.batch_ops = 2;
  m.batch.window = 1;
  const SimPhase per_pass = simulate(p, m).phases.front();
  EXPECT_EQ(per_pass.switches, 2 * 8 * 2);
  m.slice_us = 1e6;
  for (const auto& [window, least, most] : {std::tuple{1, 9, 16}, {2, 5, 8}, {8, 2, 2}, {16, 2, 2}}) {
    m.batch.window = window;
    const SimPhase bulk = simulate(p, m).phases.front();
    EXPECT_EQ(bulk.batches, 8);
    EXPECT_GE(bulk.switches, least) << "window " << window;
    EXPECT_LE(bulk.switches, most) << "window " << window;
    // 8 batches, each settled to within 10 us; a wait's launch held behind the copier's previous one
    // (SliceWork::after) until that is done in the turns adds up to one more settling step a batch
    // (with the walk settled to 0.5 us the phase is exactly its switches' time).
    EXPECT_NEAR(bulk.seconds, static_cast<double>(bulk.switches) * 3e-3, 8 * 20e-6) << "window " << window;
  }
}

TEST(SimulateSlice, ARunAfterTheSameContextsRunIsNotSwitchedInAgain) {
  // Qwen3-4B (plans/) DP2 -> TP2, the H200 record 1a, misc at window 1: three buckets rooted at train
  // ranks 0, 1, 0 (the planner's balance), cut at the 256 MiB message cap into 4, 4 and 2 broadcasts;
  // in push each root copies to the three members, the members copy nothing. One batch at a time, so
  // every batch is a run, in the order 0 0 0 0 1 1 1 1 0 0: the GPU changes context three times (the
  // first root is switched in, then 1, then 0 again), not once per batch (10). The cuda-ipc trace of
  // this run (results/gpu/extra/trace_19254c7/) shows the same: a root's copies take 134 us longer
  // after the other root's, none longer after its own.
  const ModelMeta model = load_model(std::string(RESHARD_SOURCE_DIR) + "/plans/qwen3-4b.json");
  Parallelism gen;
  gen.tp = 2;
  const Plan plan = plan_reshard(model, test::sys(2, Parallelism{}, 2, gen), PlanOptions{});
  ASSERT_EQ(plan.buckets.size(), 3u);
  EXPECT_EQ(plan.buckets[0].root, 0);
  EXPECT_EQ(plan.buckets[1].root, 1);
  EXPECT_EQ(plan.buckets[2].root, 0);
  SystemModel m = find_system_preset("h200-shared-1gpu");
  m.ipc_push = true;
  m.batch.window = 1;
  const SimResult r = simulate(plan, m);
  const SimPhase& misc = r.phases.back();
  ASSERT_EQ(misc.name, "misc");
  EXPECT_EQ(misc.batches, 10);
  EXPECT_EQ(misc.switches, 3);
}

TEST(SimulateSlice, HandOffsOnOneGpuWaitForTheirTurns) {
  // The 8-rank two-phase plan of results/gpu/window_push_nosync (Qwen3-4B, train PP2 x DP2 -> gen TP2 x
  // DP2, plan 15cb0a8307a5a6be) at window 16, push: the gen ranks root the fan-outs to their DP peer,
  // so their batches are a few ops each, each waited for before the next fan-out. Its `--ipc-trace`
  // (results/gpu/window_push_nosync/trace/, step 8) changes copying rank 55 times in a 12.5 ms stage.
  // Walked without the turns the passes bunch at the stage's start: 7 switches and the shared copy
  // bound, 4.7 ms. With the turns the hand-offs wait for the GPU: at least the trace's 55 changes (a
  // lower bound: launches inside a wait are not traced) and at most 85 (the current executor's H100
  // trace of this stage at window 16, results/gpu/trace_w4_h100/, changes rank 79-81 times), within
  // 25 % of the measured 12.47 ms (results/gpu/window_push_nosync/ipc/ipc_qwen3_4b_pp2dp2_tp2dp2_w16.json).
  const ModelMeta model = load_model(std::string(RESHARD_SOURCE_DIR) + "/plans/qwen3-4b.json");
  Parallelism train, gen;
  train.pp = 2;
  gen.tp = 2;
  const Plan plan = plan_reshard(model, test::sys(4, train, 4, gen), PlanOptions{});
  ASSERT_EQ(plan.fingerprint, "15cb0a8307a5a6be");
  SystemModel m = find_system_preset("h200-shared-1gpu");
  m.ipc_push = true;
  m.batch.window = 16;
  const SimPhase pp0 = simulate(plan, m).phases.front();
  ASSERT_EQ(pp0.name, "bulk.pp0");
  EXPECT_GE(pp0.switches, 55);
  EXPECT_LE(pp0.switches, 85);
  EXPECT_NEAR(pp0.seconds, 12.47e-3, 0.25 * 12.47e-3);
}

TEST(SimulateSlice, APushCopierLaunchesEachOpOnceItsReceiverHasPostedIt) {
  // Train TP2 (ranks 0, 1) -> one gen rank (2) holding the 8 weights whole, push, batches of 2 ops, one
  // batch at a time, copies free (1e9 GB/s), switches 30 us, slices longer than the run. A train
  // rank's batch holds two weights' halves, the gen rank's batch one weight's two halves, so the second
  // half of a train batch is posted by the gen rank only once the first has landed: the copier launches
  // each as it comes (cuda_ipc_transport.cpp: a progress pass launches the copies whose descriptions are
  // in), not the batch's copies at once when the last is in. By hand: weight 1 at t = 0, both train
  // ranks ready, the GPU switches into rank 0 then rank 1 (60 us); the gen rank posts weight 2 at 60 us,
  // rank 1 is still loaded and copies first, then one switch into rank 0 (90 us); every later weight
  // likewise starts on the context last switched in and needs one switch: 2 + 7 = 9 switches, 270 us of
  // GPU time at least. (Launching a batch's copies together once its last op is in gave 5.) The phase's
  // time comes from the walk moved by the turns' delays, so only its floor is checked here.
  const Plan p = plan_reshard(test::small_mlp(8, "sim-slice"), test::system_of(2, 1, 2, 1, 1, 1), PlanOptions{});
  SystemModel m = test::time_sliced_gpu("slice-test", 30, 1e6);
  m.ipc_push = true;
  m.batch.batch_ops = 2;
  m.batch.window = 1;
  const SimPhase bulk = simulate(p, m).phases.front();
  EXPECT_EQ(bulk.switches, 9);
  EXPECT_GE(bulk.seconds, 9 * 30e-6);
}

TEST(SimulateSlice, ABatchWaitingForTwoCopiersEndsWithTheLastOfTheirPasses) {
  // Train DP2 (ranks 0, 1) -> one gen rank (2), 3 weights of 1 KiB: one train rank pushes two of them,
  // the other one. Copies at 1 KiB per ms, switches 0.1 ms, one batch each. By hand: the GPU switches
  // into the first copier (0.1 ms) and copies; then into the second (0.1 ms) and copies: 0.2 ms + 3 ms
  // = 3.2 ms, and the gen rank's batch, waiting for both passes, ends then. (The walk once delayed it
  // by each pass's lateness against its own copier's clock, added to the later of the two clocks:
  // where the two-weight copier went first, its 2 ms plus the one-weight pass's 2.2 ms lateness read 4.2.)
  const Plan p = plan_reshard(test::small_mlp(3, "sim-slice"), test::system_of(2, 1, 1, 1, 1, 1), PlanOptions{});
  SystemModel m = test::time_sliced_gpu("slice-test", 100, 1e6, 1024.0 / 1e-3 / 1e9);
  m.ipc_push = true;
  const SimResult r = simulate(p, m);
  const SimPhase& bulk = r.phases.front();
  EXPECT_EQ(bulk.switches, 2);
  EXPECT_NEAR(bulk.seconds, 3.2e-3, 1e-9);
}

TEST(SimulateSlice, GoldensUnpacksAreTheReceiversOwnTurnsAfterEachWait) {
  // Golden, push: 1 train rank broadcasts 2 weights of 1 KiB whole to 2 gen ranks (TP2), one op a batch,
  // window 1, one stream; copies at 1 KiB per ms, switches 0.1 ms. The root's fan-out copy of a weight
  // into both receivers' staging is 1.5 KiB's worth (a read and two writes, halved), 1.5 ms; after each
  // wait a receiver unpacks its half, 0.5 ms, in its own context and synchronizes (executor.cpp,
  // retire_oldest). By hand: root 0.1-1.6; receiver 1.7-2.2 and 2.3-2.8, each posting weight 1 after its
  // unpack; root 2.9-4.4; receivers 4.5-5.0 and 5.1-5.6: 5.6 ms, 6 switches. (With the unpacks inside
  // the batch's wait, as before: the root's two copies back to back, 1 switch, and the bound's bytes,
  // 5 KiB, plus it: 5.1 ms.)
  const Plan p = test::small_mlp_plan(2, "sim-unpack", 1, 2, 2);
  SystemModel m = test::time_sliced_gpu("slice-test", 100, 1e6, 1024.0 / 1e-3 / 1e9);
  m.ipc_push = true;
  m.algo = Algo::Golden;
  m.batch.batch_ops = 1;
  m.batch.window = 1;
  m.batch.streams = 1;
  const SimPhase bulk = simulate(p, m).phases.front();
  EXPECT_EQ(bulk.switches, 6);
  // The walks' damped steps leave the unpacks' waits within tens of us of the turns (kTurnsSettled).
  EXPECT_NEAR(bulk.seconds, 5.6e-3, 5e-5);
}

TEST(SimulateSlice, EachDomainTakesItsOwnTurns) {
  // Golden, push, train TP2 (ranks 0, 1) -> gen DP2 (ranks 2, 3), window 4: both train ranks copy their
  // halves (a fan-out each), both gen ranks unpack. Two ranks a GPU: the train ranks' copies take turns
  // on one GPU and the gen ranks' unpacks on the other, the two lists interleaved in the walk. A
  // copier's launch is held behind its previous wait's (SliceWork::after), which must be numbered
  // within its own domain's list: numbered in the whole walk's, it named another rank's item
  // (schedule_time_slices refuses that). Split over two GPUs the turns fall between one rank a GPU (no
  // turns: 0 switches, 5.0 ms) and all four on one GPU (22 switches, 18.2 ms).
  const Plan p = plan_reshard(test::small_mlp(4, "sim-domains"), test::system_of(2, 1, 2, 1, 2, 1), PlanOptions{});
  SystemModel m = test::time_sliced_gpu("slice-test", 100, 1e6, 1024.0 / 1e-3 / 1e9);
  m.ipc_push = true;
  m.algo = Algo::Golden;
  m.batch.batch_ops = 1;
  m.batch.window = 4;
  auto bulk_on = [&](int64_t ranks_a_gpu) {
    m.gpus_per_node = ranks_a_gpu;
    return simulate(p, m).phases.front();
  };
  const SimPhase alone = bulk_on(1), split = bulk_on(2), shared = bulk_on(4);
  EXPECT_EQ(alone.switches, 0);
  EXPECT_GT(split.switches, 0);
  EXPECT_LT(split.switches, shared.switches);
  EXPECT_GT(split.seconds, alone.seconds);
  EXPECT_LT(split.seconds, shared.seconds);
}

TEST(SimulateSlice, NeverMoreSwitchesThanPassesWhileBatchesFitASlice) {
  // On every preset and both algorithms: with a slice longer than any batch's copies the switches can
  // only merge, and the lower bound still holds; without serial issue or switch cost nothing changes.
  const Plan p = test::small_mlp_plan(16, "sim-slice", 2, 2, 2);
  for (const SystemModel& preset : system_presets())
    for (Algo algo : {Algo::Reshard, Algo::Golden})
      for (bool push : {false, true}) {
        SystemModel base = preset;
        base.algo = algo;
        base.ipc_push = push;
        base.switch_us = 25;
        base.slice_us = 0;
        SystemModel sliced = base;
        sliced.slice_us = 1e6;
        const SimResult r0 = simulate(p, base), r1 = simulate(p, sliced);
        const std::string what = preset.name + (push ? " push " : " pull ") + to_string(algo);
        ASSERT_EQ(r0.phases.size(), r1.phases.size()) << what;
        for (size_t i = 0; i < r0.phases.size(); ++i) {
          EXPECT_LE(r1.phases[i].switches, r0.phases[i].switches) << what << " " << r0.phases[i].name;
          EXPECT_LE(r1.phases[i].seconds, r0.phases[i].seconds + 1e-12) << what << " " << r0.phases[i].name;
        }
        EXPECT_LE(r1.lower_bound_seconds, r1.total_seconds) << what;
        if (!preset.serial_issue) {
          EXPECT_EQ(r0.total_seconds, r1.total_seconds) << what;
        }
      }
}

TEST(SimulateSlice, PresetsValidationAndOutput) {
  // MPS: one server context, nothing time-sliced.
  EXPECT_EQ(find_system_preset("h200-shared-1gpu-mps").slice_us, 0);
  EXPECT_GE(find_system_preset("h200-shared-1gpu").slice_us, 0);
  SystemModel bad = test::time_sliced_gpu("slice-test", 30, -1);
  Problems problems;
  validate_system_model(bad, problems);
  ASSERT_EQ(problems.list().size(), 1u);
  EXPECT_NE(problems.list().front().find("--slice-us"), std::string::npos);

  const Plan p = two_peer_plan(8);
  const SimResult r = simulate(p, test::time_sliced_gpu("slice-test", 30, 250));
  EXPECT_EQ(simulation_json(p, r)["system"]["slice_us"].get<double>(), 250);
  EXPECT_NE(format_simulation(p, r).find("250.0 us time slice"), std::string::npos);
  EXPECT_EQ(format_simulation(p, simulate(p, test::time_sliced_gpu("slice-test", 30, 0))).find("time slice"), std::string::npos);
}

TEST(SimulateSlice, PresetIsTheCommittedMeasurement) {
  // Each time-sliced GPU preset's switch_us and slice_us are its card's committed scripts/gpu_timeslice.sh
  // run's derived values (MPS off), rounded to 0.1 us: a new run must move the preset with it.
  const std::pair<const char*, const char*> cards[] = {
      {"h200-shared-1gpu", "/results/gpu/timeslice/gpu_timeslice.json"},
      {"h100-shared-1gpu", "/results/gpu/timeslice_h100/gpu_timeslice.json"},
  };
  for (const auto& [preset, file] : cards) {
    const std::string path = std::string(RESHARD_SOURCE_DIR) + file;
    std::ifstream in(path);
    ASSERT_TRUE(in) << "cannot open " << path;
    const nlohmann::json off = nlohmann::json::parse(in).at("derived").at("off");
    const SystemModel m = find_system_preset(preset);
    EXPECT_GT(m.slice_us, 0) << preset;
    EXPECT_NEAR(m.slice_us, off.at("timeslice_us").get<double>(), 0.05) << preset;
    EXPECT_NEAR(m.switch_us, off.at("switch_us_for_preset").get<double>(), 0.05) << preset;
  }
}

}  // namespace
}  // namespace reshard
