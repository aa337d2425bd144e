// reshard: plan, run, verify and inspect M-to-N weight reshards.
// Exit codes: 0 ok, 1 verification failed, 2 usage/config error, 3 runtime error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "commands.h"
#include "reshard/core/error.h"
#include "reshard/core/suggest.h"

namespace {

// The process's rank when started by a launcher (mpirun, srun), before MPI is up; 0 otherwise. A usage
// error is the same on every rank: only rank 0 prints it.
int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

// A mistyped command or flag, named with the closest known one, before CLI11 parses (it would report
// a missing required flag first, or "A subcommand is required" for `reshard bogus`); "" when none.
std::string unknown_argument(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) commands.push_back(sub->get_name());
  if (argc < 2 || argv[1][0] == '-') return "";
  const std::string name = argv[1];
  const CLI::App* sub = nullptr;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; }))
    if (s->get_name() == name) sub = s;
  if (sub == nullptr) {
    const std::string near = reshard::closest_name(name, commands);
    std::string list;
    for (const std::string& c : commands) list += (list.empty() ? "" : ", ") + c;
    return "unknown command '" + name + "'" + (near.empty() ? "" : " (did you mean " + near + "?)") + "; commands: " + list;
  }
  std::vector<std::string> flags{"help"};
  for (const CLI::Option* o : sub->get_options())
    for (const std::string& l : o->get_lnames()) flags.push_back(l);
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) continue;
    const std::string flag = arg.substr(2, arg.find('=') == std::string::npos ? std::string::npos : arg.find('=') - 2);
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    const std::string near = reshard::closest_name(flag, flags);
    return name + ": unknown flag --" + flag + (near.empty() ? "" : " (did you mean --" + near + "?)") +
           "; see reshard " + name + " --help";
  }
  return "";
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
  if (const std::string bad = unknown_argument(app, argc, argv); !bad.empty()) {
    if (launcher_rank() == 0) std::fprintf(stderr, "reshard: %s\n", bad.c_str());
    return 2;
  }
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
