// reshard: plan, run, verify and inspect M-to-N weight reshards.
// Exit codes: 0 ok, 1 verification failed, 2 usage/config error, 3 runtime error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>

#include "commands.h"
#include "reshard/core/error.h"
#include "reshard/exec/control.h"
#include "reshard/core/suggest.h"

namespace {

// The process's rank when started by a launcher (mpirun, srun), before MPI is up; 0 otherwise. A usage
// error is the same on every rank: only rank 0 prints it.
int launcher_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

// Whether this process prints a usage error, and the prefix it prints it with. The same command line
// fails the same way on every rank, so rank 0 prints it. An MPMD launch (mpirun -np 2 A : -np 2 B) gives
// each app context its own command line, where rank 0's may be fine: there the first rank of each
// context prints its context's error, naming its rank. Open MPI's OMPI_APP_CTX_NUM_PROCS lists the
// contexts' sizes ("2 2"); other launchers: rank 0 alone.
bool prints_usage_errors(std::string& prefix) {
  const int rank = launcher_rank();
  prefix = "reshard: ";
  if (rank == 0) return true;
  const char* sizes = std::getenv("OMPI_APP_CTX_NUM_PROCS");
  if (sizes == nullptr) return false;
  std::istringstream in(sizes);
  int first = 0, n = 0;
  while (in >> n && n > 0 && first + n <= rank) first += n;
  if (first != rank) return false;
  prefix += "rank " + std::to_string(rank) + ": ";
  return true;
}

// A usage error's exit. In an MPMD launch the other app contexts' ranks may have parsed fine and wait
// in MPI_Init or a first collective for this rank, which Open MPI did not always end (a hang of 300 s
// in CI): this rank joins the world and aborts it. Elsewhere every rank fails alike and just exits.
int usage_exit(int code) {
  const char* contexts = std::getenv("OMPI_NUM_APP_CTX");
  if (contexts != nullptr && std::atoi(contexts) > 1) reshard::Control::abort_launch(code);
  return code;
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

std::string sub_name(const CLI::App& app) {
  const auto subs = app.get_subcommands();
  return subs.empty() ? "reshard" : subs.front()->get_name();
}

// Options given an empty value (`-o ''`, `--model ''`): the commands read "" as "not given", which
// would silently skip the check or output asked for. One message naming each; "" when none.
std::string empty_values(const CLI::App& app) {
  std::string named;
  for (const CLI::App* sub : app.get_subcommands())
    for (const CLI::Option* o : sub->get_options()) {
      if (o->count() == 0 || o->get_expected_min() == 0) continue;  // not given, or a flag
      const std::vector<std::string>& r = o->results();
      if (std::find(r.begin(), r.end(), std::string()) == r.end()) continue;
      named += (named.empty() ? "" : ", ") + (o->get_lnames().empty() ? o->get_name() : "--" + o->get_lnames().front());
    }
  return named.empty() ? "" : sub_name(app) + ": empty value for " + named + "; give a value or leave the flag out";
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
  std::string prefix;
  const bool prints = prints_usage_errors(prefix);
  if (const std::string bad = unknown_argument(app, argc, argv); !bad.empty()) {
    if (prints) std::fprintf(stderr, "%s%s\n", prefix.c_str(), bad.c_str());
    return usage_exit(2);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    std::ostringstream out, err;
    const int code = app.exit(e, out, err);
    if (prints) {
      std::cout << out.str();
      // CLI11's "Run with --help ..." follows its message; ours carry the tool's prefix, once.
      if (!err.str().empty()) std::cerr << (code == 0 ? "" : prefix) << err.str();
    }
    return code == 0 ? 0 : usage_exit(2);
  }
  if (const std::string bad = empty_values(app); !bad.empty()) {
    if (prints) std::fprintf(stderr, "%s%s\n", prefix.c_str(), bad.c_str());
    return usage_exit(2);
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
