// The data plane: a Transport only moves bytes. It knows nothing of params, boxes or plans beyond
// the communicator groups it is told to set up. Buffers are `void*` + bytes in the transport's
// memory kind (host for MPI; device for CUDA IPC and NCCL).
//
// Usage, identical on every rank: setup() once (collective over the world), then any number of
// batches: post send/recv/broadcast ops on streams, flush() each stream used (that ends the stream's
// batch), and later wait() for it. Up to --window batches of a stream may be flushed and not yet
// waited for (batch_window.h); wait(stream, keep) completes all of them but the newest `keep`. A
// buffer handed to an op may be reused only after the wait that completed its batch returned.
// Ordering contract (what keeps batches deadlock-free and matching correct): every rank posts the
// ops it takes part in in one global order shared by all ranks; between one pair of ranks in one
// group, sends match receives in posting order; broadcasts of one group are posted in the same
// order by all its members. Batch boundaries may differ between ranks.
// Errors: Error(Runtime) naming the call and the library's error string.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reshard/core/plan.h"
#include "memory.h"

namespace reshard {

class Control;
struct CudaContext;  // device, streams and allocation registry of the GPU transports (cuda_context.h)

// One strided part of an op's wire box in a buffer of the transport's memory: the `extent` elements at
// `offset` of a row-major tensor of `shape` starting at `base` are elements [wire_offset, +extent) of
// the dense wire box.
struct BoxPiece {
  void* base = nullptr;
  Dims shape, offset, wire_offset, extent;
};

struct TransportOptions {
  // A wait that makes no progress for this long ends the run instead of hanging it (a dead or stuck
  // peer): MPI prints the peers it waited for and aborts the world; the GPU transports throw a runtime
  // error (NCCL aborts its communicators) and the runner aborts the world.
  double timeout_s = 300;
  // cuda-ipc settings from `run`'s --ipc-* flags (cuda_ipc_settings.h); "" leaves each to its
  // RESHARD_CUDA_IPC_* variable, then the default.
  struct CudaIpc {
    std::string mode, boxes, batch, memcpy_min, launch_bytes, trace;
  } ipc;
  std::string mpi_trace;  // MPI transport: PREFIX of its per-rank wait traces (wait_trace.h); "": none
  // Trace files are outputs: replaced only with run's --force, never one of these inputs (the plan).
  bool force_traces = false;
  std::vector<std::string> trace_inputs;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual std::string name() const = 0;
  virtual std::string version() const = 0;  // the underlying library's version string
  virtual MemoryKind memory_kind() const = 0;
  // Collective over the world: creates (and caches) one communicator per group in `groups`
  // (plan.groups; a rank outside a group gets none for it) and `streams` streams.
  virtual void setup(const std::vector<CommGroup>& groups, int streams) = 0;
  // `peer` and `root` are global ranks; `group` indexes the groups given to setup().
  virtual void send(int stream, int group, int peer, const void* buf, int64_t bytes) = 0;
  virtual void recv(int stream, int group, int peer, void* buf, int64_t bytes) = 0;
  // On the root `buf` is read, elsewhere written; every member of `group` posts it.
  virtual void broadcast(int stream, int group, int root, void* buf, int64_t bytes) = 0;
  // Starts the ops posted on `stream` since the last flush, as one batch (NCCL: group end). The
  // caller's part: a buffer posted for receiving is idle by the flush (no work the caller queued on
  // any stream still reads or writes it); a buffer posted for sending may still be written by work
  // queued earlier on `stream` (packs, or a side stream's packs joined onto it: every stream's, since
  // a flush may issue other streams' queued ops too), and the transport orders its reads after that
  // work. Waits likewise: no op it may issue reads work not yet ordered before it.
  virtual void flush(int stream) = 0;
  // Blocks until every op of the batches flushed on `stream` but the newest `keep` has completed;
  // keep 0: every op posted on it (none may be posted after its last flush).
  virtual void wait(int stream, int keep) = 0;
  // Box ops (only where supports_boxes()): the same matching, ordering and completion as send/recv/
  // broadcast, but the wire box (`wire_extent` elements of `elem_size` bytes) is described by where its
  // parts lie in strided buffers instead of being packed into one contiguous buffer. A sender's (root's)
  // pieces cover the whole box; a receiver's pieces are the parts it keeps (none: it only takes part in
  // the op's synchronization and copies nothing). Both ends of an op must use box ops. The transport
  // still only moves bytes: the executor decides the pieces. Others throw Error(Runtime).
  virtual bool supports_boxes() const { return false; }
  virtual void send_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                          const std::vector<BoxPiece>& pieces);
  virtual void recv_boxes(int stream, int group, int peer, const Dims& wire_extent, int elem_size,
                          const std::vector<BoxPiece>& pieces);
  virtual void broadcast_boxes(int stream, int group, int root, const Dims& wire_extent, int elem_size,
                               const std::vector<BoxPiece>& pieces);
  // Largest single message the transport accepts (MPI: INT_MAX bytes).
  virtual int64_t max_message_bytes() const = 0;
  // GPU transports: the context their Memory must share (same device, same streams); null otherwise.
  virtual std::shared_ptr<CudaContext> cuda_context() const { return nullptr; }
  // The device this rank runs on, in words ("" for host transports).
  virtual std::string device() const { return ""; }
  // How it moves bytes where it has a choice ("" where not): cuda-ipc "push" or "pull".
  virtual std::string mode() const { return ""; }
  // Every setting that shapes how it moves bytes, in words, for the run's header ("" where none).
  virtual std::string settings() const { return ""; }
  // Every rank has a GPU of its own and bytes cross links between GPUs (NCCL); false where ranks may
  // share a device or run on the host. Decides which ceiling a run is measured against (ceiling.h).
  virtual bool one_rank_per_device() const { return false; }
};

// Transports compiled into this build, by name ("mpi", "cuda-ipc", "nccl").
std::vector<std::string> available_transports();
// Throws Error(Config) for an unknown or unbuilt transport, listing the available ones. Collective
// over the world (GPU transports split it by node and compare devices).
std::unique_ptr<Transport> make_transport(const std::string& name, Control& control,
                                          const TransportOptions& options = {});
// The memory a transport works on.
std::unique_ptr<Memory> make_memory_for(const Transport& transport);

}  // namespace reshard
