// What one op costs each rank taking part, as the replay (replayer.cpp) times it: its bytes on each
// link class and direction, its per-batch latency, and what the executor and the transport copy for
// it (the copy model, simulate.h "Copies"); broadcasts by their algorithm (linear, binomial, ring,
// ring of domains).
#pragma once

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "replay.h"
#include "reshard/core/batch_policy.h"
#include "reshard/core/ops.h"
#include "reshard/core/plan.h"
#include "reshard/core/simulate.h"

namespace reshard::replay {

// The index of a link class's direction in Bytes4 (kResources).
inline int res_index(bool nic, bool send) {
  return (nic ? 2 : 0) + (send ? 0 : 1);
}

// One op as one rank sees it: what it costs there.
struct OpCost {
  Bytes4 res{};            // bytes on each of the rank's resources
  double latency = 0;      // seconds
  double relay = 0;        // seconds a binomial broadcast takes to reach this member through its relays
  int64_t copy_bytes = 0;  // copied in this rank's memory (copy model)
  int64_t copies = 0;      // copies this rank issues
  int64_t launches = 0;    // of them, the executor's packs and unpacks: one launch each
  int peer = -1;           // whom the transport's copies are for: pull: the rank a receiver copies from;
                           // push: the receiver, or -2 - group for a broadcast root (the copies of one
                           // batch, stream and peer share one launch)
  bool pulls = false;      // the transport copies for this op on this rank (wire copy, box pull or push)
  int64_t pass_bytes = 0;  // of copy_bytes, the transport's copies (made in passes)
  int64_t pack_bytes = 0, unpack_bytes = 0;  // of copy_bytes, the executor's packs and unpacks (serial_packs)
  // A binomial or linear MPI broadcast with SystemModel::fan_gbps: each member's part is timed on its
  // own (MPI completes a member's Ibcast once it holds the message and its own sends are through, not
  // when the whole tree is). `tree_parent`: the part it receives from (-1: the root). Set as posted
  // (parents first): `hold`, when it holds the whole message (its parent's sends through, and its own
  // receive); `done`, when its own sends are through too.
  bool tree = false;
  int tree_parent = -1;
  double hold = 0, done = 0;
  double hop_latency = 0;  // a binomial tree's member: the hand-off of its parent's send (seconds)
};

// The local side of an op on one rank: its pieces (copies between the wire and the storages), their
// bytes, and whether the wire buffer is one contiguous run of a storage (no staging, no copy).
struct Pieces {
  int64_t count = 0, bytes = 0;
  bool direct = true;
};

Pieces pieces_of(const Op* op);

class OpCoster {
 public:
  OpCoster(const Plan& plan, const SystemModel& m);

  // SystemModel::latency_per_busy_rank: each domain's ranks with an op the walk `f` takes, over its ranks.
  void busy_share(const OpLists& lists, const Filter& f);
  // The costs of one op on each rank taking part (parts ascending by rank; costs as many, zeroed).
  void cost(const std::vector<std::pair<int, const Op*>>& parts, std::vector<OpCost>& costs) const;

  bool boxed(const Op& op) const { return boxed_op(op, m_.algo, m_.box_ops, misc_phase_); }
  double beta(int res) const { return beta_[static_cast<size_t>(res)]; }  // B/s, after transfer_share
  int64_t node(int rank) const { return rank / m_.gpus_per_node; }
  int misc_phase() const { return misc_phase_; }
  bool copies() const { return copies_; }  // the copy model is on (SystemModel::copy_gbps)

 private:
  double latency(bool nic, int rank) const;
  void charge(OpCost& op, bool sends, const Pieces& pieces, int64_t b, bool boxed) const;
  void charge_push(OpCost& op, const std::vector<Pieces>& kept, int64_t b, bool boxed, int key) const;
  void broadcast(int g, int root, int64_t b, bool boxed, const std::vector<Pieces>& locals,
                 const std::vector<std::pair<int, const Op*>>& parts, std::vector<OpCost>& costs) const;

  const Plan& plan_;
  const SystemModel& m_;
  struct GroupDomains {
    std::vector<int64_t> nodes, count;  // the domains a group touches (ascending) and its members in each
  };
  std::vector<GroupDomains> domains_;
  std::array<double, kResources> beta_{};
  double fan_ = 0;                     // B/s: SystemModel::fan_gbps at transfer_share
  std::vector<double> latency_share_;  // per domain, this walk's (busy_share); empty: 1
  bool copies_ = false;
  bool push_ = false;  // cuda-ipc push mode (SystemModel::ipc_push where box_ops is on)
  int misc_phase_ = 0;
};

}  // namespace reshard::replay
