// reshard inspect PLAN: the plan's summary, one rank's traffic, or one param's layouts and transfers,
// as text or (--json) one JSON document on stdout. With --model FILE it first checks that the plan was
// made for that model (same digest) and refuses (exit 2) otherwise.
#include <limits>
#include <cstdio>
#include <memory>
#include <optional>

#include "commands.h"
#include "reshard/core/output_file.h"
#include "reshard/core/plots.h"
#include "reshard/core/error.h"
#include "reshard/core/model.h"
#include "reshard/core/plan_check.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/stats.h"
#include "reshard/core/summary.h"

namespace reshard::cli {
namespace {

constexpr size_t kMaxTransfersListed = 32;


struct InspectArgs {
  std::string plan, param, model, plot;
  std::optional<int> rank;  // --rank, when given (any int: -1 and INT_MIN are bad ranks, not "none")
  int rank_given = 0;
  bool json = false, force = false;
};

int run_inspect(const InspectArgs& a) {
  if (!a.plot.empty())  // checked before the work
    if (const std::string bad = output_problem("--plot", a.plot, a.force, {a.plan, a.model}); !bad.empty())
      throw config_error(bad);
  const Plan plan = load_plan(a.plan);
  if (!a.model.empty()) check_plan_matches_model(plan, load_model(a.model), a.plan);
  if (a.rank && (*a.rank < 0 || *a.rank >= plan.world()))
    throw config_error("--rank " + std::to_string(*a.rank) + " is outside the plan's world of " +
                       std::to_string(plan.world()) + " ranks (0.." + std::to_string(plan.world() - 1) + ")");
  const std::optional<uint32_t> param =
      a.param.empty() ? std::nullopt : std::optional<uint32_t>(find_param(plan, a.param));
  const PlanStats stats = compute_stats(plan);
  if (!a.plot.empty()) {
    // With --param: that param's pieces on both sides; else the whole plan's traffic.
    write_output("--plot", a.plot,
                 param ? param_svg(plan, *param)
                       : traffic_svg(plan, plan.options.gpus_per_node > 0 ? plan.options.gpus_per_node : 8),
                 a.force, {a.plan, a.model});
    std::fprintf(stderr, "reshard: wrote %s (%s, SVG)\n", a.plot.c_str(), param ? "param pieces" : "traffic");
  }

  if (a.json) {
    nlohmann::ordered_json doc =
        summary_json(plan, stats, a.rank ? std::vector<int>{*a.rank} : std::vector<int>{});
    if (param) doc["param"] = param_json(plan, *param, kMaxTransfersListed);
    std::fputs((doc.dump(2) + "\n").c_str(), stdout);
    return 0;
  }
  std::string out;
  if (param) out += format_param(plan, *param, kMaxTransfersListed);
  if (param && a.rank) out += "\n";
  if (a.rank) out += format_rank_table(plan, stats, {*a.rank});
  if (!param && !a.rank) out = format_summary(plan, stats);
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace

void add_inspect_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand("inspect", "Show a plan: summary, per-rank traffic, or one param");
  cmd->add_option("plan", args->plan, "Plan file (JSON or CBOR)")->required();
  cmd->add_option("--rank", args->rank_given, "Show this global rank's traffic only");
  cmd->add_option("--param", args->param, "Show this param (HF or grouped name): layouts and transfers")
      ->check(CLI::Validator([](std::string& v) { return v.empty() ? std::string("needs a param name, got an empty one") : std::string(); },
                             "NAME"));
  cmd->add_flag("--json", args->json, "Print a JSON document instead of text");
  cmd->add_option("--plot", args->plot,
                  "Also write an SVG: the heatmap of the bytes each source sends each destination (by rank, or "
                  "by node above 128 ranks), or with --param that param's pieces on each side");
  cmd->add_flag("--force", args->force, "Replace an existing --plot file");
  cmd->add_option("--model", args->model,
                  "Refuse (exit 2) unless the plan was made for this model (metadata JSON or safetensors)");
  cmd->callback([&action, args, cmd] {
    if (cmd->get_option("--rank")->count() > 0) args->rank = args->rank_given;
    action = [args] { return run_inspect(*args); };
  });
}

}  // namespace reshard::cli
