// The alpha-beta simulation (simulate.h) and the system presets.
#include <gtest/gtest.h>

#include <string>

#include "reshard/core/error.h"
#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"
#include "reshard/core/system_presets.h"

namespace reshard {
namespace {

ModelMeta moe(int layers, int experts, int64_t scale) {
  ModelMeta m;
  m.name = "sim-moe";
  m.tensors.push_back({"model.embed_tokens.weight", Dims{64 * scale, 16}, DType::BF16});
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    m.tensors.push_back({p + "self_attn.q_proj.weight", Dims{16 * scale, 16}, DType::BF16});
    m.tensors.push_back({p + "input_layernorm.weight", Dims{16}, DType::BF16});
    for (int e = 0; e < experts; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      m.tensors.push_back({x + "gate_proj.weight", Dims{32 * scale, 64}, DType::BF16});
      m.tensors.push_back({x + "up_proj.weight", Dims{32 * scale, 64}, DType::BF16});
      m.tensors.push_back({x + "down_proj.weight", Dims{64, 32 * scale}, DType::BF16});
    }
  }
  return m;
}

Plan moe_plan(int64_t scale, FanoutMode fanout = FanoutMode::Auto) {
  SystemConfig s;
  s.train.num_gpus = 8;
  s.train.pp = 2;
  s.train.ep = 4;
  s.gen.num_gpus = 8;
  s.gen.tp = 4;
  PlanOptions o;
  o.fanout = fanout;
  return plan_reshard(moe(4, 8, scale), s, o);
}

SystemModel model(int64_t gpus_per_node, double nvlink, double nic) {
  SystemModel m;
  m.name = "test";
  m.gpus_per_node = gpus_per_node;
  m.nvlink_gbps = nvlink;
  m.nic_gbps = nic;
  return m;
}

// One train rank, one gen rank, `n` transfers of `elems` BF16 elements each.
Plan p2p_plan(int n, int64_t elems) {
  Plan p;
  p.system.train.num_gpus = 1;
  p.system.gen.num_gpus = 1;
  ParamPlan param;
  param.name = "w";
  param.shape = Dims{elems * n};
  param.path = Path::Bulk;
  param.transfer_begin = 0;
  param.transfer_count = static_cast<uint64_t>(n);
  // Rank 0 holds the whole tensor, rank 1 receives it whole: one storage each, offsets = global.
  param.src.mesh = Mesh{{"dp"}, {1}, {0}};
  param.src.placements = {Placement{}};
  param.dst.mesh = Mesh{{"dp"}, {1}, {1}};
  param.dst.placements = {Placement{}};
  param.group = 0;
  p.groups.push_back(CommGroup{"bulk", 0, {0, 1}});
  p.params.push_back(param);
  for (int i = 0; i < n; ++i) {
    Transfer t;
    t.src = 0;
    t.dst = 1;
    t.box = Box{Dims{elems * i}, Dims{elems}};
    t.src_local = t.dst_local = t.box.offset;
    p.transfers.push_back(t);
  }
  return p;
}

TEST(Simulate, OneTransferByHand) {
  // 1 MiB over the NIC (ranks 0 and 1 in different domains): launch 5 + per op 0.5 + latency 10 us
  // + 1 MiB at 1 GB/s, on both ranks.
  SystemModel m = model(1, 100, 1);
  m.launch_us = 5;
  m.per_op_us = 0.5;
  m.nic_latency_us = 10;
  const SimResult r = simulate(p2p_plan(1, 512 * 1024), m);
  const double expect = 15.5e-6 + 1048576 / 1e9;
  EXPECT_NEAR(r.total_seconds, expect, 1e-12);
  EXPECT_NEAR(r.phases[0].seconds, expect, 1e-12);
  EXPECT_EQ(r.phases[0].batches, 1);
  EXPECT_EQ(r.busiest_link_bytes, 1048576);
  EXPECT_EQ(r.nic_bytes, 1048576);
  EXPECT_EQ(r.nvlink_bytes, 0);
  // Same domain: NVLink latency and bandwidth.
  m.gpus_per_node = 2;
  m.nvlink_latency_us = 3;
  const SimResult nv = simulate(p2p_plan(1, 512 * 1024), m);
  EXPECT_NEAR(nv.total_seconds, 8.5e-6 + 1048576 / 100e9, 1e-12);
  EXPECT_EQ(nv.busiest_link, LinkResource::NvlinkSend);
}

TEST(Simulate, BatchesFollowTheOpCap) {
  // 65 ops of 1 KiB: a batch of 64 and a batch of 1, each paying launch + latency once.
  SystemModel m = model(1, 100, 1);
  m.launch_us = 5;
  m.per_op_us = 0;
  m.nic_latency_us = 10;
  m.batch.window = 1;  // each batch waited for before the next: their fixed costs add up
  const SimResult r = simulate(p2p_plan(65, 512), m);
  EXPECT_EQ(r.phases[0].batches, 2);
  EXPECT_NEAR(r.total_seconds, 2 * 15e-6 + 65 * 1024 / 1e9, 1e-12);
  // A byte cap of 4 KiB: 17 batches (16 of 4 ops, one of 1).
  m.batch.batch_bytes = 4096;
  EXPECT_EQ(simulate(p2p_plan(65, 512), m).phases[0].batches, 17);
}

TEST(Simulate, LargeBoxesSplitAtTheMessageCap) {
  SystemModel m = model(1, 100, 1);
  m.batch.batch_bytes = 1 << 20;
  const SimResult r = simulate(p2p_plan(1, 5 << 20), m);  // 10 MiB -> 10 messages, one per batch
  EXPECT_EQ(r.phases[0].ops, 10);
  EXPECT_EQ(r.phases[0].batches, 10);
}

TEST(Simulate, MonotonicInBytes) {
  const SystemModel m = find_system_preset("h100-nvl8-ib400");
  double last = 0;
  for (int64_t scale : {1, 2, 4, 8}) {
    const SimResult r = simulate(moe_plan(scale), m);
    EXPECT_GT(r.total_seconds, last) << "scale " << scale;
    EXPECT_GE(r.sequential_seconds, r.bulk_seconds);
    last = r.total_seconds;
  }
}

TEST(Simulate, SlowerLinksTakeLonger) {
  const Plan plan = moe_plan(4);
  const double base = simulate(plan, model(8, 370, 47)).total_seconds;
  EXPECT_GT(simulate(plan, model(8, 370, 10)).total_seconds, base);
  EXPECT_GE(simulate(plan, model(8, 100, 47)).total_seconds, base);
}

TEST(Simulate, NicSlowerThanNvlinkMovesTheBusiestLink) {
  // Train ranks 0-7 and gen ranks 8-15 sit in different domains of 8: phase one crosses the NIC;
  // the two-phase fan-out between gen replicas stays inside the gen domain, on NVLink.
  const Plan plan = moe_plan(4, FanoutMode::TwoPhase);
  ASSERT_FALSE(plan.fanouts.empty());
  const SimResult slow_nic = simulate(plan, model(8, 1000, 1));
  const SimResult slow_nvlink = simulate(plan, model(8, 1, 1000));
  EXPECT_TRUE(slow_nic.busiest_link == LinkResource::NicSend || slow_nic.busiest_link == LinkResource::NicRecv);
  EXPECT_TRUE(slow_nvlink.busiest_link == LinkResource::NvlinkSend ||
              slow_nvlink.busiest_link == LinkResource::NvlinkRecv);
  EXPECT_GT(slow_nic.nvlink_bytes, 0);
  EXPECT_GT(slow_nic.nic_bytes, 0);
}

TEST(Simulate, LowerBoundNeverExceedsThePrediction) {
  for (const SystemModel& m : system_presets())
    for (FanoutMode f : {FanoutMode::Auto, FanoutMode::Direct, FanoutMode::TwoPhase})
      for (int64_t scale : {1, 16}) {
        const Plan plan = moe_plan(scale, f);
        const SimResult r = simulate(plan, m);
        EXPECT_GT(r.lower_bound_seconds, 0) << m.name;
        EXPECT_LE(r.lower_bound_seconds, r.total_seconds * (1 + 1e-9)) << m.name << " scale " << scale;
        EXPECT_LE(r.lower_bound_seconds, r.sequential_seconds * (1 + 1e-9)) << m.name;
        EXPECT_GT(r.lower_bound_bytes, 0);
      }
}

TEST(Simulate, PhasesCoverEveryStage) {
  const Plan plan = moe_plan(2);
  const SimResult r = simulate(plan, find_system_preset("h200-nvl8-ib400"));
  ASSERT_EQ(r.phases.size(), 4u);  // bulk.pp0, bulk.pp1, fanout, misc
  EXPECT_EQ(r.phases[0].name, "bulk.pp0");
  EXPECT_EQ(r.phases[1].name, "bulk.pp1");
  EXPECT_EQ(r.phases[3].name, "misc");
  EXPECT_GT(r.misc_seconds, 0);
  EXPECT_GT(r.bulk_seconds, 0);
  EXPECT_DOUBLE_EQ(r.sequential_seconds, r.bulk_seconds + r.misc_seconds);
  const auto j = simulation_json(plan, r);
  EXPECT_EQ(j["format"], "reshard-simulate");
  EXPECT_EQ(j["phases"].size(), 4u);
  EXPECT_NE(format_simulation(plan, r).find("busiest link: rank"), std::string::npos);
}

TEST(SystemPresets, LoadByName) {
  for (const char* name : {"h100-nvl8-ib400", "h200-nvl8-ib400", "gb200-nvl72", "cpu-mpi-local"}) {
    const SystemModel m = find_system_preset(name);
    EXPECT_EQ(m.name, name);
    Problems p;
    validate_system_model(m, p);
    EXPECT_TRUE(p.empty()) << name;
  }
  EXPECT_EQ(find_system_preset("gb200-nvl72").gpus_per_node, 64);  // a job fills 16 trays of 4 per rack
  EXPECT_GT(find_system_preset("h100-nvl8-ib400").nvlink_gbps, find_system_preset("h100-nvl8-ib400").nic_gbps);
}

TEST(SystemPresets, UnknownNameListsTheKnownOnes) {
  try {
    find_system_preset("tpu-v5");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    EXPECT_NE(std::string(e.what()).find("tpu-v5"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("gb200-nvl72"), std::string::npos);
  }
}

TEST(SystemPresets, BadValuesAreAllReported) {
  SystemModel m = model(0, 0, -1);
  m.batch.streams = 0;
  Problems p;
  validate_system_model(m, p);
  EXPECT_EQ(p.list().size(), 4u);
  EXPECT_THROW(simulate(p2p_plan(1, 8), m), Error);
}

}  // namespace
}  // namespace reshard

namespace reshard {
namespace {

// One train rank (0) sends 1 MiB to gen rank 1, then 1 KiB to gen rank 2, one op per batch. Rank 2's
// op moves only once rank 0 has posted it, i.e. after rank 0's first batch:
//   T1 = 15.5 us + 1 MiB / 1 GB/s (rank 0's first batch: launch 5 + per op 0.5 + latency 10 + wire),
//   rank 2 ends at T1 + 1 KiB / 1 GB/s + 15.5 us, having waited T1 (the old model said 16.524 us).
TEST(Simulate, ARankWaitsForTheLatestPeerToPostTheOp) {
  Plan p;
  p.system.train.num_gpus = 1;
  p.system.gen.num_gpus = 2;
  ParamPlan param;
  param.name = "w";
  param.shape = Dims{512 * 1024};
  param.path = Path::Bulk;
  param.transfer_count = 2;
  param.src.mesh = Mesh{{"dp"}, {1}, {0}};
  param.src.placements = {Placement{}};
  param.dst.mesh = Mesh{{"dp"}, {2}, {1, 2}};
  param.dst.placements = {Placement{}};
  p.groups.push_back(CommGroup{"bulk", 0, {0, 1, 2}});
  p.params.push_back(param);
  p.transfers.push_back(Transfer{0, 0, 1, 0, Box{Dims{0}, Dims{512 * 1024}}, Dims{0}, Dims{0}});
  p.transfers.push_back(Transfer{0, 0, 2, 0, Box{Dims{0}, Dims{512}}, Dims{0}, Dims{0}});
  SystemModel m = model(1, 100, 1);
  m.launch_us = 5;
  m.per_op_us = 0.5;
  m.nic_latency_us = 10;
  m.batch.batch_ops = 1;
  m.batch.window = 1;
  const SimResult r = simulate(p, m);
  const double t1 = 15.5e-6 + 1048576 / 1e9;
  const double end = t1 + 1024 / 1e9 + 15.5e-6;
  EXPECT_NEAR(r.total_seconds, end, 1e-12);
  EXPECT_EQ(r.phases[0].batches, 2);  // rank 0, the first of the slowest
  EXPECT_NEAR(r.phases[0].seconds, end, 1e-12);
  // The floor is rank 0's NIC: both messages one after the other.
  EXPECT_NEAR(r.nic_floor.seconds, (1048576 + 1024) / 1e9, 1e-12);
  EXPECT_NEAR(r.nic_floor.misc_seconds, 0, 1e-15);

  // Window 2: rank 0 posts the second batch once the first is posted (5.5 us in), without waiting for
  // it; its 1 KiB queues behind the 1 MiB on rank 0's NIC (through at 1048576 ns + 1024 ns) and the
  // batch ends 15.5 us later: one batch's issue and latency saved.
  m.batch.window = 2;
  const SimResult w = simulate(p, m);
  EXPECT_NEAR(w.total_seconds, 15.5e-6 + (1048576 + 1024) / 1e9, 1e-12);
  EXPECT_EQ(w.phases[0].batches, 2);
}

// Lanes (a window per stream): a rank's own traffic on its other lane is not waiting. Train PP 2, one
// rank per stage (0: stage 0, 1: stage 1), one gen rank (2); 1 MiB params A1, A2 (stage 0, 0 -> 2) and B1
// (stage 1, 1 -> 2). Units go round-robin over the stages (schedule.h), so rank 2 posts A1 (stream 0),
// B1 (stream 1), A2 (stream 0), all ready at t = 0, as ranks 0 and 1 post their sends; on its 1 GB/s
// receive link (no latency or launch) they are through at T, 2T and 3T (T = 1 MiB / 1 GB/s). A 1 us
// cost per op (p) makes rank 2 the slowest: its batches take 2p ([A1 A2], then [B1] posted behind)
// with lanes, 3p ([A1 B1 A2]) with one, so it ends at 3T + 2p or 3T + 3p; ranks 0 and 1 end once
// their bytes are through on rank 2 (3T, 2T). Every rank posted at once, so no rank waited, with one
// lane or two. Before the rank's own bytes on its other lane counted, rank 2's [A1 A2] (through at 3T,
// 2T of its own) read a wait of T.
TEST(Simulate, LanesDoNotCountTheRanksOwnTrafficAsWaiting) {
  Plan p;
  p.system.train.num_gpus = 2;
  p.system.train.pp = 2;
  p.system.gen.num_gpus = 1;
  const int64_t n = 512 * 1024;  // BF16 elements: 1 MiB
  for (int i = 0; i < 3; ++i) {
    const int stage = i == 1 ? 1 : 0;
    ParamPlan param;
    param.name = i == 1 ? "B1" : i == 0 ? "A1" : "A2";
    param.shape = Dims{n};
    param.path = Path::Bulk;
    param.pp_stage = stage;
    param.transfer_begin = static_cast<uint64_t>(i);
    param.transfer_count = 1;
    param.src.mesh = Mesh{{"dp"}, {1}, {stage}};
    param.src.placements = {Placement{}};
    param.dst.mesh = Mesh{{"dp"}, {1}, {2}};
    param.dst.placements = {Placement{}};
    param.group = stage;
    p.params.push_back(param);
    p.transfers.push_back(Transfer{static_cast<uint32_t>(i), stage, 2, 0, Box{Dims{0}, Dims{n}}, Dims{0}, Dims{0}});
  }
  p.groups.push_back(CommGroup{"bulk", 0, {0, 2}});
  p.groups.push_back(CommGroup{"bulk", 1, {1, 2}});
  const double t = 1048576 / 1e9;
  for (const bool lanes : {true, false}) {
    SystemModel m = model(1, 1, 1);
    m.nvlink_latency_us = m.nic_latency_us = m.launch_us = 0;
    m.per_op_us = 1;
    m.batch.per_stream_window = lanes;
    const SimResult r = simulate(p, m);
    EXPECT_NEAR(r.total_seconds, 3 * t + (lanes ? 2e-6 : 3e-6), 1e-12) << "lanes " << lanes;
    EXPECT_EQ(r.slowest_rank, 2) << "lanes " << lanes;
    EXPECT_NEAR(r.slowest_rank_wait_seconds, 0, 1e-12) << "lanes " << lanes;
  }
}

}  // namespace
}  // namespace reshard
