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

// Where `rank`'s trace goes: PREFIX.<rank>.tsv.
std::string wait_trace_path(const std::string& prefix, int rank);

// What a trace file is written under: run's --force, and the files it must never replace (the plan).
struct TraceOutput {
  std::string flag;  // --mpi-trace or --ipc-trace, for messages
  std::string prefix;
  bool force = false;
  std::vector<std::string> inputs;
};

// What stops `rank`'s trace file from being written, as output_problem says for any output (an
// existing file without --force, a symlink or other non-regular file, one of the inputs, a missing or
// unwritable directory), or because it is the `--json` record's path; "" when nothing. The runner asks
// before the work, so that a trace is never lost or misplaced after it.
std::string wait_trace_problem(const TraceOutput& out, int rank, const std::string& json_path);

// One tab-separated line per wait into PREFIX.<rank>.tsv, created as every output is (write_output).
// Never throws (runs in a destructor): a file that cannot be written is named on stderr and lost.
void write_wait_traces(const TraceOutput& out, int rank, const std::vector<WaitTrace>& traces) noexcept;

}  // namespace reshard
