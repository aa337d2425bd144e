// The NCCL transport's wait targets (lib/exec/src/stream_batch_events.h): a stream's batch may be
// issued in parts by other streams' flushes; wait(stream, keep) must wait for the end of the batch
// keep + 1 from the newest, not for the (keep + 1)-th newest event. Events here are ints; the
// expected targets are worked out by hand from the flush/issue sequence in each comment.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "stream_batch_events.h"

namespace reshard {
namespace {

// Two streams, a window per stream. Posting order a(s0) b(s1) c(s0); flush(0) issues all three:
// events 1 on s0, 2 on s1; s0's batch ends at 1. Then d(s1); flush(1) issues it: event 3 on s1, s1's
// batch ends at 3 (its batch is b and d: two parts, events 2 and 3).
StreamBatchEvents<int> first_batches() {
  StreamBatchEvents<int> ev(2);
  ev.recorded(0, 1);
  ev.recorded(1, 2);
  ev.batch_ended(0);
  ev.recorded(1, 3);
  ev.batch_ended(1);
  return ev;
}

TEST(StreamBatchEvents, ABatchIssuedInPartsIsOneBatch) {
  StreamBatchEvents<int> ev = first_batches();
  EXPECT_EQ(ev.target(1, 0), std::optional<int>(3));
  EXPECT_EQ(ev.target(1, 1), std::nullopt);  // one batch flushed on s1: keep 1 waits for nothing
  EXPECT_EQ(ev.target(0, 0), std::optional<int>(1));
  EXPECT_EQ(ev.target(0, 1), std::nullopt);
}

// Continues first_batches(): e(s0) f(s1); flush(0) issues both: event 4 on s0 (s0's second batch
// ends), event 5 on s1. flush(1) then issues nothing and ends s1's second batch at 5.
// s1 holds 2, 3 (end), 5 (end): keep 1 waits for 3 and releases 2 and 3.
TEST(StreamBatchEvents, KeepCountsBatchEndsNotEvents) {
  StreamBatchEvents<int> ev = first_batches();
  ev.recorded(0, 4);
  ev.recorded(1, 5);
  ev.batch_ended(0);
  ev.batch_ended(1);
  EXPECT_EQ(ev.target(1, 1), std::optional<int>(3));
  EXPECT_EQ(ev.target(0, 1), std::optional<int>(1));
  EXPECT_EQ(ev.release(1, 1), (std::vector<int>{2, 3}));
  EXPECT_EQ(ev.target(1, 1), std::nullopt);
  EXPECT_EQ(ev.target(1, 0), std::optional<int>(5));
  EXPECT_EQ(ev.release(0, 0), (std::vector<int>{1, 4}));
  EXPECT_EQ(ev.target(0, 0), std::nullopt);
}

// An open batch's issued part (event 7 on s1, not ended) is never a keep > 0 target, but keep 0
// waits for it: every op issued on the stream.
TEST(StreamBatchEvents, AnOpenBatchsPartCountsOnlyForKeepZero) {
  StreamBatchEvents<int> ev(2);
  ev.recorded(1, 6);
  ev.batch_ended(1);
  ev.recorded(1, 7);
  EXPECT_EQ(ev.target(1, 1), std::nullopt);
  EXPECT_EQ(ev.target(1, 0), std::optional<int>(7));
  EXPECT_EQ(ev.release(1, 1), std::vector<int>{});
  EXPECT_EQ(ev.release(1, 0), (std::vector<int>{6, 7}));
}

// A flush with nothing issued on its stream ends no batch; three batches with keep 2 wait for the
// first only.
TEST(StreamBatchEvents, EmptyFlushEndsNothingAndKeepTwo) {
  StreamBatchEvents<int> ev(1);
  ev.batch_ended(0);
  EXPECT_EQ(ev.target(0, 0), std::nullopt);
  for (int e : {10, 11, 12}) {
    ev.recorded(0, e);
    ev.batch_ended(0);
    ev.batch_ended(0);  // a second flush of the same batch adds nothing
  }
  EXPECT_EQ(ev.target(0, 2), std::optional<int>(10));
  EXPECT_EQ(ev.target(0, 3), std::nullopt);
  EXPECT_EQ(ev.release(0, 2), std::vector<int>{10});
  EXPECT_EQ(ev.target(0, 1), std::optional<int>(11));
}

TEST(StreamBatchEvents, TakeAllEmptiesEveryStream) {
  StreamBatchEvents<int> ev(2);
  ev.recorded(0, 1);
  ev.recorded(1, 2);
  ev.batch_ended(0);
  ev.recorded(1, 3);
  EXPECT_EQ(ev.take_all(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(ev.target(0, 0), std::nullopt);
  EXPECT_EQ(ev.target(1, 0), std::nullopt);
  EXPECT_THROW(ev.recorded(2, 4), std::out_of_range);
}

}  // namespace
}  // namespace reshard
