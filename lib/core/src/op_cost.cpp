// What one op costs each rank taking part (op_cost.h).
#include "op_cost.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <map>

#include "reshard/core/schedule.h"
#include "reshard/core/storage.h"

namespace reshard::replay {

Pieces pieces_of(const Op* op) {
  if (op == nullptr) return {0, 0, false};
  Pieces p{static_cast<int64_t>(op->pieces.size()), 0, op->direct()};
  for (const Piece& q : op->pieces) p.bytes += q.extent.product() * op->elem_size;
  return p;
}

OpCoster::OpCoster(const Plan& plan, const SystemModel& m) : plan_(plan), m_(m) {
  const double share = transfer_share(m, plan.world());
  beta_[0] = beta_[1] = m.nvlink_gbps * 1e9 * share;
  beta_[2] = beta_[3] = m.nic_gbps * 1e9 * share;
  fan_ = m.fan_gbps * 1e9 * share;
  copies_ = m.copy_gbps > 0;
  push_ = copies_ && m.box_ops && m.ipc_push;
  misc_phase_ = phase_count(plan) - 1;
  domains_.resize(plan.groups.size());
  for (size_t g = 0; g < plan.groups.size(); ++g)
    for (int r : plan.groups[g].ranks) {  // sorted ranks: domains come in order
      if (domains_[g].nodes.empty() || domains_[g].nodes.back() != node(r)) {
        domains_[g].nodes.push_back(node(r));
        domains_[g].count.push_back(0);
      }
      ++domains_[g].count.back();
    }
}

// Per batch on `rank`'s side (SystemModel::latency_per_busy_rank: scaled by its domain's busy share).
double OpCoster::latency(bool nic, int rank) const {
  const double us = nic ? m_.nic_latency_us : m_.nvlink_latency_us;
  return us * 1e-6 * (latency_share_.empty() ? 1.0 : latency_share_[static_cast<size_t>(node(rank))]);
}

void OpCoster::busy_share(const OpLists& lists, const Filter& f) {
  latency_share_.clear();
  if (!m_.latency_per_busy_rank) return;
  const int world = static_cast<int>(lists.ops.size());
  std::vector<int> busy(static_cast<size_t>(node(world - 1) + 1), 0), all(busy.size(), 0);
  for (int r = 0; r < world; ++r) {
    ++all[static_cast<size_t>(node(r))];
    for (const Op& op : lists.ops[static_cast<size_t>(r)])
      if (selects(f, op, misc_phase_)) {
        ++busy[static_cast<size_t>(node(r))];
        break;
      }
  }
  for (size_t d = 0; d < busy.size(); ++d) latency_share_.push_back(static_cast<double>(busy[d]) / all[d]);
}

void OpCoster::cost(const std::vector<std::pair<int, const Op*>>& parts, std::vector<OpCost>& costs) const {
  const Op& first = *parts.front().second;
  if (first.kind != OpKind::Broadcast) {
    if (parts.size() != 2) return;  // a plan verify would refuse; nothing moves
    const size_t si = parts[0].second->kind == OpKind::Send ? 0 : 1, ri = 1 - si;
    const int src = parts[si].first, dst = parts[ri].first;
    const Op& send = *parts[si].second;
    const int64_t b = send.bytes();
    const bool nic = node(src) != node(dst), box = boxed(send);
    const Pieces from = pieces_of(&send), to = pieces_of(parts[ri].second);
    OpCost& sc = costs[si];
    sc.res[res_index(nic, true)] = b;
    sc.latency = latency(nic, src);
    charge(sc, true, from, b, box);
    charge_push(sc, {to}, b, box, dst);
    OpCost& rc = costs[ri];
    rc.res[res_index(nic, false)] = b;
    rc.latency = latency(nic, dst);
    rc.peer = src;
    charge(rc, false, to, b, box);
    return;
  }
  const int g = first.group;
  if (g < 0 || g >= static_cast<int>(plan_.groups.size())) return;
  std::vector<Pieces> locals;
  locals.reserve(plan_.groups[g].ranks.size());
  size_t k = 0;
  for (int r : plan_.groups[g].ranks) {  // members without the op (none in a verified plan) keep nothing
    const Op* op = k < parts.size() && parts[k].first == r ? parts[k++].second : nullptr;
    locals.push_back(pieces_of(op));
  }
  broadcast(g, first.peer, first.bytes(), boxed(first), locals, parts, costs);
}

// What the executor copies for one op of `b` wire bytes on a rank (see simulate.h, "Copies"); op.peer
// is set for receivers. The transport's copies (box pulls, wire copies) go out batched per (batch,
// stream, peer); the executor's packs and unpacks are one launch each. Pull: the receiver makes the
// transport's copies; push: the sender does (charge_push), so here a receiver only unpacks.
void OpCoster::charge(OpCost& op, bool sends, const Pieces& pieces, int64_t b, bool boxed) const {
  if (!copies_) return;
  const bool copier = !sends && !push_;
  if (boxed) {  // the receiver copies each piece straight; senders and discarding members copy nothing
    if (copier && pieces.count > 0) {
      op.copy_bytes += pieces.bytes;
      op.pass_bytes += pieces.bytes;
      op.copies += pieces.count;
      op.pulls = true;
    }
    return;
  }
  const bool direct = pieces.count > 0 && pieces.direct;
  if (sends) {
    if (!direct) {
      op.copy_bytes += pieces.bytes;
      op.pack_bytes += pieces.bytes;
      op.copies += pieces.count;
      op.launches += pieces.count;
    }
    return;
  }
  if (copier && m_.wire_copies > 0) {  // a transport copy (and its launch) per receive; NCCL's: none
    const int64_t wire = static_cast<int64_t>(m_.wire_copies * static_cast<double>(b));
    op.copy_bytes += wire;
    op.pass_bytes += wire;
    op.copies += 1;
    op.pulls = true;
  }
  if (!direct) {
    op.copy_bytes += pieces.bytes;
    op.unpack_bytes += pieces.bytes;
    op.copies += pieces.count;
    op.launches += pieces.count;
  }
}

// Push: the sender's transport copies of one op to receivers keeping `kept` (boxed: their pieces;
// staged: the whole wire buffer, into staging or in place). Receivers keeping the same pieces share
// one fan-out copy (cuda-ipc merges copies of one source box into tensors of one shape and
// offset): a read per kMaxFan of them and a write each, i.e. (reads + k) / 2 copies' worth of bytes.
// `key` names the pass the copies go out in (the receiver, or -2 - group for a broadcast).
void OpCoster::charge_push(OpCost& op, const std::vector<Pieces>& kept, int64_t b, bool boxed, int key) const {
  if (!push_) return;
  std::map<std::pair<int64_t, int64_t>, int64_t> fans;  // (copies, bytes) kept -> receivers keeping them
  for (const Pieces& k : kept) {
    const Pieces what = boxed ? k : Pieces{1, b, true};
    if (what.count > 0) ++fans[{what.count, what.bytes}];
  }
  const double per_byte = boxed ? 1.0 : m_.wire_copies;
  for (const auto& [what, k] : fans) {
    const int64_t reads = (k + kMaxFan - 1) / kMaxFan;
    const double fanned = static_cast<double>(what.second) * static_cast<double>(reads + k) / 2;
    const int64_t copied = static_cast<int64_t>(per_byte * fanned);
    op.copy_bytes += copied;
    op.pass_bytes += copied;
    op.copies += what.first * reads;
  }
  if (fans.empty()) return;
  op.pulls = true;
  op.peer = key;
}

// A broadcast of `b` bytes from `root` over group `g`; locals[i] is member i's local side (its
// pieces). Inside one domain: linear for at most linear_broadcast_max members (the root sends to
// each), else a pipelined ring (every member but the root receives, every member but the tail
// forwards). Across domains: a ring of domains, each entered once and its crossing striped over the
// NICs of its members (NCCL runs one channel per NIC), then forwarded inside the domain over NVLink.
void OpCoster::broadcast(int g, int root, int64_t b, bool boxed, const std::vector<Pieces>& locals,
                         const std::vector<std::pair<int, const Op*>>& parts, std::vector<OpCost>& costs) const {
  const std::vector<int>& members = plan_.groups[g].ranks;
  const size_t n = members.size();
  if (n < 2) return;
  const GroupDomains& gd = domains_[g];
  const bool nic = gd.nodes.size() > 1;
  const bool linear = !nic && static_cast<int64_t>(n) <= m_.linear_broadcast_max;
  // Open MPI 4.1's MPI_Ibcast (coll/libnbc, nbc_ibcast.c ompi_coll_libnbc_ibcast): with
  // coll_libnbc_ibcast_skip_dt_decision (default true) linear up to 4 members, else binomial
  // (bcast_sched_binomial: whole messages, the root's and each relay's sends at once).
  const bool binomial =
      !nic && !linear && m_.binomial_broadcast_min > 0 && static_cast<int64_t>(n) >= m_.binomial_broadcast_min;
  const int64_t root_node = node(root);
  const size_t root_d =
      static_cast<size_t>(std::lower_bound(gd.nodes.begin(), gd.nodes.end(), root_node) - gd.nodes.begin());
  const int64_t tail_node = gd.nodes[(root_d + gd.nodes.size() - 1) % gd.nodes.size()];
  // NCCL's ring visits each node's members in one run, and the ring's start inside a node is not the
  // root: where the root's node holds other members, the bytes leave it and come back (the tail node
  // sends once more, the root's node receives once more) to reach the members ahead of the root.
  const bool reenter = nic && gd.count[root_d] > 1;
  const auto root_it = std::lower_bound(members.begin(), members.end(), root);
  const int tail = members[(static_cast<size_t>(root_it - members.begin()) + n - 1) % n];
  const double lat = latency(nic, root) * (linear ? 1.0 : std::ceil(std::log2(static_cast<double>(n))));
  // With fan_gbps: k sends at once take the link's time for the first and b / fan for each further
  // one; on the rank's send resource as the bytes that take that long at the link's rate.
  const double link = beta_[res_index(false, true)];
  const bool fan = fan_ > 0 && !nic;
  auto fan_seconds = [&](int64_t k) {
    return k == 0 ? 0.0 : static_cast<double>(b) * (1 / link + static_cast<double>(k - 1) / fan_);
  };
  auto sent = [&](int64_t k) { return fan ? static_cast<int64_t>(std::llround(fan_seconds(k) * link)) : b * k; };
  // A binomial tree's virtual ranks (libnbc: the root is 0): u's children are u + s for each power of
  // two s > u with u + s < n; u's parent is u less its highest bit.
  auto children = [n](size_t u) {
    int64_t c = 0;
    for (size_t step = 1; step < n; step <<= 1)
      if (u < step && u + step < n) ++c;
    return c;
  };
  // The part (index into parts) of each member, -1 for one without the op.
  std::vector<int> part_of(n, -1);
  for (size_t i = 0, j = 0; i < n; ++i)
    if (j < parts.size() && parts[j].first == members[i]) part_of[i] = static_cast<int>(j++);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const int r = members[i];
    if (k >= parts.size() || parts[k].first != r) continue;
    OpCost& op = costs[k++];
    const Pieces& local = locals[i];
    op.latency = lat;  // a binomial tree member's, timed hop by hop, is set below
    if (linear) {
      if (r == root)
        op.res[res_index(false, true)] = sent(static_cast<int64_t>(n - 1));
      else if (!(boxed && local.count == 0))
        op.res[res_index(false, false)] = b;
      if (fan) {
        op.tree = true;
        if (r != root) op.tree_parent = part_of[static_cast<size_t>(root_it - members.begin())];
      }
    } else if (binomial) {
      // libnbc's virtual rank: the root and group rank 0 swap places.
      const size_t root_g = static_cast<size_t>(root_it - members.begin());
      const size_t v = i == root_g ? 0 : i == 0 ? root_g : i;
      const int64_t kids = children(v);
      if (v != 0) op.res[res_index(false, false)] = b;
      op.res[res_index(false, true)] = sent(kids);
      if (fan) {
        op.tree = true;
        if (v != 0) {
          const size_t parent = v & ~std::bit_floor(v);
          op.tree_parent = part_of[parent == 0 ? root_g : parent == root_g ? 0 : parent];  // group index
        }
        // Hand-offs per hop, not the tree's depth per member: a member holds the message one hand-off
        // after its parent's sends (hop_latency) and is done then, or, with children, one hand-off
        // after its own sends, when they hold it. So consecutive messages pipeline down the tree; one
        // message still takes the depth's hand-offs to its deepest member. (VM, window 1,
        // results/cpu_waits_vm/damon_off: a waits-flags misc message took 0.5-1.7 hand-offs more than
        // the bench flags' few messages, where the flat depth charged 4-5.)
        op.hop_latency = v != 0 ? latency(nic, r) : 0;
        op.latency = kids > 0 ? latency(nic, r) : 0;
      } else {
        op.relay = static_cast<double>(std::popcount(v)) * static_cast<double>(b) / beta_[res_index(false, false)];
      }
    } else if (!nic) {
      if (r != root) op.res[res_index(false, false)] = b;
      if (r != tail) op.res[res_index(false, true)] = b;
    } else {
      const int64_t d = node(r);
      const int64_t kd =
          gd.count[static_cast<size_t>(std::lower_bound(gd.nodes.begin(), gd.nodes.end(), d) - gd.nodes.begin())];
      const int64_t share = (b + kd - 1) / kd;  // this member's part of the domain's crossing
      if (d != root_node || reenter) op.res[res_index(true, false)] = share;
      if (d != tail_node || reenter) op.res[res_index(true, true)] = share;
      if (r != root) op.res[res_index(false, false)] = d == root_node ? b : b - share;
      op.res[res_index(false, true)] = b * (kd - 1) / kd;
    }
    if (r != root) op.peer = root;  // cuda-ipc pull: every member copies from the root
    charge(op, r == root, local, b, boxed);
    if (r == root && push_) {  // push: the root writes every member's pieces
      std::vector<Pieces> kept;
      for (size_t j = 0; j < n; ++j)
        if (members[j] != root) kept.push_back(locals[j]);
      charge_push(op, kept, b, boxed, -2 - g);
    }
  }
}

}  // namespace reshard::replay
