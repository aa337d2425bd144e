// Each subcommand registers itself on the app and sets `action` to run when it was chosen.
// Actions return the process exit code; they throw reshard::Error for failures (main maps them).
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace reshard::cli {

using Action = std::function<int()>;

void add_plan_command(CLI::App& app, Action& action);     // reshard plan
void add_inspect_command(CLI::App& app, Action& action);  // reshard inspect
void add_verify_command(CLI::App& app, Action& action);   // reshard verify (static, or --execute under mpirun)
void add_run_command(CLI::App& app, Action& action);      // reshard run (under mpirun)
void add_simulate_command(CLI::App& app, Action& action);  // reshard simulate

}  // namespace reshard::cli
