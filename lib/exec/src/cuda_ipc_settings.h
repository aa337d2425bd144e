// The cuda-ipc transport's settings, resolved once per rank: `run`'s --ipc-* flag first, then its
// RESHARD_CUDA_IPC_* variable (set it for every rank with mpirun -x), then the default. describe() is
// what the run's header echoes. Private to lib/exec.
#pragma once
#include <cstdint>
#include <string>

#include "transport.h"

namespace reshard {

struct CudaIpcSettings {
  bool push = true;           // who copies: the sender (push) or the receiver (pull); MODE
  bool boxes = true;          // box ops (no staging); BOXES=0 packs into staging as other transports do
  bool batch = true;          // one batched kernel per progress pass; BATCH=0 one copy call per overlap
  int64_t memcpy_min = 0;     // contiguous copies from this size take cudaMemcpyAsync; MEMCPY_MIN (bytes)
  int64_t launch_bytes = 0;   // an op queuing this much launches early; LAUNCH_BYTES (0: one launch per pass)
  std::string trace;          // PREFIX of the per-rank wait traces; TRACE ("" none)
  std::string mode_error;     // a mode that is neither push nor pull, named; push meanwhile

  // Each of `flags` ("" unset) over its variable. A bad mode is kept in mode_error, not thrown: the
  // transport first agrees with the other ranks, so that no rank fails alone. A bad on/off or byte
  // count throws Error(Config) naming the flag or variable.
  static CudaIpcSettings resolve(const TransportOptions::CudaIpc& flags, int64_t default_memcpy_min);
  std::string describe() const;  // e.g. "push, box ops, batched copies" plus any non-default knob
};

}  // namespace reshard
