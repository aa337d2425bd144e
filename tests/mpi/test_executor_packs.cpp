// Where the executor queues a send's pack (BatchPolicy::side_stream_packs, label unit, no MPI): on
// stream streams + s beside the op's stream s, which joins it before the transport can issue the op
// (before any flush and before any wait); with --op-stream-packs on s itself, with no joins. A
// recording Memory (host memory underneath) and a Transport that only records are enough: the order
// of the calls is what the GPU relies on.
#include <gtest/gtest.h>

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

// Train rank 0 (TP1, PP2: stage 0, on stream 0 of 2) sends tiny-dense to gen TP2: each gen rank's
// half of a row-parallel weight (o_proj, down_proj) is a column block, strided in the source, so
// rank 0 packs it into staging first; misc buckets it roots are packed too.
Plan tp1pp2_to_tp2() {
  SystemConfig sys;
  sys.train.pp = 2;
  sys.train.num_gpus = 2;
  sys.gen.tp = 2;
  sys.gen.num_gpus = 2;
  PlanOptions o;
  o.bucket_bytes = 64 << 10;
  return plan_reshard(load_model(std::string(RESHARD_TEST_DATA) + "/tiny-dense.json"), sys, o);
}

std::vector<Call> run_rank0(const BatchPolicy& policy, int* reserved = nullptr) {
  static const Plan plan = tp1pp2_to_tp2();
  std::vector<Call> calls;
  RecordingMemory memory(calls);
  RecordingTransport transport(calls);
  Executor ex(plan, 0, transport, memory, policy);
  ex.fill_sources();
  calls.clear();
  ex.run(Algo::Reshard);
  if (reserved != nullptr) *reserved = memory.reserved;
  return calls;
}

TEST(ExecutorPacks, SideStreamPacksAreJoinedBeforeAnyFlushOrWait) {
  BatchPolicy policy;
  policy.streams = 2;
  policy.batch_ops = 2;  // several batches a stream, so flushes and waits interleave with packs
  policy.window = 2;
  ASSERT_TRUE(policy.side_stream_packs);  // the default
  int reserved = 0;
  const std::vector<Call> calls = run_rank0(policy, &reserved);
  EXPECT_EQ(reserved, 4);  // streams 0, 1 and their side streams 2, 3
  bool pending[2] = {false, false};
  int packs[4] = {0, 0, 0, 0}, joins = 0, flushes = 0, waits = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    switch (c.kind) {
      case Call::Pack:
        ASSERT_TRUE(c.stream == 2 || c.stream == 3) << "call " << i << ": a pack on stream " << c.stream;
        ++packs[c.stream];
        pending[c.stream - 2] = true;
        break;
      case Call::Join:
        ASSERT_TRUE(c.stream == 0 || c.stream == 1) << "call " << i;
        EXPECT_EQ(c.other, c.stream + 2) << "call " << i << ": stream " << c.stream << " joins " << c.other;
        EXPECT_TRUE(pending[c.stream]) << "call " << i << ": a join with nothing to wait for";
        pending[c.stream] = false;
        ++joins;
        break;
      case Call::Flush:  // NCCL's flush issues every stream's queued ops, so every stream has joined
        EXPECT_FALSE(pending[0] || pending[1]) << "call " << i << ": a flush with packs not joined";
        ++flushes;
        break;
      case Call::Wait:
        EXPECT_FALSE(pending[0] || pending[1]) << "call " << i << ": a wait with packs not joined";
        ++waits;
        break;
      case Call::Post: break;
    }
  }
  EXPECT_FALSE(pending[0] || pending[1]);
  EXPECT_GT(packs[2], 0);  // rank 0 holds stage 0 only: every pack on side stream 2
  EXPECT_EQ(packs[3], 0);
  EXPECT_GT(flushes, 2);
  EXPECT_GT(waits, 0);
  EXPECT_GT(joins, 1);
  EXPECT_LE(joins, flushes + waits);  // at most once per call that may issue the ops
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
