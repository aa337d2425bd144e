// The CUDA IPC data plane: ranks of one node, device buffers, pull model.
//
// A sender names its buffer as (allocation id, offset) of its CudaMemory plus the allocation's
// cudaIpcMemHandle (exported once per allocation, cached); a receiver maps each (rank, allocation)
// once (cached for the transport's life, so every iteration reuses it) and copies the bytes itself
// with cudaMemcpyAsync on its own stream. Per batch and stream:
//   flush: a sender synchronizes the stream (its packs are done, so the bytes are there), then
//          sends one descriptor per send (MPI, transport's own communicator, tag = stream) and posts
//          the receive of the matching ack;
//   wait:  one progress loop over all streams: descriptors that arrived become copies, copies whose
//          event completed are acked (the sender may then reuse its buffer), sends whose ack arrived
//          are done. It returns when every op of the waited stream is done.
// A broadcast is a send from the root to every other member of the group; each member pulls.
// Progress covers every stream, and a sender never blocks in flush, so the executor's argument holds:
// the lowest unfinished op is posted by all its ranks and completes. Matching: descriptors between
// two ranks on one stream arrive in posting order (MPI non-overtaking), which is the global op order
// both ranks share; each descriptor carries its byte count and group, and a mismatch is an error.
#if RESHARD_HAVE_CUDA && RESHARD_HAVE_MPI
#include <algorithm>
#include <climits>
#include <deque>
#include <map>
#include <unordered_map>

#include "cuda_check.h"
#include "cuda_context.h"
#include "reshard/core/error.h"
#include "reshard/exec/control.h"
#include "reshard/exec/mpi_check.h"
#include "reshard/exec/transport.h"
#include "transports.h"

namespace reshard {
namespace {

constexpr int kAckTag = 1 << 12;  // + stream; descriptors use tag = stream (streams <= 64)
const int kAck = 1;

struct Descriptor {
  int64_t bytes = 0;
  int64_t alloc_id = 0;
  int64_t offset = 0;
  int32_t owner = 0;
  int32_t group = 0;
  cudaIpcMemHandle_t handle{};
};

struct SendOp {
  int peer = 0;
  Descriptor desc;
  MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};  // descriptor out, ack in
  int ack = 0;
  bool done = false;
};

struct RecvOp {
  enum State { Described, Copying, Done };
  int peer = 0, group = 0;
  void* buf = nullptr;
  int64_t bytes = 0;
  Descriptor desc;
  MPI_Request req = MPI_REQUEST_NULL;
  cudaEvent_t event = nullptr;
  State state = Described;
};

struct Stream {
  std::deque<SendOp> queued, sends;  // queued: posted, not yet flushed
  std::deque<RecvOp> recvs;
};

class CudaIpcTransport final : public Transport {
 public:
  CudaIpcTransport(Control& control, const TransportOptions& options) : options_(options) {
    MPI_Comm parent = *static_cast<MPI_Comm*>(control.native_comm());
    RESHARD_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
    RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    RESHARD_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    RESHARD_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    ctx_ = std::make_shared<CudaContext>(control, "cuda-ipc");
    if (ctx_->local_size != size_)
      throw config_error("--transport cuda-ipc needs every rank on one node, but " + ctx_->host + " runs " +
                         std::to_string(ctx_->local_size) + " of the " + std::to_string(size_) +
                         " ranks: use --transport nccl across nodes");
  }

  ~CudaIpcTransport() override {
    // Everything was waited for; finish the last acks and unmap peers' memory. No throwing here.
    if (!acks_.empty()) MPI_Waitall(static_cast<int>(acks_.size()), acks_.data(), MPI_STATUSES_IGNORE);
    for (auto& [key, ptr] : mapped_) cudaIpcCloseMemHandle(ptr);
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

  void setup(const std::vector<CommGroup>& groups, int streams) override {
    groups_.clear();
    for (const CommGroup& g : groups) {
      groups_.push_back(g.ranks);
      std::sort(groups_.back().begin(), groups_.back().end());
    }
    const int n = std::max(streams, 1);
    if (n > kAckTag) throw config_error("cuda-ipc supports at most " + std::to_string(kAckTag) + " streams");
    ctx_->ensure_streams(n);
    streams_.assign(static_cast<size_t>(n), Stream{});
  }

  void send(int stream, int group, int peer, const void* buf, int64_t bytes) override {
    check_member(group, peer);
    at(stream).queued.push_back(SendOp{peer, describe(buf, bytes, group)});
  }

  void recv(int stream, int group, int peer, void* buf, int64_t bytes) override {
    check_member(group, peer);
    Stream& s = at(stream);
    s.recvs.push_back(RecvOp{});
    RecvOp& r = s.recvs.back();
    r.peer = peer;
    r.group = group;
    r.buf = buf;
    r.bytes = bytes;
    r.event = take_event();
    RESHARD_MPI_CHECK(MPI_Irecv(&r.desc, sizeof(Descriptor), MPI_BYTE, peer, stream, comm_, &r.req));
  }

  void broadcast(int stream, int group, int root, void* buf, int64_t bytes) override {
    if (root != rank_) return recv(stream, group, root, buf, bytes);
    check_member(group, -1);
    const Descriptor d = describe(buf, bytes, group);
    for (int m : groups_[static_cast<size_t>(group)])
      if (m != rank_) at(stream).queued.push_back(SendOp{m, d});
  }

  void flush(int stream) override {
    Stream& s = at(stream);
    if (s.queued.empty()) return;
    // The sends' bytes were produced on this stream (packs) or before the batch: once it is idle,
    // receivers may read them.
    RESHARD_CUDA_CHECK(cudaStreamSynchronize(ctx_->stream(stream)));
    for (SendOp& op : s.queued) {
      s.sends.push_back(op);
      SendOp& q = s.sends.back();
      RESHARD_MPI_CHECK(MPI_Isend(&q.desc, sizeof(Descriptor), MPI_BYTE, q.peer, stream, comm_, &q.req[0]));
      RESHARD_MPI_CHECK(MPI_Irecv(&q.ack, 1, MPI_INT, q.peer, kAckTag + stream, comm_, &q.req[1]));
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
    s.sends.clear();
    for (RecvOp& r : s.recvs) events_.push_back(r.event);
    s.recvs.clear();
    // Finished acks leave the list; the rest complete later (they are tiny, eager messages).
    auto keep = std::remove_if(acks_.begin(), acks_.end(), [](MPI_Request& r) {
      int flag = 0;
      RESHARD_MPI_CHECK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));
      return flag != 0;
    });
    acks_.erase(keep, acks_.end());
  }

 private:
  static std::string cuda_version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

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

  Descriptor describe(const void* buf, int64_t bytes, int group) {
    const auto [base, alloc] = ctx_->find(buf, bytes);
    Descriptor d;
    d.bytes = bytes;
    d.alloc_id = alloc.id;
    d.offset = static_cast<int64_t>(reinterpret_cast<uintptr_t>(buf) - base);
    d.owner = rank_;
    d.group = group;
    auto it = exported_.find(alloc.id);
    if (it == exported_.end()) {
      cudaIpcMemHandle_t h{};
      RESHARD_CUDA_CHECK(cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(base)));
      it = exported_.emplace(alloc.id, h).first;
    }
    d.handle = it->second;
    return d;
  }

  // The peer's allocation mapped into this process (opened once, reused every iteration).
  const uint8_t* map(const Descriptor& d) {
    const auto key = std::make_pair(d.owner, d.alloc_id);
    auto it = mapped_.find(key);
    if (it == mapped_.end()) {
      void* p = nullptr;
      RESHARD_CUDA_CHECK(cudaIpcOpenMemHandle(&p, d.handle, cudaIpcMemLazyEnablePeerAccess));
      it = mapped_.emplace(key, p).first;
    }
    return static_cast<const uint8_t*>(it->second);
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

  static bool complete(const Stream& s) {
    for (const SendOp& op : s.sends)
      if (!op.done) return false;
    for (const RecvOp& r : s.recvs)
      if (r.state != RecvOp::Done) return false;
    return true;
  }

  // One pass over every stream; true when anything moved.
  bool progress() {
    bool moved = false;
    for (size_t si = 0; si < streams_.size(); ++si) {
      Stream& s = streams_[si];
      const int stream = static_cast<int>(si);
      for (RecvOp& r : s.recvs) {
        if (r.state == RecvOp::Described) {
          int flag = 0;
          MPI_Status st;
          RESHARD_MPI_CHECK(MPI_Test(&r.req, &flag, &st));
          if (!flag) continue;
          int got = 0;
          RESHARD_MPI_CHECK(MPI_Get_count(&st, MPI_BYTE, &got));
          if (got != static_cast<int>(sizeof(Descriptor)) || r.desc.bytes != r.bytes || r.desc.group != r.group ||
              r.desc.owner != r.peer)
            throw runtime_error("cuda-ipc: rank " + std::to_string(r.peer) + " described " +
                                std::to_string(r.desc.bytes) + " bytes of group " + std::to_string(r.desc.group) +
                                ", expected " + std::to_string(r.bytes) + " bytes of group " +
                                std::to_string(r.group) + " (do all ranks run the same plan and flags?)");
          const uint8_t* src = map(r.desc) + r.desc.offset;
          RESHARD_CUDA_CHECK(cudaMemcpyAsync(r.buf, src, static_cast<size_t>(r.bytes), cudaMemcpyDeviceToDevice,
                                             ctx_->stream(stream)));
          RESHARD_CUDA_CHECK(cudaEventRecord(r.event, ctx_->stream(stream)));
          r.state = RecvOp::Copying;
          moved = true;
        }
        if (r.state == RecvOp::Copying) {
          const cudaError_t e = cudaEventQuery(r.event);
          if (e == cudaErrorNotReady) continue;
          RESHARD_CUDA_CHECK(e);
          acks_.push_back(MPI_REQUEST_NULL);
          RESHARD_MPI_CHECK(MPI_Isend(&kAck, 1, MPI_INT, r.peer, kAckTag + stream, comm_, &acks_.back()));
          r.state = RecvOp::Done;
          moved = true;
        }
      }
      for (SendOp& op : s.sends) {
        if (op.done) continue;
        int flag = 0;
        RESHARD_MPI_CHECK(MPI_Testall(2, op.req, &flag, MPI_STATUSES_IGNORE));
        if (flag) {
          op.done = true;
          moved = true;
        }
      }
    }
    return moved;
  }

  Error timeout(int stream, const Stream& s) const {
    std::string waiting;
    for (const SendOp& op : s.sends)
      if (!op.done) waiting += " ack from rank " + std::to_string(op.peer) + ",";
    for (const RecvOp& r : s.recvs)
      if (r.state != RecvOp::Done)
        waiting += (r.state == RecvOp::Described ? " descriptor from rank " : " copy from rank ") +
                   std::to_string(r.peer) + ",";
    if (!waiting.empty()) waiting.pop_back();
    return runtime_error("cuda-ipc: rank " + std::to_string(rank_) + " made no progress on stream " +
                         std::to_string(stream) + " for " + std::to_string(options_.timeout_s) + " s (--timeout); waiting for" +
                         waiting);
  }

  TransportOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::shared_ptr<CudaContext> ctx_;
  std::vector<std::vector<int>> groups_;
  std::vector<Stream> streams_;
  std::unordered_map<int64_t, cudaIpcMemHandle_t> exported_;
  std::map<std::pair<int, int64_t>, void*> mapped_;
  std::vector<cudaEvent_t> events_;  // free pool
  std::vector<MPI_Request> acks_;
};

}  // namespace

std::unique_ptr<Transport> make_cuda_ipc_transport(Control& control, const TransportOptions& options) {
  return std::make_unique<CudaIpcTransport>(control, options);
}

}  // namespace reshard
#endif
