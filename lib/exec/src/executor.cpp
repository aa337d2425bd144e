// The executor's allocation and batch loop (see executor.h for the batching rules and why they cannot
// deadlock); its landings are in executor_landings.cpp, its checks in executor_check.cpp.
#include "executor.h"

#include <algorithm>

#include "reshard/core/error.h"

namespace reshard {


struct Executor::Batch {
  int lane = 0;
  std::vector<const Op*> ops;
  std::vector<void*> wire;  // per op: its staging (null: box op or direct)
  std::vector<bool> streams;
};

Executor::Executor(const Plan& plan, int rank, Transport& transport, Memory& memory, const BatchPolicy& options)
    : plan_(plan), rank_(rank), transport_(transport), memory_(memory), options_(options),
      boxes_(transport.supports_boxes()) {
  Problems problems;
  options_.validate(problems);
  problems.throw_if_any("invalid batch policy:");
  storages_ = rank_storages(plan, rank);
  if (options_.side_stream_packs) memory_.reserve_streams(2 * options_.streams);
  prep_queued_.assign(static_cast<size_t>(options_.streams), false);
  for (int a = 0; a < 2; ++a)
    ops_[a] = build_ops(plan, rank, storages_, options_.op_list(static_cast<Algo>(a), transport.max_message_bytes()));
  // Staging: what the busier algorithm would stage at once, capped by --staging-bytes (box ops need none).
  int64_t want = 0;
  for (int a = 0; a < 2; ++a) {
    int64_t staged = 0;
    for (const Op& op : ops_[a])
      staged += staged_bytes(op, boxed(op, static_cast<Algo>(a)));
    want = std::max(want, staged);
  }
  // Landings (MXFP8 members, block-FP8 sources): each must fit --staging-bytes; each algorithm's op
  // list fixes where they sit in one pool (landing_layout.h), which holds what one op needs plus the
  // landings still live across it (a misc chunk's params that continue into the next chunk).
  landing_at_.assign(storages_.landings.size(), -1);
  landing_pending_.assign(storages_.landings.size(), 0);
  check_landings_fit(plan, storages_.landings, rank, options_.staging_bytes);
  int64_t pool = 0;
  for (int a = 0; a < 2; ++a) {
    landing_layout_[a] = layout_landings(ops_[a], storages_.landings, options_.staging_bytes);
    pool = std::max(pool, landing_layout_[a].pool_bytes);
  }
  for (const LocalStorage& s : storages_.src) {
    src_buf_.emplace_back(memory_, s.bytes());
    src_scale_buf_.push_back(s.block_fp8 ? Block(memory_, s.scale_bytes()) : Block());
  }
  for (const LocalStorage& s : storages_.dst) {
    dst_buf_.emplace_back(memory_, s.bytes());
    dst_scale_buf_.push_back(s.mxfp8() ? Block(memory_, s.scale_bytes()) : Block());
  }
  staging_size_ = std::min(want, options_.staging_bytes);
  if (staging_size_ > 0) staging_ = Block(memory_, staging_size_);
  landing_size_ = pool;
  if (landing_size_ > 0) landing_ = Block(memory_, landing_size_);
  // Touched once here, so that no timed run pays their first-use page faults.
  if (staging_) memory_.memset(staging_.get(), 0, staging_size_);
  if (landing_) memory_.memset(landing_.get(), 0, landing_size_);
  memory_.sync(-1);
}

Executor::~Executor() = default;

void* Executor::storage_base(const Op& op, const Piece& p) const {
  if (p.landing >= 0) return static_cast<uint8_t*>(landing_.get()) + landing_at_[p.landing];
  return op.src_side ? src_buf_[p.storage].get() : dst_buf_[p.storage].get();
}

void* Executor::storage_ptr(const Op& op, const Piece& p) const {
  return static_cast<uint8_t*>(storage_base(op, p)) + linear_index(p.storage_offset, p.storage_shape) * op.elem_size;
}

void Executor::run(Algo algo) {
  std::vector<const Op*> ops;
  ops.reserve(ops_[static_cast<int>(algo)].size());
  for (const Op& op : ops_[static_cast<int>(algo)]) ops.push_back(&op);
  run_ops(ops, algo);
}

void Executor::run_phase(Algo algo, int phase) {
  std::vector<const Op*> ops;
  for (const Op& op : ops_[static_cast<int>(algo)])
    if (op.phase == phase) ops.push_back(&op);
  run_ops(ops, algo);
}

// Box ops where the transport has them, except golden's bulk broadcasts: golden delivers every shard
// whole to every member of the param's group (what its NCCL broadcast does), so there the members
// still receive the whole wire box into staging and keep their intersections. Misc buckets are the
// same ops in both algorithms and take box ops in both.
bool Executor::boxed(const Op& op, Algo algo) const { return boxed_op(op, algo, boxes_, phase_count(plan_) - 1); }

void Executor::run_ops(const std::vector<const Op*>& ops, Algo algo) {
  BatchWindow window(options_, staging_size_);
  open_.assign(static_cast<size_t>(window.lanes()), Batch{});
  for (int l = 0; l < window.lanes(); ++l) {
    open_[static_cast<size_t>(l)].lane = l;
    open_[static_cast<size_t>(l)].streams.assign(options_.streams, false);
  }
  posted_.clear();
  open_landings_.clear();  // every landing was released when the previous op list finished
  std::fill(landing_at_.begin(), landing_at_.end(), -1);
  std::fill(landing_pending_.begin(), landing_pending_.end(), 0);
  for (const Op* op : ops)
    for (int l : landings_of(*op)) ++landing_pending_[l];
  for (const Op* op : ops) {
    const bool box = boxed(*op, algo);
    const int64_t staged = staged_bytes(*op, box);
    if (staged > staging_size_)
      throw runtime_error("op of " + std::to_string(op->bytes()) + " bytes does not fit staging of " +
                          std::to_string(staging_size_) + " bytes");
    open_landings(*op, algo, window);
    const BatchWindow::Step& step = window.add(*op, staged);
    const int64_t staging_at = step.staging_at;
    apply(step);

    const bool sends = op->kind == OpKind::Send || (op->kind == OpKind::Broadcast && op->root);
    if (sends && op->src_side) dequant_boxes(*op);
    // A send's pack goes with its dequant, on the prep stream (joined before the op is issued).
    void* wire = nullptr;  // stays null for box ops
    if (box) {
      post_boxes(*op);
    } else {
      if (staged == 0) {
        wire = storage_ptr(*op, op->pieces[0]);
      } else {
        wire = static_cast<uint8_t*>(staging_.get()) + staging_at;
      }
      if (sends && staged > 0) {
        for (const Piece& p : op->pieces)
          memory_.copy_box(storage_base(*op, p), p.storage_shape, p.storage_offset, wire, op->wire_extent,
                           p.wire_offset, p.extent, op->elem_size, prep_stream(op->stream));
      }
      switch (op->kind) {
        case OpKind::Send: transport_.send(op->stream, op->group, op->peer, wire, op->bytes()); break;
        case OpKind::Recv: transport_.recv(op->stream, op->group, op->peer, wire, op->bytes()); break;
        case OpKind::Broadcast: transport_.broadcast(op->stream, op->group, op->peer, wire, op->bytes()); break;
      }
    }
    Batch& open = open_[static_cast<size_t>(window.lane(*op))];
    open.ops.push_back(op);
    open.wire.push_back(wire);
    open.streams[op->stream] = true;
  }
  apply(window.close());
}

// Box transports: the op's pieces go to the transport as they are (no pack, no staging, no unpack);
// a receiver without pieces (a misc member that discards) copies nothing.
void Executor::post_boxes(const Op& op) {
  std::vector<BoxPiece> pieces;
  pieces.reserve(op.pieces.size());
  for (const Piece& p : op.pieces)
    pieces.push_back(BoxPiece{storage_base(op, p), p.storage_shape, p.storage_offset, p.wire_offset, p.extent});
  switch (op.kind) {
    case OpKind::Send:
      transport_.send_boxes(op.stream, op.group, op.peer, op.wire_extent, op.elem_size, pieces);
      break;
    case OpKind::Recv:
      transport_.recv_boxes(op.stream, op.group, op.peer, op.wire_extent, op.elem_size, pieces);
      break;
    case OpKind::Broadcast:
      transport_.broadcast_boxes(op.stream, op.group, op.peer, op.wire_extent, op.elem_size, pieces);
      break;
  }
}

// Side streams (BatchPolicy::side_stream_packs): stream s's sends are readied on stream streams + s,
// so their dequants and packs overlap the batches queued on s before them. Every stream joins its side
// stream before the transport can issue an op that reads them: before any flush (NCCL's flush issues
// the queued ops of every stream, other lanes' open batches included; cuda-ipc pull synchronizes the
// flushed stream before describing sources), and before any wait, since cuda-ipc's progress issues
// posted copies of every stream there, push copies included (cuda_ipc_transport.cpp).
// With --op-stream-packs the work is in stream order already: nothing to join.
int Executor::prep_stream(int stream) {
  if (!options_.side_stream_packs) return stream;
  prep_queued_[static_cast<size_t>(stream)] = true;
  return options_.streams + stream;
}

void Executor::join_prep() {
  for (int s = 0; s < options_.streams; ++s)
    if (prep_queued_[static_cast<size_t>(s)]) {
      memory_.join(s, options_.streams + s);
      prep_queued_[static_cast<size_t>(s)] = false;
    }
}

void Executor::close_open(int lane) {
  Batch& open = open_.at(static_cast<size_t>(lane));
  if (open.ops.empty()) return;
  join_prep();
  for (int s = 0; s < options_.streams; ++s)
    if (open.streams[s]) transport_.flush(s);
  posted_.push_back(std::move(open));
  open = Batch{};
  open.lane = lane;
  open.streams.assign(options_.streams, false);
  ++batches_;
}

void Executor::apply(const BatchWindow::Step& step) {
  for (int lane : step.close) close_open(lane);
  for (int lane : step.retire) retire_oldest(lane);
}

void Executor::retire_oldest(int lane) {
  const auto at = std::find_if(posted_.begin(), posted_.end(), [&](const Batch& b) { return b.lane == lane; });
  if (at == posted_.end()) throw runtime_error("retiring a batch of lane " + std::to_string(lane) + ", none posted");
  Batch& batch = *at;
  join_prep();
  // Each stream's flushed batches after this one stay in flight.
  for (int s = 0; s < options_.streams; ++s) {
    if (!batch.streams[s]) continue;
    int keep = 0;
    for (auto j = at + 1; j != posted_.end(); ++j) keep += j->streams[s] ? 1 : 0;
    transport_.wait(s, keep);
  }
  bool queued = false;  // device work queued here that later ops rely on
  for (size_t i = 0; i < batch.ops.size(); ++i) {
    const Op& op = *batch.ops[i];
    const bool sends = op.kind == OpKind::Send || (op.kind == OpKind::Broadcast && op.root);
    if (sends || op.direct() || batch.wire[i] == nullptr) continue;  // nothing staged to unpack
    for (const Piece& p : op.pieces)
      memory_.copy_box(batch.wire[i], op.wire_extent, p.wire_offset,
                       storage_base(op, p),
                       p.storage_shape, p.storage_offset, p.extent, op.elem_size, op.stream);
    queued = true;
  }
  // Landings whose last op on this rank just completed close (MXFP8: quantized after their unpacks,
  // on the same stream); their space is free for the next ones.
  for (const Op* op : batch.ops)
    for (int l : landings_of(*op))
      if (--landing_pending_[l] == 0) {
        close_landing(l, op->stream);
        queued = true;
      }
  // Before staging or a landing is reused, or a fan-out root sends what was unpacked, on any stream.
  // (The GPU transports' later batches may already run on these streams; this waits for them too.)
  if (queued) memory_.sync(-1);
  posted_.erase(at);
}

Traffic Executor::traffic(Algo algo, int phase) const {
  Traffic t;
  for (const Op& op : ops_[static_cast<int>(algo)]) {
    if (phase >= 0 && op.phase != phase) continue;
    ++t.ops;
    if (op.kind == OpKind::Send || (op.kind == OpKind::Broadcast && op.root)) t.sent += op.bytes();
    else t.received += op.bytes();
  }
  return t;
}

}  // namespace reshard
