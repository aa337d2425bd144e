// A rank's part of a plan as a flat list of byte-moving ops in one global order shared by all
// ranks (each rank's list is the subsequence of ops it takes part in). Pure: no MPI, no memory.
//
// Order: the plan is cut into units (one bulk param: its phase-one transfers, then its fan-outs;
// or one misc bucket). Unit u goes to stream (train PP stage % streams); units are taken
// round-robin over the train PP stages, each stage's units in plan order (schedule.h). Every op is a send, a receive or a
// broadcast of one "wire" buffer: a dense box of `wire_extent` elements, gathered from (sender) or
// scattered into (receiver) the rank's storages by `pieces`. Boxes above `max_message_bytes` are
// split into sub-boxes along their outer dims, identically on every rank.
#pragma once
#include <cstdint>
#include <vector>

#include "reshard/core/plan.h"
#include "reshard/core/storage.h"

namespace reshard {

enum class Algo { Reshard, Golden };
const char* to_string(Algo a);

enum class OpKind : uint8_t { Send, Recv, Broadcast };

// One copy between an op's wire buffer and a local storage.
struct Piece {
  int storage = 0;     // index into the rank's storages (src side for senders/roots, dst otherwise)
  Dims storage_shape;  // as the copy sees the storage (misc buckets: flat bytes)
  Dims storage_offset;
  Dims wire_offset;    // origin inside the wire box
  Dims extent;
  // >= 0: the piece goes through landing RankStorages::landings[landing], a short-lived BF16 buffer
  // of the landing's extent (storage_shape/offset are relative to it) instead of the storage itself.
  int landing = -1;
};

struct Op {
  OpKind kind = OpKind::Send;
  bool root = false;   // broadcast: this rank sends
  bool src_side = false;  // pieces index src storages (send / broadcast root) or dst storages
  int stream = 0;
  int group = 0;       // plan.groups index
  int peer = 0;        // send: destination; recv: source; broadcast: root (global ranks)
  int phase = 0;       // 0..pp-1: bulk stage; pp: misc
  uint32_t param = 0;  // for bulk ops; first param of the bucket for misc
  bool fanout = false;  // second phase of a two-phase fan-out
  // Where the op sits in the global order, the same on every rank that takes part: its unit
  // (schedule.h work_units), its item in the unit (a transfer, then the fan-outs; a golden shard; 0 for a
  // bucket) and its sub-box after the message split. The simulator matches the ranks of an op by it.
  uint32_t unit = 0, item = 0, sub = 0;
  int elem_size = 1;
  Dims wire_extent;
  std::vector<Piece> pieces;  // empty on a receiver: receive and discard
  int64_t bytes() const { return wire_extent.product() * elem_size; }
  // The wire buffer is one contiguous run of a storage: no staging needed.
  bool direct() const;
};

struct Schedule;

struct OpListOptions {
  Algo algo = Algo::Reshard;
  int streams = 2;
  int64_t max_message_bytes = int64_t{256} << 20;
  const Schedule* schedule = nullptr;  // make_schedule(plan, streams), shared by ranks; null: built here
};

// A short-lived BF16 buffer between a storage and the wire (docs/precision.md): on a source, a
// block-FP8 storage dequantized before its first op sends from it; on a destination, an MXFP8
// storage member that receives BF16 and is quantized after its last op.
struct Landing {
  bool src_side = false;
  int storage = 0;  // src or dst storage index
  int member = 0;   // the storage's member it stands for
  uint32_t param = 0;
  Dims extent;      // the member's box extent (BF16 elements)
  // src: a bulk shard is dequantized op by op (each op's box, so replicas that send a part of their
  // shard dequantize only that part); a misc tensor whole when the landing opens.
  bool by_box = false;
  int64_t bytes() const { return extent.product() * 2; }
};

// Storages of one rank and where each param's regions sit in them.
struct RankStorages {
  std::vector<LocalStorage> src, dst;
  std::vector<int> src_of_param;  // param -> src storage index (-1: none)
  std::vector<std::vector<std::pair<int, int>>> dst_of_param;  // param -> (storage, member) list
  std::vector<Landing> landings;
  std::vector<int> src_landing;                 // src storage -> landing (-1: none)
  std::vector<std::vector<int>> dst_landing;    // dst storage -> per member landing (-1: none)
};
RankStorages rank_storages(const Plan& plan, int rank);

std::vector<Op> build_ops(const Plan& plan, int rank, const RankStorages& storages, const OpListOptions& options);

// Splits a dense box of `extent` into sub-boxes of at most `max_bytes` bytes (origins relative
// to the box), cutting the outermost dims first. Deterministic.
std::vector<Box> split_box(const Dims& extent, int elem_size, int64_t max_bytes);

int phase_count(const Plan& plan);  // train PP stages + 1 (misc)

}  // namespace reshard
