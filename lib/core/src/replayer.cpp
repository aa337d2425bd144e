// One walk of the op lists on a virtual clock (replayer.h).
#include "replayer.h"

#include <algorithm>
#include <map>

namespace reshard::replay {

bool Replayer::gather(const std::vector<std::pair<int, uint32_t>>& message, const Filter& f, Message& m) const {
  m.parts.clear();
  m.index.clear();
  for (const auto& [r, i] : message) {
    const Op& op = lists_.ops[r][i];
    if (!selected(op, f)) return false;
    m.parts.emplace_back(r, &op);
    m.index.emplace_back(r, i);
  }
  if (m.parts.empty()) return false;
  m.costs.assign(m.parts.size(), OpCost{});
  coster_.cost(m.parts, m.costs);
  return true;
}

void Replayer::find_later_packs(const Filter& f) {
  const size_t world = ranks_.size();
  std::vector<BatchCut> cut(world, BatchCut(m_.batch));
  struct Packed {
    size_t op;
    int64_t batch;
    double seconds;
  };
  std::vector<std::vector<Packed>> order(world);  // per rank, in posting order
  Message m;
  auto& [parts, index, costs] = m;
  for (const auto& message : lists_.messages) {  // as run() walks them
    if (!gather(message, f, m)) continue;
    for (size_t k = 0; k < parts.size(); ++k) {
      const size_t r = static_cast<size_t>(parts[k].first);
      const Op& op = *parts[k].second;
      for (int lane : cut[r].window.add(op, staged(op)).close)
        cut[r].open[static_cast<size_t>(lane)].ops = 0;  // as flush()
      OpenBatch& o = cut[r].admit(op);
      ++o.ops;  // as post()
      order[r].push_back({index[k].second, o.id, static_cast<double>(costs[k].pack_bytes) / (m_.copy_gbps * 1e9)});
    }
  }
  later_packs_.assign(world, {});
  for (size_t r = 0; r < world; ++r) {
    later_packs_[r].assign(lists_.ops[r].size(), 0);
    std::vector<double> after(static_cast<size_t>(cut[r].opened), 0);  // per batch: packs after the op
    for (auto p = order[r].rbegin(); p != order[r].rend(); ++p) {
      later_packs_[r][p->op] = after[static_cast<size_t>(p->batch)];
      after[static_cast<size_t>(p->batch)] += p->seconds;
    }
  }
}

void Replayer::run(const Filter& f) {
  coster_.busy_share(lists_, f);
  const bool kernel_packs = coster_.copies() && m_.serial_packs && m_.kernel_packs;
  if (kernel_packs) find_later_packs(f);
  Message m;
  auto& [parts, index, costs] = m;
  through_.assign(lists_.messages.size(), 0);
  for (size_t message_index = 0; message_index < lists_.messages.size(); ++message_index) {
    const auto& message = lists_.messages[message_index];
    if (!gather(message, f, m)) continue;
    // Every rank closes its batch first where the policy says so; the op moves once all have posted it.
    double ready = 0;
    for (const auto& [r, op] : parts) {
      RankState& s = ranks_[r];
      apply(s, s.window.add(*op, staged(*op)));
      s.admit(*op);
      ready = std::max(ready, s.start);
    }
    if (coster_.copies() && m_.serial_packs)  // each sender packs its op before posting it (executor.cpp, run_ops)
      for (size_t k = 0; k < parts.size(); ++k) {
        RankState& s = ranks_[parts[k].first];
        const double pack = static_cast<double>(costs[k].pack_bytes) / (m_.copy_gbps * 1e9);
        if (kernel_packs) {
          // A kernel, launched as the op is posted. On a side stream (executor.cpp, run_ops): behind
          // the rank's earlier packs only, which share its memory; on the op's stream: also behind the
          // batches flushed there before. The batch's NCCL group, this op included, goes out once the
          // batch's last pack is done: its later ops' packs follow back to back from no earlier than now.
          double* done = &s.side_pack_done;
          double behind = s.start;
          if (!m_.batch.side_stream_packs) {
            const size_t st = static_cast<size_t>(parts[k].second->stream % 32);
            done = &s.stream_pack_done[st];
            behind = std::max(behind, s.stream_through[st]);
          }
          OpenBatch& o = s.open_of(*parts[k].second);
          if (pack > 0) o.pack_done = *done = std::max(*done, behind) + pack;
          const double later = later_packs_[static_cast<size_t>(parts[k].first)][index[k].second];
          ready = std::max(ready, later > 0 ? std::max(*done, behind) + later : o.pack_done);
          continue;
        }
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

std::vector<size_t> Replayer::tree_order(const std::vector<OpCost>& costs) {
  std::vector<size_t> order, depth(costs.size(), 0);
  for (size_t k = 0; k < costs.size(); ++k)
    for (int p = costs[k].tree_parent; p >= 0; p = costs[static_cast<size_t>(p)].tree_parent) ++depth[k];
  for (size_t k = 0; k < costs.size(); ++k) order.push_back(k);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return depth[a] < depth[b]; });
  return order;
}

void Replayer::copied(const std::vector<std::pair<int, const Op*>>& parts, const std::vector<OpCost>& costs,
                      double ready) {
  if (!coster_.copies()) return;
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

void Replayer::post(int rank, const Op& op, OpCost& c, double ready, size_t message) {
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
    if (op.phase == coster_.misc_phase()) s.misc_res[i] += c.res[i];
  }
  o.latency = std::max(o.latency, c.latency);
  o.relay += c.relay;
  const uint32_t bit = 1u << (op.stream % 32);
  if (!(o.streams_used & bit)) {
    o.streams_used |= bit;
    ++o.stream_count;
  }
}

void Replayer::retire(RankState& s, int lane) {
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

void Replayer::launch_pending(RankState& s, int64_t batch, double end) {
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

void Replayer::unpack(RankState& s, int64_t batch) {
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

void Replayer::drained(RankState& s) {
  if (s.run_batches > 0) {
    const int64_t overlap = std::min<int64_t>(s.run_batches, std::max(1, m_.batch.window));
    s.fixed_seconds += s.run_fixed / static_cast<double>(overlap);
  }
  s.run_fixed = 0;
  s.run_batches = 0;
}

void Replayer::flush(RankState& s, int lane) {
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
  for (size_t st = 0; st < s.stream_through.size(); ++st)
    if (o.streams_used & (1u << st)) s.stream_through[st] = std::max(s.stream_through[st], through);
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
  const double unpack =
      coster_.copies() && m_.serial_packs ? static_cast<double>(o.unpack_bytes) / (m_.copy_gbps * 1e9) : 0;
  // Without box ops (MPI) the transport's wire copies are inside the link's rate, which is one pair's
  // measured point-to-point: they load the shared memory system (shared_bound), not the rank's own
  // copy time again (that capped a rank's receives at copy_gbps / wire_copies, 3.9 GB/s on the device
  // host, where one pair measured 6.7).
  const int64_t in_link = m_.box_ops ? 0 : o.pass_bytes;
  // With the GPU's turns the unpacks come after the wait (unpack()), not inside it.
  const int64_t after_wait = unpack_turns_ ? o.unpack_bytes : 0;
  if (coster_.copies())
    wire = std::max(wire, static_cast<double>(o.copy_bytes - serial - in_link - after_wait) / (m_.copy_gbps * 1e9));
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
  o.pack_done = 0;
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

}  // namespace reshard::replay
