// The executor's batch loop (see executor.h for the batching rules and why they cannot deadlock).
#include "reshard/exec/executor.h"

#include <algorithm>

#include "reshard/core/error.h"
#include "reshard/core/pattern.h"

namespace reshard {
namespace {

int64_t align64(int64_t n) { return (n + 63) / 64 * 64; }

RegionSpec region(const Plan& plan, const LocalStorage& s, const StorageMember& m) {
  const ParamPlan& p = plan.params[m.param];
  return RegionSpec{s.shape, m.offset, m.box.extent, p.shape, m.box.offset, dtype_size(p.dtype), param_seed(p.name)};
}

}  // namespace

int64_t ExecOptions::max_message_bytes() const {
  return std::max<int64_t>(64, std::min({staging_bytes, batch_bytes, int64_t{1} << 30}));
}

struct Executor::Batch {
  std::vector<const Op*> ops;
  std::vector<void*> wire;
  std::vector<bool> streams;
  std::vector<uint32_t> received_params;  // bulk params this batch receives into
  int64_t bytes = 0, staging_used = 0;
};

Executor::Executor(const Plan& plan, int rank, Transport& transport, Memory& memory, const ExecOptions& options)
    : plan_(plan), rank_(rank), transport_(transport), memory_(memory), options_(options) {
  if (options_.streams < 1 || options_.batch_ops < 1) throw config_error("--streams and --batch-ops must be at least 1");
  storages_ = rank_storages(plan, rank);
  for (int a = 0; a < 2; ++a) {
    OpListOptions o{static_cast<Algo>(a), options_.streams,
                    std::min(options_.max_message_bytes(), transport.max_message_bytes())};
    ops_[a] = build_ops(plan, rank, storages_, o);
  }
  // Staging: what the busier algorithm would stage at once, capped by --staging-bytes.
  int64_t want = 0;
  for (const auto& list : ops_) {
    int64_t staged = 0;
    for (const Op& op : list)
      if (!op.direct()) staged += align64(op.bytes());
    want = std::max(want, staged);
  }
  try {
    for (const LocalStorage& s : storages_.src) src_buf_.push_back(memory_.alloc(s.bytes()));
    for (const LocalStorage& s : storages_.dst) dst_buf_.push_back(memory_.alloc(s.bytes()));
    staging_size_ = std::min(want, options_.staging_bytes);
    if (staging_size_ > 0) staging_ = memory_.alloc(staging_size_);
  } catch (...) {
    for (void* p : src_buf_) memory_.free(p);
    for (void* p : dst_buf_) memory_.free(p);
    throw;
  }
}

Executor::~Executor() {
  for (void* p : src_buf_) memory_.free(p);
  for (void* p : dst_buf_) memory_.free(p);
  for (void* p : snapshot_) memory_.free(p);
  if (staging_) memory_.free(staging_);
}

void Executor::fill_sources() {
  for (size_t i = 0; i < storages_.src.size(); ++i)
    for (const StorageMember& m : storages_.src[i].members) memory_.fill_pattern(src_buf_[i], region(plan_, storages_.src[i], m));
  memory_.sync(-1);
}

void Executor::poison_destinations() {
  for (size_t i = 0; i < storages_.dst.size(); ++i) memory_.memset(dst_buf_[i], kPoisonByte, storages_.dst[i].bytes());
  memory_.sync(-1);
}

void* Executor::storage_base(const Op& op, int storage) const {
  return op.src_side ? src_buf_[storage] : dst_buf_[storage];
}

void* Executor::storage_ptr(const Op& op, const Piece& p) const {
  return static_cast<uint8_t*>(storage_base(op, p.storage)) + linear_index(p.storage_offset, p.storage_shape) * op.elem_size;
}

void Executor::run(Algo algo) {
  std::vector<const Op*> ops;
  ops.reserve(ops_[static_cast<int>(algo)].size());
  for (const Op& op : ops_[static_cast<int>(algo)]) ops.push_back(&op);
  run_ops(ops);
}

void Executor::run_phase(Algo algo, int phase) {
  std::vector<const Op*> ops;
  for (const Op& op : ops_[static_cast<int>(algo)])
    if (op.phase == phase) ops.push_back(&op);
  run_ops(ops);
}

void Executor::run_ops(const std::vector<const Op*>& ops) {
  Batch batch;
  batch.streams.assign(options_.streams, false);
  for (const Op* op : ops) {
    const int64_t staged = op->direct() ? 0 : align64(op->bytes());
    const bool depends = op->fanout && op->root &&
                         std::find(batch.received_params.begin(), batch.received_params.end(), op->param) !=
                             batch.received_params.end();
    if (!batch.ops.empty() &&
        (static_cast<int64_t>(batch.ops.size()) >= options_.batch_ops || batch.bytes + op->bytes() > options_.batch_bytes ||
         batch.staging_used + staged > staging_size_ || depends))
      post_batch(batch);
    if (staged > staging_size_)
      throw runtime_error("op of " + std::to_string(op->bytes()) + " bytes does not fit staging of " +
                          std::to_string(staging_size_) + " bytes");

    void* wire = nullptr;
    if (staged == 0) {
      wire = storage_ptr(*op, op->pieces[0]);
    } else {
      wire = static_cast<uint8_t*>(staging_) + batch.staging_used;
      batch.staging_used += staged;
    }
    const bool sends = op->kind == OpKind::Send || (op->kind == OpKind::Broadcast && op->root);
    if (sends && staged > 0)
      for (const Piece& p : op->pieces)
        memory_.copy_box(storage_base(*op, p.storage),
                         p.storage_shape, p.storage_offset, wire, op->wire_extent, p.wire_offset, p.extent,
                         op->elem_size, op->stream);
    switch (op->kind) {
      case OpKind::Send: transport_.send(op->stream, op->group, op->peer, wire, op->bytes()); break;
      case OpKind::Recv: transport_.recv(op->stream, op->group, op->peer, wire, op->bytes()); break;
      case OpKind::Broadcast: transport_.broadcast(op->stream, op->group, op->peer, wire, op->bytes()); break;
    }
    if (!sends && !op->pieces.empty()) batch.received_params.push_back(op->param);
    batch.ops.push_back(op);
    batch.wire.push_back(wire);
    batch.bytes += op->bytes();
    batch.streams[op->stream] = true;
  }
  if (!batch.ops.empty()) post_batch(batch);
}

void Executor::post_batch(Batch& batch) {
  for (int s = 0; s < options_.streams; ++s)
    if (batch.streams[s]) transport_.flush(s);
  for (int s = 0; s < options_.streams; ++s)
    if (batch.streams[s]) transport_.wait(s);
  for (size_t i = 0; i < batch.ops.size(); ++i) {
    const Op& op = *batch.ops[i];
    const bool sends = op.kind == OpKind::Send || (op.kind == OpKind::Broadcast && op.root);
    if (sends || op.direct()) continue;
    for (const Piece& p : op.pieces)
      memory_.copy_box(batch.wire[i], op.wire_extent, p.wire_offset,
                       storage_base(op, p.storage),
                       p.storage_shape, p.storage_offset, p.extent, op.elem_size, op.stream);
  }
  memory_.sync(-1);
  ++batches_;
  batch.ops.clear();
  batch.wire.clear();
  batch.received_params.clear();
  std::fill(batch.streams.begin(), batch.streams.end(), false);
  batch.bytes = batch.staging_used = 0;
}

std::vector<int64_t> Executor::count_wrong() {
  std::vector<int64_t> wrong(plan_.params.size(), 0);
  for (size_t i = 0; i < storages_.dst.size(); ++i)
    for (const StorageMember& m : storages_.dst[i].members)
      wrong[m.param] += memory_.count_wrong(dst_buf_[i], region(plan_, storages_.dst[i], m));
  return wrong;
}

void Executor::snapshot_destinations() {
  if (!snapshot_taken_)
    for (const LocalStorage& s : storages_.dst) snapshot_.push_back(memory_.alloc(s.bytes()));
  snapshot_taken_ = true;
  for (size_t i = 0; i < storages_.dst.size(); ++i) memory_.copy_bytes(snapshot_[i], dst_buf_[i], storages_.dst[i].bytes());
  memory_.sync(-1);
}

std::vector<int64_t> Executor::count_different_from_snapshot() {
  std::vector<int64_t> diff(plan_.params.size(), 0);
  if (!snapshot_taken_) throw runtime_error("count_different_from_snapshot() before snapshot_destinations()");
  for (size_t i = 0; i < storages_.dst.size(); ++i)
    for (const StorageMember& m : storages_.dst[i].members)
      diff[m.param] += memory_.count_different(snapshot_[i], dst_buf_[i], storages_.dst[i].shape, m.offset, m.box.extent,
                                               dtype_size(plan_.params[m.param].dtype));
  return diff;
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
