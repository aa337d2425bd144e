// The batch policy shared by the executor and the simulator (batch_policy.h).
#include <gtest/gtest.h>

#include "reshard/core/batch_policy.h"

namespace reshard {
namespace {

// An op of param 7 on dst storage 0 (a [8, 4] tensor) covering rows [row, row + 2).
Op op_at(OpKind kind, bool root, bool fanout, int64_t row) {
  Op op;
  op.kind = kind;
  op.root = root;
  op.fanout = fanout;
  op.param = 7;
  op.elem_size = 2;
  op.wire_extent = Dims{2, 4};
  op.pieces.push_back(Piece{0, Dims{8, 4}, Dims{row, 0}, Dims{0, 0}, Dims{2, 4}, -1});
  return op;
}

TEST(BatchPolicy, AFanOutRootClosesTheBatchOnlyWhereItReadsWhatTheBatchWrites) {
  const BatchPolicy policy;
  BatchFill fill;
  fill.add(op_at(OpKind::Recv, false, false, 0), 0);  // rows [0, 2) arrive in this batch
  EXPECT_FALSE(fill.closes_before(policy, op_at(OpKind::Broadcast, true, true, 2), 0, 1 << 20));  // rows [2, 4)
  EXPECT_TRUE(fill.closes_before(policy, op_at(OpKind::Broadcast, true, true, 0), 0, 1 << 20));   // rows [0, 2)
  // A lane broadcast received here, then the node broadcast of the same rows rooted here: closes too.
  BatchFill lane;
  lane.add(op_at(OpKind::Broadcast, false, true, 4), 0);
  EXPECT_TRUE(lane.closes_before(policy, op_at(OpKind::Broadcast, true, true, 4), 0, 1 << 20));
  // A non-root member never waits for itself; an empty batch never closes.
  EXPECT_FALSE(fill.closes_before(policy, op_at(OpKind::Broadcast, false, true, 0), 0, 1 << 20));
  EXPECT_FALSE(BatchFill{}.closes_before(policy, op_at(OpKind::Broadcast, true, true, 0), 0, 1 << 20));
}

TEST(BatchPolicy, CapsOnOpsBytesAndStaging) {
  BatchPolicy policy;
  policy.batch_ops = 2;
  policy.batch_bytes = 40;  // two ops of 16 bytes fit, a third does not
  BatchFill fill;
  const Op recv = op_at(OpKind::Recv, false, false, 0);
  fill.add(recv, 16);
  EXPECT_FALSE(fill.closes_before(policy, recv, 16, 32));
  EXPECT_TRUE(fill.closes_before(policy, recv, 17, 32));  // staging: 16 + 17 > 32
  fill.add(recv, 16);
  EXPECT_TRUE(fill.closes_before(policy, recv, 0, 1 << 20));  // two ops already
  policy.batch_ops = 64;
  EXPECT_TRUE(fill.closes_before(policy, recv, 0, 1 << 20));  // 32 + 16 > 40 bytes
  fill.clear();
  EXPECT_TRUE(fill.empty());
}

TEST(BatchPolicy, OneSetOfBoundsAndTheMessageCap) {
  BatchPolicy p;
  EXPECT_EQ(p.max_message_bytes(), int64_t{256} << 20);
  EXPECT_EQ(p.max_message_bytes(1000), 1000);  // the transport's own limit
  p.batch_bytes = p.staging_bytes = int64_t{4} << 30;
  EXPECT_EQ(p.max_message_bytes(), int64_t{1} << 30);
  p.streams = 65;
  p.batch_ops = 0;
  p.batch_bytes = 4095;
  p.staging_bytes = 100;
  Problems problems;
  p.validate(problems);
  ASSERT_EQ(problems.list().size(), 4u);
  EXPECT_NE(problems.list()[0].find("--streams must be in 1..64"), std::string::npos);
  EXPECT_NE(problems.list()[2].find("--batch-bytes must be at least 4K"), std::string::npos);
}

TEST(BatchPolicy, BoxedAndStaged) {
  const Op recv = op_at(OpKind::Recv, false, false, 0);  // rows of a [8, 4] tensor: contiguous, direct
  EXPECT_EQ(staged_bytes(recv, false), 0);
  Op strided = recv;
  strided.pieces[0].extent = Dims{2, 2};
  strided.wire_extent = Dims{2, 2};
  EXPECT_EQ(staged_bytes(strided, false), 64);  // 8 bytes, 64-aligned
  EXPECT_EQ(staged_bytes(strided, true), 0);    // box ops copy between storages
  Op golden = recv;
  golden.phase = 0;
  EXPECT_FALSE(boxed_op(golden, Algo::Golden, true, 1));  // golden's bulk broadcasts are staged
  golden.phase = 1;
  EXPECT_TRUE(boxed_op(golden, Algo::Golden, true, 1));   // misc buckets take box ops in both
  EXPECT_TRUE(boxed_op(recv, Algo::Reshard, true, 1));
  EXPECT_FALSE(boxed_op(recv, Algo::Reshard, false, 1));
}

}  // namespace
}  // namespace reshard
