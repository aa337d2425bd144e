// The NCCL data plane: one GPU per rank, across GPUs and nodes.
//
// Setup: a world communicator (ncclCommInitRank, unique id broadcast over MPI), then one
// ncclCommSplit per plan group (misc, bulk per train PP stage, fan-out groups), made once and cached;
// a rank outside a group passes NCCL_SPLIT_NOCOLOR. NCCL refuses two ranks of one communicator on
// one GPU, so the constructor compares every rank's (host, PCI bus id) first and fails with a config
// error that says what to do instead.
// Ops: queued in posting order; the first flush() of a batch issues every queued op, in that order,
// inside one ncclGroupStart/End (the executor caps ops and bytes per batch). Issuing in posting
// order keeps each communicator's operations in the global order every rank shares, whichever
// streams they use; NCCL joins the streams of one group.
// Each flush records one event per stream it issued ops on, behind them, and marks the newest event
// of the flushed stream as its batch's end: a stream's open batch may go out in parts, with other
// streams' flushes (a window per stream). wait(stream, keep) polls the end of the batch it completes
// (batches of one stream finish in stream order; stream_batch_events.h).
// Waits poll cudaEventQuery and ncclCommGetAsyncError; an async error or no progress for
// --timeout seconds aborts every communicator (ncclCommAbort) and throws, and the runner then
// aborts the MPI world: every rank exits non-zero instead of hanging.
#if RESHARD_HAVE_CUDA && RESHARD_HAVE_NCCL && RESHARD_HAVE_MPI
#include <nccl.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "cuda_check.h"
#include "cuda_context.h"
#include "reshard/core/error.h"
#include "reshard/exec/control.h"
#include "mpi_check.h"
#include "stream_batch_events.h"
#include "transport.h"
#include "transports.h"

#define RESHARD_NCCL_STR2(x) #x
#define RESHARD_NCCL_STR(x) RESHARD_NCCL_STR2(x)
#define RESHARD_NCCL_CHECK(call, comm) \
  ::reshard::nccl_check((call), #call " at " __FILE__ ":" RESHARD_NCCL_STR(__LINE__), (comm))

namespace reshard {
namespace {

void nccl_check(ncclResult_t r, const char* what, ncclComm_t comm) {
  if (r == ncclSuccess || r == ncclInProgress) return;
  const char* last = ncclGetLastError(comm);
  throw runtime_error(std::string(what) + " failed: " + ncclGetErrorString(r) +
                      (last != nullptr && *last != '\0' ? std::string(" (") + last + ")" : std::string()));
}

struct QueuedOp {
  enum Kind { Send, Recv, Bcast } kind;
  int stream, group, peer;  // peer: global rank (root for broadcasts)
  void* buf;
  int64_t bytes;
};

constexpr int kDeviceIdBytes = 256;

class NcclTransport final : public Transport {
 public:
  NcclTransport(Control& control, const TransportOptions& options) : options_(options) {
    MPI_Comm parent = *static_cast<MPI_Comm*>(control.native_comm());
    RESHARD_MPI_CHECK(MPI_Comm_dup(parent, &comm_));
    RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    RESHARD_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    RESHARD_MPI_CHECK(MPI_Comm_size(comm_, &size_));
    // The device check needs every rank's answer even where CUDA fails: exchange first, throw after.
    std::string failure;
    try {
      ctx_ = std::make_shared<CudaContext>(control, "nccl");
    } catch (const Error& e) {
      failure = e.what();
    }
    std::vector<char> mine(kDeviceIdBytes, '\0');
    if (ctx_) std::snprintf(mine.data(), mine.size(), "%s|%s", ctx_->host.c_str(), ctx_->pci_bus_id.c_str());
    std::vector<char> all(static_cast<size_t>(kDeviceIdBytes) * static_cast<size_t>(size_));
    RESHARD_MPI_CHECK(MPI_Allgather(mine.data(), kDeviceIdBytes, MPI_CHAR, all.data(), kDeviceIdBytes, MPI_CHAR, comm_));
    if (!failure.empty()) throw config_error(failure);
    auto id = [&](int r) { return std::string(all.data() + static_cast<size_t>(r) * kDeviceIdBytes); };
    for (int a = 0; a < size_; ++a)
      for (int b = a + 1; b < size_; ++b)
        if (!id(a).empty() && id(a) == id(b)) {
          const std::string who = id(a);
          throw config_error("--transport nccl: ranks " + std::to_string(a) + " and " + std::to_string(b) +
                             " both run on GPU " + who.substr(who.find('|') + 1) + " of host " +
                             who.substr(0, who.find('|')) + " (" + std::to_string(size_) + " ranks, " +
                             std::to_string(ctx_->device_count) + " GPU(s) visible per node); NCCL refuses two "
                             "ranks of one communicator on one GPU. Use --transport cuda-ipc to share GPUs on one "
                             "node, or run at most one rank per GPU");
        }
  }

  ~NcclTransport() override {
    for (cudaEvent_t e : flushed_.take_all()) cudaEventDestroy(e);
    if (!aborted_) {
      for (ncclComm_t c : comms_)
        if (c != nullptr) ncclCommDestroy(c);
      if (world_ != nullptr) ncclCommDestroy(world_);
    }
    MPI_Comm_free(&comm_);
  }

  std::string name() const override { return "nccl"; }
  std::string version() const override {
    int v = 0;
    ncclGetVersion(&v);
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  }
  MemoryKind memory_kind() const override { return MemoryKind::Device; }
  int64_t max_message_bytes() const override { return int64_t{1} << 40; }
  std::shared_ptr<CudaContext> cuda_context() const override { return ctx_; }
  std::string device() const override { return ctx_->describe(); }
  bool one_rank_per_device() const override { return true; }  // refused otherwise, at setup

  void setup(const std::vector<CommGroup>& groups, int streams) override {
    ctx_->ensure_streams(std::max(streams, 1));
    for (cudaEvent_t e : flushed_.take_all()) ctx_->give_event(e);  // only left after an error
    flushed_ = StreamBatchEvents<cudaEvent_t>(std::max(streams, 1));
    ncclUniqueId uid;
    if (rank_ == 0) RESHARD_NCCL_CHECK(ncclGetUniqueId(&uid), nullptr);
    RESHARD_MPI_CHECK(MPI_Bcast(&uid, sizeof uid, MPI_BYTE, 0, comm_));
    RESHARD_NCCL_CHECK(ncclCommInitRank(&world_, size_, uid, rank_), nullptr);
    ranks_.clear();
    comms_.assign(groups.size(), nullptr);
    for (size_t g = 0; g < groups.size(); ++g) {
      ranks_.push_back(groups[g].ranks);
      std::sort(ranks_.back().begin(), ranks_.back().end());
      const bool member = std::binary_search(ranks_.back().begin(), ranks_.back().end(), rank_);
      // key = global rank: a group's NCCL ranks are its members in ascending global order.
      RESHARD_NCCL_CHECK(ncclCommSplit(world_, member ? 0 : NCCL_SPLIT_NOCOLOR, rank_, &comms_[g], nullptr), world_);
    }
  }

  void send(int stream, int group, int peer, const void* buf, int64_t bytes) override {
    queue_.push_back({QueuedOp::Send, checked(stream), group, peer, const_cast<void*>(buf), bytes});
  }
  void recv(int stream, int group, int peer, void* buf, int64_t bytes) override {
    queue_.push_back({QueuedOp::Recv, checked(stream), group, peer, buf, bytes});
  }
  void broadcast(int stream, int group, int root, void* buf, int64_t bytes) override {
    queue_.push_back({QueuedOp::Bcast, checked(stream), group, root, buf, bytes});
  }

  void flush(int stream) override {
    checked(stream);
    issue_queued();
    flushed_.batch_ended(stream);
  }

  void wait(int stream, int keep) override {
    // Ops of other streams may still be queued (a window per stream: their batches are open).
    if (keep == 0 && std::any_of(queue_.begin(), queue_.end(), [&](const QueuedOp& op) { return op.stream == stream; }))
      throw runtime_error("nccl: wait(" + std::to_string(stream) + ") before flush");
    const std::optional<cudaEvent_t> last = flushed_.target(checked(stream), keep);
    if (!last) return;
    const double start = MPI_Wtime();
    for (unsigned spin = 0;; ++spin) {
      const cudaError_t e = cudaEventQuery(*last);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) RESHARD_CUDA_CHECK(e);
      if (spin % 64 == 0) {
        poll_async_errors();
        if (MPI_Wtime() - start > options_.timeout_s) {
          abort_all();
          throw runtime_error("nccl: rank " + std::to_string(rank_) + ": stream " + std::to_string(stream) +
                              " did not finish within " + std::to_string(options_.timeout_s) +
                              " s (--timeout); communicators aborted");
        }
      }
    }
    for (cudaEvent_t e : flushed_.release(stream, keep)) ctx_->give_event(e);
  }

 private:
  // Issues every queued op, in posting order, in one NCCL group, and records an event behind them on
  // each stream they used.
  void issue_queued() {
    if (queue_.empty()) return;
    std::vector<bool> used(static_cast<size_t>(flushed_.streams()), false);
    RESHARD_NCCL_CHECK(ncclGroupStart(), nullptr);
    for (const QueuedOp& op : queue_) {
      ncclComm_t c = comm(op.group);
      cudaStream_t s = ctx_->stream(op.stream);
      const int peer = group_rank(op.group, op.peer);
      const auto n = static_cast<size_t>(op.bytes);
      switch (op.kind) {
        case QueuedOp::Send: RESHARD_NCCL_CHECK(ncclSend(op.buf, n, ncclUint8, peer, c, s), c); break;
        case QueuedOp::Recv: RESHARD_NCCL_CHECK(ncclRecv(op.buf, n, ncclUint8, peer, c, s), c); break;
        case QueuedOp::Bcast: RESHARD_NCCL_CHECK(ncclBroadcast(op.buf, op.buf, n, ncclUint8, peer, c, s), c); break;
      }
      used[static_cast<size_t>(op.stream)] = true;
    }
    queue_.clear();
    RESHARD_NCCL_CHECK(ncclGroupEnd(), nullptr);
    for (size_t s = 0; s < used.size(); ++s) {
      if (!used[s]) continue;
      cudaEvent_t e = ctx_->take_event();
      flushed_.recorded(static_cast<int>(s), e);
      RESHARD_CUDA_CHECK(cudaEventRecord(e, ctx_->stream(static_cast<int>(s))));
    }
  }

  int checked(int stream) const {
    if (stream < 0 || stream >= flushed_.streams())
      throw runtime_error("stream " + std::to_string(stream) + " outside the " + std::to_string(flushed_.streams()) +
                          " set up");
    return stream;
  }
  ncclComm_t comm(int group) const {
    if (group < 0 || group >= static_cast<int>(comms_.size()) || comms_[static_cast<size_t>(group)] == nullptr)
      throw runtime_error("rank " + std::to_string(rank_) + " is not in communicator group " + std::to_string(group));
    return comms_[static_cast<size_t>(group)];
  }
  int group_rank(int group, int global) const {
    const auto& r = ranks_.at(static_cast<size_t>(group));
    auto it = std::lower_bound(r.begin(), r.end(), global);
    if (it == r.end() || *it != global)
      throw runtime_error("rank " + std::to_string(global) + " is not in communicator group " + std::to_string(group));
    return static_cast<int>(it - r.begin());
  }
  void poll_async_errors() {
    auto poll = [&](ncclComm_t c) {
      if (c == nullptr) return;
      ncclResult_t async = ncclSuccess;
      RESHARD_NCCL_CHECK(ncclCommGetAsyncError(c, &async), c);
      if (async != ncclSuccess && async != ncclInProgress) {
        const std::string last = ncclGetLastError(c);
        abort_all();
        throw runtime_error("nccl: rank " + std::to_string(rank_) + ": asynchronous error: " +
                            ncclGetErrorString(async) + (last.empty() ? "" : " (" + last + ")") +
                            "; communicators aborted");
      }
    };
    poll(world_);
    for (ncclComm_t c : comms_) poll(c);
  }
  void abort_all() {
    if (aborted_) return;
    aborted_ = true;
    for (ncclComm_t c : comms_)
      if (c != nullptr) ncclCommAbort(c);
    if (world_ != nullptr) ncclCommAbort(world_);
  }

  TransportOptions options_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::shared_ptr<CudaContext> ctx_;
  ncclComm_t world_ = nullptr;
  std::vector<ncclComm_t> comms_;
  std::vector<std::vector<int>> ranks_;
  std::vector<QueuedOp> queue_;
  StreamBatchEvents<cudaEvent_t> flushed_;  // per stream: events behind issued ops, batch ends marked
  bool aborted_ = false;
};

}  // namespace

std::unique_ptr<Transport> make_nccl_transport(Control& control, const TransportOptions& options) {
  return std::make_unique<NcclTransport>(control, options);
}

}  // namespace reshard
#endif
