// The replay of the op lists on a virtual clock (replay.h; the model: simulate.h): walks (replayer.h)
// repeated until the GPU's turns settle, and the phases read off them.
#include "replay.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "reshard/core/ops.h"
#include "reshard/core/schedule.h"
#include "reshard/core/storage.h"
#include "reshard/core/time_slice.h"
#include "replayer.h"

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
