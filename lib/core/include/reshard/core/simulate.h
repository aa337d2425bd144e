// Predicts how long a plan takes on a given system: an alpha-beta model over the plan's actual
// transfers, per rank and per link class, walked in the executor's op order and batching.
//
// Model (docs/performance.md has the reasoning and the sources of the preset values):
// - Ranks r and s share an NVLink domain iff r / gpus_per_node == s / gpus_per_node; otherwise
//   their bytes cross the NIC. Each rank has four independent resources: NVLink send, NVLink
//   receive, NIC send, NIC receive (full duplex; NVLink and NIC are separate; with sender_copies
//   a class's send and receive are one resource).
// - Op order is the executor's (lib/exec ops.h): units (a bulk param: its transfers, then its
//   fan-outs; or a misc bucket) go to stream (train PP stage % streams) and are taken round-robin.
//   Boxes above max_message_bytes are split.
// - Each rank cuts its op list into batches exactly as the executor does (batch_ops ops or
//   batch_bytes bytes, or before a broadcast of a param the batch already receives into). A batch
//   costs launch_us per stream it uses + per_op_us per op + the largest latency of the link
//   classes it uses + its busiest resource's bytes / bandwidth. Batches of a rank run back to
//   back; a phase takes the slowest rank's sum. An op starts once every rank taking part has posted
//   it, and is done on each of them no earlier than its bytes are through on all of their resources
//   (each op goes onto its ranks' resources as it is posted, so one walk knows them: a sender feeding
//   several receivers holds each back, and what they do next).
// - Broadcasts (fan-out phase two, misc buckets) cost latency * log2(members) once. Inside one
//   domain they are pipelined rings over NVLink (every member but the root receives the bytes,
//   every member but the root's predecessor forwards them). A group spanning domains is a ring of
//   domains: each domain receives the bytes once over the NIC, striped over its members' NICs (NCCL
//   runs a channel per NIC), and forwards them inside over NVLink. Groups of at most
//   linear_broadcast_max members broadcast linearly instead: the root sends the bytes to each member
//   (Open MPI's MPI_Ibcast for <= 4 members; cuda-ipc, where every member pulls from the root).
//   Groups of at least binomial_broadcast_min members inside a domain broadcast by a binomial tree of
//   whole messages instead (Open MPI 4.1's MPI_Ibcast above 4 members): member v (counted from the
//   root) receives the bytes once from v minus its highest bit and sends them to each v + 2^r with
//   2^r > v, so it has them after popcount(v) hops of bytes / link, store and forward. With
//   fan_gbps (below) each hop is timed as MPI runs it: the member's part moves once it and its parent
//   have posted and the parent holds the bytes, and is done once its own sends are through. Its
//   latency is then per hop, not latency * log2(members) per member: a member holds the message one
//   latency after its parent's sends are through, and one with children is done one latency after
//   its own (a leaf when it holds), so consecutive messages pipeline down the tree.
// - Copies (copy_gbps > 0; every preset but hand-built models): what the executor copies in
//   memory besides the wire: the sender's pack of a strided box into staging, the transport's wire
//   copies (wire_copies per received byte), the receiver's unpack, each at copy_gbps on its rank.
//   With box_ops (cuda-ipc) a receiver copies each piece straight, once, and a discarding member
//   copies nothing. Issuing costs per_copy_us per copy and per_launch_us per launch: the executor's
//   packs and unpacks are a launch each; the transport's copies (wire copies, box pulls) of one batch
//   go out batched, one launch per (stream, peer) the rank receives from (cuda-ipc launches the copies
//   a progress pass starts on a stream at once, and one peer's descriptions of a batch arrive in one
//   message). A batch's copy time (its rank's copied bytes / copy_gbps) and its wire time overlap (the
//   larger counts); its issue costs add, as per_op_us does. Without box ops (MPI) the wire copies are
//   inside the link's rate (one pair's measured point-to-point): they count toward the shared memory
//   system only, not the rank's copy time. That is cuda-ipc's pull mode; in push mode
//   (ipc_push, the executor's default; only where box_ops marks the cuda-ipc transport) the sender makes
//   the transport's copies instead: into each receiver's pieces (boxed) or its staging (staged ops), a
//   broadcast root writing the members that keep the same pieces with one fan-out copy (one read per
//   8 members + a write each: (reads + k) / 2 copies' worth), in one launch per (batch, stream, peer) it
//   copies to, a broadcast's group counting as one peer (the root starts it once all descriptions are
//   in). Receivers only describe; their unpacks of staging stay theirs.
// - Shared memory system (shared_copy_gbps > 0: all ranks of a domain on one host or one GPU): the
//   domain's copies of every rank contend, so a phase also takes at least the domain's copied bytes /
//   shared_copy_gbps (plus, with serial_issue, every rank's per-op, per-copy and per-launch costs)
//   plus the slowest rank's fixed batch costs. Where the domain is one device's memory and every byte
//   moves as a copy (box ops), a rank's own time takes its copies, not its NVLink bytes as well: the
//   link would time a linear broadcast's root once per member where its fan-out copy reads once.
//   With serial_issue and switch_us, a domain where two or
//   more ranks launch copies (processes time-slicing one GPU) also pays switch_us per transport pass of
//   every rank (one per batch, stream and peer received from): each waits for the GPU to switch to its
//   context. A rank's back-to-back launches (packs) share its time slice and are not charged; its
//   unpacks of a batch, which the executor queues only once it waited for the batch and then
//   synchronizes the device on (Executor::retire_oldest), are a pass of their own after the wait, and
//   the rank goes on when they are done (golden's receivers, at small batches, alternate this way).
//   With slice_us the passes take turns on the GPU (time_slice.h) from when each can launch, a pass
//   being one launch of its copier (the copies of a stream whose ops all ranks had posted by the same
//   time, as cuda-ipc's progress launches what has arrived), made only inside the copier's waits that
//   wait, and queued only once the copier's previous wait's launch on the stream is done (replayer.cpp,
//   Replayer::launch_pending), a rank paying the switches into
//   its context, and the walk is repeated with each batch delayed until the last pass it waits for is
//   done there, and each rank's unpack passes holding it until they are done there, until both settle
//   (docs/performance.md, "Context switches", "Golden's unpacks take turns").
//   On one device memory (box ops) a copier's copies run one after another from when all posted the
//   op, and the other end's batch waits for the copy.
// - Golden (algo): every distinct source shard broadcast whole over the param's group from its lowest
//   holder, received into staging by every member, the gen ranks unpacking their intersections.
// Pure function of (plan, model); no MPI, no GPU.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reshard/core/batch_policy.h"
#include "reshard/core/error.h"
#include "reshard/core/plan.h"

namespace reshard {

struct SystemModel {
  std::string name;
  int64_t gpus_per_node = 8;       // ranks per NVLink domain
  double nvlink_gbps = 370;        // GB/s (1e9 B/s) achievable per direction per GPU
  double nic_gbps = 47;            // GB/s achievable per direction per GPU
  double nvlink_latency_us = 3;    // per batch that uses NVLink
  double nic_latency_us = 10;      // per batch that uses the NIC
  double launch_us = 5;            // per stream a batch posts to (group call + kernel launch)
  double per_op_us = 0.5;          // per op in a batch (enqueue cost)
  // Memory copies (see the model above); copy_gbps == 0 leaves them out (the NVLink/NIC presets).
  double copy_gbps = 0;            // one rank's copy rate, GB/s of bytes copied (each read + written)
  double shared_copy_gbps = 0;     // > 0: a domain's ranks share one memory system at this aggregate rate
  double wire_copies = 1;          // copies the transport makes per byte received (1: CMA, IPC pull)
  double per_copy_us = 0;          // per copy issued (a piece of a pack, unpack or box copy)
  double per_launch_us = 0;        // per copy launch: each pack or unpack; per (batch, stream, peer) for
                                   // the transport's batched copies
  bool box_ops = false;            // transport copies strided boxes straight: no pack, no unpack
  // The executor's packs and unpacks run in line with the batch (MPI's host staging, NCCL): a batch's
  // packs before it is posted, its unpacks after its wait, adding to its time instead of overlapping
  // its transfers (cuda-ipc's box copies are the transfer itself).
  bool serial_packs = false;
  // With serial_packs: the packs are GPU kernels (NCCL), which the rank's thread only launches, and a
  // batch's ops move once all of its packs are done (the group is issued at the flush, behind them).
  // Where they queue is the executor's (BatchPolicy::side_stream_packs): on a side stream a pack waits
  // only for the rank's earlier packs (they share its memory); on the op's stream also for the batches
  // flushed there before. Off: the rank's thread packs (MPI), between its posts.
  bool kernel_packs = false;
  // The transport has no single copy (Open MPI's vader BTL with btl_vader_single_copy_mechanism none,
  // as on the device host: copy-in/copy-out through shared-memory fragments): each rank's thread copies
  // every byte it sends and every byte it receives, inside MPI's progress. So a rank's sends and
  // receives of a link class share one rate (its link's: one pair's point-to-point moves each byte on
  // both ends at once), and, with serial_packs, its transfers stand still while it packs (its thread
  // is then outside MPI). With single copy (CMA, the VM) the receiver makes the copy: false.
  bool sender_copies = false;
  // cuda-ipc's mode, where box_ops is on (the cuda-ipc transport): false = pull (receivers copy),
  // true = push (senders copy; a broadcast root fans one read out to its members). The executor's and
  // `reshard simulate`'s default is push; false here keeps a hand-built model's predictions as before.
  bool ipc_push = false;
  // Shared memory system: every rank's per-op, per-copy and per-launch costs occupy it too (one GPU
  // time-sliced between processes, no MPS), so they add to the domain's copy time instead of
  // overlapping it. Off under MPS, where the ranks' work runs concurrently.
  bool serial_issue = false;
  // With serial_issue, where at least two ranks of a domain launch copies: the GPU switching to a
  // process's context, per transport pass (batched launch per batch, stream and peer) and per waited
  // batch's unpacks, which wait on it. Measured by scripts/gpu_timeslice.sh; 0 under MPS (one context).
  double switch_us = 0;
  // The GPU's time slice per context (measured by scripts/gpu_timeslice.sh --mode slice). > 0: the
  // ranks' passes take turns on the GPU (time_slice.h: a context runs its queue until it is empty or,
  // while another waits, for one slice and past a pass only if its next was queued when that pass
  // started; switch_us per switch into it), and the batches wait for their turns. 0: switch_us per pass.
  double slice_us = 0;
  int64_t linear_broadcast_max = 0;  // groups up to this size broadcast linearly (root -> each member)
  int64_t binomial_broadcast_min = 0;  // > 0: groups this large (and above linear) use a binomial tree
  // > 0: a rank's sends of one broadcast all at once, as libnbc posts them (nbc_ibcast.c: a linear
  // root's, a binomial member's to its children once it holds the whole message), take one pair's
  // link time for the first and b / fan_gbps for each further one (copy-in/copy-out: the receivers
  // copy out side by side, the sender's copy-ins of the others add); and a binomial member holds the
  // message only once its parent's sends are through. Measured by scripts/calibrate.sh --measure-host
  // (root_sends_*). 0: each send at the link's rate, from the broadcast's start.
  double fan_gbps = 0;
  // > 0 with sender_copies: the CPU cores the ranks of one domain share (the host's nproc). A transfer
  // through copy-in/copy-out moves only while its sender and its receiver both run (each copies its
  // end through a few shared-memory fragments), so where a domain holds more ranks than cores, and the
  // ranks take turns on them, each rank's transfers (the link rates, fan_gbps) move at cores / ranks of
  // their rate; a rank's own memcpy (packs, copy_gbps) needs no peer and keeps its rate. The share is
  // the largest domain's (min(gpus_per_node, world) ranks). Fitted to, not derived from, the device
  // host's oversubscribed records (docs/calibration.md, "Oversubscribed hosts"). 0: as many cores as
  // ranks.
  int64_t host_cores = 0;
  // The latencies are the host's busy hand-off (scripts/calibrate.sh --measure-host latency_busy_us:
  // a ping-pong while every other rank of the domain copies): where ranks outnumber cores, a hand-off
  // waits for the working ranks that share its cores, not for idle ones, which yield at once
  // (scripts/latency_probe.cpp latency_busy_us_with_c_copiers: on the 2-core VM it grows with the
  // copiers, about in proportion, and is 34-95 us with none). So a walk's batches pay the latency x
  // the domain's ranks with ops in the walk / its ranks: a bulk stage's, not the whole world's.
  bool latency_per_busy_rank = false;
  BatchPolicy batch;  // the executor's knobs: the same defaults, bounds and message cap as `run`
  Algo algo = Algo::Reshard;
};

// Ranks in the largest domain: min(gpus_per_node, world).
inline int64_t domain_ranks(const SystemModel& m, int world) { return m.gpus_per_node < world ? m.gpus_per_node : world; }
// The part of its transfer rates (links, fan_gbps) a rank keeps (SystemModel::host_cores): host_cores /
// domain_ranks where copy-in/copy-out ranks outnumber the cores, else 1.
double transfer_share(const SystemModel& m, int world);

// Problems with the values (non-positive bandwidths, ...) are added to `problems`.
void validate_system_model(const SystemModel& m, Problems& problems);

struct SimPhase {
  std::string name;  // "bulk.ppN", "fanout", "misc"
  double seconds = 0;
  int slowest_rank = 0;
  int64_t batches = 0;  // on the slowest rank
  int64_t ops = 0;      // on the slowest rank
  int64_t copies = 0;   // on the slowest rank (copy model)
  int64_t launches = 0; // copy launches on the slowest rank (copy model)
  double wait_seconds = 0;  // of the slowest rank's time, waiting on ranks that posted their part later
  int64_t switches = 0; // shared memory system: context switches (switch_us) of the busiest domain's ranks
  // Shared memory system: the busiest domain's copied bytes and what they take; the phase took
  // that (plus fixed batch costs) when it exceeds the slowest rank's own time.
  int64_t shared_copy_bytes = 0;
  double shared_copy_seconds = 0;
  bool shared_bound = false;  // the phase time is the shared memory system's, not a rank's
};

enum class LinkResource : uint8_t { NvlinkSend, NvlinkRecv, NicSend, NicRecv };
const char* to_string(LinkResource r);

// The busiest link of one class (every rank's NVLink or NIC, either direction) at its own rate: the
// bytes the schedule puts on it / bandwidth; bulk and misc alone, and together.
struct LinkFloor {
  double seconds = 0, bulk_seconds = 0, misc_seconds = 0;
};

// One batch of one rank in the total run, for `simulate --timeline`: when it was posted, when its
// ops' bytes could first move (the latest peer posting), and when it ended.
struct BatchSpan {
  double start = 0, first_ready = 0, end = 0;
  int64_t bytes = 0;
};

struct SimResult {
  SystemModel model;
  // Each bulk stage alone (its transfers and fan-outs), the fan-outs of all stages alone, and the
  // misc buckets alone, as the rows of `reshard run` time them.
  std::vector<SimPhase> phases;
  double bulk_seconds = 0;      // every bulk stage together (interleaved over streams)
  double misc_seconds = 0;      // == the "misc" phase
  double sequential_seconds = 0;  // bulk then misc (the seed's order)
  double total_seconds = 0;     // everything in the executor's order (misc interleaved)
  int slowest_rank = 0;         // of the total
  int64_t total_switches = 0;   // of the total, as SimPhase::switches (compare ipc_trace.py --switches)
  int64_t slowest_rank_batches = 0;
  // Of the total, that rank waiting on ranks that posted later; with a window per stream an upper bound
  // (its lanes' batches share links, and each batch's wait counts the others' bytes beside its own).
  double slowest_rank_wait_seconds = 0;
  // Floors of the schedule's own bytes: no ordering of these ops beats the busiest link of a class.
  LinkFloor nvlink_floor, nic_floor;
  std::vector<std::vector<BatchSpan>> timeline;  // per rank, the total run's batches in order
  // Busiest (rank, resource) over the whole run: bytes / bandwidth.
  int busiest_rank = 0;
  LinkResource busiest_link = LinkResource::NicRecv;
  int64_t busiest_link_bytes = 0;
  double busiest_link_seconds = 0;
  // Bytes on each link class, summed over ranks (sent side).
  int64_t nvlink_bytes = 0, nic_bytes = 0;
  int64_t copy_bytes = 0;  // bytes copied in memory, summed over ranks (copy model)
  // The plan's lower bound (compute_stats) and a time no schedule can beat on this system: the
  // bytes a rank must receive over both its links at once, or a domain's distinct needed bytes
  // entering through all its NICs, or (shared memory system) every byte a domain's gen ranks must
  // receive copied once at shared_copy_gbps (push: written once, read once per 8 written, i.e. 9/16 of
  // a copy each), whichever is larger (misc bytes included).
  int64_t lower_bound_bytes = 0;
  double lower_bound_seconds = 0;
};

// What `run` refuses before it allocates or sends, `simulate` refuses too (Error(Config), naming
// `origin`): a plan failing static verification (require_verified), or a rank's landing beyond the
// model's --staging-bytes (check_landings_fit). simulate() itself assumes a plan that passes.
void check_plan_runs(const Plan& plan, const SystemModel& model, const std::string& origin);

SimResult simulate(const Plan& plan, const SystemModel& model);

nlohmann::ordered_json simulation_json(const Plan& plan, const SimResult& r);
std::string format_simulation(const Plan& plan, const SimResult& r);

}  // namespace reshard
