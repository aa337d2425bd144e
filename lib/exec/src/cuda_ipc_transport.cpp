// The CUDA IPC data plane: ranks of one node, device buffers, box ops, pull or push.
//
// Every op has a DESCRIBING side and a COPYING side. The describer names its part of the op as
// pieces: strided boxes of its device tensors, each as (allocation id, offset of the tensor's base)
// of its CudaMemory plus the allocation's cudaIpcMemHandle (exported once per allocation, cached).
// The copier maps each (rank, allocation) once (cached for the transport's life, so every iteration
// reuses it) and copies every overlap of a destination piece with a source piece, in wire coordinates,
// straight from tensor to tensor on its own stream: strided sources need no pack, strided destinations
// no unpack, and a receiver without pieces (one that discards) gets nothing copied. Plain
// send/recv/broadcast are one-piece boxes of bytes.
//   push (default): each receiver describes its destinations; the sender copies into them. A
//         broadcast's root waits for every member's description and copies a source box that several
//         members keep as ONE fan-out copy (read once, written to each): on ranks sharing a GPU that
//         saves the re-reads, and only the senders' processes issue GPU work.
//   pull (RESHARD_CUDA_IPC_MODE=pull): the sender (a broadcast's root) describes its sources; each
//         receiver copies from them into its own tensors (measured against push: docs/gpu.md).
// The copies of every op started in one progress pass on one stream go out as ONE batched kernel
// launch (cuda_batch_copy.h), followed by one event for all those ops (RESHARD_CUDA_IPC_LAUNCH_BYTES
// may launch one big op early; off by default). Per batch and stream:
//   flush: a pull describer synchronizes the stream (the packs of the non-box path are done, so the
//          sources are there; a push describer's destinations are idle by the flush contract,
//          transport.h), then sends ONE message per peer holding the descriptions of all its ops to that peer
//          (MPI, the transport's own communicator, tag = stream); a flush ends the stream's batch;
//   wait:  one progress loop over all streams: arrived messages are numbered per (stream, peer); a
//          posted copying op takes the description its peers sent for it (the k-th op between two
//          ranks on a stream matches the k-th description: both post in the global op order) and
//          queues its copies; each pass launches a stream's queued copies at once and records one
//          event behind them; completed ops are acked (one message per peer and pass carrying a
//          count, in description order: a copier acks the k-th op with a peer only after the ones
//          before it); a batch is done when its copying ops are done and the acks reached the count of
//          descriptions flushed up to its end (a pull sender may then reuse its buffers; a push
//          receiver reads its data). wait(stream, keep) completes all batches but the newest `keep`.
// Progress covers every stream, and no rank blocks in flush, so the executor's argument holds: the
// lowest unfinished op is posted by all its ranks and completes. Each description carries its byte
// count, group, owner and wire shape, and a mismatch is an error, as are pieces that do not cover
// what a receiver keeps.
// Settings (cuda_ipc_settings.h: resolved once, echoed in the run's header). Knobs that must be the
// same on every rank (checked at setup): the mode, `run --ipc-mode push|pull`, else RESHARD_CUDA_IPC_MODE;
// RESHARD_CUDA_IPC_BOXES=0 turns box ops off, so the executor packs into staging as for the other
// transports (for measuring what box ops save). Copier-side knobs (may differ between ranks; for
// measuring): RESHARD_CUDA_IPC_BATCH=0 issues one cuda_copy_box per overlap; RESHARD_CUDA_IPC_MEMCPY_MIN
// =<bytes> is the size from which contiguous copies of a batch take cudaMemcpyAsync instead of the
// kernel (default: never, CudaBatchCopy::kDefaultMemcpyMinBytes; 0: all); RESHARD_CUDA_IPC_LAUNCH_BYTES
// =<bytes> (0: one launch per pass). RESHARD_CUDA_IPC_TRACE=PREFIX
// writes PREFIX.<rank>.tsv at teardown: one line per wait() with host timestamps (MPI_Wtime) of its
// steps, for finding where a phase's time goes beyond its copies (scripts/ipc_trace.py reads them).
#if RESHARD_HAVE_CUDA && RESHARD_HAVE_MPI
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <set>
#include <unordered_map>

#include "cuda_batch_copy.h"
#include "cuda_check.h"
#include "cuda_context.h"
#include "cuda_ipc_wire.h"
#include "reshard/core/error.h"
#include "reshard/exec/control.h"
#include "cuda_region_ops.h"
#include "mpi_check.h"
#include "transport.h"
#include "cuda_ipc_fanout.h"
#include "cuda_ipc_settings.h"
#include "wait_trace.h"
#include "transports.h"

namespace reshard {
namespace {

constexpr int kAckTag = 1 << 12;  // + stream; descriptions use tag = stream (streams <= 64)
constexpr int64_t kDefaultLaunchChunkBytes = 0;  // one launch per pass (measured: docs/gpu.md)

// The copying side of one op: this rank's pieces (pull: its destinations; push: its sources) and
// the peers whose descriptions it waits for (pull: the sender; push: the receivers).
struct CopyOp {
  enum State { Waiting, Copying, Done };
  std::vector<int> peers;
  std::vector<int64_t> seqs;  // per peer: the number of the description it sends for this op
  int group = 0, elem_size = 1;
  int64_t bytes = 0;
  Dims wire_extent;
  std::vector<BoxPiece> pieces;
  cudaEvent_t event = nullptr;  // behind its copies; shared by the ops of its pass, owned by Stream
  State state = Waiting;
  int64_t batch = 0;  // the stream's batch it was posted in (Stream::flushes at the time)
};

struct Queued {
  std::string data;  // descriptions, back to back
  int64_t ops = 0;
};

struct Stream {
  std::map<int, Queued> queued;    // by peer: described since the last flush
  std::map<int, int64_t> described, acked;  // by peer: descriptions flushed and acked, all time
  std::deque<std::map<int, int64_t>> described_at;  // per flushed batch not yet done: `described` at its end
  int64_t flushes = 0, done = 0;  // batches flushed; batches waited for
  int64_t posted = 0;             // ops posted since the last flush
  std::deque<CopyOp> ops;         // copying ops not yet waited for, in posting order
  std::vector<std::pair<cudaEvent_t, int64_t>> events;  // recorded behind copies; ops still holding each
};

// A copier's acks to one peer on one stream go out in description order.
struct AckOrder {
  int64_t next = 0;          // the first description not yet acked
  std::set<int64_t> done;    // finished ones after it
};

// A nonblocking send whose buffer must live until it completes (descriptions, ack counts).
struct Outgoing {
  std::string data;
  MPI_Request req = MPI_REQUEST_NULL;
};


template <class P>
int64_t elements(const std::vector<P>& pieces) {
  int64_t n = 0;
  for (const P& p : pieces) n += p.extent.product();
  return n;
}

// RESHARD_CUDA_IPC_LAUNCH_BYTES (a byte count; default 0: one launch per pass): the first op of a
// progress pass that alone queues this many bytes (e.g. 268435456: a misc bucket) is launched at once
// with what was queued before it, the rest of the pass in one launch at its end, so the GPU starts
// while the host still matches the pass's other descriptions. Off by default: on a GPU time-sliced
// between processes every kernel boundary is a chance to lose the GPU to another process for a time
// slice; on the H200 it measured within 3 % of one launch per pass in push (mostly slower) and slowed
// pull's misc 1.1x (several copying processes), and cutting a pass of many bulk ops into a launch per
// 256 MiB made bulk 1.5x slower (docs/gpu.md, results/gpu/extra/trace_launch/).
class CudaIpcTransport final : public Transport {
 public:
  CudaIpcTransport(Control& control, const TransportOptions& options)
      : options_(options),
        settings_(CudaIpcSettings::resolve(options.ipc, CudaBatchCopy::kDefaultMemcpyMinBytes)),
        batch_enabled_(settings_.batch),
        batch_(settings_.memcpy_min),
        launch_chunk_(settings_.launch_bytes),
        out_(std::make_unique<std::deque<Outgoing>>()),
        trace_path_(settings_.trace) {
    MPI_Comm parent = *static_cast<MPI_Comm*>(control.native_comm());
    RESHARD_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
    RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    RESHARD_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    RESHARD_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    // Both ends of an op must agree on box ops and on who copies: every rank takes part in both checks
    // before any can fail alone (a rank throwing early would leave the others in the collective).
    boxes_ = settings_.boxes;
    push_ = settings_.push;
    const int mode_code = !settings_.mode_error.empty() ? -1 : push_ ? 1 : 0;
    const bool same_boxes = same_on_every_rank(boxes_ ? 1 : 0), same_mode = same_on_every_rank(mode_code);
    if (mode_code < 0) throw config_error(settings_.mode_error);
    if (!same_boxes)
      throw config_error("RESHARD_CUDA_IPC_BOXES differs between ranks: set it for all (mpirun -x) or none");
    if (!same_mode)
      throw config_error("the cuda-ipc mode (--ipc-mode, else RESHARD_CUDA_IPC_MODE) differs between ranks: give "
                         "every rank the same (mpirun -x for the variable)");
    ctx_ = std::make_shared<CudaContext>(control, "cuda-ipc");
    if (ctx_->local_size != size_)
      throw config_error("--transport cuda-ipc needs every rank on one node, but " + ctx_->host + " runs " +
                         std::to_string(ctx_->local_size) + " of the " + std::to_string(size_) +
                         " ranks: use --transport nccl across nodes");
  }

  ~CudaIpcTransport() override {
    // Everything was waited for, so only tiny ack sends may still be in flight. No blocking or throwing
    // here (this also runs while an error unwinds): unfinished sends are released to MPI and their
    // buffers deliberately leaked, since MPI may still read them.
    bool pending = false;
    for (Outgoing& o : *out_) {
      int flag = 0;
      if (o.req != MPI_REQUEST_NULL && MPI_Test(&o.req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && !flag) {
        MPI_Request_free(&o.req);
        pending = true;
      }
    }
    if (pending) (void)out_.release();
    write_trace();
    for (auto& [key, ptr] : mapped_) cudaIpcCloseMemHandle(ptr);
    for (Stream& s : streams_) release_events(s);
    MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "cuda-ipc"; }
  std::string version() const override {
    return "CUDA runtime " + cuda_version(ctx_->runtime_version) + ", driver " + cuda_version(ctx_->driver_version);
  }
  std::string mode() const override { return push_ ? "push" : "pull"; }
  std::string settings() const override { return settings_.describe(); }
  MemoryKind memory_kind() const override { return MemoryKind::Device; }
  int64_t max_message_bytes() const override { return int64_t{1} << 40; }
  std::shared_ptr<CudaContext> cuda_context() const override { return ctx_; }
  std::string device() const override { return ctx_->describe(); }
  bool supports_boxes() const override { return boxes_; }

  void setup(const std::vector<CommGroup>& groups, int streams) override {
    groups_.clear();
    for (const CommGroup& g : groups) {
      groups_.push_back(g.ranks);
      std::sort(groups_.back().begin(), groups_.back().end());
    }
    const int n = std::max(streams, 1);
    if (n > kAckTag) throw config_error("cuda-ipc supports at most " + std::to_string(kAckTag) + " streams");
    ctx_->ensure_streams(n);
    for (Stream& s : streams_) release_events(s);  // only left after an error; back to the pool
    streams_.assign(static_cast<size_t>(n), Stream{});
  }

  void send(int stream, int group, int peer, const void* buf, int64_t bytes) override {
    send_boxes(stream, group, peer, Dims{bytes}, 1, bytes_piece(const_cast<void*>(buf), bytes));
  }
  void recv(int stream, int group, int peer, void* buf, int64_t bytes) override {
    recv_boxes(stream, group, peer, Dims{bytes}, 1, bytes_piece(buf, bytes));
  }
  void broadcast(int stream, int group, int root, void* buf, int64_t bytes) override {
    broadcast_boxes(stream, group, root, Dims{bytes}, 1, bytes_piece(buf, bytes));
  }

  void send_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                  const std::vector<BoxPiece>& pieces) override {
    check_member(group, peer);
    check_sources(wire_extent, elem_size, pieces);
    ++at(stream).posted;
    if (push_) {
      add_copy_op(stream, group, {peer}, wire_extent, elem_size, pieces);
    } else {
      queue(at(stream), peer, describe(group, wire_extent, elem_size, pieces));
    }
  }

  void recv_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                  const std::vector<BoxPiece>& pieces) override {
    check_member(group, peer);
    check_pieces(wire_extent, elem_size, pieces);
    ++at(stream).posted;
    if (push_) {
      queue(at(stream), peer, describe(group, wire_extent, elem_size, pieces));
    } else {
      add_copy_op(stream, group, {peer}, wire_extent, elem_size, pieces);
    }
  }

  // A broadcast is a send from the root to every other member of the group.
  void broadcast_boxes(int stream, int group, int root, const Dims& wire_extent, int elem_size,
                       const std::vector<BoxPiece>& pieces) override {
    if (root != rank_) return recv_boxes(stream, group, root, wire_extent, elem_size, pieces);
    check_member(group, -1);
    check_sources(wire_extent, elem_size, pieces);
    ++at(stream).posted;
    std::vector<int> members;
    for (int m : groups_[static_cast<size_t>(group)])
      if (m != rank_) members.push_back(m);
    if (push_) {
      add_copy_op(stream, group, members, wire_extent, elem_size, pieces);
      return;
    }
    const std::string d = describe(group, wire_extent, elem_size, pieces);
    for (int m : members) queue(at(stream), m, d);
  }

  void flush(int stream) override {
    Stream& s = at(stream);
    // Every op posted since the last flush belongs to this batch, even one that queued nothing (a
    // broadcast in a group of one): the executor counts batches per stream as it posted them.
    if (s.posted == 0) return;
    s.posted = 0;
    if (s.queued.empty()) {  // copying ops only: nothing to describe
      end_batch(s);
      return;
    }
    if (tracing()) flush_begin_ = MPI_Wtime();
    // Pull: the described sources are complete once the stream is (packs ran on it, or before the
    // batch). Push: the destinations are idle already (Transport::flush: the executor synchronizes
    // after every unpack and quantize before it posts anything later); syncing here would also wait
    // for this rank's own pushes (a fan-out root's) and drain its batches in flight at every flush.
    if (!push_) RESHARD_CUDA_CHECK(cudaStreamSynchronize(ctx_->stream(stream)));
    for (auto& [peer, q] : s.queued) {
      post(peer, stream, std::move(q.data));
      s.described[peer] += q.ops;
    }
    s.queued.clear();
    end_batch(s);
    if (tracing()) flush_end_ = MPI_Wtime();
  }

  void wait(int stream, int keep) override {
    Stream& s = at(stream);
    if (keep == 0 && !s.queued.empty()) throw runtime_error("cuda-ipc: wait(" + std::to_string(stream) + ") before flush");
    // keep 0: every op posted (copying ops need no flush); else the batches before `through`.
    const int64_t through = keep == 0 ? INT64_MAX : s.flushes - keep;
    if (through <= s.done) return;
    const std::map<int, int64_t> need =
        keep == 0 ? s.described : s.described_at[static_cast<size_t>(through - s.done - 1)];
    double last = MPI_Wtime();
    if (tracing()) {
      trace_.push_back(WaitTrace{stream, flush_begin_, flush_end_, last});
      trace_.back().ops = static_cast<int64_t>(s.ops.size());
      flush_begin_ = flush_end_ = 0;
    }
    while (!complete(s, through, need)) {
      if (progress()) {
        last = MPI_Wtime();
      } else if (MPI_Wtime() - last > options_.timeout_s) {
        throw timeout(stream, s);
      }
    }
    while (!s.ops.empty() && s.ops.front().batch < through) {
      release_event(s, s.ops.front().event);
      s.ops.pop_front();
    }
    if (keep == 0) {
      s.described_at.clear();
      s.done = s.flushes;
    } else {
      s.described_at.erase(s.described_at.begin(), s.described_at.begin() + (through - s.done));
      s.done = through;
    }
    if (tracing()) trace_.back().end = MPI_Wtime();
  }

 private:
  static std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

  static std::vector<BoxPiece> bytes_piece(void* buf, int64_t bytes) {
    return {BoxPiece{buf, Dims{bytes}, Dims{0}, Dims{0}, Dims{bytes}}};
  }

  bool same_on_every_rank(int v) {
    int lo = v, hi = v;
    RESHARD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, comm_));
    RESHARD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, comm_));
    return lo == hi;
  }

  Stream& at(int stream) {
    if (stream < 0 || stream >= static_cast<int>(streams_.size()))
      throw runtime_error("stream " + std::to_string(stream) + " outside the " + std::to_string(streams_.size()) +
                          " set up");
    return streams_[static_cast<size_t>(stream)];
  }

  // This rank and `peer` (unless -1) belong to `group`.
  void check_member(int group, int peer) const {
    if (group < 0 || group >= static_cast<int>(groups_.size()))
      throw runtime_error("communicator group " + std::to_string(group) + " was not set up");
    const auto& g = groups_[static_cast<size_t>(group)];
    if (!std::binary_search(g.begin(), g.end(), rank_) || (peer >= 0 && !std::binary_search(g.begin(), g.end(), peer)))
      throw runtime_error("ranks " + std::to_string(rank_) + " and " + std::to_string(peer) +
                          " are not both in communicator group " + std::to_string(group));
    if (peer == rank_) throw runtime_error("cuda-ipc: rank " + std::to_string(rank_) + " cannot send to itself");
  }

  // Every piece has the wire's rank and lies inside the wire box.
  static void check_pieces(const Dims& wire, int elem_size, const std::vector<BoxPiece>& pieces) {
    if (elem_size < 1) throw runtime_error("cuda-ipc: element size " + std::to_string(elem_size));
    for (const BoxPiece& p : pieces) {
      bool ok = p.shape.n == wire.n && p.offset.n == wire.n && p.wire_offset.n == wire.n && p.extent.n == wire.n;
      for (int d = 0; ok && d < wire.n; ++d)
        ok = p.wire_offset[d] >= 0 && p.wire_offset[d] + p.extent[d] <= wire[d];
      if (!ok)
        throw runtime_error("cuda-ipc: piece of extent " + p.extent.str() + " at wire offset " + p.wire_offset.str() +
                            " is not inside the wire box " + wire.str());
    }
  }

  // A sender's pieces lie inside the wire box and cover it.
  static void check_sources(const Dims& wire, int elem_size, const std::vector<BoxPiece>& pieces) {
    check_pieces(wire, elem_size, pieces);
    if (elements(pieces) != wire.product())
      throw runtime_error("cuda-ipc: a sender's pieces hold " + std::to_string(elements(pieces)) +
                          " elements of a wire box of " + std::to_string(wire.product()));
  }

  void add_copy_op(int stream, int group, const std::vector<int>& peers, const Dims& wire_extent, int elem_size,
                   const std::vector<BoxPiece>& pieces) {
    Stream& s = at(stream);
    s.ops.push_back(CopyOp{});
    CopyOp& op = s.ops.back();
    op.peers = peers;
    op.batch = s.flushes;
    for (int p : peers) op.seqs.push_back(expected_[{stream, p}]++);
    op.group = group;
    op.elem_size = elem_size;
    op.bytes = wire_extent.product() * elem_size;
    op.wire_extent = wire_extent;
    op.pieces = pieces;
    if (peers.empty()) op.state = CopyOp::Done;  // a broadcast in a group of one
  }

  // One op's description: this rank's pieces.
  std::string describe(int group, const Dims& wire_extent, int elem_size, const std::vector<BoxPiece>& pieces) {
    OpHeader h;
    h.bytes = wire_extent.product() * elem_size;
    h.owner = rank_;
    h.group = group;
    h.elem_size = elem_size;
    h.pieces = static_cast<int32_t>(pieces.size());
    h.wire_extent = wire_extent;
    std::vector<PieceDesc> descs;
    for (const BoxPiece& p : pieces) {
      const auto [base, alloc] = ctx_->find(p.base, p.shape.product() * elem_size);
      PieceDesc d;
      d.alloc_id = alloc.id;
      d.base_offset = static_cast<int64_t>(reinterpret_cast<uintptr_t>(p.base) - base);
      d.shape = p.shape;
      d.offset = p.offset;
      d.wire_offset = p.wire_offset;
      d.extent = p.extent;
      auto it = exported_.find(alloc.id);
      if (it == exported_.end()) {
        cudaIpcMemHandle_t handle{};
        RESHARD_CUDA_CHECK(cudaIpcGetMemHandle(&handle, reinterpret_cast<void*>(base)));
        it = exported_.emplace(alloc.id, handle).first;
      }
      d.handle = it->second;
      descs.push_back(d);
    }
    std::string out;
    append_description(out, h, descs);
    return out;
  }

  static void queue(Stream& s, int peer, const std::string& description) {
    Queued& q = s.queued[peer];
    q.data += description;
    ++q.ops;
  }

  void post(int peer, int tag, std::string data) {
    if (data.size() > static_cast<size_t>(INT_MAX))
      throw runtime_error("cuda-ipc: " + std::to_string(data.size()) + " bytes of descriptions for rank " +
                          std::to_string(peer) + " in one batch; lower --batch-ops");
    out_->push_back(Outgoing{std::move(data), MPI_REQUEST_NULL});
    Outgoing& o = out_->back();  // deque: the element (and its buffer) stays put while others are added
    RESHARD_MPI_CHECK(
        MPI_Isend(o.data.data(), static_cast<int>(o.data.size()), MPI_BYTE, peer, tag, comm_, &o.req));
  }

  // The peer's tensor at `d` mapped into this process (each allocation opened once, reused every iteration).
  uint8_t* map(int owner, const PieceDesc& d) {
    const auto key = std::make_pair(owner, d.alloc_id);
    auto it = mapped_.find(key);
    if (it == mapped_.end()) {
      void* p = nullptr;
      RESHARD_CUDA_CHECK(cudaIpcOpenMemHandle(&p, d.handle, cudaIpcMemLazyEnablePeerAccess));
      it = mapped_.emplace(key, p).first;
    }
    return static_cast<uint8_t*>(it->second) + d.base_offset;
  }

  void release_events(Stream& s) {
    for (const auto& [e, holders] : s.events) ctx_->give_event(e);
    s.events.clear();
  }

  // A waited-for op lets go of its pass's event; the pass's last one returns it to the pool.
  void release_event(Stream& s, cudaEvent_t e) {
    if (e == nullptr) return;
    for (size_t i = 0; i < s.events.size(); ++i) {
      if (s.events[i].first != e) continue;
      if (--s.events[i].second == 0) {
        ctx_->give_event(e);
        s.events.erase(s.events.begin() + static_cast<std::ptrdiff_t>(i));
      }
      return;
    }
  }


  // The description `d` that `peer` sent for op `op` matches it.
  static void check_header(const CopyOp& op, const Description& d, int peer) {
    const OpHeader& h = d.head;
    if (h.bytes != op.bytes || h.group != op.group || h.owner != peer || h.elem_size != op.elem_size ||
        h.wire_extent != op.wire_extent)
      throw runtime_error("cuda-ipc: rank " + std::to_string(peer) + " described " + std::to_string(h.bytes) +
                          " bytes (wire " + h.wire_extent.str() + " x " + std::to_string(h.elem_size) + " B) of group " +
                          std::to_string(h.group) + ", expected " + std::to_string(op.bytes) + " bytes (wire " +
                          op.wire_extent.str() + " x " + std::to_string(op.elem_size) + " B) of group " +
                          std::to_string(op.group) + " (do all ranks run the same plan and flags?)");
  }

  static void check_covered(int64_t covered, int64_t wanted, int receiver, int sender) {
    if (covered != wanted)
      throw runtime_error("cuda-ipc: rank " + std::to_string(sender) + "'s pieces cover " + std::to_string(covered) +
                          " of the " + std::to_string(wanted) + " elements rank " + std::to_string(receiver) +
                          " receives");
  }

  void copy(const void* src, const Dims& src_shape, const Dims& src_at, const std::vector<void*>& dsts,
            const Dims& dst_shape, const Dims& dst_at, const Dims& extent, int elem_size, int stream) {
    if (batch_enabled_) {
      batch_.add_fanout(src, src_shape, src_at, dsts, dst_shape, dst_at, extent, elem_size);
      return;
    }
    for (void* dst : dsts)
      cuda_copy_box(src, src_shape, src_at, dst, dst_shape, dst_at, extent, elem_size, ctx_->stream(stream));
  }

  // Queues the copies of `op` given its peers' descriptions (in op.peers order) in batch_ (issued at
  // once with RESHARD_CUDA_IPC_BATCH=0); op is then Copying, without an event until launch_pass()
  // launches the pass's copies and records one. Done at once when nothing is to be copied.
  void start_copies(CopyOp& op, const std::vector<Description>& descs, int stream) {
    for (size_t i = 0; i < descs.size(); ++i) check_header(op, descs[i], op.peers[i]);
    const int es = op.elem_size;
    int64_t queued = 0;
    if (!push_) {  // pull: from the sender's pieces into this rank's
      const int sender = op.peers.front();
      const int64_t covered = for_each_overlap(
          op.pieces, descs.front().pieces,
          [&](const BoxPiece& mine, const PieceDesc& theirs, const Box& o, const Dims& to, const Dims& from) {
            copy(map(sender, theirs), theirs.shape, from, {mine.base}, mine.shape, to, o.extent, es, stream);
          });
      check_covered(covered, elements(op.pieces), rank_, sender);
      queued = covered;
    } else {  // push: from this rank's pieces into each receiver's; one source box kept by several: one fan-out
      std::vector<PushCopy> copies;
      for (size_t i = 0; i < descs.size(); ++i) {
        const int receiver = op.peers[i];
        const int64_t covered = for_each_overlap(
            descs[i].pieces, op.pieces,
            [&](const PieceDesc& theirs, const BoxPiece& mine, const Box& o, const Dims& to, const Dims& from) {
              copies.push_back(PushCopy{mine.base, mine.shape, from, map(receiver, theirs), theirs.shape, to, o.extent});
            });
        check_covered(covered, elements(descs[i].pieces), receiver, rank_);
        queued += covered;
      }
      if (descs.size() == 1) {  // one receiver: nothing to merge (and no keys to build per copy)
        for (const PushCopy& c : copies) copy(c.src, c.src_shape, c.src_at, {c.dst}, c.dst_shape, c.dst_at, c.extent, es, stream);
        copies.clear();
      }
      for_each_fanout(copies, [&](const PushCopy& c, const std::vector<void*>& dsts) {
        copy(c.src, c.src_shape, c.src_at, dsts, c.dst_shape, c.dst_at, c.extent, es, stream);
      });
    }
    op.state = queued == 0 ? CopyOp::Done : CopyOp::Copying;
  }

  // Launches the copies queued in this pass on `stream` (one kernel, plus cudaMemcpyAsync for large
  // contiguous ones) and records one event behind them for every op started in the pass.
  void launch_pass(Stream& s, int stream, const std::vector<CopyOp*>& started) {
    const cudaStream_t cs = ctx_->stream(stream);
    batch_.launch(cs);
    if (tracing() && !trace_.empty()) {
      WaitTrace& t = trace_.back();
      t.last_launch = MPI_Wtime();
      if (t.first_launch == 0) t.first_launch = t.last_launch;
      ++t.launches;
    }
    const cudaEvent_t e = ctx_->take_event();
    s.events.emplace_back(e, static_cast<int64_t>(started.size()));  // owned by the stream from here
    RESHARD_CUDA_CHECK(cudaEventRecord(e, cs));
    for (CopyOp* op : started) op->event = e;
  }

  // The batches before `through` are done: their copying ops, and acks up to `need` per peer.
  static bool complete(const Stream& s, int64_t through, const std::map<int, int64_t>& need) {
    for (const auto& [peer, n] : need) {
      const auto a = s.acked.find(peer);
      if ((a == s.acked.end() ? 0 : a->second) < n) return false;
    }
    for (const CopyOp& op : s.ops) {
      if (op.batch >= through) break;
      if (op.state != CopyOp::Done) return false;
    }
    return true;
  }

  static void end_batch(Stream& s) {
    s.described_at.push_back(s.described);
    ++s.flushes;
  }

  // `op` of `stream` finished: the acks now due to each of its peers (in description order) go in `acks`.
  void finished(const CopyOp& op, int stream, std::map<int, int64_t>& acks) {
    for (size_t i = 0; i < op.peers.size(); ++i) {
      AckOrder& order = ack_order_[{stream, op.peers[i]}];
      order.done.insert(op.seqs[i]);
      while (!order.done.empty() && *order.done.begin() == order.next) {
        order.done.erase(order.done.begin());
        ++order.next;
        ++acks[op.peers[i]];
      }
    }
  }

  // Receives every message waiting with `tag`; f(source, bytes).
  template <class F>
  bool drain(int tag, F&& f) {
    bool any = false;
    while (true) {
      int flag = 0;
      MPI_Message msg;
      MPI_Status st;
      RESHARD_MPI_CHECK(MPI_Improbe(MPI_ANY_SOURCE, tag, comm_, &flag, &msg, &st));
      if (!flag) return any;
      int n = 0;
      RESHARD_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &n));
      std::string buf(static_cast<size_t>(n), '\0');
      RESHARD_MPI_CHECK(MPI_Mrecv(buf.data(), n, MPI_BYTE, &msg, MPI_STATUS_IGNORE));
      f(st.MPI_SOURCE, buf);
      any = true;
    }
  }

  // Takes the descriptions `op` waits for when all have arrived.
  bool take_descriptions(const CopyOp& op, int stream, std::vector<Description>& out) {
    for (size_t i = 0; i < op.peers.size(); ++i) {
      const auto& box = inbox_[{stream, op.peers[i]}];
      if (box.find(op.seqs[i]) == box.end()) return false;
    }
    out.clear();
    for (size_t i = 0; i < op.peers.size(); ++i) {
      auto& box = inbox_[{stream, op.peers[i]}];
      auto it = box.find(op.seqs[i]);
      out.push_back(std::move(it->second));
      box.erase(it);
    }
    return true;
  }

  // One pass over every stream; true when anything moved.
  bool progress() {
    bool moved = false;
    std::vector<Description> descs;
    for (size_t si = 0; si < streams_.size(); ++si) {
      Stream& s = streams_[si];
      const int stream = static_cast<int>(si);
      moved |= drain(stream, [&](int src, const std::string& m) {
        auto& box = inbox_[{stream, src}];
        int64_t& next = arrived_[{stream, src}];
        for (Description& d : parse_descriptions(m, src)) box.emplace(next++, std::move(d));
      });
      moved |= drain(kAckTag + stream, [&](int src, const std::string& m) {
        int64_t n = 0;
        if (m.size() != sizeof n) throw runtime_error("cuda-ipc: malformed ack from rank " + std::to_string(src));
        std::memcpy(&n, m.data(), sizeof n);
        int64_t& acked = s.acked[src];
        const int64_t left = s.described[src] - acked;
        if (n > left)
          throw runtime_error("cuda-ipc: rank " + std::to_string(src) + " acked " + std::to_string(n) + " ops of the " +
                              std::to_string(left) + " this rank described to it on stream " + std::to_string(stream));
        acked += n;
      });
      std::map<int, int64_t> acks;   // by peer: ops finished in this pass
      std::vector<CopyOp*> started;  // copies queued in this pass; launched after the loop
      batch_.clear();                // empty unless an earlier pass threw while queueing
      bool launched_early = false;    // at most one launch before the pass's last (RESHARD_CUDA_IPC_LAUNCH_BYTES)
      cudaEvent_t queried = nullptr;  // the last event queried in this pass, and what it said
      cudaError_t queried_state = cudaSuccess;
      for (CopyOp& op : s.ops) {
        if (op.state == CopyOp::Waiting) {
          if (!take_descriptions(op, stream, descs)) continue;
          if (tracing() && !trace_.empty()) {
            trace_.back().last_take = MPI_Wtime();
            if (trace_.back().first_take == 0) trace_.back().first_take = trace_.back().last_take;
          }
          const int64_t queued_before = batch_.pending_bytes();
          start_copies(op, descs, stream);
          moved = true;
          if (op.state == CopyOp::Done) {
            finished(op, stream, acks);
          } else {
            started.push_back(&op);
            if (!launched_early && launch_chunk_ > 0 && batch_.pending_bytes() - queued_before >= launch_chunk_) {
              launch_pass(s, stream, started);
              started.clear();
              launched_early = true;
            }
          }
          continue;
        }
        if (op.state == CopyOp::Copying) {
          // The ops of one launch share its event and mostly sit next to each other: one query per
          // run of them (a pass of 4096 small ops would otherwise spend milliseconds in the driver).
          if (op.event != queried || queried == nullptr) {
            queried = op.event;
            queried_state = cudaEventQuery(op.event);
          }
          if (queried_state == cudaErrorNotReady) continue;
          RESHARD_CUDA_CHECK(queried_state);
          op.state = CopyOp::Done;
          finished(op, stream, acks);
          moved = true;
          if (tracing() && !trace_.empty()) trace_.back().copies_done = MPI_Wtime();
        }
      }
      if (!started.empty()) launch_pass(s, stream, started);
      for (const auto& [peer, n] : acks) post(peer, kAckTag + stream, std::string(reinterpret_cast<const char*>(&n), sizeof n));
    }
    // Finished sends leave the front of the list; the rest complete later.
    while (!out_->empty()) {
      int flag = 0;
      RESHARD_MPI_CHECK(MPI_Test(&out_->front().req, &flag, MPI_STATUS_IGNORE));
      if (!flag) break;
      out_->pop_front();
    }
    return moved;
  }

  Error timeout(int stream, const Stream& s) const {
    std::string waiting;
    for (const auto& [peer, n] : s.described) {
      const auto a = s.acked.find(peer);
      const int64_t left = n - (a == s.acked.end() ? 0 : a->second);
      if (left != 0) waiting += " " + std::to_string(left) + " acks from rank " + std::to_string(peer) + ",";
    }
    for (const CopyOp& op : s.ops) {
      if (op.state == CopyOp::Done) continue;
      for (size_t i = 0; i < op.peers.size(); ++i) {
        if (op.state == CopyOp::Copying) {
          waiting += std::string(push_ ? " copy to rank " : " copy from rank ") + std::to_string(op.peers[i]) + ",";
          continue;
        }
        const auto box = inbox_.find({stream, op.peers[i]});
        if (box == inbox_.end() || box->second.find(op.seqs[i]) == box->second.end())
          waiting += " description from rank " + std::to_string(op.peers[i]) + ",";
      }
    }
    if (!waiting.empty()) waiting.pop_back();
    return runtime_error("cuda-ipc: rank " + std::to_string(rank_) + " made no progress on stream " +
                         std::to_string(stream) + " for " + std::to_string(options_.timeout_s) + " s (--timeout); waiting for" +
                         waiting);
  }

  bool tracing() const { return !trace_path_.empty(); }

  void write_trace() const noexcept {
    if (tracing())
      write_wait_traces({"--ipc-trace", trace_path_, options_.force_traces, options_.trace_inputs}, rank_, trace_);
  }

  TransportOptions options_;
  CudaIpcSettings settings_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool boxes_ = true;
  bool push_ = false;
  bool batch_enabled_ = true;
  std::shared_ptr<CudaContext> ctx_;
  CudaBatchCopy batch_;  // after ctx_, so destroyed before it (waits for its launches)
  int64_t launch_chunk_ = kDefaultLaunchChunkBytes;  // RESHARD_CUDA_IPC_LAUNCH_BYTES
  std::vector<std::vector<int>> groups_;
  std::vector<Stream> streams_;
  // By (stream, peer), for the transport's life: descriptions numbered in arrival order, and the
  // numbers the copying ops posted so far expect (the k-th op between two ranks on a stream takes the
  // k-th description).
  std::map<std::pair<int, int>, std::map<int64_t, Description>> inbox_;
  std::map<std::pair<int, int>, int64_t> arrived_, expected_;
  std::map<std::pair<int, int>, AckOrder> ack_order_;  // by (stream, peer): this rank's acks as copier
  std::unordered_map<int64_t, cudaIpcMemHandle_t> exported_;
  std::map<std::pair<int, int64_t>, void*> mapped_;
  std::unique_ptr<std::deque<Outgoing>> out_;
  std::string trace_path_;  // RESHARD_CUDA_IPC_TRACE; empty: no trace
  std::vector<WaitTrace> trace_;
  double flush_begin_ = 0, flush_end_ = 0;  // of the last flush, until a wait takes them
};

}  // namespace

std::unique_ptr<Transport> make_cuda_ipc_transport(Control& control, const TransportOptions& options) {
  return std::make_unique<CudaIpcTransport>(control, options);
}

}  // namespace reshard
#endif
