// The executor: allocates a rank's storages (its own shards only) plus bounded staging, fills and
// checks them, and walks its op list through a Transport in bounded batches.
//
// Batching: ops are posted in list order and batches close by the batch policy (batch_policy.h); up
// to --window of them are in flight, and the rank waits for the oldest where batch_window.h says (the
// walk the simulator replays), plus before a landing whose place is still held (below). A batch's
// unpacks, landing closes and buffer reuse happen when it is waited for ("retired").
//
// Box transports (Transport::supports_boxes, CUDA IPC) get each op's pieces instead of a packed wire
// buffer: nothing is packed, staged or unpacked, and receivers that discard copy nothing. Golden's bulk
// broadcasts are the exception: every member receives the whole shard (staged), as golden defines.
//
// Landings (docs/precision.md): MXFP8 storage members receive BF16 into a landing of their extent;
// after the batch holding the member's last op on this rank, the landing is quantized into the e4m3
// storage and its E8M0 scales. Block-FP8 sources of a Megatron destination (src_dequant) send from
// a BF16 landing of their shard: each op dequantizes its own box into it first (a misc tensor is
// dequantized whole when its landing opens). Each landing must fit `staging_bytes`; the pool places landings whose live ranges in the
// op list overlap apart (landing_layout.h), and a batch ends before a landing whose place is still
// held by one that this batch finishes.
// Not collective by itself; run()/run_phase() are collective over the ranks the ops involve.
#pragma once
#include <cstdint>
#include <vector>

#include <memory>

#include "reshard/core/batch_policy.h"
#include "reshard/core/batch_window.h"
#include "reshard/core/plan.h"
#include "reshard/core/landing_layout.h"
#include "memory.h"
#include "reshard/core/ops.h"
#include "transport.h"

namespace reshard {


// Bytes a rank moved in one phase (broadcast roots count the box once).
struct Traffic {
  int64_t sent = 0, received = 0, ops = 0;
};

class Executor {
 public:
  // Builds the op lists of both algorithms and allocates storages + staging.
  Executor(const Plan& plan, int rank, Transport& transport, Memory& memory, const BatchPolicy& options);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  void fill_sources();        // pattern into every src storage member
  void poison_destinations();  // kPoisonByte over every dst storage

  // Runs every op of `algo` (all phases, streams interleaved), or only those of one phase.
  void run(Algo algo);
  void run_phase(Algo algo, int phase);

  // Wrong bytes per param (index = param) on this rank's destinations.
  std::vector<int64_t> count_wrong();
  // Snapshot of the destinations (for comparing two runs), and the bytes that differ from it, per param.
  void snapshot_destinations();
  std::vector<int64_t> count_different_from_snapshot();

  Traffic traffic(Algo algo, int phase) const;  // phase -1: all
  const RankStorages& storages() const { return storages_; }
  int64_t batches_posted() const { return batches_; }
  int64_t landing_pool_bytes() const { return landing_size_; }  // BF16 landing pool (0: none)

 private:
  struct Batch;
  void run_ops(const std::vector<const Op*>& ops, Algo algo);
  bool boxed(const Op& op, Algo algo) const;
  void close_open(int lane);    // flushes the lane's open batch: it joins the posted ones
  void apply(const BatchWindow::Step& step);  // the closes, then the retires, the window says
  void retire_oldest(int lane);  // waits for the lane's oldest posted batch, unpacks it, closes its landings
  void post_boxes(const Op& op);
  void* storage_base(const Op& op, const Piece& p) const;
  void open_landings(const Op& op, Algo algo, BatchWindow& window);
  void close_landing(int landing, int stream);
  void dequant_boxes(const Op& op);
  int prep_stream(int stream);  // where stream's sends are dequantized and packed (noted for join_prep)
  void join_prep();             // each stream waits for what its side stream was given
  int64_t count_wrong_mxfp8(size_t storage, std::vector<int64_t>& wrong);
  void* storage_ptr(const Op& op, const Piece& p) const;

  const Plan& plan_;
  int rank_;
  Transport& transport_;
  Memory& memory_;
  BatchPolicy options_;
  bool boxes_ = false;  // the transport moves pieces between storages itself (Transport::supports_boxes)
  RankStorages storages_;
  std::vector<Block> src_buf_, dst_buf_, snapshot_;
  std::vector<Block> dst_scale_buf_, snapshot_scale_;  // MXFP8 storages' E8M0 scales (empty: none)
  std::vector<Block> src_scale_buf_;                   // block-FP8 sources' float32 scales (empty: none)
  // Landing pool; per algorithm where each landing sits (landing_layout.h); per landing its offset
  // while open (-1: closed) and the ops of the running op list still to complete; the open ones.
  Block landing_;
  int64_t landing_size_ = 0;
  LandingLayout landing_layout_[2];
  std::vector<int64_t> landing_at_, landing_pending_;
  std::vector<int> open_landings_;
  std::vector<Op> ops_[2];  // by Algo
  Block staging_;
  int64_t staging_size_ = 0;
  int64_t batches_ = 0;
  std::vector<bool> prep_queued_;  // per stream: its side stream was given work since it last joined
  std::vector<Batch> open_;    // per lane (batch_window.h): ops posted, not yet flushed
  std::vector<Batch> posted_;  // flushed, not yet waited for, oldest first (at most --window per lane)
  bool snapshot_taken_ = false;
};

}  // namespace reshard
