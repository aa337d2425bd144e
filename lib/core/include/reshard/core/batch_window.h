// Which batches a rank has in flight, and when it must wait for one: the walk both the executor
// (lib/exec executor.cpp) and the simulator (simulate.cpp) follow, so the simulator waits exactly
// where the executor does.
//
// A rank has one open batch (its ops posted, not yet flushed) and up to `window - 1` posted batches
// not yet waited for. Before an op it closes the open batch where the batch policy says (BatchFill),
// then waits for the oldest posted batches ("retires" them) until
//   - at most window - 1 stay posted (window 1: every batch is waited for as soon as it closes);
//   - none still writes a region the op (a fan-out root) sends from: the op reads what it received;
//   - the op's staging does not overlap the staging of a batch still posted.
// Staging is one ring of `staging_size` bytes: a batch takes the bytes after the newest posted
// batch's, or starts again at 0 when they do not fit (at 0 whenever nothing is posted, so window 1
// stages exactly as one batch at a time does). Memory stays bounded by --staging-bytes for any window.
// Deadlock freedom: a rank waits only for batches it has flushed, whose ops all precede, in the
// shared global order, every op it has not yet posted; so the lowest unfinished op is posted by all
// its ranks and completes (the argument of one batch at a time, unchanged).
#pragma once
#include <cstdint>
#include <deque>

#include "reshard/core/batch_policy.h"

namespace reshard {

class BatchWindow {
 public:
  BatchWindow(const BatchPolicy& policy, int64_t staging_size) : policy_(policy), size_(staging_size) {}

  struct Step {
    bool close = false;      // flush the open batch before the op: it is posted now
    int retire = 0;          // then wait for this many of the oldest posted batches, oldest first
    int64_t staging_at = 0;  // where the op's staging starts (when it stages any)
  };
  // Places `op` (taking `staged` bytes of staging; at most the staging size) and says what comes first.
  Step add(const Op& op, int64_t staged);
  // Closes the open batch (if it holds any op) and retires every posted one (the end of the list):
  // returns how many.
  int close();
  // Posts the open batch, if it holds any op, without waiting for any: returns whether it did.
  bool post_open();
  // Waits for (forgets) the oldest posted batch; false when none is posted.
  bool retire_oldest();
  bool open_empty() const { return open_.empty(); }
  int posted() const { return static_cast<int>(posted_.size()); }

 private:
  struct Posted {
    BatchFill fill;
    int64_t begin = 0, end = 0;  // its staging [begin, end)
  };
  // Where staging may grow to from `at`: the ring's end or the next posted batch's staging after it.
  int64_t limit(int64_t at) const;
  bool overlaps(int64_t begin, int64_t end) const;
  void post();

  BatchPolicy policy_;
  int64_t size_;
  std::deque<Posted> posted_;
  BatchFill open_;
  int64_t open_begin_ = 0;
};

}  // namespace reshard
