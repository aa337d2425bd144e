// reshard verify PLAN: static proof of the plan (no MPI). With --execute, under mpirun: run the plan
// and the golden path on the same source data and compare every destination byte.
#include <cstdio>

#include "commands.h"
#include "exec_flags.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/verify.h"
#include "reshard/exec/control.h"
#include "reshard/exec/runner.h"

namespace reshard::cli {
namespace {

int verify_static(const std::string& path, size_t max_listed) {
  const Plan plan = load_plan(path);
  const VerifyReport r = verify_plan(plan, max_listed);
  if (!r.ok()) {
    std::printf("verify %s: %lld problem(s)\n", path.c_str(), static_cast<long long>(r.problem_count));
    for (const std::string& p : r.problems) std::printf("  %s\n", p.c_str());
    if (r.problem_count > static_cast<int64_t>(r.problems.size()))
      std::printf("  ... and %lld more\n", static_cast<long long>(r.problem_count - static_cast<int64_t>(r.problems.size())));
    std::printf("VERIFY FAILED\n");
    return 1;
  }
  std::printf("verify %s: OK: %lld params, %lld transfers, %lld elements checked; every gen rank receives exactly "
              "its region once, from holders, in bounds (fingerprint %s)\n",
              path.c_str(), static_cast<long long>(r.params_checked), static_cast<long long>(r.transfers_checked),
              static_cast<long long>(r.elements_checked), plan.fingerprint.c_str());
  return 0;
}

// The executor's flags given to a static verify, which reads only the plan and would ignore them.
std::string run_flags_without_execute(const CLI::App& cmd) {
  std::string named;
  for (const CLI::Option* o : cmd.get_options()) {
    if (o->count() == 0 || o->get_lnames().empty()) continue;
    const std::string& name = o->get_lnames().front();
    if (name == "plan" || name == "execute" || name == "max-problems" || name == "help") continue;
    named += (named.empty() ? "--" : ", --") + name;
  }
  return named.empty() ? "" : named + " appl" + (named.find(',') == std::string::npos ? "ies" : "y") +
                                  " only with --execute (the static verify reads only the plan)";
}

}  // namespace

void add_verify_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("verify", "Prove a plan against the golden semantics (static), or with --execute "
                                           "run it and the golden path under mpirun and compare every byte");
  auto flags = std::make_shared<ExecFlags>();
  auto execute = std::make_shared<bool>(false);
  auto max_listed = std::make_shared<size_t>(50);
  cmd->add_option("plan,--plan", flags->args.plan_path, "Plan file (JSON or CBOR)")->required();
  cmd->add_flag("--execute", *execute, "Run plan and golden under mpirun and compare destinations byte for byte");
  cmd->add_option("--max-problems", *max_listed, "Problems listed at most (static verify)")->capture_default_str();
  add_exec_flags(*cmd, *flags);
  cmd->callback([flags, execute, max_listed, &action, &app, cmd] {
    action = [flags, execute, max_listed, &app, cmd] {
      if (!*execute) {
        if (const std::string bad = run_flags_without_execute(*cmd); !bad.empty()) throw config_error("verify: " + bad);
        return verify_static(flags->args.plan_path, *max_listed);
      }
      RunArgs args = finish_exec_flags(*flags, app);
      if (!Control::built())
        throw config_error("`reshard verify --execute` needs MPI, and MPI support was not built "
                           "(configure with RESHARD_WITH_MPI=ON); static `reshard verify PLAN` works without it");
      return verify_execute_main(args);
    };
  });
}

}  // namespace reshard::cli
