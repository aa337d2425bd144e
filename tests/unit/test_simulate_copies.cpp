// The copy model of `reshard simulate` (simulate.h, "Copies" and "Shared memory system") and the
// shared-device and host presets, checked by hand on small plans.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "reshard/core/system_presets.h"
#include "test_support.h"

namespace reshard {
namespace {

// test::small_mlp(n); train (DP, TP `train_tp`) -> TP `gen_tp`.
Plan small_plan(int n, int train_gpus, int train_tp, int gen_gpus, int gen_tp, BulkMode bulk = BulkMode::Ffn) {
  PlanOptions o;
  o.bulk = bulk;
  return plan_reshard(test::small_mlp(n, "sim-copies"), test::system_of(train_gpus, 1, train_tp, 1, gen_gpus, gen_tp), o);
}

// One domain, every cost zero but the ones a test sets.
SystemModel shared(double gbps) {
  SystemModel m;
  m.name = "shared-test";
  m.gpus_per_node = 1 << 20;
  m.nvlink_gbps = m.nic_gbps = m.copy_gbps = m.shared_copy_gbps = gbps;
  m.nvlink_latency_us = m.nic_latency_us = m.launch_us = m.per_op_us = 0;
  m.box_ops = true;
  m.linear_broadcast_max = 1 << 20;
  return m;
}

// shared(1) as a host-staging transport: no box ops, no wire copies, no shared bound.
SystemModel host_staging() {
  SystemModel m = shared(1);
  m.box_ops = false;
  m.shared_copy_gbps = 0;
  m.wire_copies = 0;
  return m;
}

int64_t received_bulk_bytes(const Plan& p) {
  int64_t b = 0;
  for (const Transfer& t : p.transfers) b += t.box.elements() * 2;
  return b;
}

TEST(SimulateCopies, BoxOpsCopyEveryReceivedByteOnce) {
  const Plan p = small_plan(8, 1, 1, 2, 2);  // 1 -> TP2: each gen rank receives half of every weight
  ASSERT_TRUE(p.buckets.size() <= 1u);
  int64_t misc_to_gen = 0;
  for (const MiscBucket& b : p.buckets) misc_to_gen += b.bytes * p.gen_world();
  const SimResult r = simulate(p, shared(1));
  EXPECT_EQ(r.copy_bytes, received_bulk_bytes(p) + misc_to_gen);
  // All ranks share one memory system: the phase takes the bytes every rank copied, at the shared rate
  // (here also the train rank's send time: it serves both gen ranks).
  EXPECT_NEAR(r.phases.front().seconds, received_bulk_bytes(p) / 1e9, 1e-12);
  EXPECT_EQ(r.phases.front().shared_copy_bytes, received_bulk_bytes(p));
}

TEST(SimulateCopies, SerialIssueAddsEveryRanksOpsAndCopies) {
  // 1 train -> 1 gen rank, n params of 1 KiB, one batch: the gen rank issues n ops and n copies, the
  // train rank n ops; with serial_issue the shared device pays all of them plus the bytes.
  const int n = 16;
  const Plan p = small_plan(n, 1, 1, 1, 1);
  ASSERT_EQ(p.transfers.size(), static_cast<size_t>(n));
  SystemModel m = shared(100);
  m.per_op_us = 2;
  m.per_copy_us = 3;
  m.nvlink_latency_us = 50;  // one batch
  m.batch.batch_ops = 1 << 20;
  const double bytes = static_cast<double>(received_bulk_bytes(p));
  const SimResult own = simulate(p, m);  // the gen rank alone: latency + its ops and copies + its bytes
  EXPECT_NEAR(own.phases.front().seconds, 50e-6 + n * 2e-6 + n * 3e-6 + bytes / 100e9, 1e-12);
  m.serial_issue = true;
  const SimResult serial = simulate(p, m);
  EXPECT_NEAR(serial.phases.front().seconds, 50e-6 + 2 * n * 2e-6 + n * 3e-6 + bytes / 100e9, 1e-12);
  EXPECT_TRUE(serial.phases.front().shared_bound);
}

TEST(SimulateCopies, MpiWireCopiesAreInsideTheLinkRate) {
  // 1 train -> 1 gen rank, whole weights (contiguous: nothing packed or unpacked), host staging with 2
  // wire copies per received byte; link and copies at 1 GB/s (1 B/ns). The link is one pair's measured
  // point-to-point, whose copies are the transport's: the gen rank takes b ns, not 2b at its copy rate.
  // The shared memory system still sees them: at 1 GB/s shared, the domain's 2b copied take 2b ns.
  const Plan p = small_plan(8, 1, 1, 1, 1);
  SystemModel m = host_staging();
  m.wire_copies = 2;
  const double b = static_cast<double>(received_bulk_bytes(p));
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, b * 1e-9, 1e-15);
  m.shared_copy_gbps = 1;
  const SimPhase bulk = simulate(p, m).phases.front();
  EXPECT_NEAR(bulk.seconds, 2 * b * 1e-9, 1e-15);
  EXPECT_TRUE(bulk.shared_bound);
}

TEST(SimulateCopies, TransportCopiesOfABatchShareOneLaunchPerPeer) {
  // 1 train -> 1 gen rank, n box-op receives from one peer on one stream, batches of 4 ops: the gen rank
  // pays one batched launch per batch (cuda-ipc launches a pass's copies at once), not one per copy.
  const int n = 16;
  const Plan p = small_plan(n, 1, 1, 1, 1);
  SystemModel m = shared(1e6);
  m.per_launch_us = 7;
  m.batch.batch_ops = 4;
  const SimPhase bulk = simulate(p, m).phases.front();
  EXPECT_EQ(bulk.launches, n / 4);
  EXPECT_EQ(bulk.copies, n);
  EXPECT_EQ(bulk.slowest_rank, 1);
  EXPECT_NEAR(bulk.seconds, n / 4 * 7e-6, 1e-9);
  m.per_copy_us = 1;  // per-copy work comes on top of the launches
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, n / 4 * 7e-6 + n * 1e-6, 1e-9);
}

TEST(SimulateCopies, PacksAndUnpacksAreALaunchEach) {
  // Staged transport: the train rank packs the two strided halves of each of 4 weights (8 copies, a
  // launch each); each gen rank receives in place, its wire copies from one peer in one launch.
  const Plan p = small_plan(4, 1, 1, 2, 2);
  SystemModel m = shared(1e6);
  m.box_ops = false;
  m.per_launch_us = 10;
  const SimPhase bulk = simulate(p, m).phases.front();
  EXPECT_EQ(bulk.slowest_rank, 0);
  EXPECT_EQ(bulk.launches, 8);
  EXPECT_NEAR(bulk.seconds, 8 * 10e-6, 1e-9);
  m.serial_issue = true;  // one device time-sliced: every rank's launches add (8 packs + 2 batched pulls)
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, 10 * 10e-6, 1e-9);
}

TEST(SimulateCopies, StagingTransportsPackAndUnpackStridedBoxes) {
  // down_proj 16 x 32 split over TP2 along dim 1: the sender's halves are strided (packed), the
  // receivers' shards contiguous (received in place). The wire copies come on top.
  const Plan p = small_plan(4, 1, 1, 2, 2);
  SystemModel m = shared(1);
  m.box_ops = false;
  m.wire_copies = 2;
  const SimResult r = simulate(p, m);
  // The bucket holds one param: the root sends it in place, gen ranks receive it in place.
  ASSERT_EQ(p.buckets.size(), 1u);
  ASSERT_EQ(p.buckets[0].params.size(), 1u);
  const int64_t misc = p.buckets[0].bytes * (p.world() - 1) * 2;
  const int64_t bulk = received_bulk_bytes(p);
  EXPECT_EQ(r.copy_bytes, bulk /* pack */ + 2 * bulk /* wire */ + misc);
}

TEST(SimulateCopies, LinearBroadcastRootSendsToEveryMember) {
  // Misc only (no weights, one norm): the bucket root sends the bucket once per other member when the
  // group has at most linear_broadcast_max members.
  const Plan p = small_plan(0, 1, 1, 3, 1);
  ASSERT_EQ(p.buckets.size(), 1u);
  const int64_t members = static_cast<int64_t>(p.groups[p.buckets[0].group].ranks.size());
  ASSERT_GE(members, 3);
  SystemModel m = shared(1);
  m.copy_gbps = m.shared_copy_gbps = 0;  // links only
  const SimResult linear = simulate(p, m);
  EXPECT_EQ(linear.busiest_link_bytes, p.buckets[0].bytes * (members - 1));
  EXPECT_EQ(linear.busiest_link, LinkResource::NvlinkSend);
  m.linear_broadcast_max = 0;  // pipelined ring: every member forwards once
  EXPECT_EQ(simulate(p, m).busiest_link_bytes, p.buckets[0].bytes);
}

TEST(SimulateCopies, BinomialBroadcastRelaysWholeMessages) {
  // One misc bucket over 8 ranks (1 train + 7 gen), links at 1 GB/s, no copies. Open MPI 4.1's
  // MPI_Ibcast above 4 members is binomial (nbc_ibcast.c, skip_dt_decision): the root (v 0) sends the
  // whole bucket to v 1, 2 and 4; v 1 to 3 and 5; v 2 to 6; v 3 to 7. Its link carries 3 buckets, and v 7
  // has the bucket after 3 hops (v 3 from v 1 from v 0): 3 x bytes / 1 GB/s either way. Linear: the
  // root sends 7; a ring: every link 1.
  const Plan p = small_plan(0, 1, 1, 7, 1);
  ASSERT_EQ(p.buckets.size(), 1u);
  ASSERT_EQ(p.groups[p.buckets[0].group].ranks.size(), 8u);
  SystemModel m = shared(1);
  m.copy_gbps = m.shared_copy_gbps = 0;
  m.linear_broadcast_max = 4;
  m.binomial_broadcast_min = 5;
  const int64_t b = p.buckets[0].bytes;
  const SimResult r = simulate(p, m);
  EXPECT_EQ(r.busiest_link_bytes, 3 * b);
  EXPECT_NEAR(r.misc_seconds, 3.0 * static_cast<double>(b) / 1e9, 1e-12);
  m.binomial_broadcast_min = 9;  // not binomial at 8 members: the pipelined ring
  EXPECT_EQ(simulate(p, m).busiest_link_bytes, b);
}

TEST(SimulateCopies, SerialPacksDelayEachSendByItsPack) {
  // 8 down_proj weights of 16 x 32 BF16 from 1 rank to TP2: each gen rank's half is 16 of the 32
  // columns, strided in the source, so every one of the 16 sends packs 512 B first. Links and copies
  // at 1 GB/s (1 B/ns), no wire copies, no shared bound. Overlapped (cuda-ipc's kernels): the train
  // rank's batch takes max(its 8192 B of sends, its 8192 B of packs) = 8192 ns. Serial (the host
  // executor packs op k just before posting it): send k is ready at k x 512 ns and takes 512 ns on the
  // rank's link, so the last ends at 16 x 512 + 512 = 8704 ns, and so does its receiver's batch.
  const Plan p = small_plan(8, 1, 1, 2, 2);
  SystemModel m = host_staging();
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, 8192e-9, 1e-15);
  m.serial_packs = true;
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, 8704e-9, 1e-15);
  const Plan same = small_plan(8, 1, 1, 1, 1);  // whole weights: contiguous, nothing packed
  const double serial = simulate(same, m).phases.front().seconds;
  m.serial_packs = false;
  EXPECT_EQ(serial, simulate(same, m).phases.front().seconds);
}

TEST(SimulateCopies, OpStreamPacksWaitForTheStreamsEarlierBatches) {
  // The plan of SerialPacksDelayEachSendByItsPack (16 sends of 512 B, each packed first; links and
  // copies at 1 B/ns), one op a batch, all on stream 0, window 16. Packed by the rank's thread (MPI),
  // pack k+1 runs while send k is on the wire: the last send ends at 16 x 512 + 512 = 8704 ns. As
  // kernels on a side stream (NCCL, the executor's default), the packs run back to back beside the
  // wire: pack k is done at (k + 1) x 512, send k follows at once, the last ends at 8704 ns too. As
  // kernels on the send's stream (--op-stream-packs), pack k+1 queues behind batch k's group: pack,
  // wire, pack, wire, ... 16 x (512 + 512) = 16384 ns.
  const Plan p = small_plan(8, 1, 1, 2, 2);
  SystemModel m = host_staging();
  m.serial_packs = true;
  m.batch.batch_ops = 1;
  m.batch.window = 16;
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, 8704e-9, 1e-15);
  m.kernel_packs = true;
  ASSERT_TRUE(m.batch.side_stream_packs);
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, 8704e-9, 1e-15);
  m.batch.side_stream_packs = false;
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, 16384e-9, 1e-15);
}

TEST(SimulateCopies, AKernelPackedBatchMovesOnceAllItsPacksAreDone) {
  // The plan and costs of OpStreamPacksWaitForTheStreamsEarlierBatches, with kernel packs (NCCL): the
  // batch's NCCL group is issued at its flush, behind all of its packs. One batch of 16: the packs take
  // 16 x 512 = 8192 ns, then the sends 16 x 512 on the link: 16384 ns, on either stream. Batches of 8:
  // batch 1 packs until 4096 and sends until 8192. On a side stream batch 2 packs meanwhile (4096 to
  // 8192) and sends from 8192 to 12288; on the op's stream its packs queue behind batch 1's group
  // (8192 to 12288) and it sends from 12288 to 16384.
  const Plan p = small_plan(8, 1, 1, 2, 2);
  SystemModel m = host_staging();
  m.serial_packs = true;
  m.kernel_packs = true;
  m.batch.window = 16;
  for (bool side : {true, false}) {
    m.batch.side_stream_packs = side;
    m.batch.batch_ops = 64;
    EXPECT_NEAR(simulate(p, m).phases.front().seconds, 16384e-9, 1e-15) << side;
    m.batch.batch_ops = 8;
    EXPECT_NEAR(simulate(p, m).phases.front().seconds, side ? 12288e-9 : 16384e-9, 1e-15) << side;
  }
}

TEST(SimulateCopies, WithoutSingleCopyTransfersStandStillWhileTheRankPacks) {
  // SerialPacksDelayEachSendByItsPack's plan and costs, without single copy (sender_copies): the train
  // rank's 16 packs of 512 B take 16 x 512 = 8192 ns, during which none of its posted sends moves (its
  // thread is outside MPI); then the 16 sends take 512 ns each on its link: 8192 + 8192 = 16384 ns.
  const Plan p = small_plan(8, 1, 1, 2, 2);
  SystemModel m = host_staging();
  m.serial_packs = true;
  m.sender_copies = true;
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, 16384e-9, 1e-15);
}

TEST(SimulateCopies, WithoutSingleCopyARanksSendsAndReceivesShareItsLink) {
  // BinomialBroadcastRelaysWholeMessages' bucket over 8 ranks as a pipelined ring (binomial from 9):
  // every member but the root receives the b bytes and every member but the tail forwards them, at
  // once; links at 1 GB/s, no copies. Full duplex: b / 1 GB/s. Without single copy (sender_copies) a
  // middle member's thread moves its b in and its b out through one rate: 2 b / 1 GB/s.
  const Plan p = small_plan(0, 1, 1, 7, 1);
  ASSERT_EQ(p.buckets.size(), 1u);
  SystemModel m = shared(1);
  m.copy_gbps = m.shared_copy_gbps = 0;
  m.linear_broadcast_max = 4;
  m.binomial_broadcast_min = 9;
  const double b = static_cast<double>(p.buckets[0].bytes);
  EXPECT_NEAR(simulate(p, m).misc_seconds, b / 1e9, 1e-12);
  m.sender_copies = true;
  EXPECT_NEAR(simulate(p, m).misc_seconds, 2 * b / 1e9, 1e-12);
}

TEST(SimulateCopies, AnOpIsDoneOnNeitherEndBeforeItsBytesAreThroughOnBoth) {
  // One down_proj (16 x 32 BF16) from 1 train rank to gen TP2 x DP2, two-phase: the planner stripes
  // each 512 B half over both replicas, so the train rank sends four 256 B quarters, one to each gen
  // rank, and each gen rank forwards its quarter to the other replica's rank of the same half. Links at
  // 1 GB/s (1 B/ns), no copies. The train rank's link takes the quarters one after another: through at
  // 256, 512, 768 and 1024 ns. A receive is done once its quarter is through on the sender's link too,
  // so the last root forwards from 1024 ns and its member has the quarter at 1280 ns. (Timing each end
  // on its own links alone, every root would be done at 256 ns and the stage at the train link's 1024.)
  PlanOptions o;
  o.fanout = FanoutMode::TwoPhase;
  const Plan p = plan_reshard(test::small_mlp(1, "sim-coupled"), test::system_of(1, 1, 1, 1, 4, 2), o);
  ASSERT_EQ(p.transfers.size(), 4u);
  ASSERT_EQ(p.fanouts.size(), 4u);
  for (const Transfer& t : p.transfers) EXPECT_EQ(t.box.elements(), 128);
  SystemModel m = shared(1);
  m.copy_gbps = m.shared_copy_gbps = 0;
  m.box_ops = false;
  EXPECT_NEAR(simulate(p, m).phases.front().seconds, 1280e-9, 1e-15);
}

TEST(SimulateCopies, GoldenMovesWholeShardsAndIsSlower) {
  const Plan p = small_plan(32, 2, 1, 2, 2);
  SystemModel m = find_system_preset("h200-shared-1gpu");
  const SimResult reshard = simulate(p, m);
  m.algo = Algo::Golden;
  const SimResult golden = simulate(p, m);
  EXPECT_GT(golden.copy_bytes, reshard.copy_bytes);
  EXPECT_GT(golden.phases.front().seconds, reshard.phases.front().seconds);
  EXPECT_EQ(golden.lower_bound_seconds, reshard.lower_bound_seconds);
  EXPECT_LE(golden.lower_bound_seconds, golden.total_seconds);
}

TEST(SimulateCopies, PresetsAreValidAndCopyModelled) {
  for (const char* name : {"cpu-mpi-local", "h200-shared-1gpu", "h200-shared-1gpu-mps", "h100-shared-1gpu"}) {
    const SystemModel m = find_system_preset(name);
    Problems problems;
    validate_system_model(m, problems);
    EXPECT_TRUE(problems.empty()) << name;
    EXPECT_GT(m.copy_gbps, 0) << name;
    EXPECT_GT(m.shared_copy_gbps, 0) << name;
    EXPECT_GE(m.wire_copies, 1) << name;
  }
  EXPECT_TRUE(find_system_preset("h200-shared-1gpu").box_ops);
  // Under MPS the ranks' kernels run concurrently: their issue costs do not add up on the device.
  EXPECT_TRUE(find_system_preset("h200-shared-1gpu").serial_issue);
  EXPECT_TRUE(find_system_preset("h200-shared-1gpu-mps").serial_issue);  // config 3 under MPS says so
  EXPECT_TRUE(find_system_preset("h200-shared-1gpu-mps").box_ops);
  EXPECT_TRUE(find_system_preset("h100-shared-1gpu").box_ops);       // the H200's model, the H100's rates
  EXPECT_TRUE(find_system_preset("h100-shared-1gpu").serial_issue);
  EXPECT_EQ(find_system_preset("cpu-mpi-local").linear_broadcast_max, 4);  // Open MPI libnbc's MPI_Ibcast
  EXPECT_TRUE(find_system_preset("cpu-mpi-local").serial_packs);             // host packs on the rank's thread
  EXPECT_EQ(find_system_preset("cpu-mpi-local").binomial_broadcast_min, 5);  // libnbc above 4 members
  EXPECT_FALSE(find_system_preset("h200-shared-1gpu").serial_packs);         // kernels on a stream
  // NCCL presets: staged packs and unpacks serial with their batch, at the card's device copy rate
  // (system_presets.cpp, with_staged_copies); no shared bound, no box ops.
  // Each pack and unpack launch costs the host what the same copy kernel's launch was fitted at on the
  // card's one-GPU preset (GB200: the H100 host's, assumed).
  struct Staged {
    const char* name;
    double copy, launch_us;
  };
  for (const auto& [name, copy, launch_us] : {Staged{"h100-nvl8-ib400", 1356.2, 3.28}, Staged{"h200-nvl8-ib400", 1911.0, 3.86},
                                              Staged{"gb200-nvl72", 1911.0 * 8 / 4.8, 3.28}}) {
    const SystemModel m = find_system_preset(name);
    Problems problems;
    validate_system_model(m, problems);
    EXPECT_TRUE(problems.empty()) << name;
    EXPECT_DOUBLE_EQ(m.copy_gbps, copy) << name;
    EXPECT_DOUBLE_EQ(m.per_launch_us, launch_us) << name;
    EXPECT_TRUE(m.serial_packs) << name;
    EXPECT_EQ(m.shared_copy_gbps, 0) << name;
    EXPECT_FALSE(m.box_ops) << name;
  }
}

TEST(SimulateCopies, NcclStagedBucketPaysItsPackWireAndUnpackInTurn) {
  // Two misc norms of 8192 BF16 (16 KiB each) from 1 train rank to 1 gen rank: one bucket of 32768 B,
  // packed by the root into staging, broadcast over NVLink, unpacked by the member after its wait
  // (executor.cpp run_ops, retire_oldest). On h200-nvl8-ib400 with its fixed costs zeroed:
  // 32768 / 1911e9 + 32768 / 370e9 + 32768 / 1911e9 = 17.147 + 88.562 + 17.147 = 122.856 ns.
  ModelMeta model;
  model.name = "sim-nccl-bucket";
  model.tensors.push_back({"model.layers.0.input_layernorm.weight", Dims{8192}, DType::BF16});
  model.tensors.push_back({"model.norm.weight", Dims{8192}, DType::BF16});
  const Plan p = plan_reshard(model, test::system_of(1, 1, 1, 1, 1, 1), PlanOptions{});
  ASSERT_EQ(p.buckets.size(), 1u);
  ASSERT_EQ(p.buckets[0].params.size(), 2u);
  ASSERT_EQ(p.buckets[0].bytes, 32768);
  SystemModel m = find_system_preset("h200-nvl8-ib400");
  m.nvlink_latency_us = m.nic_latency_us = m.launch_us = m.per_op_us = 0;
  // The preset's 3.86 us per launch: the root launches a pack per norm before its batch goes out, the
  // member an unpack per norm, each rank's two launches host time of its batch: 7720 + 122.856 ns.
  EXPECT_NEAR(simulate(p, m).misc_seconds, 7842.856e-9, 0.001e-9);
  m.per_launch_us = 0;
  EXPECT_NEAR(simulate(p, m).misc_seconds, 122.856e-9, 0.001e-9);
  m.serial_packs = false;  // copies overlapping the wire, as before: the wire alone
  EXPECT_NEAR(simulate(p, m).misc_seconds, 88.562e-9, 0.001e-9);
}

TEST(SimulateCopies, LowerBoundNeverExceedsThePredictionWithCopies) {
  for (const SystemModel& preset : system_presets())
    for (Algo algo : {Algo::Reshard, Algo::Golden})
      for (int n : {1, 64}) {
        SystemModel m = preset;
        m.algo = algo;
        const SimResult r = simulate(small_plan(n, 2, 1, 2, 2), m);
        EXPECT_GT(r.lower_bound_seconds, 0) << m.name;
        EXPECT_LE(r.lower_bound_seconds, r.total_seconds * (1 + 1e-9)) << m.name << " " << to_string(algo);
      }
}

TEST(SimulateCopies, BadCopyValuesAreReported) {
  SystemModel m = shared(1);
  m.copy_gbps = -1;
  m.wire_copies = -2;
  m.batch.staging_bytes = 0;
  m.per_launch_us = -1;
  Problems p;
  validate_system_model(m, p);
  EXPECT_EQ(p.list().size(), 4u);
}

}  // namespace
}  // namespace reshard
