// Flags shared by `reshard run` and `reshard verify --execute` (executor and transport knobs).
#pragma once
#include <memory>
#include <string>

#include "batch_flags.h"
#include "commands.h"
#include "reshard/core/units.h"
#include "reshard/exec/runner.h"

namespace reshard::cli {

struct ExecFlags {
  RunArgs args;
  BatchFlags batch;
  std::string iters, warmup;  // run's --iters and --warmup as given ("": the default)
};

inline void add_exec_flags(CLI::App& cmd, ExecFlags& f) {
  cmd.add_option("--transport", f.args.transport,
                 "Data plane: mpi (host memory), cuda-ipc (GPUs of one node, ranks may share a GPU) or nccl "
                 "(one GPU per rank, across nodes)")
      ->capture_default_str();
  cmd.add_option("--timeout", f.args.timeout_s,
                 "Seconds a rank waits for another (dead or hung?) without progress before every rank stops "
                 "with an error naming it")
      ->capture_default_str();
  // cuda-ipc settings; each overrides its RESHARD_CUDA_IPC_* variable (docs/gpu.md).
  cmd.add_option("--ipc-mode", f.args.ipc_mode, "cuda-ipc: who copies, push (the sender, the default) or pull (the receiver)")
      ->check(CLI::IsMember({"push", "pull"}));
  cmd.add_option("--ipc-boxes", f.args.ipc_boxes, "cuda-ipc: box ops on (default) or off (pack into staging)")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_option("--ipc-batch", f.args.ipc_batch, "cuda-ipc: one batched copy kernel per pass, on (default) or off")
      ->check(CLI::IsMember({"on", "off"}));
  cmd.add_option("--ipc-memcpy-min", f.args.ipc_memcpy_min,
                 "cuda-ipc: contiguous copies from this size take cudaMemcpyAsync (default: never)");
  cmd.add_option("--ipc-launch-bytes", f.args.ipc_launch_bytes,
                 "cuda-ipc: an op queuing this many bytes launches its pass early (default 0: one launch per pass)");
  cmd.add_option("--ipc-trace", f.args.ipc_trace, "cuda-ipc: write each rank's wait trace to PREFIX.<rank>.tsv");
  cmd.add_option("--mpi-trace", f.args.mpi_trace,
                 "mpi: write each rank's flush and wait times to PREFIX.<rank>.tsv (scripts/ipc_trace.py reads them)");
  add_batch_flags(cmd, f.batch);
}

// Resolves the string flags; a bad value goes to RunArgs::flag_problems, for the runner to report once
// for the world (and into --json). Keeps the command line for the JSON.
inline RunArgs finish_exec_flags(ExecFlags& f, CLI::App& app) {
  RunArgs a = f.args;
  Problems problems;
  a.exec = resolve_batch_flags(f.batch, problems);
  auto count = [&](const std::string& text, const char* flag, int min, int& out) {
    if (text.empty()) return;
    try {
      out = static_cast<int>(parse_integer(text, flag, min, INT32_MAX));
    } catch (const Error& e) {
      problems.add(e.what());
    }
  };
  count(f.iters, "--iters", 1, a.iters);
  count(f.warmup, "--warmup", 0, a.warmup);
  a.flag_problems = problems.list();
  a.command_line = "reshard " + app.get_subcommands().front()->get_name();
  for (const auto* opt : app.get_subcommands().front()->get_options()) {
    if (opt->count() == 0) continue;
    if (opt->get_lnames().empty()) {  // positional
      for (const std::string& r : opt->results()) a.command_line += " " + r;
      continue;
    }
    a.command_line += " --" + opt->get_lnames().front();
    if (opt->get_expected_min() == 0) continue;  // a flag: its presence is all
    for (const std::string& r : opt->results()) a.command_line += " " + r;
  }
  return a;
}

}  // namespace reshard::cli
