// reshard: plan, run, verify and inspect M-to-N weight reshards.
// Exit codes: 0 ok, 1 verification failed, 2 usage/config error, 3 runtime error.
#include <cstdio>

#include "commands.h"
#include "reshard/core/error.h"

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
    const int code = app.exit(e);
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
