// Which batches a rank has in flight, and when it must wait for one: the walk both the executor
// (lib/exec executor.cpp) and the simulator (replayer.cpp) follow, so the simulator waits exactly
// where the executor does.
//
// A rank's batches go in lanes: one lane for all its ops, or (BatchPolicy::per_stream_window) one per
// stream, so that a stage's batches are not waited for behind another stage's. Each lane has one open
// batch (its ops posted, not yet flushed) and up to `window - 1` posted batches not yet waited for.
// Before an op it closes the op's lane's open batch where the batch policy says (BatchFill), then waits
// for ("retires") the oldest posted batches of a lane until
//   - at most window - 1 stay posted in the op's lane (window 1: every batch is waited for as it closes);
//   - none, in any lane, still writes a region the op (a fan-out root) sends from: the op reads what
//     it received;
//   - the op's staging does not overlap the staging of a batch still posted.
// Staging is one ring of `staging_size` bytes shared by the lanes: each op takes the bytes after the
// previous op's, or starts again at 0 when they do not fit (at 0 whenever nothing is in flight, so
// window 1 stages exactly as one batch at a time does). Memory stays bounded by --staging-bytes.
// Deadlock freedom: a lane waits only with its own open batch posted, and before any wait every open
// batch that began before the newest posted batch's last op is posted too; so at a wait the posted
// ops are a prefix of the rank's ops in the shared global order, holding all it waits for, and the
// lowest unfinished op is posted and flushed by all its ranks and completes (the argument of one batch
// at a time, unchanged).
#pragma once
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "reshard/core/batch_policy.h"

namespace reshard {

class BatchWindow {
 public:
  BatchWindow(const BatchPolicy& policy, int64_t staging_size);

  struct Step {
    std::vector<int> close;   // lanes whose open batch is flushed before the op: posted now, in this order
    std::vector<int> retire;  // then, in this order, each lane's oldest posted batch is waited for
    int64_t staging_at = 0;   // where the op's staging starts (when it stages any)
  };
  int lanes() const { return static_cast<int>(open_.size()); }
  int lane(const Op& op) const { return lanes() == 1 ? 0 : op.stream; }
  // Places `op` (taking `staged` bytes of staging; at most the staging size) and says what comes first.
  const Step& add(const Op& op, int64_t staged);
  // The end of the list: posts every open batch (lanes ascending) and retires every posted one.
  const Step& close();
  // Posts every open batch (lanes ascending) without waiting for any.
  const Step& post_open();
  // Waits for (forgets) the oldest posted batch of all lanes: its lane, or -1 when none is posted.
  int retire_oldest();
  bool open_empty(int lane) const { return open_[static_cast<size_t>(lane)].fill.empty(); }
  int posted() const { return static_cast<int>(posted_.size()); }
  int posted(int lane) const;

 private:
  struct Batch {
    int lane = 0;
    BatchFill fill;
    std::vector<std::pair<int64_t, int64_t>> runs;  // its staging, [begin, end) each
    int64_t first = 0, last = 0;                    // sequence numbers of its first and last op
  };
  // Where staging may grow to from `at`: the ring's end or the next staging in flight after it.
  int64_t limit(int64_t at) const;
  bool overlaps(const Batch& b, int64_t begin, int64_t end) const;
  bool overlaps(int64_t begin, int64_t end) const;
  void post(int lane);
  void post_older();  // the deadlock rule, before a wait
  void retire_lane(int lane);
  void retire_through(int64_t first);  // the posted batch starting with op `first`, and its lane's older ones

  BatchPolicy policy_;
  int64_t size_;
  std::vector<Batch> open_;  // per lane
  std::deque<Batch> posted_;  // in posting order
  int64_t cursor_ = 0;        // where the next staging goes
  int64_t seq_ = 0;           // ops placed so far
  Step step_;
  std::vector<int64_t> feeds_;  // per lane: the newest posted batch (its first op) feeding the op; -1: none
};

}  // namespace reshard
