// Bulk transfers: for each param, intersect the distinct dst boxes (cut into storage pieces where the
// destination splits a box: per-expert tensors, interleaved groups) with the distinct src boxes,
// stripe each piece across the ranks that hold it (least-loaded first), and deliver it to every
// replica of the dst box directly or in two phases (one replica receives, then broadcasts).
#include <algorithm>
#include <functional>
#include <queue>
#include <cmath>
#include <map>
#include <optional>

#include "planner_bulk.h"
#include "reshard/core/dst_layout.h"
#include "reshard/core/stats.h"

namespace reshard {
namespace {

// Cost model constants for --fanout auto: per-message latency and per-rank bandwidth. Only their
// ratio matters to the choice; see docs/design.md.
constexpr double kAlphaSeconds = 15e-6;
constexpr double kBetaBytesPerSecond = 25e9;
// Pieces are not striped below this size: more messages would cost more than the balance gains.
constexpr int64_t kMinStripeBytes = 256 << 10;

struct DistinctBox {
  Box box;                        // the box held (single-box layouts: the bounding box)
  std::vector<LocalPiece> held;   // what the layout gives these ranks (several pieces: cyclic, sections)
  std::vector<int> ranks;  // global ranks holding exactly this, in mesh order
  std::vector<int> flats;  // their flat mesh indices
};

std::vector<DistinctBox> distinct_boxes(const Layout& layout, const Dims& shape) {
  std::vector<DistinctBox> out;
  std::map<std::vector<int64_t>, size_t> index;
  const bool single = layout.single_box();
  std::vector<int64_t> key;
  for (int f = 0; f < layout.mesh.size(); ++f) {
    // Keyed by the box, and with several pieces by all of them; the pieces are built once per key.
    const Box b = layout.local_box(shape, f);
    std::vector<LocalPiece> held;
    key.assign(b.offset.v.begin(), b.offset.v.begin() + b.offset.n);
    key.insert(key.end(), b.extent.v.begin(), b.extent.v.begin() + b.extent.n);
    if (!single) {
      held = layout.local_pieces(shape, f);
      for (const LocalPiece& q : held) {
        key.insert(key.end(), q.box.offset.v.begin(), q.box.offset.v.begin() + q.box.offset.n);
        key.insert(key.end(), q.box.extent.v.begin(), q.box.extent.v.begin() + q.box.extent.n);
      }
    }
    auto [it, fresh] = index.try_emplace(key, out.size());
    if (fresh) {
      if (single && !b.empty()) held.push_back(LocalPiece{b, Dims::zeros(shape.n)});  // local_pieces, box known
      out.push_back(DistinctBox{b, std::move(held), {}, {}});
    }
    out[it->second].ranks.push_back(layout.mesh.ranks[f]);
    out[it->second].flats.push_back(f);
  }
  return out;
}

// Splits `b` into up to `parts` stripes along the first dim long enough (or the longest dim).
std::vector<Box> stripes(const Box& b, int64_t parts) {
  if (parts <= 1) return {b};
  int dim = -1;
  for (int d = 0; d < b.extent.n && dim < 0; ++d)
    if (b.extent[d] >= parts) dim = d;
  if (dim < 0) {
    dim = static_cast<int>(std::max_element(b.extent.v.begin(), b.extent.v.begin() + b.extent.n) - b.extent.v.begin());
    parts = b.extent[dim];
  }
  std::vector<Box> out;
  for (int64_t i = 0; i < parts; ++i) {
    Range r = chunk_range(b.extent[dim], parts, i);
    if (r.size() == 0) continue;
    Box s = b;
    s.offset[dim] += r.begin;
    s.extent[dim] = r.size();
    out.push_back(s);
  }
  return out;
}

struct Piece {
  Box box;
  size_t src;        // index into the distinct src boxes
  size_t held = 0;   // which of that src box's held pieces holds it
};

// The storage pieces of a distinct dst box: one whole-box piece unless the destination splits it.
std::vector<Box> dst_pieces(const DstMap& map, uint32_t p, const DistinctBox& d) {
  if (!map.piecewise(p)) return {d.box};  // single box, held at the local origin
  std::vector<Box> out;
  for (const DstPiece& piece : map.pieces(p, d.flats[0])) out.push_back(piece.box);
  return out;
}

class BulkPlanner {
 public:
  BulkPlanner(Plan& plan, FanoutMode mode) : plan_(plan), mode_(mode), send_load_(plan.world(), 0), map_(plan) {}

  void run() {
    for (uint32_t p = 0; p < plan_.params.size(); ++p)
      if (plan_.params[p].path == Path::Bulk) plan_param(p);
  }

 private:
  void plan_param(uint32_t p) {
    ParamPlan& param = plan_.params[p];
    const int64_t esize = dtype_size(param.dtype);
    const std::vector<DistinctBox> src = distinct_boxes(param.src, param.shape);
    const std::vector<DistinctBox> dst = distinct_boxes(param.dst, param.shape);

    // Pieces per distinct dst box, and how many deliveries each src box serves.
    std::vector<std::vector<Piece>> pieces(dst.size());
    size_t max_replicas = 1, piece_pairs = 0;
    for (size_t d = 0; d < dst.size(); ++d) {
      max_replicas = std::max(max_replicas, dst[d].ranks.size());
      if (dst[d].held.empty()) continue;
      for (const Box& part : dst_pieces(map_, p, dst[d]))
        for (size_t s = 0; s < src.size(); ++s)
          for (size_t h = 0; h < src[s].held.size(); ++h)  // a sectioned source holds several pieces
            if (auto inter = intersect(part, src[s].held[h].box)) pieces[d].push_back({*inter, s, h});
      piece_pairs += pieces[d].size();
    }
    param.fanout = choose_fanout(param, max_replicas, piece_pairs, src.size(), dst.size());
    const bool two_phase = param.fanout == Fanout::TwoPhase;

    std::vector<int64_t> deliveries(src.size(), 0);
    holders_.assign(src.size(), {});
    for (size_t d = 0; d < dst.size(); ++d)
      for (const Piece& pc : pieces[d]) deliveries[pc.src] += two_phase ? 1 : static_cast<int64_t>(dst[d].ranks.size());

    param.transfer_begin = plan_.transfers.size();
    param.fanout_begin = plan_.fanouts.size();
    for (size_t d = 0; d < dst.size(); ++d) {
      const DistinctBox& D = dst[d];
      if (!two_phase || D.ranks.size() == 1) {
        for (size_t r = 0; r < D.ranks.size(); ++r)
          for (const Piece& pc : pieces[d]) deliver(p, pc, src[pc.src], deliveries[pc.src], D, r, esize);
        continue;
      }
      if (plan_node_aware(p, pieces[d], src, deliveries, D, esize)) continue;
      // Two phases: enough pieces for every replica, each piece to the least-loaded replica.
      std::vector<Piece> work = pieces[d];
      if (!work.empty() && work.size() < D.ranks.size()) {
        const int64_t split = (static_cast<int64_t>(D.ranks.size()) + work.size() - 1) / work.size();
        std::vector<Piece> finer;
        for (const Piece& pc : work)
          for (const Box& b : stripes(pc.box, split)) finer.push_back({b, pc.src, pc.held});
        work = std::move(finer);
      }
      // The least-received replica (the first of equals), from a heap: linear in pieces x log(replicas).
      Holders received;
      for (size_t r = 0; r < D.ranks.size(); ++r) received.push({0, r});
      const int group = fanout_group(D.ranks);
      for (const Piece& pc : work) {
        const auto [got, r] = received.top();
        received.pop();
        received.push({got + pc.box.elements(), r});
        deliver(p, pc, src[pc.src], deliveries[pc.src], D, r, esize);
        FanoutOp op;
        op.param = p;
        op.root = D.ranks[r];
        op.group = group;
        op.box = pc.box;
        const DstPiece at = locate(p, pc.box, D, D.flats[r]);
        op.dst_storage = at.storage;
        op.dst_local = at.offset;
        plan_.fanouts.push_back(op);
      }
    }
    param.transfer_count = plan_.transfers.size() - param.transfer_begin;
    param.fanout_count = plan_.fanouts.size() - param.fanout_begin;
  }

  // Two phases that know the nodes (PlanOptions::gpus_per_node), where D's replicas sit on several
  // nodes and some node holds more than one: each byte enters each node once and is forwarded inside
  // it over NVLink. Replicas are grouped by node; lane j is the j-th replica of every node (j below the
  // smallest count). A piece goes to the least-received lane replica (phase one), is broadcast over its
  // lane (one member per node: a ring that never re-enters a node), then inside every node from that
  // node's lane member. A node's replicas beyond the smallest count only ever receive over NVLink.
  // The lane broadcasts of a param come before its node broadcasts, so every root already holds its box.
  bool plan_node_aware(uint32_t p, const std::vector<Piece>& pieces, const std::vector<DistinctBox>& src,
                       const std::vector<int64_t>& deliveries, const DistinctBox& D, int64_t esize) {
    const int gpn = plan_.options.gpus_per_node;
    if (gpn <= 0 || pieces.empty()) return false;
    std::map<int, std::vector<size_t>> by_node;  // node -> replica indices into D.ranks, ascending rank
    for (size_t r = 0; r < D.ranks.size(); ++r) by_node[D.ranks[r] / gpn].push_back(r);
    size_t lanes = D.ranks.size(), widest = 0;
    for (auto& [n, rs] : by_node) {
      std::sort(rs.begin(), rs.end(), [&](size_t a, size_t b) { return D.ranks[a] < D.ranks[b]; });
      lanes = std::min(lanes, rs.size());
      widest = std::max(widest, rs.size());
    }
    if (by_node.size() < 2 || widest < 2) return false;  // one node, or one replica a node: flat is the same
    std::vector<std::vector<size_t>> nodes;
    for (auto& [n, rs] : by_node) nodes.push_back(rs);
    auto group_of = [&](const std::vector<size_t>& replicas) {
      std::vector<int> ranks;
      for (size_t r : replicas) ranks.push_back(D.ranks[r]);
      return fanout_group(ranks);
    };
    std::vector<int> lane_group(lanes), node_group(nodes.size(), -1);
    for (size_t j = 0; j < lanes; ++j) {
      std::vector<size_t> lane;
      for (const auto& rs : nodes) lane.push_back(rs[j]);
      lane_group[j] = group_of(lane);
    }
    for (size_t t = 0; t < nodes.size(); ++t)
      if (nodes[t].size() > 1) node_group[t] = group_of(nodes[t]);
    // Enough pieces for every lane replica; each to the least-received one (the first of equals).
    const size_t roots = lanes * nodes.size();
    std::vector<Piece> work = pieces;
    if (work.size() < roots) {
      const int64_t split = (static_cast<int64_t>(roots) + work.size() - 1) / work.size();
      std::vector<Piece> finer;
      for (const Piece& pc : work)
        for (const Box& b : stripes(pc.box, split)) finer.push_back({b, pc.src, pc.held});
      work = std::move(finer);
    }
    Holders received;
    for (size_t k = 0; k < roots; ++k) received.push({0, k});
    std::vector<FanoutOp> inside;
    for (const Piece& pc : work) {
      const auto [got, k] = received.top();
      received.pop();
      received.push({got + pc.box.elements(), k});
      const size_t t = k % nodes.size(), j = k / nodes.size();
      const size_t r = nodes[t][j];
      deliver(p, pc, src[pc.src], deliveries[pc.src], D, r, esize);
      FanoutOp op;
      op.param = p;
      op.box = pc.box;
      const DstPiece at = locate(p, pc.box, D, D.flats[r]);
      op.dst_storage = at.storage;
      op.dst_local = at.offset;
      op.root = D.ranks[r];
      op.group = lane_group[j];
      plan_.fanouts.push_back(op);
      for (size_t u = 0; u < nodes.size(); ++u) {
        if (node_group[u] < 0) continue;
        op.root = D.ranks[nodes[u][j]];
        op.group = node_group[u];
        inside.push_back(op);
      }
    }
    plan_.fanouts.insert(plan_.fanouts.end(), inside.begin(), inside.end());
    return true;
  }

  // Sends `pc` to replica `r` of `D`, striped over the ranks holding it so that the busiest
  // sender stays as idle as possible.
  void deliver(uint32_t p, const Piece& pc, const DistinctBox& S, int64_t deliveries_of_src, const DistinctBox& D,
               size_t r, int64_t esize) {
    const int64_t holders = static_cast<int64_t>(S.ranks.size());
    int64_t parts = (holders + deliveries_of_src - 1) / std::max<int64_t>(deliveries_of_src, 1);
    parts = std::max<int64_t>(1, std::min(parts, pc.box.elements() * esize / kMinStripeBytes));
    // The least-loaded holder (the first of equals), from a heap: a rank is in one distinct box per
    // param, so only this box's deliveries change its holders' loads while the param is planned.
    // Linear in deliveries, not deliveries x holders (30k-replica DP stays linear).
    Holders& heap = holders_[pc.src];
    if (heap.empty())
      for (size_t h = 0; h < S.ranks.size(); ++h) heap.push({send_load_[S.ranks[h]], h});
    for (const Box& b : stripes(pc.box, parts)) {
      const size_t best = heap.top().second;
      heap.pop();
      send_load_[S.ranks[best]] += b.elements() * esize;
      heap.push({send_load_[S.ranks[best]], best});
      Transfer t;
      t.param = p;
      t.src = S.ranks[best];
      t.dst = D.ranks[r];
      t.box = b;
      const LocalPiece& from = S.held[pc.held];
      t.src_local = relative(b, from.box.offset);
      for (int d = 0; d < t.src_local.n; ++d) t.src_local[d] += from.at[d];
      const DstPiece at = locate(p, b, D, D.flats[r]);
      t.dst_storage = at.storage;
      t.dst_local = at.offset;
      plan_.transfers.push_back(t);
    }
  }

  // Where box `b` of param p lands on dst mesh position `flat`: pieces never cross a storage piece.
  DstPiece locate(uint32_t p, const Box& b, const DistinctBox& D, int flat) const {
    const std::optional<DstPiece> at = map_.locate(p, flat, b, D.held);
    if (!at) throw runtime_error("internal error: param " + plan_.params[p].name + ": box " + b.str() +
                                 " crosses a destination storage piece");
    return *at;
  }

  Fanout choose_fanout(const ParamPlan& param, size_t k, size_t piece_pairs, size_t n_src_boxes, size_t n_dst_boxes) const {
    if (k <= 1) return Fanout::Direct;
    if (mode_ == FanoutMode::Direct) return Fanout::Direct;
    if (mode_ == FanoutMode::TwoPhase) return Fanout::TwoPhase;
    // α-β estimate of the busiest rank for this param alone.
    const double U = static_cast<double>(param.bytes());
    const double n_src = param.src.mesh.size(), n_dst = param.dst.mesh.size();
    const double msgs = static_cast<double>(piece_pairs) / std::max<double>(1, std::min(n_src_boxes, n_dst_boxes));
    const double direct = std::max(U * k / n_src, U * k / n_dst) / kBetaBytesPerSecond + kAlphaSeconds * msgs * k;
    const double two_phase = (std::max(U / n_src, U / n_dst) + U * (k - 1) / n_dst) / kBetaBytesPerSecond +
                             kAlphaSeconds * (msgs + std::max<double>(msgs, k));
    return two_phase < direct ? Fanout::TwoPhase : Fanout::Direct;
  }

  int fanout_group(const std::vector<int>& ranks) {
    std::vector<int> sorted = ranks;
    std::sort(sorted.begin(), sorted.end());
    auto [it, fresh] = fanout_groups_.try_emplace(sorted, static_cast<int>(plan_.groups.size()));
    if (fresh) plan_.groups.push_back(CommGroup{"fanout", -1, sorted});
    return it->second;
  }

  using Holders = std::priority_queue<std::pair<int64_t, size_t>, std::vector<std::pair<int64_t, size_t>>,
                                      std::greater<>>;
  Plan& plan_;
  FanoutMode mode_;  // Auto: per param (choose_fanout)
  std::vector<int64_t> send_load_;
  std::vector<Holders> holders_;  // per distinct src box of the param being planned
  DstMap map_;
  std::map<std::vector<int>, int> fanout_groups_;
};

}  // namespace

// --fanout auto: the whole plan with each param's own choice, all direct and all two-phase, kept by
// the model of the whole plan rather than of one param: the highest plan efficiency (the plan's lower
// bound / its busiest rank's bytes, stats.h), then the fewest messages. One param's estimate misses
// that a train rank feeds every gen stage (Qwen3-4B DP2 -> TP1xPP2xDP2: each param alone prefers
// direct, the whole plan then runs at efficiency 0.50; all two-phase gives 1.00).
void plan_bulk_transfers(Plan& plan) {
  if (plan.options.fanout != FanoutMode::Auto) return BulkPlanner(plan, plan.options.fanout).run();
  std::optional<Plan> best;
  double best_efficiency = -1;
  size_t best_ops = 0;
  for (FanoutMode mode : {FanoutMode::Auto, FanoutMode::TwoPhase, FanoutMode::Direct}) {
    Plan candidate = plan;
    BulkPlanner(candidate, mode).run();
    const PlanStats stats = compute_stats(candidate);
    const size_t ops = candidate.transfers.size() + candidate.fanouts.size();
    if (!best || stats.efficiency > best_efficiency + 1e-9 ||
        (stats.efficiency > best_efficiency - 1e-9 && ops < best_ops)) {
      best = std::move(candidate);
      best_efficiency = stats.efficiency;
      best_ops = ops;
    }
    if (best_efficiency > 1 - 1e-9 && mode == FanoutMode::Auto) break;  // nothing beats a perfect plan's ops
  }
  plan = std::move(*best);
}

// Misc buckets of one train stage, each at most bucket_bytes, rooted at the stage's train ranks in
// turn. Without node information a bucket goes to every rank (group 0). With --gpus-per-node it goes
// to the gen ranks (each holds every misc param, storage.cpp dst_storages) and the train ranks on its
// root's node only: those take their share of the node's NIC crossing (NCCL stripes a ring's crossing
// over the NICs of the communicator's GPUs on the node; a root alone would carry it on one NIC) and
// receive over NVLink what they hold; train ranks on other nodes receive nothing. One group per root
// node (with NCCL, a communicator on every gen GPU).
void plan_misc_buckets(Plan& plan, const Mesh& train_mesh) {
  std::map<int, std::vector<int>> stage_ranks;
  std::map<int, int> stage_buckets;
  std::map<std::vector<int>, int> groups;
  MiscBucket* open = nullptr;
  for (uint32_t i = 0; i < plan.params.size(); ++i) {
    ParamPlan& p = plan.params[i];
    if (p.path != Path::Misc) continue;
    const int64_t bytes = p.bytes();
    if (open == nullptr || open->pp_stage != p.pp_stage || (open->bytes > 0 && open->bytes + bytes > plan.options.bucket_bytes)) {
      auto [it, fresh] = stage_ranks.try_emplace(p.pp_stage);
      if (fresh) {
        it->second = train_mesh.slice("pp", p.pp_stage).ranks;
        std::sort(it->second.begin(), it->second.end());
      }
      const int n = stage_buckets[p.pp_stage]++;
      plan.buckets.push_back(MiscBucket{it->second[n % it->second.size()], 0, p.pp_stage, 0, {}});
      open = &plan.buckets.back();
    }
    p.bucket = static_cast<int>(plan.buckets.size() - 1);
    p.bucket_offset = open->bytes;
    open->bytes += bytes;
    open->params.push_back(i);
  }
  const int gpn = plan.options.gpus_per_node;
  if (gpn <= 0) return;  // group 0: every rank
  for (MiscBucket& b : plan.buckets) {
    std::vector<int> ranks;
    for (int r = b.root / gpn * gpn; r < std::min(plan.train_world(), (b.root / gpn + 1) * gpn); ++r) ranks.push_back(r);
    for (int r = plan.train_world(); r < plan.world(); ++r) ranks.push_back(r);
    auto [it, fresh] = groups.try_emplace(ranks, static_cast<int>(plan.groups.size()));
    if (fresh) plan.groups.push_back(CommGroup{"misc", b.pp_stage, ranks});
    b.group = it->second;
  }
}

}  // namespace reshard
