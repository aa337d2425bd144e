// `reshard run` and `reshard verify --execute`: everything between the parsed command line and
// the exit code, collective over the MPI world. Config problems found on any rank are agreed on
// (every rank exits with the same code; rank 0 prints the one message); a runtime fault on one
// rank aborts the world rather than leave others hanging. Only rank 0 prints.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reshard/core/plan.h"
#include "reshard/exec/control.h"
#include "reshard/core/batch_policy.h"
#include "reshard/core/ops.h"

namespace reshard {

struct RunArgs {
  std::string plan_path;
  std::string transport = "mpi";
  std::string algo = "reshard";  // reshard | golden
  // Warm-up 5, as nccl-tests' common.cu (warmup_iters): with 1, the first timed `total` iteration of
  // the 4096-param stress plan read 1.34-1.37x the rest on an H100; at 5 and 20, 0.98-1.04x
  // (results/gpu/warmup_h100/).
  int iters = 5, warmup = 5;
  bool check = false;
  std::string json_path;
  bool force = false;
  double timeout_s = 300;  // any wait for another rank without progress this long ends the run (all ranks, non-zero)
  // cuda-ipc's --ipc-* flags as given ("": the RESHARD_CUDA_IPC_* variable, else the default).
  std::string ipc_mode, ipc_boxes, ipc_batch, ipc_memcpy_min, ipc_launch_bytes, ipc_trace;
  std::string mpi_trace;  // --mpi-trace: the MPI transport's wait trace to PREFIX.<rank>.tsv ("": none)
  // run --ceiling: measure the ceiling (ceiling.h) in the run, on (any memory), off, or auto (device
  // memory only: host runs are mostly CI's, which would pay each row's iterations again).
  std::string ceiling = "auto";
  BatchPolicy exec;
  std::string command_line;  // echoed into the JSON
  // Flag values the command line could not read (a malformed size, say): reported by the runner's
  // first agreed check, so that under mpirun rank 0 prints them once and --json records them.
  std::vector<std::string> flag_problems;
};

// Returns the exit code (0 ok, 1 verification failed); throws Error on rank 0 for agreed failures.
int run_main(const RunArgs& args);
int verify_execute_main(const RunArgs& args);

// "reshard VERSION (plan format reshard-plan vN)"; RESHARD_FAKE_VERSION (a test hook) replaces VERSION.
std::string build_identity();
// Checks, collectively, that every rank runs the same build (build_identity()); otherwise throws an
// agreed Error(Config) naming a rank of each build and what it runs.
void check_build_agreement(Control& control);

// Checks, collectively, that every rank loaded the same plan (fingerprint min == max over ranks),
// and that the world matches it. Throws an agreed Error(Config). (The flags: check_flag_agreement.)
void check_plan_agreement(Control& control, const Plan& plan, const std::string& origin);

}  // namespace reshard
