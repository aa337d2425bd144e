// reshard run: execute a plan under mpirun, time it per phase, optionally check every byte.
#include "commands.h"
#include "exec_flags.h"
#include "reshard/exec/control.h"
#include "reshard/exec/runner.h"

namespace reshard::cli {

void add_run_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("run", "Execute a plan under mpirun (mpirun -np TRAIN+GEN reshard run --plan PLAN)");
  auto flags = std::make_shared<ExecFlags>();
  cmd->add_option("plan,--plan", flags->args.plan_path, "Plan file (JSON or CBOR) from `reshard plan`")->required();
  // Values are checked by the runner (RunArgs::flag_problems, validate), agreed over the world: the
  // type names only say in --help what the runner accepts.
  cmd->add_option("--algo", flags->args.algo, "reshard (the plan) or golden (broadcast every shard whole)")
      ->type_name("TEXT:{reshard,golden}")
      ->capture_default_str();
  cmd->add_option("--iters", flags->iters, "Timed iterations")
      ->type_name("INT:POSITIVE")
      ->default_str(std::to_string(flags->args.iters));
  cmd->add_option("--warmup", flags->warmup, "Untimed warm-up iterations")
      ->type_name("INT:NONNEGATIVE")
      ->default_str(std::to_string(flags->args.warmup));
  cmd->add_flag("--check", flags->args.check, "Verify every destination byte after the run (exit 1 on any wrong byte)");
  cmd->add_option("--ceiling", flags->args.ceiling,
                  "Measure the ceiling in the same run and report efficiency against it: on, off, or auto (GPU "
                  "memory only). Copy within the device for cuda-ipc; plain send/recv for nccl and mpi")
      ->type_name("TEXT:{auto,on,off}")
      ->capture_default_str();
  cmd->add_option("--json", flags->args.json_path, "Also write the results as JSON to this file");
  cmd->add_flag("--force", flags->args.force,
                "Replace an existing --json file or wait trace (--mpi-trace, --ipc-trace)");
  add_exec_flags(*cmd, *flags);
  cmd->callback([flags, &action, &app] {
    action = [flags, &app] {
      RunArgs args = finish_exec_flags(*flags, app);
      if (!Control::built())
        throw config_error("`reshard run` needs MPI, and MPI support was not built (configure with RESHARD_WITH_MPI=ON)");
      return run_main(args);
    };
  });
}

}  // namespace reshard::cli
