// How a rank cuts its op list (ops.h) into batches: the knobs `reshard run` and `reshard simulate`
// share, with their one set of defaults and bounds, the largest wire message, and the rule that closes
// a batch. The executor (lib/exec executor.cpp) posts batches by it; the simulator (replayer.cpp)
// replays the same op lists by it on a virtual clock.
//
// A batch is posted, flushed and waited for as a whole: its ops complete together; up to `window`
// batches are in flight at once (batch_window.h says when a rank waits for which). It closes before an
// op when it already holds `batch_ops` ops or the op would take it past `batch_bytes`, when the op's
// staging would not fit what is left, or before a fan-out broadcast this rank roots that reads a region
// the batch writes (the broadcast sends what phase one, or a lane broadcast, wrote there). Regions are
// compared in storage coordinates, so a replica that received one piece of a param and roots another
// keeps its batch: cutting it there misaligned the replicas' batches, and every batch of a group then
// waited for its latest member. Since every rank posts its ops in
// the shared global order, per-rank batch boundaries cannot deadlock: the lowest unfinished op is
// posted by all its ranks.
#pragma once
#include <cstdint>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "reshard/core/error.h"
#include "reshard/core/ops.h"

namespace reshard {

struct BatchPolicy {
  static constexpr int kMaxStreams = 64;                 // cuda-ipc tags a message with its stream
  static constexpr int64_t kMinBytes = 4096;             // --batch-bytes and --staging-bytes
  static constexpr int64_t kMaxMessageBytes = int64_t{1} << 30;
  static constexpr int kMaxWindow = 64;

  int streams = 2;
  int64_t batch_ops = 64;
  int64_t batch_bytes = int64_t{256} << 20;
  // 512 MiB: at 256 MiB the ring wrapped onto batches still waiting for a slow peer and held NCCL M2N's
  // Qwen3-235B row at 1.30x its NIC floor (simulate; 1.14x at 512 MiB, docs/performance.md). The
  // message cap stays batch_bytes.
  int64_t staging_bytes = int64_t{512} << 20;
  int window = 16;  // batches in flight per rank (or per stream): the open one and window - 1 posted
  // A window per stream (batch_window.h): a stage's batches are waited for only behind its own stream's,
  // not behind another stage's. False: one window per rank (--window-per-rank), as before 2026-12-03.
  bool per_stream_window = true;
  // Device memory: what readies a send (its block-FP8 dequant, its pack into staging) is queued on a
  // stream of its own beside the op's stream, which waits for it before the transport issues the op:
  // packs overlap the batches already queued on the op's stream. False (--op-stream-packs): they queue
  // behind those batches, as before 2026-12-07. Host memory runs them in line either way.
  bool side_stream_packs = true;

  // Every value out of bounds, named by its flag.
  void validate(Problems& problems) const;
  // The largest wire box, equal on all ranks: staging, batch bytes, 1 GiB and the transport's own limit.
  int64_t max_message_bytes(int64_t transport_limit = INT64_MAX) const;
  OpListOptions op_list(Algo algo, int64_t transport_limit = INT64_MAX) const {
    return {algo, streams, max_message_bytes(transport_limit)};
  }
};

// The knobs as one JSON object, in the keys both `run --json` ("arguments") and `simulate --json`
// ("system") record, so that a run's record replays under the same knobs (scripts/calibrate.py).
nlohmann::ordered_json batch_policy_json(const BatchPolicy& policy);

// Staging an op takes on this rank: none for box ops (the transport copies between storages) and for
// ops whose wire buffer is one contiguous run of a storage; else its bytes, 64-byte aligned.
int64_t staged_bytes(const Op& op, bool boxed);

// Box ops where the transport moves pieces itself (Transport::supports_boxes), except golden's bulk
// broadcasts, where every member receives the whole shard into staging as golden defines.
bool boxed_op(const Op& op, Algo algo, bool transport_boxes, int misc_phase);

// What a rank's open batch holds.
class BatchFill {
 public:
  bool empty() const { return ops_ == 0; }
  int64_t ops() const { return ops_; }
  int64_t staged() const { return staged_; }
  // True when `op` (taking `staged` bytes of staging out of `staging_capacity`) must start a new batch.
  bool closes_before(const BatchPolicy& policy, const Op& op, int64_t staged, int64_t staging_capacity) const;
  void add(const Op& op, int64_t staged);
  void clear();
  // `op` is a fan-out broadcast this rank roots that reads a region a receive of this batch writes.
  bool feeds(const Op& op) const;

 private:
  int64_t ops_ = 0, bytes_ = 0, staged_ = 0;
  struct Written {
    int storage, landing;  // dst storage, or landing (>= 0: coordinates relative to it)
    Box box;               // in the storage's (or landing's) coordinates
  };
  std::vector<Written> written_;  // regions the batch's receives write
};

}  // namespace reshard
