// The cuda-ipc transport's settings, resolved once per rank: `run --ipc-mode` first, then the
// environment (RESHARD_CUDA_IPC_*, for measuring; set them for every rank with mpirun -x), then the
// defaults. describe() is what the run's header echoes. Private to lib/exec.
#pragma once
#include <cstdint>
#include <string>

namespace reshard {

struct CudaIpcSettings {
  bool push = true;           // who copies: the sender (push) or the receiver (pull); MODE
  bool boxes = true;          // box ops (no staging); BOXES=0 packs into staging as other transports do
  bool batch = true;          // one batched kernel per progress pass; BATCH=0 one copy call per overlap
  int64_t memcpy_min = 0;     // contiguous copies from this size take cudaMemcpyAsync; MEMCPY_MIN (bytes)
  int64_t launch_bytes = 0;   // an op queuing this much launches early; LAUNCH_BYTES (0: one launch per pass)
  std::string trace;          // PREFIX of the per-rank wait traces; TRACE ("" none)
  std::string mode_error;     // a mode that is neither push nor pull, named; push meanwhile

  // `mode_flag`: "push", "pull" or "" (unset). A bad mode is kept in mode_error, not thrown: the
  // transport first agrees with the other ranks, so that no rank fails alone. A bad byte count
  // throws Error(Config).
  static CudaIpcSettings resolve(const std::string& mode_flag, int64_t default_memcpy_min);
  std::string describe() const;  // e.g. "push, box ops, batched copies" plus any non-default knob
};

}  // namespace reshard
