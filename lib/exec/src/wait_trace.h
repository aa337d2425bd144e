// Host timestamps of each wait() of a transport, written per rank at teardown as PREFIX.<rank>.tsv for
// scripts/ipc_trace.py: cuda-ipc's (--ipc-trace, RESHARD_CUDA_IPC_TRACE; cuda_ipc_settings.h) with its
// copier's points, MPI's (--mpi-trace) with the flush and the wait only. Private to lib/exec.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace reshard {

// Host timestamps (MPI_Wtime) of one wait() and the flush before it; 0 = did not happen.
struct WaitTrace {
  int stream = 0;
  double flush_begin = 0, flush_end = 0, begin = 0, first_take = 0, last_take = 0, first_launch = 0,
         last_launch = 0, copies_done = 0, end = 0;
  int64_t launches = 0, ops = 0;
};

// One tab-separated line per wait into PREFIX.<rank>.tsv. Never throws (runs in a destructor).
void write_wait_traces(const std::string& prefix, int rank, const std::vector<WaitTrace>& traces) noexcept;

}  // namespace reshard
