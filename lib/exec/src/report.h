// What `reshard run` reports: one row per phase (bulk per train PP stage, misc, total), in the
// spirit of nccl-tests. Definitions (docs/executor.md):
//   bytes      logical bytes of the params in the phase (each param once)
//   time       max over ranks of the phase's wall time, barrier outside the timed region;
//              avg/min over the timed iterations. Phase rows time the phase alone; `total` runs all
//              phases at once (streams interleaved) and is the row that --check verifies.
//   algbw      bytes / time (GB/s = 1e9 B/s)
//   busiest    busiest rank's bytes (max over ranks of max(sent, received)) / time: not nccl-tests'
//              busbw (for broadcast and send/recv that equals algbw), the per-rank rate the slowest link saw
//   lb_bytes   the plan's lower bound: max over ranks of the bytes a rank must move at least
//   plan_eff   lb_bytes / busiest bytes (1.0: no rank moves more than it must)
// GPU transports add the ceiling measured in the same run (ceiling.h, docs/gpu.md):
//   ceiling    every rank moves, concurrently, the bytes it must receive at least in the phase
//              (PhaseLowerBounds::received, core/stats.h): a device copy, or send/recv between GPUs;
//              ceiling time = max over ranks; ceiling_GB/s = the busiest rank's bytes / ceiling time
//   eff        ceiling time / measured time: the lower bound's time at the ceiling over the real time
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reshard/core/node_map.h"
#include "reshard/exec/control.h"
#include "executor.h"
#include "reshard/exec/runner.h"

namespace reshard {

struct PhaseRow {
  std::string name;
  int64_t bytes = 0, ops = 0, busiest_bytes = 0, lower_bound_bytes = 0;
  double time_avg = 0, time_min = 0, time_max = 0;  // seconds
  int64_t wrong = -1;  // -1: not checked
  std::vector<double> samples;  // seconds, each timed iteration (max over ranks)
  double ceiling_time = 0;     // seconds, avg over timed iterations; 0: not measured
  int64_t ceiling_bytes = 0;   // max over ranks of the bytes a rank copied for the ceiling
  double device_copy_time = 0;   // copy ceiling: the busiest pool's bytes at one process's copy rate
  int64_t device_copy_bytes = 0;
  double plan_efficiency() const {
    return busiest_bytes > 0 ? static_cast<double>(lower_bound_bytes) / static_cast<double>(busiest_bytes) : 1.0;
  }
  bool has_ceiling() const { return ceiling_time > 0; }
  double ceiling_gbps() const { return has_ceiling() ? static_cast<double>(ceiling_bytes) / ceiling_time / 1e9 : 0; }
  double efficiency() const { return has_ceiling() && time_avg > 0 ? ceiling_time / time_avg : 0; }
  double device_efficiency() const { return device_copy_time > 0 && time_avg > 0 ? device_copy_time / time_avg : 0; }
};

struct RunReport {
  const Plan* plan = nullptr;
  Algo algo = Algo::Reshard;
  std::vector<PhaseRow> rows;  // phases..., total
  int64_t wrong_total = 0;
  std::string first_bad_param;
  int first_bad_rank = -1;
  std::vector<int64_t> peak_bytes;  // per rank (rank 0 only)
  std::string device;               // GPU transports: rank 0's device, in words
  std::string transport_mode;       // Transport::mode() ("" where the transport has none)
  std::string transport_settings;   // Transport::settings() ("" where none)
  std::string ceiling_kind;         // with a ceiling: "copy" or "sendrecv" (ceiling.h)
  std::vector<std::string> hosts;   // distinct host names of the ranks, in rank order
  std::vector<int> host_cores;      // per host: its online CPU cores (what `simulate --host-cores` takes)
  std::vector<int> host_ranks;      // per host: the ranks on it
  std::vector<int> rank_cpus;       // per rank: the CPUs its affinity mask lets it run on (1: bound)
  NodeMapCheck node_map;            // the launch's hosts against the plan's --gpus-per-node
};

// The record `run --json` writes when a run ends in an error every rank agreed on (bad flags, plan,
// memory): status "error", the exit code and the message, beside the arguments and the build.
nlohmann::json error_json(const RunArgs& a, int exit_code, const std::string& message);

// Collective: the rows (phases..., total) with bytes, the busiest rank's traffic and the lower
// bounds; times (set_samples) and wrong bytes (add_wrong) come as the run goes.
RunReport make_report(Control& ctl, const Plan& plan, Executor& ex, Algo algo);
// The same plus what the run's transport and memory say (hosts, mode, settings, the executor's peak
// memory) and, with `ceiling`, the ceiling measured now (ceiling.h): the one record of a run, before
// its times and wrong bytes.
RunReport make_report(Control& ctl, const Plan& plan, Executor& ex, Algo algo, Transport& transport, Memory& memory,
                      int warmup, int iters, bool ceiling);
// The row (index into rows, not the total) param `param` belongs to: its train PP stage, or misc.
int row_of(const Plan& plan, uint32_t param);
// A row's timed iterations (seconds, each the max over ranks): samples, avg, min, max.
void set_samples(PhaseRow& row, const std::vector<double>& seconds);
// Collective: the destinations' wrong bytes per param, summed into the rows and the total.
void add_wrong(Control& ctl, RunReport& rep, Executor& ex);
// The table, piece by piece (printed as the run goes), or whole.
std::string format_header(const RunReport& r, const RunArgs& a, const std::string& transport_line);
std::string format_row(const RunReport& r, const PhaseRow& row);
std::string format_footer(const RunReport& r);
std::string format_report(const RunReport& r, const RunArgs& a, const std::string& transport_line);
nlohmann::json report_json(const RunReport& r, const RunArgs& a, const std::string& transport,
                           const std::string& transport_version, const std::string& mpi_library, int world);

std::string human_bytes(int64_t bytes);

}  // namespace reshard
