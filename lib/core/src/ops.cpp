// Builds a rank's op list from a plan (see ops.h for the order and the wire/piece model).
#include "reshard/core/ops.h"

#include <algorithm>

#include "reshard/core/error.h"
#include "reshard/core/schedule.h"

namespace reshard {

const char* to_string(Algo a) { return a == Algo::Reshard ? "reshard" : "golden"; }

int phase_count(const Plan& plan) { return std::max(plan.system.train.pp, 1) + 1; }

bool Op::direct() const {
  if (pieces.size() != 1) return false;
  const Piece& p = pieces[0];
  for (int d = 0; d < p.wire_offset.n; ++d)
    if (p.wire_offset[d] != 0) return false;
  return p.extent == wire_extent && is_contiguous(p.extent, p.storage_shape);
}

RankStorages rank_storages(const Plan& plan, int rank) {
  RankStorages s;
  s.src = src_storages(plan, rank);
  s.dst = dst_storages(plan, rank);
  s.src_of_param.assign(plan.params.size(), -1);
  s.dst_of_param.resize(plan.params.size());
  for (size_t i = 0; i < s.src.size(); ++i)
    for (const StorageMember& m : s.src[i].members) s.src_of_param[m.param] = static_cast<int>(i);
  for (size_t i = 0; i < s.dst.size(); ++i)
    for (size_t j = 0; j < s.dst[i].members.size(); ++j)
      s.dst_of_param[s.dst[i].members[j].param].emplace_back(static_cast<int>(i), static_cast<int>(j));
  s.src_landing.assign(s.src.size(), -1);
  for (size_t i = 0; i < s.src.size(); ++i) {
    if (!s.src[i].block_fp8) continue;
    const StorageMember& m = s.src[i].members.at(0);
    s.src_landing[i] = static_cast<int>(s.landings.size());
    s.landings.push_back(Landing{true, static_cast<int>(i), 0, m.param, m.box.extent,
                                 plan.params[m.param].path == Path::Bulk});
  }
  s.dst_landing.resize(s.dst.size());
  for (size_t i = 0; i < s.dst.size(); ++i) {
    s.dst_landing[i].assign(s.dst[i].members.size(), -1);
    if (!s.dst[i].mxfp8()) continue;
    for (size_t j = 0; j < s.dst[i].members.size(); ++j) {
      const StorageMember& m = s.dst[i].members[j];
      s.dst_landing[i][j] = static_cast<int>(s.landings.size());
      s.landings.push_back(Landing{false, static_cast<int>(i), static_cast<int>(j), m.param, m.box.extent});
    }
  }
  return s;
}

std::vector<Box> split_box(const Dims& extent, int elem_size, int64_t max_bytes) {
  const int n = extent.n;
  if (n == 0 || extent.product() * elem_size <= max_bytes) return {Box{Dims::zeros(n), extent}};
  // Outermost dim d whose inner block (dims after d) fits; chunk along d, iterate dims before d.
  std::vector<int64_t> inner(n);
  int64_t acc = elem_size;
  for (int d = n - 1; d >= 0; --d) {
    inner[d] = acc;
    acc *= extent[d];
  }
  int d = 0;
  while (d < n - 1 && inner[d] > max_bytes) ++d;
  const int64_t step = std::max<int64_t>(1, max_bytes / inner[d]);
  std::vector<Box> out;
  Dims idx = Dims::zeros(n);
  while (true) {
    for (int64_t start = 0; start < extent[d]; start += step) {
      Box b{Dims::zeros(n), extent};
      for (int k = 0; k < d; ++k) {
        b.offset[k] = idx[k];
        b.extent[k] = 1;
      }
      b.offset[d] = start;
      b.extent[d] = std::min(step, extent[d] - start);
      out.push_back(b);
    }
    int k = d - 1;
    while (k >= 0 && ++idx[k] == extent[k]) idx[k--] = 0;
    if (k < 0) return out;
  }
}

namespace {

Dims add(const Dims& a, const Dims& b) {
  Dims r = a;
  for (int d = 0; d < a.n; ++d) r[d] += b[d];
  return r;
}

class OpBuilder {
 public:
  OpBuilder(const Plan& plan, int rank, const RankStorages& s, const OpListOptions& o)
      : plan_(plan), rank_(rank), s_(s), o_(o), in_group_(plan.groups.size(), false) {
    for (size_t g = 0; g < plan.groups.size(); ++g)
      in_group_[g] = std::binary_search(plan.groups[g].ranks.begin(), plan.groups[g].ranks.end(), rank);
    misc_phase_ = phase_count(plan) - 1;
  }

  std::vector<Op> build() {
    Schedule own;
    if (o_.schedule == nullptr) own = make_schedule(plan_, o_.streams, kFanoutLag);
    const Schedule& schedule = o_.schedule != nullptr ? *o_.schedule : own;
    levels_ = &schedule.fanout_level;
    const std::vector<WorkUnit>& units = schedule.units;
    for (size_t i = 0; i < units.size(); ++i) {
      const WorkUnit& u = units[i];
      unit_ = static_cast<uint32_t>(i);
      if (u.bucket) add_bucket(static_cast<int>(u.index), u.stream);
      else if (o_.algo == Algo::Golden) { if (!u.fanouts) add_golden_param(u.index, u.stream); }
      else if (u.fanouts) add_fanouts(u.index, u.level, u.stream);
      else add_transfers(u.index, u.stream);
    }
    return std::move(ops_);
  }

 private:
  Op base(OpKind kind, int stream, int group, int peer, int phase, uint32_t param, int elem_size) const {
    Op op;
    op.kind = kind;
    op.stream = stream;
    op.group = group;
    op.peer = peer;
    op.phase = phase;
    op.param = param;
    op.elem_size = elem_size;
    op.unit = unit_;
    return op;
  }

  // One op per sub-box of `box`; `piece_at(sub)` gives the pieces of a sub-box (origins relative to box).
  template <class F>
  void emit_split(const Op& proto, const Dims& extent, F&& pieces_of) {
    uint32_t k = 0;
    for (const Box& sub : split_box(extent, proto.elem_size, o_.max_message_bytes)) {
      Op op = proto;
      op.sub = k++;
      op.wire_extent = sub.extent;
      op.pieces = pieces_of(sub);
      ops_.push_back(std::move(op));
    }
  }

  // The dst storage member (storage, member index) of bulk param p on this rank that holds `box`: a
  // param has one member per storage piece (several for per-expert or interleaved destinations,
  // docs/layouts.md).
  std::pair<int, int> dst_member(uint32_t p, const Box& box) const {
    const auto& list = s_.dst_of_param[p];
    if (list.empty()) throw runtime_error("rank " + std::to_string(rank_) + " has no destination for " + plan_.params[p].name);
    for (const auto& [st, mi] : list)
      if (list.size() == 1 || contains(s_.dst[st].members[mi].box, box)) return {st, mi};
    throw runtime_error("rank " + std::to_string(rank_) + ": no destination storage of " + plan_.params[p].name +
                        " holds box " + box.str());
  }

  // A piece into member `mi` of dst storage `st` at `storage_offset`; MXFP8 members land in their
  // BF16 landing instead (member-relative coordinates, see Piece::landing).
  Piece dst_piece(int st, int mi, const Dims& storage_offset, const Dims& wire_offset, const Dims& extent) const {
    const int landing = s_.dst_landing[st][mi];
    if (landing < 0) return {st, s_.dst[st].shape, storage_offset, wire_offset, extent, -1};
    const StorageMember& m = s_.dst[st].members[mi];
    Dims rel = storage_offset;
    for (int d = 0; d < rel.n; ++d) rel[d] -= m.offset[d];
    return {st, m.box.extent, rel, wire_offset, extent, landing};
  }

  // A piece of src storage `st` (a shard or a whole misc param; block-FP8 ones are read from their
  // dequantized landing, which has the storage's shape).
  Piece src_piece(int st, const Dims& shape, const Dims& storage_offset, const Dims& wire_offset,
                  const Dims& extent) const {
    return {st, shape, storage_offset, wire_offset, extent, s_.src_landing[st]};
  }

  void add_transfers(uint32_t p, int stream) {
    const ParamPlan& param = plan_.params[p];
    const int es = dtype_size(param.dtype);
    for (uint64_t i = param.transfer_begin; i < param.transfer_begin + param.transfer_count; ++i) {
      const Transfer& t = plan_.transfers[i];
      if (t.src == rank_) {
        const int st = s_.src_of_param[p];
        if (st < 0) throw runtime_error("rank " + std::to_string(rank_) + " must send " + param.name + " but holds no shard of it");
        Op proto = base(OpKind::Send, stream, param.group, t.dst, param.pp_stage, p, es);
        proto.item = static_cast<uint32_t>(i - param.transfer_begin);
        proto.src_side = true;
        const Dims shape = s_.src[st].shape;
        emit_split(proto, t.box.extent, [&](const Box& sub) {
          return std::vector<Piece>{src_piece(st, shape, add(t.src_local, sub.offset), Dims::zeros(sub.extent.n), sub.extent)};
        });
      }
      if (t.dst == rank_) {
        const std::pair<int, int> member = dst_member(p, t.box);
        const int st = member.first, mi = member.second;  // named: clang 14 cannot capture bindings
        Op proto = base(OpKind::Recv, stream, param.group, t.src, param.pp_stage, p, es);
        proto.item = static_cast<uint32_t>(i - param.transfer_begin);
        emit_split(proto, t.box.extent, [&](const Box& sub) {
          return std::vector<Piece>{dst_piece(st, mi, add(t.dst_local, sub.offset), Dims::zeros(sub.extent.n), sub.extent)};
        });
      }
    }
  }

  void add_fanouts(uint32_t p, int level, int stream) {
    const ParamPlan& param = plan_.params[p];
    const int es = dtype_size(param.dtype);
    for (uint64_t i = param.fanout_begin; i < param.fanout_begin + param.fanout_count; ++i) {
      if ((*levels_)[i] != level) continue;
      const FanoutOp& f = plan_.fanouts[i];
      if (f.group < 0 || f.group >= static_cast<int>(in_group_.size()) || !in_group_[f.group]) continue;
      const std::pair<int, int> member = dst_member(p, f.box);
      const int st = member.first, mi = member.second;  // named: clang 14 cannot capture bindings
      Op proto = base(OpKind::Broadcast, stream, f.group, f.root, param.pp_stage, p, es);
      proto.root = f.root == rank_;
      proto.fanout = true;
      proto.item = static_cast<uint32_t>(param.transfer_count + (i - param.fanout_begin));
      emit_split(proto, f.box.extent, [&](const Box& sub) {
        return std::vector<Piece>{dst_piece(st, mi, add(f.dst_local, sub.offset), Dims::zeros(sub.extent.n), sub.extent)};
      });
    }
  }

  // Golden: every distinct src shard broadcast whole over the param's bulk group from its lowest
  // holder; gen ranks keep the intersection with each of their dst regions.
  void add_golden_param(uint32_t p, int stream) {
    const ParamPlan& param = plan_.params[p];
    if (param.group < 0 || !in_group_[param.group]) return;
    const int es = dtype_size(param.dtype);
    const std::vector<GoldenShard> shards = golden_shards(param);
    for (size_t k = 0; k < shards.size(); ++k) {
      const GoldenShard& gs = shards[k];
      const int holder = gs.holder;
      const Box& shard = gs.box;
      Op proto = base(OpKind::Broadcast, stream, param.group, holder, param.pp_stage, p, es);
      proto.item = static_cast<uint32_t>(k);
      proto.root = holder == rank_;
      proto.src_side = proto.root;
      emit_split(proto, shard.extent, [&](const Box& sub) {
        std::vector<Piece> pieces;
        if (proto.root) {
          const int st = s_.src_of_param[p];
          pieces.push_back(src_piece(st, s_.src[st].shape, add(gs.at, sub.offset), Dims::zeros(sub.extent.n), sub.extent));
          return pieces;
        }
        const Box global{add(shard.offset, sub.offset), sub.extent};
        for (const auto& [st, mi] : s_.dst_of_param[p]) {
          const StorageMember& m = s_.dst[st].members[mi];
          const auto inter = intersect(global, m.box);
          if (!inter || inter->empty()) continue;
          Dims in_storage = m.offset, in_wire = inter->offset;
          for (int d = 0; d < in_storage.n; ++d) {
            in_storage[d] += inter->offset[d] - m.box.offset[d];
            in_wire[d] -= global.offset[d];
          }
          pieces.push_back(dst_piece(st, mi, in_storage, in_wire, inter->extent));
        }
        return pieces;
      });
    }
  }

  // A misc bucket, in chunks: the root gathers its params' bytes, gen ranks scatter them, other
  // members of the group receive and discard.
  void add_bucket(int b, int stream) {
    const MiscBucket& bucket = plan_.buckets[b];
    if (bucket.group < 0 || bucket.group >= static_cast<int>(in_group_.size()) || !in_group_[bucket.group]) return;
    const bool root = bucket.root == rank_;
    const bool gen = plan_.is_gen(rank_);
    Op proto = base(OpKind::Broadcast, stream, bucket.group, bucket.root, misc_phase_,
                    bucket.params.empty() ? 0 : bucket.params.front(), 1);
    proto.root = root;
    proto.src_side = root;
    emit_split(proto, Dims{bucket.bytes}, [&](const Box& sub) {
      std::vector<Piece> pieces;
      if (!root && !gen) return pieces;
      const int64_t a = sub.offset[0], z = a + sub.extent[0];
      for (uint32_t p : bucket.params) {
        const ParamPlan& param = plan_.params[p];
        const int64_t lo = std::max(a, param.bucket_offset), hi = std::min(z, param.bucket_offset + param.bytes());
        if (lo >= hi) continue;
        const Dims flat{param.bytes()}, at{lo - param.bucket_offset}, wire{lo - a}, run{hi - lo};
        if (root) {
          const int st = s_.src_of_param[p];
          if (st >= 0) pieces.push_back(src_piece(st, flat, at, wire, run));
        } else if (!s_.dst_of_param[p].empty()) {
          pieces.push_back({s_.dst_of_param[p][0].first, flat, at, wire, run, -1});
        }
      }
      return pieces;
    });
  }

  const Plan& plan_;
  int rank_;
  const RankStorages& s_;
  OpListOptions o_;
  std::vector<bool> in_group_;
  int misc_phase_ = 0;
  uint32_t unit_ = 0;
  const std::vector<int>* levels_ = nullptr;  // per plan fan-out: its level (schedule.h)
  std::vector<Op> ops_;
};

}  // namespace

std::vector<Op> build_ops(const Plan& plan, int rank, const RankStorages& storages, const OpListOptions& options) {
  if (options.max_message_bytes < 64) throw config_error("max message bytes must be at least 64");
  return OpBuilder(plan, rank, storages, options).build();
}

}  // namespace reshard
