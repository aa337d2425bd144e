// reshard: plan, run, verify and inspect M-to-N weight reshards.
// Exit codes: 0 ok, 1 verification failed, 2 usage/config error, 3 runtime error.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "reshard/core/error.h"

namespace {

// The process's rank when started by a launcher (mpirun, srun), before MPI is up; 0 otherwise. A usage
// error is the same on every rank: only rank 0 prints it.
int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"reshard: plan, run, verify and benchmark M-to-N reshards of model weights"};
  app.set_version_flag("--version", std::string("reshard ") + RESHARD_VERSION);
  app.require_subcommand(1);
  reshard::cli::Action action;
  reshard::cli::add_plan_command(app, action);
  reshard::cli::add_inspect_command(app, action);
  reshard::cli::add_verify_command(app, action);
  reshard::cli::add_run_command(app, action);
  reshard::cli::add_simulate_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    const int code = app.exit(e, out, err);
    if (launcher_rank() == 0) {
      std::cout << out.str();
      // CLI11's "Run with --help ..." follows its message; ours carry the tool's prefix, once.
      if (!err.str().empty()) std::cerr << (code == 0 ? "" : "reshard: ") << err.str();
    }
    return code == 0 ? 0 : 2;
  }
  try {
    return action ? action() : 2;
  } catch (const reshard::Error& e) {
    std::fprintf(stderr, "reshard: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "reshard: internal error: %s\n", e.what());
    return 3;
  }
}
