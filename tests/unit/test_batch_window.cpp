// When a rank waits for which of its batches (batch_window.h): sequences worked out by hand from the
// rules in its header comment.
#include <gtest/gtest.h>

#include "reshard/core/batch_window.h"

namespace reshard {
namespace {

// An op on dst storage 0 (an [8, 4] tensor) covering rows [row, row + 2).
Op op_at(OpKind kind, bool root, bool fanout, int64_t row) {
  Op op;
  op.kind = kind;
  op.root = root;
  op.fanout = fanout;
  op.elem_size = 2;
  op.wire_extent = Dims{2, 4};
  op.pieces.push_back(Piece{0, Dims{8, 4}, Dims{row, 0}, Dims{0, 0}, Dims{2, 4}, -1});
  return op;
}

struct Want {
  bool close;
  int retire;
  int64_t at;
};

void expect(const BatchWindow::Step& got, const Want& want, const char* what) {
  EXPECT_EQ(got.close, want.close) << what;
  EXPECT_EQ(got.retire, want.retire) << what;
  EXPECT_EQ(got.staging_at, want.at) << what;
}

BatchPolicy policy(int64_t batch_ops, int window) {
  BatchPolicy p;
  p.batch_ops = batch_ops;
  p.window = window;
  return p;
}

TEST(BatchWindow, WindowOneWaitsForEachBatchAsItClosesAndStagesFromZero) {
  BatchWindow w(policy(2, 1), 100);
  const Op recv = op_at(OpKind::Recv, false, false, 0);
  expect(w.add(recv, 40), {false, 0, 0}, "a");
  expect(w.add(recv, 40), {false, 0, 40}, "b");
  expect(w.add(recv, 40), {true, 1, 0}, "c: two ops already; the batch of a, b is waited for at once");
  EXPECT_EQ(w.close(), 1);
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
  EXPECT_EQ(w.close(), 2);  // [e] and [f]
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
  EXPECT_EQ(w.close(), 3);  // [root 0-2], [root 6-8] still posted, and the open [root 4-6]
}

TEST(BatchWindow, AFanOutRootWaitsForTheOpenBatchThatWritesWhatItSends) {
  BatchWindow w(policy(8, 4), 0);
  expect(w.add(op_at(OpKind::Recv, false, false, 0), 0), {false, 0, 0}, "rows [0, 2) arrive");
  expect(w.add(op_at(OpKind::Broadcast, true, true, 0), 0), {true, 1, 0},
         "root of rows [0, 2): their batch closes and is waited for at once, window or not");
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
