// The MPI data plane on host memory: non-blocking point-to-point for bulk transfers, non-blocking
// broadcasts (MPI_Ibcast) on split communicators for fan-outs and misc buckets. A stream is a
// list of outstanding requests; a send and its receive use the stream index as tag. A wait polls its
// requests (mpi_wait.h): no progress for --timeout seconds prints the ranks it waited for and aborts
// the world, so a dead or stopped peer cannot hang the others.
#include "transport.h"

#include <algorithm>
#include <climits>

#include "reshard/core/error.h"
#include "reshard/exec/control.h"
#include "transports.h"
#include "wait_trace.h"

#ifdef RESHARD_HAVE_MPI
#include "mpi_wait.h"
#include "mpi_check.h"

namespace reshard {
namespace {

class MpiTransport final : public Transport {
 public:
  MpiTransport(Control& control, const TransportOptions& options) : options_(options) {
    MPI_Comm parent = *static_cast<MPI_Comm*>(control.native_comm());
    RESHARD_MPI_CHECK(MPI_Comm_dup(parent, &world_));
    RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN));
    RESHARD_MPI_CHECK(MPI_Comm_rank(world_, &rank_));
  }
  ~MpiTransport() override {
    if (!options_.mpi_trace.empty())
      write_wait_traces({"--mpi-trace", options_.mpi_trace, options_.force_traces, options_.trace_inputs}, rank_,
                        trace_);
    for (MPI_Comm& c : comms_)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    MPI_Comm_free(&world_);
  }

  std::string name() const override { return "mpi"; }
  std::string version() const override {
    int major = 0, minor = 0;
    MPI_Get_version(&major, &minor);
    return "MPI " + std::to_string(major) + "." + std::to_string(minor);
  }
  MemoryKind memory_kind() const override { return MemoryKind::Host; }
  int64_t max_message_bytes() const override { return INT_MAX; }

  void setup(const std::vector<CommGroup>& groups, int streams) override {
    for (MPI_Comm& c : comms_)
      if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    comms_.assign(groups.size(), MPI_COMM_NULL);
    ranks_.clear();
    for (size_t g = 0; g < groups.size(); ++g) {
      ranks_.push_back(groups[g].ranks);
      std::sort(ranks_.back().begin(), ranks_.back().end());
      const bool member = std::binary_search(ranks_.back().begin(), ranks_.back().end(), rank_);
      RESHARD_MPI_CHECK(MPI_Comm_split(world_, member ? 0 : MPI_UNDEFINED, rank_, &comms_[g]));
      if (member) RESHARD_MPI_CHECK(MPI_Comm_set_errhandler(comms_[g], MPI_ERRORS_RETURN));
    }
    streams_.assign(std::max(streams, 1), Stream{});
  }

  void send(int stream, int group, int peer, const void* buf, int64_t bytes) override {
    Stream& s = at(stream);
    MPI_Request r;
    RESHARD_MPI_CHECK(MPI_Isend(buf, count(bytes), MPI_BYTE, group_rank(group, peer), stream, comm(group), &r));
    s.add(r, -1, peer, -1);
  }
  void recv(int stream, int group, int peer, void* buf, int64_t bytes) override {
    Stream& s = at(stream);
    MPI_Request r;
    RESHARD_MPI_CHECK(MPI_Irecv(buf, count(bytes), MPI_BYTE, group_rank(group, peer), stream, comm(group), &r));
    s.add(r, bytes, peer, -1);
  }
  void broadcast(int stream, int group, int root, void* buf, int64_t bytes) override {
    Stream& s = at(stream);
    MPI_Request r;
    RESHARD_MPI_CHECK(MPI_Ibcast(buf, count(bytes), MPI_BYTE, group_rank(group, root), comm(group), &r));
    s.add(r, -1, root, group);
  }
  // The ops are already started (MPI_I*); a flush only marks where the stream's batch ends.
  void flush(int stream) override {
    Stream& s = at(stream);
    if (s.requests.size() > (s.bounds.empty() ? 0 : s.bounds.back())) s.bounds.push_back(s.requests.size());
    if (!options_.mpi_trace.empty()) last_flush_ = MPI_Wtime();
  }

  void wait(int stream, int keep) override {
    Stream& s = at(stream);
    const int flushed = static_cast<int>(s.bounds.size());
    if (keep > 0 && keep >= flushed) return;
    const size_t n = keep > 0 ? s.bounds[static_cast<size_t>(flushed - keep - 1)] : s.requests.size();
    if (n == 0) return;
    std::vector<MPI_Request> requests(s.requests.begin(), s.requests.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<MPI_Status> st(n);
    const bool tracing = !options_.mpi_trace.empty();
    if (tracing) {  // the flush is an instant here (the ops started when posted): begin = end
      trace_.push_back(WaitTrace{stream, last_flush_, last_flush_, MPI_Wtime()});
      trace_.back().ops = static_cast<int64_t>(n);
      last_flush_ = 0;
    }
    const int rc = wait_bounded(requests, st.data(), options_.timeout_s,
                                [&](const std::vector<bool>& pending) { return waiting_for(s, pending); });
    if (tracing) trace_.back().end = MPI_Wtime();
    if (rc == MPI_ERR_IN_STATUS) {
      for (size_t i = 0; i < st.size(); ++i)
        if (st[i].MPI_ERROR != MPI_SUCCESS && st[i].MPI_ERROR != MPI_ERR_PENDING)
          throw runtime_error("MPI wait: op with rank " + std::to_string(s.peers[i]) +
                              " failed: " + mpi_error_string(st[i].MPI_ERROR));
    }
    RESHARD_MPI_CHECK(rc);
    for (size_t i = 0; i < n; ++i) {
      if (s.expected[i] < 0) continue;
      int got = 0;
      RESHARD_MPI_CHECK(MPI_Get_count(&st[i], MPI_BYTE, &got));
      if (got != s.expected[i])
        throw runtime_error("received " + std::to_string(got) + " bytes from rank " + std::to_string(s.peers[i]) +
                            ", expected " + std::to_string(s.expected[i]) + " (do all ranks run the same plan and flags?)");
    }
    s.drop(n);
  }

 private:
  struct Stream {
    std::vector<MPI_Request> requests;
    std::vector<int64_t> expected;  // receive sizes; -1 for sends and broadcasts
    std::vector<int> peers;
    std::vector<int> groups;  // broadcasts: the group (any member may hold it up); -1 otherwise
    std::vector<size_t> bounds;  // per flushed batch not yet waited for: the request count at its end
    void add(MPI_Request r, int64_t e, int peer, int group) {
      requests.push_back(r);
      expected.push_back(e);
      peers.push_back(peer);
      groups.push_back(group);
    }
    // The first n requests completed (a whole number of batches, or every request).
    void drop(size_t n) {
      auto cut = [n](auto& v) { v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n)); };
      cut(requests);
      cut(expected);
      cut(peers);
      cut(groups);
      while (!bounds.empty() && bounds.front() <= n) bounds.erase(bounds.begin());
      for (size_t& b : bounds) b -= n;
    }
  };

  // The peers of the unfinished ops: the other end of a send or receive; every other member of a
  // broadcast's group.
  Waiting waiting_for(const Stream& s, const std::vector<bool>& pending) const {
    std::vector<int> ranks;
    int ops = 0;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!pending[i]) continue;
      ++ops;
      if (s.groups[i] < 0) {
        ranks.push_back(s.peers[i]);
        continue;
      }
      for (int m : ranks_.at(static_cast<size_t>(s.groups[i])))
        if (m != rank_) ranks.push_back(m);
    }
    return Waiting{rank_list(ranks), std::to_string(ops) + " unfinished transfer" + (ops == 1 ? "" : "s") +
                                         " (MPI transport)"};
  }

  Stream& at(int stream) {
    if (stream < 0 || stream >= static_cast<int>(streams_.size()))
      throw runtime_error("stream " + std::to_string(stream) + " outside the " + std::to_string(streams_.size()) +
                          " set up");
    return streams_[stream];
  }
  MPI_Comm comm(int group) const {
    if (group < 0 || group >= static_cast<int>(comms_.size()) || comms_[group] == MPI_COMM_NULL)
      throw runtime_error("rank " + std::to_string(rank_) + " is not in communicator group " + std::to_string(group));
    return comms_[group];
  }
  int group_rank(int group, int global) const {
    const auto& r = ranks_.at(group);
    auto it = std::lower_bound(r.begin(), r.end(), global);
    if (it == r.end() || *it != global)
      throw runtime_error("rank " + std::to_string(global) + " is not in communicator group " + std::to_string(group));
    return static_cast<int>(it - r.begin());
  }
  static int count(int64_t bytes) {
    if (bytes < 0 || bytes > INT_MAX) throw runtime_error("MPI message of " + std::to_string(bytes) + " bytes");
    return static_cast<int>(bytes);
  }

  TransportOptions options_;
  MPI_Comm world_ = MPI_COMM_NULL;
  int rank_ = 0;
  std::vector<MPI_Comm> comms_;
  std::vector<std::vector<int>> ranks_;
  std::vector<Stream> streams_;
  std::vector<WaitTrace> trace_;  // --mpi-trace: one per wait
  double last_flush_ = 0;         // MPI_Wtime of the flush since the last traced wait; 0: none
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport(Control& control, const TransportOptions& options) {
  return std::make_unique<MpiTransport>(control, options);
}

}  // namespace reshard
#endif
