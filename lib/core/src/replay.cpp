// The replay of the op lists on a virtual clock (replay.h; the model: simulate.h; each op's costs: op_cost.h).
#include "replay.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "reshard/core/batch_policy.h"
#include "reshard/core/batch_window.h"
#include "reshard/core/ops.h"
#include "reshard/core/schedule.h"
#include "reshard/core/storage.h"
#include "reshard/core/time_slice.h"
#include "op_cost.h"

namespace reshard::replay {

OpLists::OpLists(const Plan& plan, const SystemModel& m) : ops(plan.world()) {
  struct Entry {
    uint32_t unit, item, sub;
    int rank;
    uint32_t index;
  };
  std::vector<Entry> all;
  OpListOptions options = m.batch.op_list(m.algo);
  const Schedule schedule = make_schedule(plan, options.streams, kFanoutLag);
  options.schedule = &schedule;
  for (int r = 0; r < plan.world(); ++r) {
    ops[r] = build_ops(plan, r, rank_storages(plan, r), options);
    for (uint32_t i = 0; i < ops[r].size(); ++i) all.push_back({ops[r][i].unit, ops[r][i].item, ops[r][i].sub, r, i});
  }
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.unit, a.item, a.sub, a.rank) < std::tie(b.unit, b.item, b.sub, b.rank);
  });
  for (size_t i = 0; i < all.size(); ++i) {
    if (i == 0 || std::tie(all[i].unit, all[i].item, all[i].sub) != std::tie(all[i - 1].unit, all[i - 1].item, all[i - 1].sub))
      messages.emplace_back();
    messages.back().emplace_back(all[i].rank, all[i].index);
  }
}

namespace {

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
  // For its wait (flush()): the rank's posted bytes per resource (RankState::posted) before its first op
  // and after its last, and when the rank's ops posted before its first were through.
  Bytes4 first_posted{}, last_posted{};
  double before_through = 0;
};

struct RankState {
  explicit RankState(const BatchPolicy& policy)
      : window(policy, policy.staging_bytes), open(static_cast<size_t>(window.lanes())),
        ends(static_cast<size_t>(window.lanes())) {}
  // The rank's clock: when it posts its next op. Its lanes' open batches and posted batches not yet
  // waited for (when each completes).
  double start = 0;
  BatchWindow window;
  std::vector<OpenBatch> open;
  std::vector<std::deque<std::pair<double, int64_t>>> ends;  // per lane: (when it ends, its batch id)
  int64_t opened = 0;                     // batches opened so far
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
  OpenBatch& open_of(const Op& op) { return open[static_cast<size_t>(window.lane(op))]; }
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
      : plan_(plan), m_(m), lists_(lists), coster_(plan, m),
        ranks_(static_cast<size_t>(plan.world()), RankState(m.batch)) {
    copies_ = coster_.copies();
    push_ = coster_.push();
    one_memory_ = copies_ && m.shared_copy_gbps > 0 && m.box_ops;
    sender_copies_ = m.sender_copies;
    turns_ = copies_ && m.serial_issue && m.switch_us > 0 && m.slice_us > 0;
    unpack_turns_ = copies_ && m.serial_issue && m.switch_us > 0 && !m.serial_packs;
    misc_phase_ = coster_.misc_phase();
  }

  void run(const Filter& f) {
    coster_.busy_share(lists_, f);
    std::vector<std::pair<int, const Op*>> parts;
    std::vector<OpCost> costs;
    through_.assign(lists_.messages.size(), 0);
    for (size_t message_index = 0; message_index < lists_.messages.size(); ++message_index) {
      const auto& message = lists_.messages[message_index];
      parts.clear();
      for (const auto& [r, i] : message) {
        const Op& op = lists_.ops[r][i];
        if (!selected(op, f)) break;
        parts.emplace_back(r, &op);
      }
      if (parts.size() != message.size() || parts.empty()) continue;
      costs.assign(parts.size(), OpCost{});
      coster_.cost(parts, costs);
      // Every rank closes its batch first where the policy says so; the op moves once all have posted it.
      double ready = 0;
      for (const auto& [r, op] : parts) {
        RankState& s = ranks_[r];
        apply(s, s.window.add(*op, staged(*op)));
        OpenBatch& o = s.open_of(*op);
        if (o.ops == 0) o.id = s.opened++;
        ready = std::max(ready, s.start);
      }
      if (copies_ && m_.serial_packs)  // each sender packs its op before posting it (executor.cpp, run_ops)
        for (size_t k = 0; k < parts.size(); ++k) {
          RankState& s = ranks_[parts[k].first];
          const double pack = static_cast<double>(costs[k].pack_bytes) / (m_.copy_gbps * 1e9);
          // Without single copy the rank's transfers move only inside MPI, not while it packs.
          if (sender_copies_ && pack > 0)
            for (double& free : s.free) free = std::max(free, s.start) + pack;
          s.start += pack;
          ready = std::max(ready, s.start);
        }
      if (costs.front().tree) {
        // Each member receives once it and its parent have posted the op and the parent holds the
        // message (parents come before their children: a tree's parts are in virtual-rank order).
        for (size_t k : tree_order(costs)) {
          const double posted = ranks_[parts[k].first].start;
          const int p = costs[k].tree_parent;
          const double from = p < 0 ? posted : std::max(costs[static_cast<size_t>(p)].hold, posted);
          // post() adds its own receive; a binomial member holds one hand-off after its parent's sends
          costs[k].hold = p < 0 ? posted : costs[static_cast<size_t>(p)].done + costs[k].hop_latency;
          post(parts[k].first, *parts[k].second, costs[k], from, message_index);
        }
      } else {
        for (size_t k = 0; k < parts.size(); ++k) post(parts[k].first, *parts[k].second, costs[k], ready, message_index);
      }
      copied(parts, costs, ready);
    }
    for (RankState& s : ranks_) {
      apply(s, s.window.close());
      drained(s);
      // Every batch was waited for above, launching its own passes: none should be left.
      while (turns_ && !s.unlaunched.empty()) launch_pending(s, s.unlaunched.front().batch, s.start);
    }
  }

  const std::vector<RankState>& ranks() const { return ranks_; }
  std::vector<RankState>& ranks() { return ranks_; }
  // A tree's parts, every parent before its children.
  static std::vector<size_t> tree_order(const std::vector<OpCost>& costs) {
    std::vector<size_t> order, depth(costs.size(), 0);
    for (size_t k = 0; k < costs.size(); ++k)
      for (int p = costs[k].tree_parent; p >= 0; p = costs[static_cast<size_t>(p)].tree_parent) ++depth[k];
    for (size_t k = 0; k < costs.size(); ++k) order.push_back(k);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return depth[a] < depth[b]; });
    return order;
  }
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
  bool selected(const Op& op, const Filter& f) const { return selects(f, op, misc_phase_); }
  int64_t staged(const Op& op) const { return staged_bytes(op, coster_.boxed(op)); }
  // The transport copies of one op (parts as in cost()), once every rank has posted it (`ready`): each
  // goes into its copier's pass for the GPU's turns (time_slice.h), which the batches holding the op on
  // both ends wait for: the copier's and the other side's (push: the receiver; pull: the sender; a
  // broadcast member pulling: the root; a root pushing: every member).
  void copied(const std::vector<std::pair<int, const Op*>>& parts, const std::vector<OpCost>& costs, double ready) {
    if (!copies_) return;
    const Op& first = *parts.front().second;
    const int root = first.kind == OpKind::Broadcast ? first.peer : -1;
    for (size_t k = 0; k < parts.size(); ++k) {
      if (costs[k].pass_bytes <= 0) continue;
      const int copier = parts[k].first;
      const double seconds = static_cast<double>(costs[k].pass_bytes) / (m_.copy_gbps * 1e9);
      // One device memory: no link resource times the op, so its copy does, one after another on the
      // copier from `ready`, and the batches waiting for it end no earlier.
      RankState& c = ranks_[copier];
      if (one_memory_) c.copy_free = std::max(c.copy_free, ready) + seconds;
      Pass* pass = nullptr;  // only a GPU that takes turns (turns_) needs the passes
      if (turns_) {
        pass = &c.open_of(*parts[k].second).passes[{parts[k].second->stream, ready}];
        pass->ready = std::max(pass->ready, ready);
        pass->seconds += seconds;
      }
      for (const auto& part : parts)
        if (part.first == copier || root < 0 || copier == root || part.first == root) {
          OpenBatch& o = ranks_[part.first].open_of(*part.second);
          if (pass) pass->waiters.emplace_back(part.first, o.id);
          if (one_memory_) o.wait_until = std::max(o.wait_until, c.copy_free);
        }
    }
  }

  void post(int rank, const Op& op, OpCost& c, double ready, size_t message) {
    RankState& s = ranks_[rank];
    OpenBatch& o = s.open_of(op);
    if (o.ops == 0) {
      o.first_posted = s.posted;
      o.before_through = s.posted_through;
    }
    ++o.ops;
    o.copy_bytes += c.copy_bytes;
    o.pack_bytes += c.pack_bytes;
    o.unpack_bytes += c.unpack_bytes;
    o.pass_bytes += c.pass_bytes;
    o.copies += c.copies;
    o.launches += c.launches;
    const std::pair<int, int> from{op.stream, c.peer};
    if (c.pulls && std::find(o.pulls.begin(), o.pulls.end(), from) == o.pulls.end()) o.pulls.push_back(from);
    Bytes4 timed = c.res;
    if (one_memory_) timed[0] = timed[1] = 0;  // the domain's "NVLink" is the memory the copies already move
    // Each resource takes the rank's ops in the order they are posted, none before all its ranks had
    // posted it, behind what the rank's earlier ops still move on it.
    double through = ready;  // an op without bytes on this rank's links is through once posted
    if (c.tree) {
      // A tree's member: its receive from `ready`, its sends once it holds the message.
      for (int i : {1, 3, 0, 2}) {
        if (timed[i] == 0) continue;
        const int j = resource(i);
        const bool sends = i % 2 == 0;
        if (sends) c.hold = std::max(c.hold, through);
        s.free[j] = std::max(s.free[j], sends ? c.hold : ready) + static_cast<double>(timed[i]) / coster_.beta(i);
        through = std::max(through, s.free[j]);
      }
      c.hold = std::max(c.hold, ready);
      c.done = std::max(c.hold, through);
      o.wait_until = std::max(o.wait_until, c.done);
    } else {
      for (int i = 0; i < kResources; ++i) {
        if (timed[i] == 0) continue;
        const int j = resource(i);
        s.free[j] = std::max(s.free[j], ready) + static_cast<double>(timed[i]) / coster_.beta(i);
        through = std::max(through, s.free[j]);
      }
    }
    through_[message] = std::max(through_[message], through);
    o.wire.push_back({ready, timed, message, through, !c.tree});
    for (int i = 0; i < kResources; ++i) s.posted[resource(i)] += timed[i];
    s.posted_through = std::max(s.posted_through, through);
    o.last_posted = s.posted;
    for (int i = 0; i < kResources; ++i) {
      s.total_res[i] += c.res[i];
      if (op.phase == misc_phase_) s.misc_res[i] += c.res[i];
    }
    o.latency = std::max(o.latency, c.latency);
    o.relay += c.relay;
    const uint32_t bit = 1u << (op.stream % 32);
    if (!(o.streams_used & bit)) {
      o.streams_used |= bit;
      ++o.stream_count;
    }
  }

  // What the batch window says before an op (or at the end): the lanes' batches it closes, then the
  // ones waited for.
  void apply(RankState& s, const BatchWindow::Step& step) {
    for (int lane : step.close) flush(s, lane);
    for (int lane : step.retire) retire(s, lane);
  }

  // The lane's oldest posted batch is waited for: the rank's next op starts no earlier than it ends.
  void retire(RankState& s, int lane) {
    auto& ends = s.ends[static_cast<size_t>(lane)];
    if (ends.empty()) return;
    const auto [end, batch] = ends.front();
    launch_pending(s, batch, end);
    s.start = std::max(s.start, end);
    s.seconds = std::max(s.seconds, end);
    ends.pop_front();
    unpack(s, batch);
    if (!s.in_flight()) drained(s);
  }

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
  void launch_pending(RankState& s, int64_t batch, double end) {
    if (!turns_ || s.unlaunched.empty()) return;
    bool own = false;
    for (const auto& u : s.unlaunched) own |= u.batch == batch;
    if (!own && end <= s.start) return;
    const double until = std::max(end, s.start);
    const size_t rank = static_cast<size_t>(&s - ranks_.data());
    std::map<std::pair<int, double>, Pass> launches_of;
    std::vector<RankState::Unlaunched> kept;
    for (auto& u : s.unlaunched) {
      if (u.batch != batch && u.pass.ready > until) {  // its descriptions come after this wait: a later one's
        kept.push_back(std::move(u));
        continue;
      }
      const double at = std::max(u.pass.ready, s.start);
      Pass& l = launches_of[{u.stream, at}];
      l.ready = at;
      l.seconds += u.pass.seconds;
      l.waiters.insert(l.waiters.end(), u.pass.waiters.begin(), u.pass.waiters.end());
    }
    s.unlaunched = std::move(kept);
    std::map<int, int64_t> previous;  // per stream: the previous wait's last launch
    for (const auto& [key, pass] : launches_of) {
      const auto last = s.last_launch.find(key.first);
      previous.emplace(key.first, last == s.last_launch.end() ? -1 : last->second);
    }
    for (auto& [key, pass] : launches_of) {  // by (stream, when): a stream's last launch comes last
      s.last_launch[key.first] = static_cast<int64_t>(slice_work_.size());
      slice_work_.push_back(SliceWork{pass.ready, static_cast<int>(rank), pass.seconds, previous[key.first]});
      std::sort(pass.waiters.begin(), pass.waiters.end());
      pass.waiters.erase(std::unique(pass.waiters.begin(), pass.waiters.end()), pass.waiters.end());
      slice_waiters_.push_back(std::move(pass.waiters));
    }
  }

  // Where the GPU takes turns (unpack_turns_), a retired batch's unpacks are the rank's own pass: the
  // executor queues them once the batch is waited for and then synchronizes the device
  // (executor.cpp, Executor::retire_oldest: copy_box per staged piece, then memory_.sync), so the rank
  // goes on only once its context had its turn and the copies are done (the previous walk's turns, or
  // their copy time alone). Each rank's unpacks are thus one batch at a time, and between two of them
  // the GPU may switch to another rank: golden's receivers at the default 256 MiB batches (22 a rank
  // on Qwen3-4B DP2 -> TP2) alternate with one another after the root's copies.
  void unpack(RankState& s, int64_t batch) {
    const size_t b = static_cast<size_t>(batch);
    const double seconds = b < s.batch_unpack.size() ? s.batch_unpack[b] : 0;
    if (seconds <= 0) return;
    const size_t rank = static_cast<size_t>(&s - ranks_.data());
    ++s.total_passes;  // a launch of its own: without slices, a switch (walk())
    if (turns_) {
      unpack_items_.push_back(UnpackItem{slice_work_.size(), static_cast<int>(rank), batch});
      slice_work_.push_back(SliceWork{s.start, static_cast<int>(rank), seconds});
      slice_waiters_.emplace_back();  // no batch waits for it: the rank's clock does
    }
    const double waited = rank < unpack_wait_.size() && b < unpack_wait_[rank].size() ? unpack_wait_[rank][b] : 0;
    s.start += std::max(seconds, waited);
    s.seconds = std::max(s.seconds, s.start);
  }

  // The rank has no batch in flight: the fixed costs of the batches since it last had none are exposed
  // once per window's worth (window 1: every batch's).
  void drained(RankState& s) {
    if (s.run_batches > 0) {
      const int64_t overlap = std::min<int64_t>(s.run_batches, std::max(1, m_.batch.window));
      s.fixed_seconds += s.run_fixed / static_cast<double>(overlap);
    }
    s.run_fixed = 0;
    s.run_batches = 0;
  }

  // Closes the open batch: when it ends, and when the rank may start posting the next one.
  void flush(RankState& s, int lane) {
    OpenBatch& o = s.open[static_cast<size_t>(lane)];
    if (o.ops == 0) return;
    // Its ops went onto the rank's resources as they were posted (post()); each is done on no rank
    // before its bytes are through on every rank's links (a send completes once its receiver has the
    // bytes, a receive once its sender sent them), and all of its ranks had posted it by now.
    double through = s.start;
    for (const OpenBatch::Wire& w : o.wire) {
      through = std::max(through, w.through);
      if (w.coupled) o.wait_until = std::max(o.wait_until, through_[w.message]);
    }
    // Its wait is past the rank's own traffic: what the ops posted before its first, on any lane, took,
    // and the bytes of every op the rank posted from its first op to its last, on any lane (lanes put
    // batches side by side on one link; with one lane these are the batch's own bytes).
    double wire = through - s.start, alone = 0;
    for (int i = 0; i < kResources; ++i)
      alone = std::max(alone, static_cast<double>(o.last_posted[i] - o.first_posted[i]) / coster_.beta(i));
    const double waited_from = std::max({s.start, s.through, o.before_through});
    s.through = std::max(s.through, through);
    s.wait_seconds += std::max(0.0, through - waited_from - alone);
    if (record_) {
      double first = s.start + wire;
      for (const auto& w : o.wire) first = std::min(first, w.ready);
      int64_t bytes = 0;
      for (const auto& w : o.wire) bytes += std::max({w.res[0], w.res[1], w.res[2], w.res[3]});
      s.spans.push_back(BatchSpan{s.start, first, 0, bytes});
    }
    // Serial packs (host staging): the rank's thread packs each op before posting it (run() moves the
    // rank's clock) and unpacks after the wait, so those copies add to the batch; else (kernels on a
    // stream) every copy overlaps the wire.
    const int64_t serial = m_.serial_packs ? o.pack_bytes + o.unpack_bytes : 0;
    const double unpack = copies_ && m_.serial_packs ? static_cast<double>(o.unpack_bytes) / (m_.copy_gbps * 1e9) : 0;
    // Without box ops (MPI) the transport's wire copies are inside the link's rate, which is one pair's
    // measured point-to-point: they load the shared memory system (shared_bound), not the rank's own
    // copy time again (that capped a rank's receives at copy_gbps / wire_copies, 3.9 GB/s on the device
    // host, where one pair measured 6.7).
    const int64_t in_link = m_.box_ops ? 0 : o.pass_bytes;
    // With the GPU's turns the unpacks come after the wait (unpack()), not inside it.
    const int64_t after_wait = unpack_turns_ ? o.unpack_bytes : 0;
    if (copies_) wire = std::max(wire, static_cast<double>(o.copy_bytes - serial - in_link - after_wait) / (m_.copy_gbps * 1e9));
    wire = std::max(wire, o.relay);
    const double fixed = m_.launch_us * 1e-6 * o.stream_count + o.latency;
    const int64_t launches = o.launches + static_cast<int64_t>(o.pulls.size());
    const double issue = m_.launch_us * 1e-6 * o.stream_count + m_.per_op_us * 1e-6 * static_cast<double>(o.ops) +
                         m_.per_copy_us * 1e-6 * static_cast<double>(o.copies) +
                         m_.per_launch_us * 1e-6 * static_cast<double>(launches);
    const size_t rank = static_cast<size_t>(&s - ranks_.data()), batch = static_cast<size_t>(o.id);
    const double delay = rank < delay_.size() && batch < delay_[rank].size() ? delay_[rank][batch] : 0;
    const double own_end = std::max(s.start + issue + wire, o.wait_until);
    if (s.batch_through.size() <= batch) s.batch_through.resize(batch + 1, 0);
    s.batch_through[batch] = own_end;
    const double end = own_end + o.latency + unpack + delay;
    s.ends[static_cast<size_t>(lane)].emplace_back(end, o.id);
    if (unpack_turns_ && o.unpack_bytes > 0) {
      if (s.batch_unpack.size() <= batch) s.batch_unpack.resize(batch + 1, 0);
      s.batch_unpack[batch] = static_cast<double>(o.unpack_bytes) / (m_.copy_gbps * 1e9);
    }
    o.wait_until = 0;
    // The copier launches, per stream, every copy whose descriptions are in at once, in one pass
    // (cuda_ipc_transport.cpp, CudaIpcTransport::progress: each progress pass takes the arrived
    // descriptions of all peers and launch_pass() sends the stream's queued copies as one kernel), but
    // only inside a wait that waits (launch_pending): none before the batch is posted.
    for (auto& [key, pass] : o.passes) {
      pass.ready = std::max(pass.ready, s.start + issue);
      s.unlaunched.push_back(RankState::Unlaunched{o.id, key.first, std::move(pass)});
    }
    o.passes.clear();
    s.start += issue;  // posting it took this long; the window decides whether the next waits for it
    if (record_) s.spans.back().end = end;
    s.run_fixed += fixed;
    ++s.run_batches;
    ++s.batches;
    s.total_ops += o.ops;
    o.ops = 0;
    s.total_copies += o.copies;
    s.total_launches += launches;
    s.total_passes += static_cast<int64_t>(o.pulls.size());
    s.total_copy_bytes += o.copy_bytes;
    o.copy_bytes = o.copies = o.launches = o.pass_bytes = o.pack_bytes = o.unpack_bytes = 0;
    o.pulls.clear();
    o.wire.clear();
    o.latency = 0;
    o.relay = 0;
    o.streams_used = 0;
    o.stream_count = 0;
  }

  const Plan& plan_;
  const SystemModel& m_;
  const OpLists& lists_;
  OpCoster coster_;  // what each op costs on each rank taking part
  std::vector<RankState> ranks_;
  bool copies_ = false;
  bool push_ = false;  // cuda-ipc push mode (SystemModel::ipc_push where box_ops is on)
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
  int misc_phase_ = 0;
  bool record_ = false;
  std::vector<SliceWork> slice_work_;
  std::vector<std::vector<std::pair<int, int64_t>>> slice_waiters_;
  std::vector<std::vector<double>> delay_;
  std::vector<double> through_;  // per message (OpLists::messages): through on the last of its ranks
};

// The domains that time-slice one GPU between ranks launching copies (serial_issue, switch_us, at
// least two of its ranks launch copies): their ranks take turns there (time_slice.h).
std::set<int64_t> sliced_domains(const Replayer& w, const SystemModel& m) {
  std::map<int64_t, int> launching;
  const std::vector<RankState>& ranks = w.ranks();
  for (size_t r = 0; r < ranks.size(); ++r)
    if (ranks[r].total_launches > 0) ++launching[w.node(static_cast<int>(r))];
  std::set<int64_t> out;
  for (const auto& [node, n] : launching)
    if (m.serial_issue && m.switch_us > 0 && n >= 2) out.insert(node);
  return out;
}

// The walk's transport passes taking turns on their domain's GPU, each from when it could launch.
SliceSchedule take_turns(const Replayer& w, const SystemModel& m, const std::set<int64_t>& sliced) {
  const int world = static_cast<int>(w.ranks().size());
  SliceSchedule all;
  all.done.assign(w.slice_work().size(), 0);
  all.switches_in.assign(static_cast<size_t>(world), 0);
  std::map<int64_t, std::vector<size_t>> by_domain;
  for (size_t i = 0; i < w.slice_work().size(); ++i) {
    const int64_t node = w.node(w.slice_work()[i].context);
    if (sliced.count(node)) by_domain[node].push_back(i);
  }
  std::vector<int64_t> local(w.slice_work().size(), -1);  // an item's index in its domain's list
  for (const auto& [node, items] : by_domain) {
    std::vector<SliceWork> work;
    for (size_t k = 0; k < items.size(); ++k) local[items[k]] = static_cast<int64_t>(k);
    for (size_t i : items) {
      work.push_back(w.slice_work()[i]);
      // `after` names an item of the whole walk (the same rank's, so the same domain's): renumbered.
      if (work.back().after >= 0) work.back().after = local[static_cast<size_t>(work.back().after)];
    }
    const SliceSchedule d = schedule_time_slices(work, world, m.slice_us * 1e-6, m.switch_us * 1e-6);
    for (size_t k = 0; k < items.size(); ++k) all.done[items[k]] = d.done[k];
    for (int r = 0; r < world; ++r) all.switches_in[static_cast<size_t>(r)] += d.switches_in[static_cast<size_t>(r)];
    all.end = std::max(all.end, d.end);
  }
  return all;
}

// A walk and the context switches each rank waits for (SystemModel::switch_us), where its domain is
// sliced (sliced_domains): one per transport pass; with slice_us, the switches into its context when
// the domain's passes take turns on the GPU (time_slice.h), each from when it could launch.
// With slice_us the turns also move the walk: a batch ends no earlier than the last pass it waits for
// is done in the turns, which moves what comes after it on every rank, and with that the turns. So
// the walk is repeated, each batch delayed by how much later than its own end the previous walk's
// turns finished its passes; the delays move a shrinking step towards the new
// ones (1 / (1 + k/4) at walk k: a walk without delays bunches the passes, and its delays overshoot),
// until none moves by 10 us, or kTurnWalks walks (the step is 1/16 by then: the delays are an average
// over the last walks, which on large plans keep moving tens of us).
// In the cuda-ipc trace of 1a at window 1 (results/gpu/extra/trace_19254c7/; misc, where one bucket
// root copies per batch) a root's copies after the other root's take 134 us longer (median; switch_us
// is 137.7), after its own none longer. In the trace of the 8-rank two-phase plan at window 16
// (results/gpu/window_push_nosync/trace/) a bulk stage's copying waits change rank 55 times in 12.5
// ms: the gen ranks' small batches, each waited for, are switched in one after another (the walk
// with turns: 50 switches, 10.6 ms; without: 7, 4.7 ms).
constexpr int kTurnWalks = 60;
constexpr double kTurnsSettled = 10e-6;

struct Walk {
  std::unique_ptr<Replayer> replay;
  std::vector<int64_t> switches;  // per rank
  bool turns = false;             // the batches waited for the GPU's turns (their switches included)
};

Walk walk(const Plan& plan, const SystemModel& m, const OpLists& lists, const Filter& f, bool record) {
  auto once = [&](std::vector<std::vector<double>> delay, std::vector<std::vector<double>> unpack_wait) {
    auto replay = std::make_unique<Replayer>(plan, m, lists);
    if (record) replay->record();
    replay->delay_batches(std::move(delay));
    replay->wait_unpacks(std::move(unpack_wait));
    replay->run(f);
    return replay;
  };
  Walk out;
  out.replay = once({}, {});
  const std::vector<RankState>& ranks = out.replay->ranks();
  out.switches.assign(ranks.size(), 0);
  const std::set<int64_t> sliced = sliced_domains(*out.replay, m);
  if (sliced.empty()) return out;
  if (m.slice_us <= 0) {
    for (size_t r = 0; r < ranks.size(); ++r)
      if (sliced.count(out.replay->node(static_cast<int>(r)))) out.switches[r] = ranks[r].total_passes;
    return out;
  }
  // The loop walks at least twice (a first walk never settles), so its last walk's switches are kept.
  SliceSchedule turns = take_turns(*out.replay, m, sliced);
  const Replayer* cur = out.replay.get();
  std::unique_ptr<Replayer> next_walk;
  std::vector<std::vector<double>> delay, unpack_wait;
  for (int k = 0; k < kTurnWalks; ++k) {
    std::vector<std::vector<double>> next(cur->ranks().size());
    for (size_t r = 0; r < next.size(); ++r) next[r].assign(static_cast<size_t>(cur->ranks()[r].batches), 0);
    // A batch waiting for passes ends once the last of them is done in the turns: its delay is how
    // much later that is than its bytes were through on its own clock. (Each pass's lateness against
    // its own copier's clock, added to the batch's latest, counted the wait twice where a batch waits
    // for several copiers' passes: 8-rank config 2 at window 1 walked to 27 ms where its GPU work was
    // 19 ms and the H100 trace 19.5 ms.)
    const auto& waiters = cur->slice_waiters();
    for (size_t i = 0; i < waiters.size(); ++i)
      for (const auto& [rank, batch] : waiters[i]) {
        const size_t r = static_cast<size_t>(rank), b = static_cast<size_t>(batch);
        const auto& through = cur->ranks()[r].batch_through;
        if (b < next[r].size() && b < through.size()) next[r][b] = std::max(next[r][b], turns.done[i] - through[b]);
      }
    // A rank's unpacks hold it from their launch until they are done in the turns (only a sliced
    // domain's take turns: elsewhere they take their copy time, Replayer::unpack).
    std::vector<std::vector<double>> next_unpack(next.size());
    for (size_t r = 0; r < next.size(); ++r) next_unpack[r].assign(next[r].size(), 0);
    for (const auto& u : cur->unpack_items()) {
      const size_t r = static_cast<size_t>(u.rank), b = static_cast<size_t>(u.batch);
      if (b < next_unpack[r].size() && sliced.count(cur->node(u.rank)))
        next_unpack[r][b] = turns.done[u.work] - cur->slice_work()[u.work].ready;
    }
    double moved = 0;  // over both the batch delays and the unpack waits: the walks settle when both do
    const double step = 1.0 / (1.0 + k / 4.0);
    auto settle = [&](std::vector<std::vector<double>>& now, const std::vector<std::vector<double>>& was) {
      for (size_t r = 0; r < now.size(); ++r)
        for (size_t b = 0; b < now[r].size(); ++b) {
          const double before = r < was.size() && b < was[r].size() ? was[r][b] : 0;
          now[r][b] = before + step * (now[r][b] - before);
          moved = std::max(moved, std::abs(now[r][b] - before));
        }
    };
    settle(next, delay);
    settle(next_unpack, unpack_wait);
    if (k > 0 && moved < kTurnsSettled) break;
    delay = std::move(next);
    unpack_wait = std::move(next_unpack);
    next_walk = once(delay, unpack_wait);
    cur = next_walk.get();
    turns = take_turns(*cur, m, sliced);
  }
  if (next_walk) {
    out.replay = std::move(next_walk);
    out.switches = turns.switches_in;
    out.turns = true;
  }
  return out;
}

// The slowest rank of a walk (its own batches and context switches); with a shared memory system, also
// the busiest domain's copies at the shared rate plus the fixed batch costs of its slowest-fixed rank,
// when that is longer.
SimPhase slowest(const std::string& name, const Walk& walked, const SystemModel& m) {
  const Replayer& w = *walked.replay;
  const std::vector<RankState>& ranks = w.ranks();
  const std::vector<int64_t>& switches = walked.switches;
  // With the GPU's turns walked, a rank's batches already waited for its switches.
  const double own_switch = walked.turns ? 0 : m.switch_us * 1e-6;
  auto own = [&](size_t r) { return ranks[r].seconds + own_switch * static_cast<double>(switches[r]); };
  SimPhase p;
  p.name = name;
  for (size_t r = 0; r < ranks.size(); ++r)
    if (own(r) > p.seconds) {
      p.seconds = own(r);
      p.slowest_rank = static_cast<int>(r);
      p.batches = ranks[r].batches;
      p.ops = ranks[r].total_ops;
      p.copies = ranks[r].total_copies;
      p.launches = ranks[r].total_launches;
      p.wait_seconds = ranks[r].wait_seconds;
    }
  if (m.shared_copy_gbps <= 0 || m.copy_gbps <= 0) return p;
  struct Domain {
    int64_t bytes = 0, switches = 0;
    double issue = 0, fixed = 0;
  };
  std::map<int64_t, Domain> domains;
  for (size_t r = 0; r < ranks.size(); ++r) {
    Domain& d = domains[w.node(static_cast<int>(r))];
    d.bytes += ranks[r].total_copy_bytes;
    if (m.serial_issue)
      d.issue += 1e-6 * (m.per_op_us * static_cast<double>(ranks[r].total_ops) +
                         m.per_copy_us * static_cast<double>(ranks[r].total_copies) +
                         m.per_launch_us * static_cast<double>(ranks[r].total_launches) +
                         m.switch_us * static_cast<double>(switches[r]));
    d.switches += switches[r];
    d.fixed = std::max(d.fixed, ranks[r].fixed_seconds);
  }
  for (const auto& [n, d] : domains) {
    const double t = static_cast<double>(d.bytes) / (m.shared_copy_gbps * 1e9) + d.issue;
    if (t > p.shared_copy_seconds) {
      p.shared_copy_seconds = t;
      p.shared_copy_bytes = d.bytes;
      p.switches = d.switches;
    }
    if (t + d.fixed > p.seconds) {
      p.seconds = t + d.fixed;
      p.shared_bound = true;
    }
  }
  return p;
}

}  // namespace

SimPhase run_phase(const Plan& plan, const SystemModel& m, const OpLists& lists, const std::string& name,
                   const Filter& f) {
  return slowest(name, walk(plan, m, lists, f, false), m);
}

TotalWalk run_total(const Plan& plan, const SystemModel& m, const OpLists& lists) {
  const Walk walked = walk(plan, m, lists, {}, true);
  TotalWalk out;
  out.phase = slowest("total", walked, m);
  Replayer& all = *walked.replay;
  for (int i = 0; i < kResources; ++i) out.beta[static_cast<size_t>(i)] = all.beta(i);
  // The walk is done with: its spans move rather than copy (every batch of every rank).
  for (RankState& s : all.ranks())
    out.ranks.push_back(RankTotals{std::move(s.spans), s.total_res, s.misc_res, s.total_copy_bytes});
  return out;
}

}  // namespace reshard::replay
