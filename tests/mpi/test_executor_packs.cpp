// Where the executor queues a send's pack (BatchPolicy::side_stream_packs, label unit, no MPI): on
// stream streams + s beside the op's stream s, which joins it before the transport can issue the op
// (before any flush and before any wait); with --op-stream-packs on s itself, with no joins. A
// recording Memory (host memory underneath) and a Transport that only records are enough: the order
// of the calls is what the GPU relies on.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reshard/core/model.h"
#include "reshard/core/planner.h"
#include "executor.h"
#include "memory.h"
#include "transport.h"

namespace reshard {
namespace {

struct Call {
  enum Kind { Pack, Join, Post, Flush, Wait } kind;
  int stream = 0, other = 0;  // Join: waiter, producer
};

class RecordingMemory final : public Memory {
 public:
  explicit RecordingMemory(std::vector<Call>& calls) : calls_(calls), host_(make_host_memory()) {}
  MemoryKind kind() const override { return MemoryKind::Host; }
  void* alloc(int64_t bytes) override { return host_->alloc(bytes); }
  void free(void* p) override { host_->free(p); }
  void memset(void* p, uint8_t value, int64_t bytes) override { host_->memset(p, value, bytes); }
  void fill_pattern(void* storage, const RegionSpec& r) override { host_->fill_pattern(storage, r); }
  int64_t count_wrong(const void* storage, const RegionSpec& r) override { return host_->count_wrong(storage, r); }
  void copy_box(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst, const Dims& dst_shape,
                const Dims& dst_offset, const Dims& extent, int elem_size, int stream) override {
    calls_.push_back({Call::Pack, stream});
    host_->copy_box(src, src_shape, src_offset, dst, dst_shape, dst_offset, extent, elem_size, stream);
  }
  int64_t count_different(const void* a, const void* b, const Dims& shape, const Dims& offset, const Dims& extent,
                          int elem_size) override {
    return host_->count_different(a, b, shape, offset, extent, elem_size);
  }
  void copy_bytes(void* dst, const void* src, int64_t bytes) override { host_->copy_bytes(dst, src, bytes); }
  void quantize_mxfp8(const void* bf16, const Dims& extent, void* values, void* scales, const Dims& shape,
                      const Dims& offset, int stream) override {
    host_->quantize_mxfp8(bf16, extent, values, scales, shape, offset, stream);
  }
  void dequant_block_fp8(const void* values, const void* scales, const Box& shard, const Box& box, void* out,
                         int stream) override {
    host_->dequant_block_fp8(values, scales, shard, box, out, stream);
  }
  void download(void* host, const void* src, int64_t bytes) override { host_->download(host, src, bytes); }
  void upload(void* dst, const void* host, int64_t bytes) override { host_->upload(dst, host, bytes); }
  void sync(int stream) override { host_->sync(stream); }
  void reserve_streams(int n) override { reserved = n; }
  void join(int waiter, int producer) override { calls_.push_back({Call::Join, waiter, producer}); }

  int reserved = 0;

 private:
  std::vector<Call>& calls_;
  std::unique_ptr<Memory> host_;
};

class RecordingTransport final : public Transport {
 public:
  explicit RecordingTransport(std::vector<Call>& calls) : calls_(calls) {}
  std::string name() const override { return "recording"; }
  std::string version() const override { return "0"; }
  MemoryKind memory_kind() const override { return MemoryKind::Host; }
  void setup(const std::vector<CommGroup>&, int) override {}
  void send(int stream, int, int, const void*, int64_t) override { calls_.push_back({Call::Post, stream}); }
  void recv(int stream, int, int, void*, int64_t) override { calls_.push_back({Call::Post, stream}); }
  void broadcast(int stream, int, int, void*, int64_t) override { calls_.push_back({Call::Post, stream}); }
  void flush(int stream) override { calls_.push_back({Call::Flush, stream}); }
  void wait(int stream, int) override { calls_.push_back({Call::Wait, stream}); }
  int64_t max_message_bytes() const override { return int64_t{1} << 40; }

 private:
  std::vector<Call>& calls_;
};

// tiny-dense from train TP x PP to gen TP (each side's GPUs given), in 64 KiB misc buckets.
Plan tiny_dense(int train_tp, int train_pp, int train_gpus, int gen_tp, int gen_gpus, FanoutMode fanout) {
  SystemConfig sys;
  sys.train.tp = train_tp;
  sys.train.pp = train_pp;
  sys.train.num_gpus = train_gpus;
  sys.gen.tp = gen_tp;
  sys.gen.num_gpus = gen_gpus;
  PlanOptions o;
  o.bucket_bytes = 64 << 10;
  o.fanout = fanout;
  return plan_reshard(load_model(std::string(RESHARD_TEST_DATA) + "/tiny-dense.json"), sys, o);
}

std::vector<Call> run_rank(const Plan& plan, int rank, const BatchPolicy& policy, int* reserved = nullptr) {
  std::vector<Call> calls;
  RecordingMemory memory(calls);
  RecordingTransport transport(calls);
  Executor ex(plan, rank, transport, memory, policy);
  ex.fill_sources();
  calls.clear();
  ex.run(Algo::Reshard);
  if (reserved != nullptr) *reserved = memory.reserved;
  return calls;
}

// Train rank 0 (TP1, PP2: stage 0, on stream 0 of 2) sends tiny-dense to gen TP2: each gen rank's
// half of a row-parallel weight (o_proj, down_proj) is a column block, strided in the source, so
// rank 0 packs it into staging first; misc buckets it roots are packed too.
std::vector<Call> run_rank0(const BatchPolicy& policy, int* reserved = nullptr) {
  static const Plan plan = tiny_dense(1, 2, 2, 2, 2, FanoutMode::Auto);
  return run_rank(plan, 0, policy, reserved);
}

// Replays `calls` of a rank with `streams` op streams: every join waits for a side stream with packs
// pending, and no flush or wait finds any stream's packs not joined. Counts the copies per stream
// (index: the stream; packs on side streams streams..2 streams - 1, unpacks on the op streams), joins,
// flushes and waits.
struct PackOrder {
  std::vector<int> packs;
  int joins = 0, flushes = 0, waits = 0;
};
PackOrder check_side_stream_order(const std::vector<Call>& calls, int streams) {
  PackOrder o;
  o.packs.assign(static_cast<size_t>(2 * streams), 0);
  std::vector<bool> pending(static_cast<size_t>(streams), false);
  auto any_pending = [&] { return std::find(pending.begin(), pending.end(), true) != pending.end(); };
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    switch (c.kind) {
      case Call::Pack:  // a copy on an op stream is an unpack after its wait: nothing to join
        EXPECT_TRUE(c.stream >= 0 && c.stream < 2 * streams) << "call " << i << ": a copy on stream " << c.stream;
        if (c.stream < 0 || c.stream >= 2 * streams) break;
        ++o.packs[static_cast<size_t>(c.stream)];
        if (c.stream >= streams) pending[static_cast<size_t>(c.stream - streams)] = true;
        break;
      case Call::Join:
        EXPECT_TRUE(c.stream >= 0 && c.stream < streams) << "call " << i;
        EXPECT_EQ(c.other, c.stream + streams) << "call " << i << ": stream " << c.stream << " joins " << c.other;
        if (c.stream < 0 || c.stream >= streams) break;
        EXPECT_TRUE(pending[static_cast<size_t>(c.stream)]) << "call " << i << ": a join with nothing to wait for";
        pending[static_cast<size_t>(c.stream)] = false;
        ++o.joins;
        break;
      case Call::Flush:  // NCCL's flush issues every stream's queued ops, so every stream has joined
        EXPECT_FALSE(any_pending()) << "call " << i << ": a flush of stream " << c.stream << " with packs not joined";
        ++o.flushes;
        break;
      case Call::Wait:
        EXPECT_FALSE(any_pending()) << "call " << i << ": a wait with packs not joined";
        ++o.waits;
        break;
      case Call::Post: break;
    }
  }
  EXPECT_FALSE(any_pending());
  return o;
}

TEST(ExecutorPacks, SideStreamPacksAreJoinedBeforeAnyFlushOrWait) {
  BatchPolicy policy;
  policy.streams = 2;
  policy.batch_ops = 2;  // several batches a stream, so flushes and waits interleave with packs
  policy.window = 2;
  ASSERT_TRUE(policy.side_stream_packs);  // the default
  int reserved = 0;
  const PackOrder o = check_side_stream_order(run_rank0(policy, &reserved), 2);
  EXPECT_EQ(reserved, 4);  // streams 0, 1 and their side streams 2, 3
  EXPECT_GT(o.packs[2], 0);  // rank 0 holds stage 0 only: every pack on side stream 2
  EXPECT_EQ(o.packs[3], 0);
  EXPECT_EQ(o.packs[0] + o.packs[1], 0);  // and it receives nothing to unpack
  EXPECT_GT(o.flushes, 2);
  EXPECT_GT(o.waits, 0);
  EXPECT_GT(o.joins, 1);
  EXPECT_LE(o.joins, o.flushes + o.waits);  // at most once per call that may issue the ops
}

// A rank that packs on two side streams, with a window per stream (the default): one lane's flush comes
// while the other lane's open batch holds packs, and NCCL's flush issues that batch too. Joining only
// the flushed stream would fail here; the every-stream join (join_prep) does not.
// Train TP2 x PP2 (ranks 0-3) to gen TP1 x DP2 (ranks 4, 5), two-phase: each gen replica receives
// part of every param from both stages (streams 0 and 1) and broadcasts it to the other replica. The
// column halves of a row-parallel weight are strided in a gen rank's whole tensor, so a gen rank packs
// what it roots on both side streams.
TEST(ExecutorPacks, GenRankPackingOnTwoStreamsJoinsBothBeforeAnyFlush) {
  static const Plan plan = tiny_dense(2, 2, 4, 1, 2, FanoutMode::TwoPhase);
  BatchPolicy policy;
  policy.streams = 2;
  policy.batch_ops = 2;
  policy.window = 2;
  ASSERT_TRUE(policy.per_stream_window);  // the default
  for (int rank : {4, 5}) {
    SCOPED_TRACE("gen rank " + std::to_string(rank));
    const PackOrder o = check_side_stream_order(run_rank(plan, rank, policy), 2);
    EXPECT_GT(o.packs[2], 0);  // fan-outs it roots of stage 0's params
    EXPECT_GT(o.packs[3], 0);  // and of stage 1's
    EXPECT_GT(o.packs[0], 0);  // the staged receives it unpacks, on both op streams
    EXPECT_GT(o.packs[1], 0);
    EXPECT_GT(o.flushes, 2);
    EXPECT_GT(o.joins, 1);
  }
}

TEST(ExecutorPacks, OpStreamPacksQueueOnTheOpsStreamWithoutJoins) {
  BatchPolicy policy;
  policy.streams = 2;
  policy.batch_ops = 2;
  policy.window = 2;
  policy.side_stream_packs = false;  // --op-stream-packs
  int reserved = -1;
  const std::vector<Call> with = run_rank0(policy, &reserved);
  EXPECT_EQ(reserved, 0);  // no side streams asked for
  int packs = 0;
  for (const Call& c : with) {
    EXPECT_NE(c.kind, Call::Join);
    if (c.kind == Call::Pack) {
      EXPECT_TRUE(c.stream == 0 || c.stream == 1) << c.stream;
      ++packs;
    }
  }
  // The same packs either way: only their streams differ.
  policy.side_stream_packs = true;
  int side = 0;
  for (const Call& c : run_rank0(policy)) side += c.kind == Call::Pack ? 1 : 0;
  EXPECT_GT(packs, 0);
  EXPECT_EQ(packs, side);
}

}  // namespace
}  // namespace reshard
