// The batch policy shared by the executor and the simulator (batch_policy.h), and when a rank waits
// for which of its batches (batch_window.h): sequences worked out by hand from the rules in its header.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "reshard/core/batch_policy.h"
#include "reshard/core/batch_window.h"

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
  EXPECT_NE(problems.list()[2].find("--batch-bytes must be at least 4Ki = 4096 bytes (got "), std::string::npos);
}

// The keys `run --json` ("arguments") and `simulate --json` ("system") record, which
// scripts/calibrate.py reads back into simulate's flags.
TEST(BatchPolicy, TheKnobsAsOneJsonObject) {
  BatchPolicy p;
  p.streams = 3;
  p.batch_ops = 4096;
  p.batch_bytes = int64_t{4} << 30;
  p.staging_bytes = int64_t{1} << 30;
  p.window = 1;
  p.per_stream_window = false;
  p.side_stream_packs = false;
  EXPECT_EQ(batch_policy_json(p).dump(),
            R"({"streams":3,"batch_ops":4096,"batch_bytes":4294967296,"staging_bytes":1073741824,"window":1,)"
            R"("window_per_stream":false,"side_stream_packs":false})");
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


struct Want {
  bool close;
  int retire;
  int64_t at;
};

// One lane: closes are of lane 0, retires count lane 0's oldest batches.
void expect(const BatchWindow::Step& got, const Want& want, const char* what) {
  EXPECT_EQ(got.close, want.close ? std::vector<int>{0} : std::vector<int>{}) << what;
  EXPECT_EQ(got.retire, std::vector<int>(static_cast<size_t>(want.retire), 0)) << what;
  EXPECT_EQ(got.staging_at, want.at) << what;
}

// One window per rank (--window-per-rank): the rule the tests below work by hand.
BatchPolicy policy(int64_t batch_ops, int window) {
  BatchPolicy p;
  p.batch_ops = batch_ops;
  p.window = window;
  p.per_stream_window = false;
  return p;
}

TEST(BatchWindow, WindowOneWaitsForEachBatchAsItClosesAndStagesFromZero) {
  BatchWindow w(policy(2, 1), 100);
  const Op recv = op_at(OpKind::Recv, false, false, 0);
  expect(w.add(recv, 40), {false, 0, 0}, "a");
  expect(w.add(recv, 40), {false, 0, 40}, "b");
  expect(w.add(recv, 40), {true, 1, 0}, "c: two ops already; the batch of a, b is waited for at once");
  EXPECT_EQ(w.close().retire.size(), 1u);
}

TEST(BatchWindow, WindowTwoKeepsOneBatchPostedWhileTheNextFillsTheRing) {
  BatchWindow w(policy(2, 2), 200);
  const Op recv = op_at(OpKind::Recv, false, false, 0);
  expect(w.add(recv, 40), {false, 0, 0}, "a");
  expect(w.add(recv, 40), {false, 0, 40}, "b");
  expect(w.add(recv, 40), {true, 0, 80}, "c: [a b] posted, not waited for; staging continues at 80");
  expect(w.add(recv, 40), {false, 0, 120}, "d");
  expect(w.add(recv, 40), {true, 1, 160}, "e: [c d] posted makes two: wait for [a b]; 160 + 40 fits");
  expect(w.add(recv, 40), {true, 1, 0},
         "f: 200 is the ring's end, so [e] closes; [c d] is waited for; f wraps to 0, clear of [e] at 160");
  EXPECT_EQ(w.close().retire.size(), 2u);  // [e] and [f]
}

TEST(BatchWindow, StagingInTheWayIsWaitedForEvenInsideTheWindow) {
  BatchWindow w(policy(2, 4), 100);
  const Op recv = op_at(OpKind::Recv, false, false, 0);
  expect(w.add(recv, 40), {false, 0, 0}, "a");
  expect(w.add(recv, 40), {false, 0, 40}, "b");
  expect(w.add(recv, 40), {true, 1, 0}, "c: 80 + 40 > 100 and [0, 40) is [a b]'s: it is waited for");
  expect(w.add(recv, 0), {false, 0, 40}, "d: stages nothing");
}

TEST(BatchWindow, AFanOutRootWaitsForThePostedBatchThatWritesWhatItSends) {
  BatchWindow w(policy(1, 3), 0);
  expect(w.add(op_at(OpKind::Recv, false, false, 0), 0), {false, 0, 0}, "rows [0, 2) arrive");
  expect(w.add(op_at(OpKind::Recv, false, false, 4), 0), {true, 0, 0}, "rows [4, 6) arrive; window 3: no wait");
  expect(w.add(op_at(OpKind::Broadcast, true, true, 0), 0), {true, 1, 0},
         "root of rows [0, 2): the first batch is waited for, the second stays posted");
  expect(w.add(op_at(OpKind::Broadcast, true, true, 6), 0), {true, 0, 0}, "root of rows [6, 8): nothing it reads is in flight");
  expect(w.add(op_at(OpKind::Broadcast, true, true, 4), 0), {true, 1, 0},
         "root of rows [4, 6): the batch that received them is the oldest of three posted: wait for it");
  EXPECT_EQ(w.close().retire.size(), 3u);  // [root 0-2], [root 6-8] still posted, and the open [root 4-6]
}

TEST(BatchWindow, AFanOutRootWaitsForTheOpenBatchThatWritesWhatItSends) {
  BatchWindow w(policy(8, 4), 0);
  expect(w.add(op_at(OpKind::Recv, false, false, 0), 0), {false, 0, 0}, "rows [0, 2) arrive");
  expect(w.add(op_at(OpKind::Broadcast, true, true, 0), 0), {true, 1, 0},
         "root of rows [0, 2): their batch closes and is waited for at once, window or not");
}

TEST(BatchWindow, PostTheOpenBatchThenRetireTheOldestOneByOne) {
  // The executor's landing in the way (executor_landings.cpp): post what is open, then wait for the
  // oldest batches one at a time until the landing has closed; staging restarts at 0 once none is
  // posted.
  BatchWindow w(policy(2, 4), 200);
  const Op recv = op_at(OpKind::Recv, false, false, 0);
  expect(w.add(recv, 40), {false, 0, 0}, "a");
  expect(w.add(recv, 40), {false, 0, 40}, "b");
  expect(w.add(recv, 40), {true, 0, 80}, "c: [a b] posted");
  EXPECT_EQ(w.post_open().close, std::vector<int>{0});  // [c] posted
  EXPECT_TRUE(w.post_open().close.empty());             // nothing open
  EXPECT_EQ(w.posted(), 2);
  EXPECT_EQ(w.retire_oldest(), 0);  // [a b]
  EXPECT_EQ(w.posted(), 1);
  expect(w.add(recv, 40), {false, 0, 120}, "d: after [c]'s staging at 80");
  EXPECT_EQ(w.retire_oldest(), 0);  // [c]
  EXPECT_EQ(w.retire_oldest(), -1);
  EXPECT_EQ(w.close().retire.size(), 1u);  // [d]
}

// A window per stream (two lanes): the steps worked by hand from batch_window.h's rules.
BatchPolicy per_stream(int64_t batch_ops, int window) {
  BatchPolicy p = policy(batch_ops, window);
  p.streams = 2;
  p.per_stream_window = true;
  return p;
}

Op on_stream(Op op, int stream) {
  op.stream = stream;
  return op;
}

void expect_lanes(const BatchWindow::Step& got, const std::vector<int>& close, const std::vector<int>& retire,
                  const char* what) {
  EXPECT_EQ(got.close, close) << what;
  EXPECT_EQ(got.retire, retire) << what;
}

TEST(BatchWindow, PerStreamEachLaneKeepsItsOwnWindow) {
  BatchWindow w(per_stream(2, 2), 1000);
  ASSERT_EQ(w.lanes(), 2);
  const Op a = on_stream(op_at(OpKind::Recv, false, false, 0), 0), b = on_stream(op_at(OpKind::Recv, false, false, 2), 1);
  expect_lanes(w.add(a, 0), {}, {}, "a1 (op 0) opens lane 0");
  expect_lanes(w.add(b, 0), {}, {}, "b1 (op 1) opens lane 1");
  expect_lanes(w.add(a, 0), {}, {}, "a2 (op 2)");
  expect_lanes(w.add(a, 0), {0}, {}, "a3 (op 3): [a1 a2] holds two ops and is posted; one posted fits window 2");
  expect_lanes(w.add(b, 0), {}, {}, "b2 (op 4) joins [b1]");
  expect_lanes(w.add(a, 0), {}, {}, "a4 (op 5)");
  expect_lanes(w.add(a, 0), {0, 1}, {0},
               "a5 (op 6): [a3 a4] posted makes two in lane 0, so [a1 a2] is waited for; first [b1 b2], open "
               "since op 1, before the newest posted op 5, is posted too");
  EXPECT_EQ(w.posted(0), 1);
  EXPECT_EQ(w.posted(1), 1);
  expect_lanes(w.add(b, 0), {}, {}, "b3 (op 7): lane 1 holds one posted batch, within its window: no wait");
  expect_lanes(w.add(a, 0), {}, {}, "a6 (op 8)");
  expect_lanes(w.add(a, 0), {0, 1}, {0}, "a7 (op 9): [a5 a6] posted, [a3 a4] waited for; [b3] began at 7 < 8: posted");
  EXPECT_EQ(w.posted(1), 2);  // [b1 b2] and [b3]: lane 1 was never waited for
  expect_lanes(w.close(), {0}, {1, 0, 1, 0}, "the end: [a7] posted; [b1 b2], [a5 a6], [b3], [a7] waited for, as posted");
}

TEST(BatchWindow, PerStreamAFanOutRootWaitsOnlyForTheLaneThatWroteWhatItSends) {
  const Op x0 = op_at(OpKind::Recv, false, false, 0), y0 = on_stream(op_at(OpKind::Recv, false, false, 4), 1);
  const Op x1 = op_at(OpKind::Recv, false, false, 6), root = op_at(OpKind::Broadcast, true, true, 4);
  BatchWindow w(per_stream(1, 4), 0);
  expect_lanes(w.add(x0, 0), {}, {}, "rows [0, 2) arrive on lane 0");
  expect_lanes(w.add(y0, 0), {}, {}, "rows [4, 6) arrive on lane 1");
  expect_lanes(w.add(x1, 0), {0}, {}, "rows [6, 8) on lane 0: [x0] holds one op and is posted");
  expect_lanes(w.add(root, 0), {1, 0}, {1},
               "root of rows [4, 6) on lane 0: [y0] wrote them and is posted and waited for; lane 0's [x1] is posted "
               "(a lane waits only with its open batch posted); lane 0's batches stay in flight");
  EXPECT_EQ(w.posted(0), 2);
  // One window per rank: the same ops wait for everything posted up to [y0], oldest first.
  BatchWindow one(policy(1, 4), 0);
  expect(one.add(x0, 0), {false, 0, 0}, "rows [0, 2)");
  expect(one.add(y0, 0), {true, 0, 0}, "rows [4, 6): [x0] posted");
  expect(one.add(x1, 0), {true, 0, 0}, "rows [6, 8): [y0] posted");
  expect(one.add(root, 0), {true, 2, 0}, "root of rows [4, 6): [x1] posted; [x0] and [y0] waited for");
}

TEST(BatchWindow, BoundsOfTheWindow) {
  Problems problems;
  BatchPolicy p;
  p.window = 0;
  p.validate(problems);
  p.window = BatchPolicy::kMaxWindow + 1;
  p.validate(problems);
  ASSERT_EQ(problems.list().size(), 2u);
  EXPECT_NE(problems.list()[0].find("--window must be in 1..64 (got 0)"), std::string::npos);
}

}  // namespace
}  // namespace reshard
