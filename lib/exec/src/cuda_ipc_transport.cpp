// The CUDA IPC data plane: ranks of one node, device buffers, pull model, box ops.
//
// A sender describes its part of an op as pieces: strided boxes of its device tensors, each named as
// (allocation id, offset of the tensor's base) of its CudaMemory plus the allocation's
// cudaIpcMemHandle (exported once per allocation, cached). A receiver maps each (rank, allocation)
// once (cached for the transport's life, so every iteration reuses it) and copies every overlap of
// one of its own pieces with one of the sender's, in wire coordinates, straight from the sender's
// tensor into its own, on its own stream: strided sources need no pack, strided destinations no unpack,
// and a receiver without pieces (one that discards) copies nothing. Plain send/recv/broadcast are
// one-piece boxes of bytes. The copies of every receive started in one progress pass on one stream go
// out as ONE batched kernel launch (cuda_batch_copy.h; large contiguous ones as cudaMemcpyAsync),
// followed by one event that all those receives wait on: one launch per pass instead of one per
// overlap (hundreds per misc batch), which is what the copies cost on a GPU shared by several ranks.
// Per batch and stream:
//   flush: a sender synchronizes the stream (packs of the non-box path are done, so the bytes are
//          there), then sends ONE message per peer holding the descriptions of all its ops to that
//          peer (MPI, the transport's own communicator, tag = stream);
//   wait:  one progress loop over all streams: arrived messages are split into per-(stream, peer)
//          queues of descriptions; a posted receive takes the next description of its peer and
//          queues its copies; each pass launches a stream's queued copies at once and records one
//          event behind them; completed copies are acked (one message per peer and pass carrying a
//          count); a stream is done when its receives are copied and every send it
//          flushed was acked (the sender may then reuse its buffers).
// A broadcast is a send from the root to every other member of the group; each member pulls.
// Progress covers every stream, and a sender never blocks in flush, so the executor's argument holds:
// the lowest unfinished op is posted by all its ranks and completes. Matching: messages between two
// ranks on one stream arrive in posting order (MPI non-overtaking) and their descriptions are queued
// in that order, which is the global op order both ranks share, so batch boundaries may differ;
// each description carries its byte count, group and wire shape, and a mismatch is an error.
// RESHARD_CUDA_IPC_BOXES=0 (same on every rank) turns box ops off, so the executor packs into staging
// as for the other transports: for measuring what box ops save. Receiver-side knobs (may differ
// between ranks; for measuring): RESHARD_CUDA_IPC_BATCH=0 issues one cuda_copy_box per overlap again;
// RESHARD_CUDA_IPC_MEMCPY_MIN=<bytes> is the size from which contiguous copies of a batch take
// cudaMemcpyAsync instead of the kernel (default CudaBatchCopy::kDefaultMemcpyMinBytes; 0: all).
#if RESHARD_HAVE_CUDA && RESHARD_HAVE_MPI
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <unordered_map>

#include "cuda_batch_copy.h"
#include "cuda_check.h"
#include "cuda_context.h"
#include "reshard/core/error.h"
#include "reshard/exec/control.h"
#include "reshard/exec/cuda_region_ops.h"
#include "reshard/exec/mpi_check.h"
#include "reshard/exec/transport.h"
#include "transports.h"

namespace reshard {
namespace {

constexpr int kAckTag = 1 << 12;  // + stream; descriptions use tag = stream (streams <= 64)

// The wire form of one op's description (a message holds several back to back): a header, then
// `pieces` pieces. Both plain structs, copied bytewise between ranks of one build.
struct OpHeader {
  int64_t bytes = 0;
  int32_t owner = 0, group = 0;
  int32_t elem_size = 0, pieces = 0;
  Dims wire_extent;
};
struct PieceDesc {
  int64_t alloc_id = 0, base_offset = 0;  // the tensor's base inside the owner's allocation
  Dims shape, offset, wire_offset, extent;
  cudaIpcMemHandle_t handle{};
};
struct Description {
  OpHeader head;
  std::vector<PieceDesc> pieces;
};

struct RecvOp {
  enum State { Waiting, Copying, Done };
  int peer = 0, group = 0, elem_size = 1;
  int64_t bytes = 0;
  Dims wire_extent;
  std::vector<BoxPiece> pieces;
  cudaEvent_t event = nullptr;  // behind its copies; shared by the receives of its pass, owned by Stream
  State state = Waiting;
};

struct Queued {
  std::string data;  // descriptions, back to back
  int64_t ops = 0;
};

struct Stream {
  std::map<int, Queued> queued;    // by peer: posted since the last flush
  std::map<int, int64_t> unacked;  // by peer: flushed sends not yet acked
  std::deque<RecvOp> recvs;
  std::vector<cudaEvent_t> events;  // recorded behind this wait's copies (one per pass that started any)
};

// A nonblocking send whose buffer must live until it completes (descriptions, ack counts).
struct Outgoing {
  std::string data;
  MPI_Request req = MPI_REQUEST_NULL;
};

int64_t elements(const std::vector<BoxPiece>& pieces) {
  int64_t n = 0;
  for (const BoxPiece& p : pieces) n += p.extent.product();
  return n;
}

bool boxes_enabled() {
  const char* v = std::getenv("RESHARD_CUDA_IPC_BOXES");
  return v == nullptr || std::string(v) != "0";
}

bool batch_enabled() {
  const char* v = std::getenv("RESHARD_CUDA_IPC_BATCH");
  return v == nullptr || std::string(v) != "0";
}

// RESHARD_CUDA_IPC_MEMCPY_MIN: a byte count (digits only); the default when unset.
int64_t memcpy_min_bytes() {
  const char* v = std::getenv("RESHARD_CUDA_IPC_MEMCPY_MIN");
  if (v == nullptr) return CudaBatchCopy::kDefaultMemcpyMinBytes;
  const std::string s(v);
  errno = 0;
  const long long n = std::strtoll(s.c_str(), nullptr, 10);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || errno != 0)
    throw config_error("RESHARD_CUDA_IPC_MEMCPY_MIN='" + s + "': expected a byte count (digits only)");
  return n;
}

class CudaIpcTransport final : public Transport {
 public:
  CudaIpcTransport(Control& control, const TransportOptions& options)
      : options_(options),
        batch_enabled_(batch_enabled()),
        batch_(memcpy_min_bytes()),
        out_(std::make_unique<std::deque<Outgoing>>()) {
    MPI_Comm parent = *static_cast<MPI_Comm*>(control.native_comm());
    RESHARD_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
    RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    RESHARD_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    RESHARD_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    // Both ends of an op must agree on box ops: check the knob before anything can fail alone.
    boxes_ = boxes_enabled();
    int lo = boxes_, hi = boxes_;
    RESHARD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, comm_));
    RESHARD_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, comm_));
    if (lo != hi)
      throw config_error("RESHARD_CUDA_IPC_BOXES differs between ranks: set it for all (mpirun -x) or none");
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
    for (auto& [key, ptr] : mapped_) cudaIpcCloseMemHandle(ptr);
    for (Stream& s : streams_) release_events(s);
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "cuda-ipc"; }
  std::string version() const override {
    return "CUDA runtime " + cuda_version(ctx_->runtime_version) + ", driver " + cuda_version(ctx_->driver_version);
  }
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
    queue(at(stream), peer, describe(group, wire_extent, elem_size, pieces));
  }

  void recv_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                  const std::vector<BoxPiece>& pieces) override {
    check_member(group, peer);
    check_pieces(wire_extent, elem_size, pieces);
    Stream& s = at(stream);
    s.recvs.push_back(RecvOp{});
    RecvOp& r = s.recvs.back();
    r.peer = peer;
    r.group = group;
    r.elem_size = elem_size;
    r.bytes = wire_extent.product() * elem_size;
    r.wire_extent = wire_extent;
    r.pieces = pieces;
  }

  void broadcast_boxes(int stream, int group, int root, const Dims& wire_extent, int elem_size,
                       const std::vector<BoxPiece>& pieces) override {
    if (root != rank_) return recv_boxes(stream, group, root, wire_extent, elem_size, pieces);
    check_member(group, -1);
    const std::string d = describe(group, wire_extent, elem_size, pieces);
    for (int m : groups_[static_cast<size_t>(group)])
      if (m != rank_) queue(at(stream), m, d);
  }

  void flush(int stream) override {
    Stream& s = at(stream);
    if (s.queued.empty()) return;
    // The sends' bytes were produced on this stream (packs) or before the batch: once it is idle,
    // receivers may read them.
    RESHARD_CUDA_CHECK(cudaStreamSynchronize(ctx_->stream(stream)));
    for (auto& [peer, q] : s.queued) {
      post(peer, stream, std::move(q.data));
      s.unacked[peer] += q.ops;
    }
    s.queued.clear();
  }

  void wait(int stream) override {
    Stream& s = at(stream);
    if (!s.queued.empty()) throw runtime_error("cuda-ipc: wait(" + std::to_string(stream) + ") before flush");
    double last = MPI_Wtime();
    while (!complete(s)) {
      if (progress()) {
        last = MPI_Wtime();
      } else if (MPI_Wtime() - last > options_.timeout_s) {
        throw timeout(stream, s);
      }
    }
    s.unacked.clear();
    s.recvs.clear();
    release_events(s);
  }

 private:
  static std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

  static std::vector<BoxPiece> bytes_piece(void* buf, int64_t bytes) {
    return {BoxPiece{buf, Dims{bytes}, Dims{0}, Dims{0}, Dims{bytes}}};
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

  // One op's description: the sender's pieces, which must cover the wire box.
  std::string describe(int group, const Dims& wire_extent, int elem_size, const std::vector<BoxPiece>& pieces) {
    check_pieces(wire_extent, elem_size, pieces);
    if (elements(pieces) != wire_extent.product())
      throw runtime_error("cuda-ipc: a sender's pieces hold " + std::to_string(elements(pieces)) +
                          " elements of a wire box of " + std::to_string(wire_extent.product()));
    OpHeader h;
    h.bytes = wire_extent.product() * elem_size;
    h.owner = rank_;
    h.group = group;
    h.elem_size = elem_size;
    h.pieces = static_cast<int32_t>(pieces.size());
    h.wire_extent = wire_extent;
    std::string out(reinterpret_cast<const char*>(&h), sizeof h);
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
      out.append(reinterpret_cast<const char*>(&d), sizeof d);
    }
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

  // Splits a message of descriptions from `peer` into `into`.
  void parse(const std::string& m, int peer, std::deque<Description>& into) const {
    size_t at = 0;
    while (at < m.size()) {
      Description d;
      if (m.size() - at < sizeof(OpHeader)) break;
      std::memcpy(&d.head, m.data() + at, sizeof(OpHeader));
      at += sizeof(OpHeader);
      if (d.head.pieces < 0 || (m.size() - at) / sizeof(PieceDesc) < static_cast<size_t>(d.head.pieces)) {
        at = m.size() + 1;
        break;
      }
      d.pieces.resize(static_cast<size_t>(d.head.pieces));
      if (!d.pieces.empty()) std::memcpy(static_cast<void*>(d.pieces.data()), m.data() + at, d.pieces.size() * sizeof(PieceDesc));
      at += d.pieces.size() * sizeof(PieceDesc);
      into.push_back(std::move(d));
    }
    if (at != m.size())
      throw runtime_error("cuda-ipc: malformed message of " + std::to_string(m.size()) + " bytes from rank " +
                          std::to_string(peer) + " (do all ranks run the same reshard build?)");
  }

  // The peer's allocation mapped into this process (opened once, reused every iteration).
  const uint8_t* map(int owner, const PieceDesc& d) {
    const auto key = std::make_pair(owner, d.alloc_id);
    auto it = mapped_.find(key);
    if (it == mapped_.end()) {
      void* p = nullptr;
      RESHARD_CUDA_CHECK(cudaIpcOpenMemHandle(&p, d.handle, cudaIpcMemLazyEnablePeerAccess));
      it = mapped_.emplace(key, p).first;
    }
    return static_cast<const uint8_t*>(it->second);
  }

  void release_events(Stream& s) {
    events_.insert(events_.end(), s.events.begin(), s.events.end());
    s.events.clear();
  }

  cudaEvent_t take_event() {
    if (!events_.empty()) {
      cudaEvent_t e = events_.back();
      events_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    RESHARD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }

  // Issues the copies of receive `r` described by `d`: every overlap of one of r's pieces with one of
  // the sender's, from the sender's mapped tensor into r's. They are queued in batch_ (issued on the
  // stream at once with RESHARD_CUDA_IPC_BATCH=0); r is then Copying, without an event until
  // launch_pass() launches the pass's copies and records one. Done at once when r keeps nothing.
  void start_copies(RecvOp& r, const Description& d, int stream) {
    const OpHeader& h = d.head;
    if (h.bytes != r.bytes || h.group != r.group || h.owner != r.peer || h.elem_size != r.elem_size ||
        h.wire_extent != r.wire_extent)
      throw runtime_error("cuda-ipc: rank " + std::to_string(r.peer) + " described " + std::to_string(h.bytes) +
                          " bytes (wire " + h.wire_extent.str() + " x " + std::to_string(h.elem_size) + " B) of group " +
                          std::to_string(h.group) + ", expected " + std::to_string(r.bytes) + " bytes (wire " +
                          r.wire_extent.str() + " x " + std::to_string(r.elem_size) + " B) of group " +
                          std::to_string(r.group) + " (do all ranks run the same plan and flags?)");
    if (r.pieces.empty()) {
      r.state = RecvOp::Done;
      return;
    }
    // 1-D wires (misc buckets: many params each side) overlap in a sweep over the sender's pieces
    // sorted by start; other wires have few pieces and take every pair.
    std::vector<const PieceDesc*> src;
    for (const PieceDesc& p : d.pieces) src.push_back(&p);
    const bool flat = r.wire_extent.n == 1;
    if (flat)
      std::sort(src.begin(), src.end(),
                [](const PieceDesc* a, const PieceDesc* b) { return a->wire_offset[0] < b->wire_offset[0]; });
    const cudaStream_t cs = ctx_->stream(stream);
    int64_t covered = 0;
    for (const BoxPiece& mine : r.pieces) {
      const Box want{mine.wire_offset, mine.extent};
      size_t first = 0;
      if (flat) {  // the last piece starting at or before ours may overlap it; earlier ones end before it
        auto it = std::upper_bound(src.begin(), src.end(), want.offset[0],
                                   [](int64_t v, const PieceDesc* p) { return v < p->wire_offset[0]; });
        first = it == src.begin() ? 0 : static_cast<size_t>(it - src.begin()) - 1;
      }
      for (size_t i = first; i < src.size(); ++i) {
        const PieceDesc& theirs = *src[i];
        if (flat && theirs.wire_offset[0] >= want.offset[0] + want.extent[0]) break;
        const auto o = intersect(want, Box{theirs.wire_offset, theirs.extent});
        if (!o || o->empty()) continue;
        Dims from = theirs.offset, to = mine.offset;
        for (int k = 0; k < from.n; ++k) {
          from[k] += o->offset[k] - theirs.wire_offset[k];
          to[k] += o->offset[k] - mine.wire_offset[k];
        }
        const uint8_t* tensor = map(h.owner, theirs) + theirs.base_offset;
        if (batch_enabled_) {
          batch_.add(tensor, theirs.shape, from, mine.base, mine.shape, to, o->extent, r.elem_size);
        } else {
          cuda_copy_box(tensor, theirs.shape, from, mine.base, mine.shape, to, o->extent, r.elem_size, cs);
        }
        covered += o->elements();
      }
    }
    if (covered != elements(r.pieces))
      throw runtime_error("cuda-ipc: rank " + std::to_string(r.peer) + " described pieces covering " +
                          std::to_string(covered) + " of the " + std::to_string(elements(r.pieces)) +
                          " elements this rank receives");
    r.state = RecvOp::Copying;
  }

  // Launches the copies queued in this pass on `stream` (one kernel, plus cudaMemcpyAsync for large
  // contiguous ones) and records one event behind them for every receive started in the pass.
  void launch_pass(Stream& s, int stream, const std::vector<RecvOp*>& started) {
    const cudaStream_t cs = ctx_->stream(stream);
    batch_.launch(cs);
    const cudaEvent_t e = take_event();
    s.events.push_back(e);  // owned by the stream from here, even if recording fails
    RESHARD_CUDA_CHECK(cudaEventRecord(e, cs));
    for (RecvOp* r : started) r->event = e;
  }

  static bool complete(const Stream& s) {
    for (const auto& [peer, n] : s.unacked)
      if (n != 0) return false;
    for (const RecvOp& r : s.recvs)
      if (r.state != RecvOp::Done) return false;
    return true;
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

  // One pass over every stream; true when anything moved.
  bool progress() {
    bool moved = false;
    for (size_t si = 0; si < streams_.size(); ++si) {
      Stream& s = streams_[si];
      const int stream = static_cast<int>(si);
      moved |= drain(stream, [&](int src, const std::string& m) { parse(m, src, inbox_[{stream, src}]); });
      moved |= drain(kAckTag + stream, [&](int src, const std::string& m) {
        int64_t n = 0;
        if (m.size() != sizeof n) throw runtime_error("cuda-ipc: malformed ack from rank " + std::to_string(src));
        std::memcpy(&n, m.data(), sizeof n);
        int64_t& left = s.unacked[src];
        if (n > left)
          throw runtime_error("cuda-ipc: rank " + std::to_string(src) + " acked " + std::to_string(n) + " ops of the " +
                              std::to_string(left) + " this rank sent it on stream " + std::to_string(stream));
        left -= n;
      });
      std::map<int, int64_t> acks;  // by peer: receives finished in this pass
      std::vector<RecvOp*> started;  // copies queued in this pass; launched after the loop
      batch_.clear();                // empty unless an earlier pass threw while queueing
      for (RecvOp& r : s.recvs) {
        if (r.state == RecvOp::Waiting) {
          auto& q = inbox_[{stream, r.peer}];
          if (q.empty()) continue;
          start_copies(r, q.front(), stream);
          q.pop_front();
          moved = true;
          if (r.state == RecvOp::Done) {
            ++acks[r.peer];
          } else {
            started.push_back(&r);
          }
          continue;
        }
        if (r.state == RecvOp::Copying) {
          const cudaError_t e = cudaEventQuery(r.event);
          if (e == cudaErrorNotReady) continue;
          RESHARD_CUDA_CHECK(e);
          r.state = RecvOp::Done;
          ++acks[r.peer];
          moved = true;
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
    for (const auto& [peer, n] : s.unacked)
      if (n != 0) waiting += " " + std::to_string(n) + " acks from rank " + std::to_string(peer) + ",";
    for (const RecvOp& r : s.recvs)
      if (r.state != RecvOp::Done)
        waiting += (r.state == RecvOp::Waiting ? " description from rank " : " copy from rank ") +
                   std::to_string(r.peer) + ",";
    if (!waiting.empty()) waiting.pop_back();
    return runtime_error("cuda-ipc: rank " + std::to_string(rank_) + " made no progress on stream " +
                         std::to_string(stream) + " for " + std::to_string(options_.timeout_s) + " s (--timeout); waiting for" +
                         waiting);
  }

  TransportOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool boxes_ = true;
  bool batch_enabled_ = true;
  std::shared_ptr<CudaContext> ctx_;
  CudaBatchCopy batch_;  // after ctx_, so destroyed before it (waits for its launches)
  std::vector<std::vector<int>> groups_;
  std::vector<Stream> streams_;
  std::map<std::pair<int, int>, std::deque<Description>> inbox_;  // by (stream, peer), in arrival order
  std::unordered_map<int64_t, cudaIpcMemHandle_t> exported_;
  std::map<std::pair<int, int64_t>, void*> mapped_;
  std::vector<cudaEvent_t> events_;  // free pool
  std::unique_ptr<std::deque<Outgoing>> out_;
};

}  // namespace

std::unique_ptr<Transport> make_cuda_ipc_transport(Control& control, const TransportOptions& options) {
  return std::make_unique<CudaIpcTransport>(control, options);
}

}  // namespace reshard
#endif
