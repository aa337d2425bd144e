// Test hook (not for production use): RESHARD_FAULT="rank=R,after_ops=N,mode=kill|hang|exit" makes
// rank R fail on purpose once it has posted N ops (send/recv/broadcast, counted from the start of the
// first timed iteration of `reshard run`, or of the first execution of `verify --execute`), so tests
// can show that every other rank ends, non-zero, naming the dead rank or the timeout:
//   kill: raise(SIGKILL)   the process vanishes (OOM killer, node failure);
//   hang: raise(SIGSTOP)   alive but silent (a stuck driver, a paused node); mpirun does not notice,
//                          only --timeout can; if continued it sleeps until killed;
//   exit: _Exit(7)         leaves without MPI_Finalize (a crash that exits);
//   corrupt:               from then on its sends carry zeros in place of their bytes, the run goes on
//                          (a transport or buffer fault that delivers wrong data: what `run --check`
//                          and `verify --execute` exist to catch). Host-memory transports only.
// N beyond the ops the rank posts: the fault never fires. The hook wraps the transport, so it sees
// exactly the ops the executor posts, whatever the transport.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "transport.h"

namespace reshard {

struct FaultSpec {
  enum class Mode { Kill, Hang, Exit, Corrupt };
  int rank = 0;
  int64_t after_ops = 0;
  Mode mode = Mode::Kill;
};

// Parses RESHARD_FAULT; nullopt when unset or empty. Throws Error(Config) naming every bad field.
std::optional<FaultSpec> fault_from_env();

// Forwards everything to the wrapped transport; once armed, fires the fault before posting op N+1.
class FaultTransport final : public Transport {
 public:
  FaultTransport(std::unique_ptr<Transport> inner, const FaultSpec& spec, int rank);
  void arm() { armed_ = true; }

  std::string name() const override { return inner_->name(); }
  std::string version() const override { return inner_->version(); }
  MemoryKind memory_kind() const override { return inner_->memory_kind(); }
  void setup(const std::vector<CommGroup>& groups, int streams) override { inner_->setup(groups, streams); }
  void send(int stream, int group, int peer, const void* buf, int64_t bytes) override;
  void recv(int stream, int group, int peer, void* buf, int64_t bytes) override;
  void broadcast(int stream, int group, int root, void* buf, int64_t bytes) override;
  void flush(int stream) override { inner_->flush(stream); }
  void wait(int stream, int keep) override { inner_->wait(stream, keep); }
  bool supports_boxes() const override { return inner_->supports_boxes(); }
  void send_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                  const std::vector<BoxPiece>& pieces) override;
  void recv_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                  const std::vector<BoxPiece>& pieces) override;
  void broadcast_boxes(int stream, int group, int root, const Dims& wire_extent, int elem_size,
                       const std::vector<BoxPiece>& pieces) override;
  int64_t max_message_bytes() const override { return inner_->max_message_bytes(); }
  std::shared_ptr<CudaContext> cuda_context() const override { return inner_->cuda_context(); }
  std::string device() const override { return inner_->device(); }
  std::string mode() const override { return inner_->mode(); }
  std::string settings() const override { return inner_->settings(); }

 private:
  void before_op();  // fires the fault when this op would be number after_ops + 1
  const void* send_buffer(const void* buf, int64_t bytes);  // buf, or zeros once corrupting

  std::unique_ptr<Transport> inner_;
  FaultSpec spec_;
  int rank_;
  bool armed_ = false;
  bool corrupting_ = false;
  int64_t posted_ = 0;
  // Zeros for corrupted sends; a larger one is added when needed, and the earlier ones kept, since
  // sends still in flight read them (at most twice the largest message in all).
  std::vector<std::vector<uint8_t>> zeros_;
};

}  // namespace reshard
