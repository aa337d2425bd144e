#include "reshard/core/batch_policy.h"

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

namespace reshard {

void BatchPolicy::validate(Problems& problems) const {
  if (streams < 1 || streams > kMaxStreams)
    problems.add("--streams must be in 1.." + std::to_string(kMaxStreams) + " (got " + std::to_string(streams) + ")");
  if (batch_ops < 1) problems.add("--batch-ops must be at least 1 (got " + std::to_string(batch_ops) + ")");
  if (batch_bytes < kMinBytes)
    problems.add("--batch-bytes must be at least 4Ki = 4096 bytes (got " + std::to_string(batch_bytes) + ")");
  if (window < 1 || window > kMaxWindow)
    problems.add("--window must be in 1.." + std::to_string(kMaxWindow) + " (got " + std::to_string(window) + ")");
  if (staging_bytes < kMinBytes)
    problems.add("--staging-bytes must be at least 4Ki = 4096 bytes (got " + std::to_string(staging_bytes) + ")");
}

nlohmann::ordered_json batch_policy_json(const BatchPolicy& policy) {
  return {{"streams", policy.streams},
          {"batch_ops", policy.batch_ops},
          {"batch_bytes", policy.batch_bytes},
          {"staging_bytes", policy.staging_bytes},
          {"window", policy.window},
          {"window_per_stream", policy.per_stream_window},
          {"side_stream_packs", policy.side_stream_packs}};
}

int64_t BatchPolicy::max_message_bytes(int64_t transport_limit) const {
  return std::max<int64_t>(64, std::min({staging_bytes, batch_bytes, kMaxMessageBytes, transport_limit}));
}

int64_t staged_bytes(const Op& op, bool boxed) {
  if (boxed || op.direct()) return 0;
  return (op.bytes() + 63) / 64 * 64;
}

bool boxed_op(const Op& op, Algo algo, bool transport_boxes, int misc_phase) {
  return transport_boxes && (algo == Algo::Reshard || op.phase == misc_phase);
}

bool BatchFill::closes_before(const BatchPolicy& policy, const Op& op, int64_t staged, int64_t staging_capacity) const {
  if (ops_ == 0) return false;
  return ops_ >= policy.batch_ops || bytes_ + op.bytes() > policy.batch_bytes || staged_ + staged > staging_capacity ||
         feeds(op);
}

bool BatchFill::feeds(const Op& op) const {
  if (!op.fanout || !op.root) return false;
  for (const Piece& p : op.pieces)
    for (const Written& w : written_)
      if (w.storage == p.storage && w.landing == p.landing && w.box.offset.n == p.storage_offset.n &&
          intersect(w.box, Box{p.storage_offset, p.extent}))
        return true;
  return false;
}

void BatchFill::add(const Op& op, int64_t staged) {
  ++ops_;
  bytes_ += op.bytes();
  staged_ += staged;
  const bool sends = op.kind == OpKind::Send || (op.kind == OpKind::Broadcast && op.root);
  if (!sends)
    for (const Piece& p : op.pieces) written_.push_back({p.storage, p.landing, Box{p.storage_offset, p.extent}});
}

void BatchFill::clear() {
  ops_ = bytes_ = staged_ = 0;
  written_.clear();
}

}  // namespace reshard
