// One walk of the op lists on a virtual clock (replay.h): the Replayer and the state it keeps per rank
// and per open batch. replay.cpp repeats walks until the GPU's turns settle and reads the phases off
// them; op_cost.h says what each op costs.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>
#include <vector>

#include "op_cost.h"
#include "replay.h"
#include "reshard/core/batch_policy.h"
#include "reshard/core/batch_window.h"
#include "reshard/core/ops.h"
#include "reshard/core/simulate.h"
#include "reshard/core/time_slice.h"

namespace reshard::replay {

// A transport pass of a batch (one batched launch of a stream's copies whose descriptions are in): when
// its ops had been posted by every rank taking part, its copy time alone, and the batches (rank, batch
// count) waiting for it.
struct Pass {
  double ready = 0, seconds = 0;
  std::vector<std::pair<int, int64_t>> waiters;
};

// A lane's open batch (batch_window.h): what it holds so far.
struct OpenBatch {
  int64_t id = 0;  // its number among the rank's batches, in the order they opened (the GPU's turns)
  int64_t ops = 0, copy_bytes = 0, copies = 0, launches = 0, pass_bytes = 0, pack_bytes = 0, unpack_bytes = 0;
  std::vector<std::pair<int, int>> pulls;  // (stream, peer) of the transport's copies: a launch each
  struct Wire {
    double ready;     // when all its ranks had posted it
    Bytes4 res;       // its bytes on this rank's resources
    size_t message;   // its index in OpLists::messages
    double through;   // when its bytes are through this rank's resources
    bool coupled;     // done on no rank before it is through on all (every op but a tree's part)
  };
  std::vector<Wire> wire;  // per op
  double latency = 0;
  double relay = 0;  // its binomial broadcasts' relay time (one progress engine runs them all)
  uint32_t streams_used = 0;  // bit per stream (streams above 32 share bits; only the count matters)
  int stream_count = 0;
  // Its copies by (stream, when every rank had posted the op), for the GPU's turns (see run()): ops
  // posted at once by their peers arrive together; flush() turns them into the copier's launches.
  std::map<std::pair<int, double>, Pass> passes;
  double wait_until = 0;  // when the copies it waits for are done (one device memory, Replayer::copied())
  double pack_done = 0;   // kernel packs: when its latest pack so far is done
  // For its wait (flush()): the rank's posted bytes per resource (RankState::posted) before its first op
  // and after its last, and when the rank's ops posted before its first were through.
  Bytes4 first_posted{}, last_posted{};
  double before_through = 0;
};

// How one rank cuts its op list into batches (batch_window.h): its window and its lanes' open batches.
// The cut depends on the ops alone, not on time, so find_later_packs() walks it without the clocks.
struct BatchCut {
  explicit BatchCut(const BatchPolicy& policy)
      : window(policy, policy.staging_bytes), open(static_cast<size_t>(window.lanes())) {}
  BatchWindow window;
  std::vector<OpenBatch> open;
  int64_t opened = 0;  // batches opened so far
  OpenBatch& open_of(const Op& op) { return open[static_cast<size_t>(window.lane(op))]; }
  // The op's open batch, numbered if the op is its first (after the window's step for the op).
  OpenBatch& admit(const Op& op) {
    OpenBatch& o = open_of(op);
    if (o.ops == 0) o.id = opened++;
    return o;
  }
};

// One rank on the virtual clock: its batch cut and when its batches and bytes are through.
struct RankState : BatchCut {
  explicit RankState(const BatchPolicy& policy) : BatchCut(policy), ends(static_cast<size_t>(window.lanes())) {}
  // The rank's clock: when it posts its next op. Its lanes' posted batches not yet waited for (when
  // each completes).
  double start = 0;
  std::vector<std::deque<std::pair<double, int64_t>>> ends;  // per lane: (when it ends, its batch id)
  std::vector<double> batch_through;      // per batch (by its id): when its bytes are through, on its own clock
  std::vector<double> batch_unpack;       // per batch (by its id): its unpack kernels' copy time (unpack_turns)
  std::array<double, kResources> free{};  // per resource: when its last queued bytes are through
  double through = 0;                     // when the bytes of every batch so far are through
  // Every lane's ops as posted: their bytes per resource (resource()) so far, and when the last of the
  // ops posted so far is through (flushed or not).
  Bytes4 posted{};
  double posted_through = 0;
  // Totals.
  double seconds = 0, fixed_seconds = 0;  // seconds: the end of its last batch; fixed: launch and latency
  double wait_seconds = 0;  // of seconds, waiting on ranks that posted their part of an op later
  std::vector<BatchSpan> spans;  // every batch, when recorded (Replayer::record)
  int64_t batches = 0, total_ops = 0, total_copies = 0, total_launches = 0, total_copy_bytes = 0;
  int64_t total_passes = 0;  // the transport's batched launches (per batch, stream and peer), and unpack()'s
  // Since the rank last had no batch in flight: its batches' fixed costs (batches in flight overlap one
  // another's launch and latency).
  double run_fixed = 0;
  int64_t run_batches = 0;
  // One device memory (box ops): when the rank's own transport copies are through.
  double copy_free = 0;
  // Kernel packs (SystemModel::kernel_packs) on the op's stream, per stream (streams above 32 share, as
  // OpenBatch::streams_used): when its flushed batches are through, and when its last pack is done.
  std::array<double, 32> stream_through{}, stream_pack_done{};
  double side_pack_done = 0;  // kernel packs on side streams: when the rank's last pack is done
  // Its posted batches' transport passes not launched yet (Replayer::launch_pending).
  struct Unlaunched {
    int64_t batch = 0;
    int stream = 0;
    Pass pass;
  };
  std::vector<Unlaunched> unlaunched;
  std::map<int, int64_t> last_launch;  // per stream: its latest launch in slice_work() (its last wait's)
  Bytes4 total_res{};
  Bytes4 misc_res{};  // of total_res, misc buckets'
  bool in_flight() const {
    for (const auto& e : ends)
      if (!e.empty()) return true;
    return false;
  }
};

// Replays the op lists on a virtual clock: each rank cuts its list into batches by the batch policy
// and waits for its batches where the executor does (batch_window.h); a batch is posted once the
// previous one was (plus that one's issue costs) and the batches the rank had to wait for first have
// ended; an op's bytes move once every rank taking part has posted it (the latest of their batch
// starts), one op after another on each of the rank's resources, behind the bytes its earlier
// batches queued there; a batch ends when its last op's bytes are through (or its copies are done,
// whichever is later) plus its launch, latency and issue costs. Window 1: a batch starts when the
// previous one ended.
class Replayer {
 public:
  Replayer(const Plan& plan, const SystemModel& m, const OpLists& lists)
      : m_(m), lists_(lists), coster_(plan, m),
        ranks_(static_cast<size_t>(plan.world()), RankState(m.batch)) {
    const bool copies = coster_.copies();
    one_memory_ = copies && m.shared_copy_gbps > 0 && m.box_ops;
    sender_copies_ = m.sender_copies;
    turns_ = copies && m.serial_issue && m.switch_us > 0 && m.slice_us > 0;
    unpack_turns_ = copies && m.serial_issue && m.switch_us > 0 && !m.serial_packs;
  }

  void run(const Filter& f);

  const std::vector<RankState>& ranks() const { return ranks_; }
  std::vector<RankState>& ranks() { return ranks_; }
  // A tree's parts, every parent before its children.
  static std::vector<size_t> tree_order(const std::vector<OpCost>& costs);
  // The rank's resource that times bytes of resource i: without single copy (sender_copies) a link
  // class's send resource takes both directions.
  int resource(int i) const { return sender_copies_ ? (i & ~1) : i; }
  // Every transport pass's GPU work (time_slice.h): from when it could launch, its copy time alone; and
  // per pass the batches (rank, the rank's batch count) that wait for it.
  const std::vector<SliceWork>& slice_work() const { return slice_work_; }
  const std::vector<std::vector<std::pair<int, int64_t>>>& slice_waiters() const { return slice_waiters_; }
  // Per rank and batch: how much later it ends when the ranks take turns on the GPU (its last pass done
  // in the turns, less when its bytes were through on its own clock).
  void delay_batches(std::vector<std::vector<double>> delay) { delay_ = std::move(delay); }
  // The retired batches' unpack passes (unpack()): their index in slice_work(), rank and batch.
  struct UnpackItem {
    size_t work;
    int rank;
    int64_t batch;
  };
  const std::vector<UnpackItem>& unpack_items() const { return unpack_items_; }
  // Per rank and batch: how long its unpacks took from their launch to done in the previous walk's turns.
  void wait_unpacks(std::vector<std::vector<double>> wait) { unpack_wait_ = std::move(wait); }
  void record() { record_ = true; }
  double beta(int res) const { return coster_.beta(res); }
  int64_t node(int rank) const { return coster_.node(rank); }

 private:
  bool selected(const Op& op, const Filter& f) const { return selects(f, op, coster_.misc_phase()); }
  int64_t staged(const Op& op) const { return staged_bytes(op, coster_.boxed(op)); }
  // The transport copies of one op (parts as in cost()), once every rank has posted it (`ready`): each
  // goes into its copier's pass for the GPU's turns (time_slice.h), which the batches holding the op on
  // both ends wait for: the copier's and the other side's (push: the receiver; pull: the sender; a
  // broadcast member pulling: the root; a root pushing: every member).
  void copied(const std::vector<std::pair<int, const Op*>>& parts, const std::vector<OpCost>& costs, double ready);

  void post(int rank, const Op& op, OpCost& c, double ready, size_t message);

  // One message's parts (rank, op), their places in lists_.ops and their costs.
  struct Message {
    std::vector<std::pair<int, const Op*>> parts;
    std::vector<std::pair<int, size_t>> index;
    std::vector<OpCost> costs;
  };
  // Fills `m` when the filter selects every part of the message (else the walk skips it).
  bool gather(const std::vector<std::pair<int, uint32_t>>& message, const Filter& f, Message& m) const;

  // Kernel packs (SystemModel::kernel_packs): per rank and op (lists_.ops), the pack seconds of the
  // ops after it in its batch on that rank. NCCL issues a batch's group only at its flush, behind
  // every pack of the batch, so no op of it moves before the batch's last pack is done. A first walk
  // of the batch cuts alone (BatchCut: the same window and admit() as run()'s RankState) finds them.
  void find_later_packs(const Filter& f);

  // What the batch window says before an op (or at the end): the lanes' batches it closes, then the
  // ones waited for.
  void apply(RankState& s, const BatchWindow::Step& step) {
    for (int lane : step.close) flush(s, lane);
    for (int lane : step.retire) retire(s, lane);
  }

  // The lane's oldest posted batch is waited for: the rank's next op starts no earlier than it ends.
  void retire(RankState& s, int lane);

  // The copier's wait for `batch` (which ends at `end` on its own clock) launches its posted copies:
  // cuda_ipc_transport.cpp launches only in progress(), which wait() calls only while its batch is not
  // complete (flush launches nothing). So a wait whose batch is done and whose copies are out launches
  // nothing, and one that waits launches, per stream, every posted copy whose descriptions are in by its
  // end, those in at its start as one launch. A wait's launches are queued on the GPU no earlier than
  // the last launch of the copier's previous wait on the stream is done (SliceWork::after): a wait
  // returns only once its batch's copies are done, so the walk's own clock says as much, but only up to
  // the settled delays (walk()), which let a later wait's passes queue behind an earlier one's and share
  // its turn. The window-4 traces (results/gpu/trace_w4_h100/) show each wait launching after the last
  // one's copies were done.
  void launch_pending(RankState& s, int64_t batch, double end);

  // Where the GPU takes turns (unpack_turns_), a retired batch's unpacks are the rank's own pass: the
  // executor queues them once the batch is waited for and then synchronizes the device
  // (executor.cpp, Executor::retire_oldest: copy_box per staged piece, then memory_.sync), so the rank
  // goes on only once its context had its turn and the copies are done (the previous walk's turns, or
  // their copy time alone). Each rank's unpacks are thus one batch at a time, and between two of them
  // the GPU may switch to another rank: golden's receivers at the default 256 MiB batches (22 a rank
  // on Qwen3-4B DP2 -> TP2) alternate with one another after the root's copies.
  void unpack(RankState& s, int64_t batch);

  // The rank has no batch in flight: the fixed costs of the batches since it last had none are exposed
  // once per window's worth (window 1: every batch's).
  void drained(RankState& s);

  // Closes the open batch: when it ends, and when the rank may start posting the next one.
  void flush(RankState& s, int lane);

  const SystemModel& m_;
  const OpLists& lists_;
  OpCoster coster_;  // what each op costs on each rank taking part
  std::vector<RankState> ranks_;
  // Ranks of a domain share one device memory and every byte moves as a copy (cuda-ipc box ops on one
  // GPU): the copy model times the bytes (its fan-out merge included), so the NVLink resources, which
  // would count a linear broadcast's root once per member, do not time them again.
  bool one_memory_ = false;
  bool turns_ = false;  // the GPU takes turns between processes (serial_issue, switch_us, slice_us)
  // The GPU switches between processes (serial_issue, switch_us) and the executor's unpacks are kernels
  // (no serial packs): each retired batch's unpacks are a pass of the rank's own (unpack()).
  bool unpack_turns_ = false;
  std::vector<UnpackItem> unpack_items_;
  std::vector<std::vector<double>> unpack_wait_;
  bool sender_copies_ = false;  // SystemModel::sender_copies: a rank's sends and receives share its link
  bool record_ = false;
  std::vector<SliceWork> slice_work_;
  std::vector<std::vector<std::pair<int, int64_t>>> slice_waiters_;
  std::vector<std::vector<double>> delay_;
  std::vector<double> through_;  // per message (OpLists::messages): through on the last of its ranks
  std::vector<std::vector<double>> later_packs_;  // find_later_packs()
};

}  // namespace reshard::replay
