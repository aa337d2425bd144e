// reshard simulate: predicts a plan's time on a system (preset and/or explicit link parameters).
// Pure computation over the plan file: no MPI, no GPU. Every bad flag is reported at once (exit 2).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>

#include "batch_flags.h"
#include "commands.h"
#include "reshard/core/error.h"
#include "reshard/core/output_file.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/plots.h"
#include "reshard/core/simulate.h"
#include "reshard/core/system_presets.h"
#include "reshard/core/units.h"

namespace reshard::cli {
namespace {

struct SimulateArgs {
  std::string plan, system = "h100-nvl8-ib400";
  std::string gpus_per_node, nvlink_gbps, nic_gbps, latency_us, nvlink_latency_us, nic_latency_us, launch_us,
      per_op_us, copy_gbps, shared_copy_gbps, wire_copies,
      per_copy_us, per_launch_us, switch_us, slice_us, fan_gbps, host_cores, algo, ipc_mode = "push";
  BatchFlags batch;
  std::string timeline;
  bool json = false, force = false, sender_copies = false, latency_per_busy_rank = false;
};

// A finite non-negative decimal number, the whole text.
std::optional<double> parse_real(const std::string& text, const std::string& flag, Problems& problems) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v >= 0)) {
    problems.add(flag + ": expected a non-negative number, got '" + text + "'");
    return std::nullopt;
  }
  // A subnormal (1e-310) reads as the tiny value it is, for the model's bounds to name.
  if (errno == ERANGE && (v == 0 || v >= 1)) {
    problems.add(flag + ": '" + text + "' is " + (v == 0 ? "too small" : "too large") + " for a double");
    return std::nullopt;
  }
  return v;
}

template <class F>
void guarded(Problems& problems, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Config) throw;
    problems.add(e.what());
  }
}

int run_simulate(const SimulateArgs& a) {
  Problems problems;
  SystemModel m;
  guarded(problems, [&] { m = find_system_preset(a.system); });
  auto real = [&](const std::string& text, const char* flag, double& out) {
    if (text.empty()) return;
    if (auto v = parse_real(text, flag, problems)) out = *v;
  };
  auto integer = [&](const std::string& text, const char* flag, auto& out, int64_t min, int64_t max) {
    if (text.empty()) return;
    guarded(problems, [&] { out = static_cast<std::remove_reference_t<decltype(out)>>(parse_integer(text, flag, min, max)); });
  };
  integer(a.gpus_per_node, "--gpus-per-node", m.gpus_per_node, 1, INT64_MAX);
  real(a.nvlink_gbps, "--nvlink-gbps", m.nvlink_gbps);
  real(a.nic_gbps, "--nic-gbps", m.nic_gbps);
  if (!a.latency_us.empty()) {  // parsed once: one message for a bad value
    real(a.latency_us, "--latency-us", m.nvlink_latency_us);
    m.nic_latency_us = m.nvlink_latency_us;
  }
  real(a.nvlink_latency_us, "--nvlink-latency-us", m.nvlink_latency_us);
  real(a.nic_latency_us, "--nic-latency-us", m.nic_latency_us);
  real(a.launch_us, "--launch-us", m.launch_us);
  real(a.per_op_us, "--per-op-us", m.per_op_us);
  real(a.copy_gbps, "--copy-gbps", m.copy_gbps);
  real(a.shared_copy_gbps, "--shared-copy-gbps", m.shared_copy_gbps);
  real(a.wire_copies, "--wire-copies", m.wire_copies);
  real(a.per_copy_us, "--per-copy-us", m.per_copy_us);
  real(a.per_launch_us, "--per-launch-us", m.per_launch_us);
  real(a.switch_us, "--switch-us", m.switch_us);
  real(a.slice_us, "--slice-us", m.slice_us);
  real(a.fan_gbps, "--fan-gbps", m.fan_gbps);
  if (a.sender_copies) m.sender_copies = true;
  if (a.latency_per_busy_rank) m.latency_per_busy_rank = true;
  integer(a.host_cores, "--host-cores", m.host_cores, 0, INT64_MAX);
  if (a.algo == "golden") m.algo = Algo::Golden;
  else if (!a.algo.empty() && a.algo != "reshard")
    problems.add("--algo: expected reshard or golden, got '" + a.algo + "'");
  // The executor's default (RESHARD_CUDA_IPC_MODE); it changes the copy model only where box_ops is on.
  if (a.ipc_mode == "push" || a.ipc_mode == "pull") m.ipc_push = a.ipc_mode == "push";
  else problems.add("--ipc-mode: expected push (the default) or pull, got '" + a.ipc_mode + "'");
  m.batch = resolve_batch_flags(a.batch, problems);
  validate_system_model(m, problems);
  if (!a.timeline.empty())  // checked before the work
    if (const std::string bad = output_problem("--timeline", a.timeline, a.force, {a.plan}); !bad.empty())
      problems.add(bad);
  const size_t n = problems.list().size();
  problems.throw_if_any("invalid simulate configuration (" + std::to_string(n) + (n == 1 ? " problem):" : " problems):"));
  const Plan plan = load_plan(a.plan);
  check_plan_runs(plan, m, a.plan);
  const SimResult r = simulate(plan, m);
  if (!a.timeline.empty()) {
    write_output("--timeline", a.timeline, timeline_svg(plan, r), a.force, {a.plan});
    std::fprintf(stderr, "reshard: wrote %s (timeline, SVG)\n", a.timeline.c_str());
  }
  if (a.json)
    std::printf("%s\n", simulation_json(plan, r).dump(2).c_str());
  else
    std::fputs(format_simulation(plan, r).c_str(), stdout);
  return 0;
}

}  // namespace

void add_simulate_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<SimulateArgs>();
  CLI::App* cmd = app.add_subcommand("simulate", "Predict a plan's time on a system (alpha-beta model, no GPU needed)");
  cmd->add_option("plan", args->plan, "Plan file (JSON or CBOR)")->required();
  cmd->add_option("--preset,--system", args->system,
                  "Hardware preset: h100-nvl8-ib400 (default), h200-nvl8-ib400, gb200-nvl72, cpu-mpi-local, "
                  "h200-shared-1gpu, h200-shared-1gpu-mps, h100-shared-1gpu");
  cmd->add_option("--gpus-per-node", args->gpus_per_node, "Ranks per NVLink domain (rank / N = domain)");
  cmd->add_option("--nvlink-gbps", args->nvlink_gbps, "NVLink GB/s (1e9 B/s) per direction per GPU");
  cmd->add_option("--nic-gbps", args->nic_gbps, "NIC GB/s (1e9 B/s, not Gbit/s) per direction per GPU");
  cmd->add_option("--latency-us", args->latency_us, "Latency per batch in us, both link classes");
  cmd->add_option("--nvlink-latency-us", args->nvlink_latency_us, "Latency per batch over NVLink, us");
  cmd->add_option("--nic-latency-us", args->nic_latency_us, "Latency per batch over the NIC, us");
  cmd->add_option("--launch-us", args->launch_us, "Launch cost per stream per batch, us");
  cmd->add_option("--per-op-us", args->per_op_us, "Cost per op in a batch, us");
  add_batch_flags(*cmd, args->batch);  // the same knobs as `run`
  cmd->add_option("--algo", args->algo, "reshard (default) or golden (whole shards broadcast, as run --algo golden)");
  cmd->add_option("--ipc-mode", args->ipc_mode,
                  "cuda-ipc mode the copy model follows where box ops are on (h200-shared-1gpu*, h100-shared-1gpu): "
                  "push (default, as the executor: senders copy, a broadcast root fans out) or pull (receivers copy)");
  cmd->add_option("--copy-gbps", args->copy_gbps, "Memory copy rate of one rank, GB/s (0: copies not modelled)");
  cmd->add_option("--shared-copy-gbps", args->shared_copy_gbps,
                  "Copy rate shared by all ranks of a domain (one host, one GPU), GB/s (0: not shared)");
  cmd->add_option("--wire-copies", args->wire_copies, "Copies the transport makes per received byte");
  cmd->add_option("--per-copy-us", args->per_copy_us, "Cost per copy issued, us");
  cmd->add_option("--per-launch-us", args->per_launch_us,
                  "Cost per copy launch (each pack or unpack; the transport's batched copies per batch, "
                  "stream and peer), us");
  cmd->add_option("--switch-us", args->switch_us,
                  "Context switch per transport pass where ranks time-slice one GPU (with serial issue; "
                  "scripts/gpu_timeslice.sh measures it), us");
  cmd->add_option("--slice-us", args->slice_us,
                  "GPU time slice per context: the ranks' transport passes take turns on the GPU, a context "
                  "running its queued passes until done or, while another waits, for one slice (past a pass "
                  "only if its next was queued when that pass started), and the batches wait for their "
                  "turns (scripts/gpu_timeslice.sh measures it; 0: a switch per pass), us");
  cmd->add_flag("--sender-copies", args->sender_copies,
                "The transport has no single copy (Open MPI shared memory with btl_vader_single_copy_mechanism "
                "none: copy-in/copy-out): a rank's sends and receives share its link rate, and its transfers "
                "stand still while it packs");
  cmd->add_option("--fan-gbps", args->fan_gbps,
                  "MPI broadcasts (cpu-mpi-local) as libnbc runs them: a rank's sends of one broadcast at once "
                  "take the link's time for the first and bytes / this rate for each further one, and a binomial "
                  "member forwards once it holds the whole message (scripts/calibrate.sh --measure-host measures "
                  "it; 0: off), GB/s");
  cmd->add_option("--host-cores", args->host_cores,
                  "With --sender-copies: the CPU cores a domain's ranks share (the host's nproc). Where a domain "
                  "has more ranks than cores, each rank's transfers move at cores / ranks of their rate "
                  "(copy-in/copy-out needs both ends running; fitted to the device host's records, "
                  "docs/performance.md). 0: as many cores as ranks");
  cmd->add_flag("--latency-per-busy-rank", args->latency_per_busy_rank,
                "The latency is the host's busy hand-off, measured with every rank working (scripts/calibrate.sh "
                "--measure-host): a phase's batches pay it x the domain's ranks with ops in the phase / its ranks "
                "(a hand-off waits for the working ranks sharing its cores, not for idle ones)");
  cmd->add_flag("--json", args->json, "Print one JSON document instead of the table");
  cmd->add_option("--timeline", args->timeline,
                  "Also write an SVG timeline of the predicted batches per rank (waiting and moving)");
  cmd->add_flag("--force", args->force, "Replace an existing --timeline file");
  cmd->callback([&action, args] { action = [args] { return run_simulate(*args); }; });
}

}  // namespace reshard::cli
