// The run report: reductions over ranks, the text table and the JSON record.
#include "report.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <ctime>
#include <climits>
#include <cstdio>
#include <string_view>

#include "ceiling.h"
#include "reshard/core/batch_policy.h"
#include "reshard/core/node_map.h"
#include "reshard/core/plan_enums.h"
#include "reshard/core/stats.h"

namespace reshard {

std::string human_bytes(int64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

RunReport make_report(Control& ctl, const Plan& plan, Executor& ex, Algo algo) {
  RunReport rep;
  rep.plan = &plan;
  rep.algo = algo;
  const int phases = phase_count(plan);
  const PhaseLowerBounds lb = compute_phase_lower_bounds(plan);  // phase_count(plan) phases, as here
  // Traffic: [phase or total] x (busiest, ops), max over ranks.
  std::vector<int64_t> traffic;
  for (int ph = -1; ph < phases; ++ph) {
    const Traffic t = ex.traffic(algo, ph);
    traffic.push_back(std::max(t.sent, t.received));
    traffic.push_back(t.ops);
  }
  ctl.max(traffic);
  for (int ph = 0; ph <= phases; ++ph) {
    PhaseRow row;
    const bool total = ph == phases;
    row.name = total ? "total" : ph == phases - 1 ? "misc" : "bulk.pp" + std::to_string(ph);
    const int t_index = total ? 0 : ph + 1;
    row.busiest_bytes = traffic[2 * t_index];
    row.ops = traffic[2 * t_index + 1];
    for (uint32_t p = 0; p < plan.params.size(); ++p)
      if (total || row_of(plan, p) == ph) row.bytes += plan.params[p].bytes();
    for (int r = 0; r < plan.world(); ++r) {
      int64_t v = 0;
      for (int q = 0; q < phases; ++q)
        if (total || q == ph) v += lb.moved[q][r];
      row.lower_bound_bytes = std::max(row.lower_bound_bytes, v);
    }
    rep.rows.push_back(row);
  }
  return rep;
}

namespace {

// Every rank's host name, once each, in rank order of first appearance, with the host's online cores
// (sysconf) and how many ranks run there: more ranks than cores slows a host without single copy
// (docs/calibration.md, "Oversubscribed hosts"). Also each rank's allowed CPUs (its affinity).
void add_hosts(Control& ctl, RunReport& rep) {
  constexpr int64_t kName = 60, kLen = kName + 8;  // name, cores, the rank's allowed CPUs
  std::vector<uint8_t> mine(kLen, 0);
  char host[kName] = {};
  ::gethostname(host, kName - 1);
  // Test hook: RESHARD_FAKE_HOSTS=a,a,b,b poses rank r as running on the r-th host named; a rank past
  // the list, or with an empty entry, keeps its real host.
  if (const char* fake = std::getenv("RESHARD_FAKE_HOSTS"); fake != nullptr) {
    std::string_view list = fake;
    for (int r = 0; r < ctl.rank() && !list.empty(); ++r)
      list = list.find(',') == std::string_view::npos ? std::string_view() : list.substr(list.find(',') + 1);
    const std::string_view name = list.substr(0, list.find(','));
    if (!name.empty()) std::snprintf(host, kName, "%.*s", static_cast<int>(name.size()), name.data());
  }
  std::memcpy(mine.data(), host, std::strlen(host));
  const int32_t cores = static_cast<int32_t>(std::max(::sysconf(_SC_NPROCESSORS_ONLN), 1L));
  std::memcpy(mine.data() + kName, &cores, sizeof cores);
  // Bound or free: mpirun binds ranks (--bind-to core) or leaves them to the scheduler (Open MPI's
  // default when oversubscribed), which places them afresh at each launch.
  cpu_set_t set;
  CPU_ZERO(&set);
  const int32_t cpus = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : cores;
  std::memcpy(mine.data() + kName + sizeof cores, &cpus, sizeof cpus);
  const std::vector<uint8_t> all = ctl.allgather(mine, kLen);
  std::vector<std::string> host_of_rank;
  for (int r = 0; r < ctl.size(); ++r) {
    const char* at = reinterpret_cast<const char*>(all.data() + kLen * r);
    int32_t allowed = 0;
    std::memcpy(&allowed, at + kName + sizeof cores, sizeof allowed);
    rep.rank_cpus.push_back(allowed);
    const std::string h(at, strnlen(at, kName));
    host_of_rank.push_back(h);
    const auto it = std::find(rep.hosts.begin(), rep.hosts.end(), h);
    if (it != rep.hosts.end()) {
      ++rep.host_ranks[static_cast<size_t>(it - rep.hosts.begin())];
      continue;
    }
    int32_t c = 0;
    std::memcpy(&c, at + kName, sizeof c);
    rep.hosts.push_back(h);
    rep.host_cores.push_back(c);
    rep.host_ranks.push_back(1);
  }
  rep.node_map = check_node_map(host_of_rank, rep.plan->options.gpus_per_node);
}

}  // namespace

RunReport make_report(Control& ctl, const Plan& plan, Executor& ex, Algo algo, Transport& transport, Memory& memory,
                      int warmup, int iters, bool ceiling) {
  RunReport rep = make_report(ctl, plan, ex, algo);
  add_hosts(ctl, rep);
  rep.transport_mode = transport.mode();
  rep.transport_settings = transport.settings();
  rep.peak_bytes = ctl.gather(memory.peak_bytes());  // the executor's; before the ceiling's scratch blocks
  if (ceiling) {
    const CeilingKind kind = ceiling_kind_for(transport, memory);
    add_ceiling(ctl, plan, memory, transport, kind, rep.rows, std::max(warmup, 1), iters);
    rep.ceiling_kind = to_string(kind);
  }
  if (memory.kind() == MemoryKind::Device) rep.device = transport.device();
  return rep;
}

int row_of(const Plan& plan, uint32_t param) {
  const int phases = phase_count(plan);
  const ParamPlan& p = plan.params[param];
  return p.path == Path::Misc ? phases - 1 : std::clamp(p.pp_stage, 0, phases - 2);
}

void set_samples(PhaseRow& row, const std::vector<double>& t) {
  row.samples = t;
  row.time_min = row.time_max = row.time_avg = 0;
  if (t.empty()) return;
  row.time_min = *std::min_element(t.begin(), t.end());
  row.time_max = *std::max_element(t.begin(), t.end());
  for (double x : t) row.time_avg += x;
  row.time_avg /= static_cast<double>(t.size());
}

void add_wrong(Control& ctl, RunReport& rep, Executor& ex) {
  const Plan& plan = *rep.plan;
  std::vector<int64_t> wrong = ex.count_wrong();
  const std::vector<int64_t> local = wrong;
  ctl.sum(wrong);
  for (size_t p = 0; p < wrong.size(); ++p) {
    if (wrong[p] == 0) continue;
    rep.first_bad_param = plan.params[p].name;
    rep.first_bad_rank = static_cast<int>(ctl.min(static_cast<int64_t>(local[p] > 0 ? ctl.rank() : INT_MAX)));
    break;
  }
  for (PhaseRow& row : rep.rows) row.wrong = 0;
  for (uint32_t p = 0; p < plan.params.size(); ++p) {
    rep.rows[static_cast<size_t>(row_of(plan, p))].wrong += wrong[p];
    rep.rows.back().wrong += wrong[p];
  }
  rep.wrong_total = rep.rows.back().wrong;
}

namespace {

std::string par(const Parallelism& p) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "tp=%d pp=%d ep=%d etp=%d dp=%d (%d ranks)", p.tp, p.pp, p.ep, p.etp, p.dp, p.num_gpus);
  return buf;
}

double gbps(int64_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }

}  // namespace

namespace {

// snprintf into a growing string.
class Lines {
 public:
  template <class... T>
  void operator()(const char* fmt, T... xs) {
    char buf[512];
    std::snprintf(buf, sizeof buf, fmt, xs...);
    out += buf;
  }
  std::string out;
};

}  // namespace

std::string format_header(const RunReport& r, const RunArgs& a, const std::string& transport_line) {
  const Plan& plan = *r.plan;
  Lines line;
  int64_t bulk = 0, misc = 0;
  for (const ParamPlan& p : plan.params) (p.path == Path::Bulk ? bulk : misc) += 1;
  line.out += "# reshard run\n";
  line("#  plan: %s  fingerprint: %s  generator: %s\n", a.plan_path.c_str(), plan.fingerprint.c_str(), plan.generator.c_str());
  line("#  model: %s  params: %zu (%lld bulk, %lld misc)  transfers: %zu  fan-outs: %zu  buckets: %zu\n",
       plan.model_name.c_str(), plan.params.size(), static_cast<long long>(bulk), static_cast<long long>(misc),
       plan.transfers.size(), plan.fanouts.size(), plan.buckets.size());
  line("#  train: %s\n#  gen:   %s\n", par(plan.system.train).c_str(), par(plan.system.gen).c_str());
  line("#  world: %d  transport: %s\n", plan.world(), transport_line.c_str());
  if (!r.hosts.empty()) {  // more ranks than cores: they take turns (docs/calibration.md, "Oversubscribed hosts")
    std::string hosts;
    bool over = false;
    for (size_t i = 0; i < r.hosts.size(); ++i) {
      over = over || r.host_ranks[i] > r.host_cores[i];
      if (i < 4)
        hosts += (i ? ", " : "") + r.hosts[i] + " (" + std::to_string(r.host_ranks[i]) + " ranks, " +
                 std::to_string(r.host_cores[i]) + " cores)";
    }
    if (r.hosts.size() > 4) hosts += ", ... (" + std::to_string(r.hosts.size()) + " hosts)";
    // Bound: every rank's affinity narrower than its host (a core's hardware threads, say).
    const int widest = r.rank_cpus.empty() ? 0 : *std::max_element(r.rank_cpus.begin(), r.rank_cpus.end());
    const bool bound = widest > 0 && widest < *std::min_element(r.host_cores.begin(), r.host_cores.end());
    const std::string binding = bound ? "; each rank bound to " + std::to_string(widest) +
                                            (widest == 1 ? " CPU" : " CPUs at most")
                                      : "";
    line("#  hosts: %s%s%s\n", hosts.c_str(), over ? "; more ranks than cores: the ranks take turns on them" : "",
         binding.c_str());
  }
  if (const NodeMapCheck& m = r.node_map; m.plan_gpus_per_node > 0 || m.hosts > 1) {
    const std::string plan_map = m.plan_gpus_per_node > 0 ? std::to_string(m.plan_gpus_per_node) + " ranks a node"
                                                          : "node-blind";
    const std::string launch = m.launch_ranks_per_host > 0 ? std::to_string(m.launch_ranks_per_host) + " ranks a host"
                                                           : "ranks not in blocks";
    const std::string verdict =
        m.status == NodeMapCheck::Status::Unknown ? "" : std::string(": ") + to_string(m.status);
    line("#  nodes: plan %s; launch %s on %d host%s%s\n", plan_map.c_str(), launch.c_str(), m.hosts,
         m.hosts == 1 ? "" : "s", verdict.c_str());
  }
  if (!r.device.empty()) line("#  device: %s (rank 0)\n", r.device.c_str());
  if (!r.transport_settings.empty()) line("#  transport settings: %s\n", r.transport_settings.c_str());
  line("#  algo: %s  iters: %d  warmup: %d  streams: %d  batch: %lld ops / %s  window: %d%s  staging: %s  check: %s\n",
       to_string(r.algo), a.iters, a.warmup, a.exec.streams, static_cast<long long>(a.exec.batch_ops),
       human_bytes(a.exec.batch_bytes).c_str(), a.exec.window, a.exec.per_stream_window ? " per stream" : " per rank",
       human_bytes(a.exec.staging_bytes).c_str(), a.check ? "on" : "off");
  if (!r.device.empty())  // host memory packs in line
    line("#  packs: %s\n", a.exec.side_stream_packs ? "on a side stream per stream (--side-stream-packs)"
                                                    : "on the op's stream (--op-stream-packs)");
  if (a.warmup == 0)
    line("#  warmup 0: each row's first iteration pays first-use costs (page faults, cuda-ipc handle mapping)\n");
  const bool ceiling = r.rows.back().has_ceiling();
  line("#\n#%-11s %14s %8s %11s %11s %11s %12s %14s %9s", " phase", "bytes", "ops", "time_ms", "min_ms",
       "algbw_GB/s", "busiest_GB/s", "lb_bytes", "plan_eff");
  if (ceiling) line(" %12s %7s", "ceiling_GB/s", "eff");
  line(" %10s\n", "#wrong");
  return line.out;
}

std::string format_row(const RunReport& r, const PhaseRow& row) {
  Lines line;
  const std::string wrong = row.wrong < 0 ? "N/A" : std::to_string(row.wrong);
  line(" %-11s %14lld %8lld %11.3f %11.3f %11.2f %12.2f %14lld %9.3f", row.name.c_str(),
       static_cast<long long>(row.bytes), static_cast<long long>(row.ops), row.time_avg * 1e3, row.time_min * 1e3,
       gbps(row.bytes, row.time_avg), gbps(row.busiest_bytes, row.time_avg),
       static_cast<long long>(row.lower_bound_bytes), row.plan_efficiency());
  if (r.rows.back().has_ceiling()) line(" %12.2f %7.3f", row.ceiling_gbps(), row.efficiency());
  line(" %10s\n", wrong.c_str());
  return line.out;
}

std::string format_footer(const RunReport& r) {
  Lines line;
  int64_t peak = 0;
  int peak_rank = 0;
  for (size_t i = 0; i < r.peak_bytes.size(); ++i)
    if (r.peak_bytes[i] > peak) {
      peak = r.peak_bytes[i];
      peak_rank = static_cast<int>(i);
    }
  const PhaseRow& total = r.rows.back();
  line("# total: %.3f ms avg (%.3f min) for %s, algbw %.2f GB/s; peak memory %s (rank %d, max over ranks)",
       total.time_avg * 1e3, total.time_min * 1e3, human_bytes(total.bytes).c_str(), gbps(total.bytes, total.time_avg),
       human_bytes(peak).c_str(), peak_rank);
  if (total.has_ceiling())
    line("; ceiling %.2f GB/s, efficiency %.3f (vs %s)", total.ceiling_gbps(), total.efficiency(),
         r.ceiling_kind.c_str());
  if (total.device_copy_time > 0)
    line("; efficiency %.3f vs one process's device copy (%s of the busiest device in %.3f ms)",
         total.device_efficiency(), human_bytes(total.device_copy_bytes).c_str(), total.device_copy_time * 1e3);
  if (total.wrong >= 0) line("; #wrong %lld%s", static_cast<long long>(total.wrong), total.wrong == 0 ? " (PASSED)" : " (FAILED)");
  line.out += "\n";
  return line.out;
}

std::string format_report(const RunReport& r, const RunArgs& a, const std::string& transport_line) {
  std::string out = format_header(r, a, transport_line);
  for (const PhaseRow& row : r.rows) out += format_row(r, row);
  return out + format_footer(r);
}

namespace {

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

nlohmann::json build_json() {
  return {{"reshard", RESHARD_VERSION}, {"git", RESHARD_GIT_SHA}, {"type", RESHARD_BUILD_TYPE}};
}

}  // namespace

nlohmann::json error_json(const RunArgs& a, int exit_code, const std::string& message) {
  return nlohmann::json{{"format", "reshard-run"},
                        {"version", 1},
                        {"status", "error"},
                        {"exit_code", exit_code},
                        {"error", message},
                        {"timestamp", utc_now()},
                        {"build", build_json()},
                        {"arguments", {{"plan", a.plan_path}, {"transport", a.transport}, {"algo", a.algo}}},
                        {"command_line", a.command_line}};
}

nlohmann::json report_json(const RunReport& r, const RunArgs& a, const std::string& transport,
                           const std::string& transport_version, const std::string& mpi_library, int world) {
  const Plan& plan = *r.plan;
  using nlohmann::json;
  auto par = [](const Parallelism& p) {
    return json{{"num_gpus", p.num_gpus}, {"tp", p.tp}, {"pp", p.pp}, {"ep", p.ep}, {"etp", p.etp}, {"dp", p.dp}};
  };
  json phases = json::array();
  for (const PhaseRow& row : r.rows) {
    phases.push_back({{"phase", row.name},
                      {"bytes", row.bytes},
                      {"ops_max_per_rank", row.ops},
                      {"time_ms_avg", row.time_avg * 1e3},
                      {"time_ms_min", row.time_min * 1e3},
                      {"time_ms_max", row.time_max * 1e3},
                      {"algbw_gbps", gbps(row.bytes, row.time_avg)},
                      {"busiest_gbps", gbps(row.busiest_bytes, row.time_avg)},
                      {"busiest_bytes", row.busiest_bytes},
                      {"lower_bound_bytes", row.lower_bound_bytes},
                      {"plan_efficiency", row.plan_efficiency()},
                      {"wrong", row.wrong < 0 ? json(nullptr) : json(row.wrong)}});
    json samples = json::array();
    double var = 0;
    for (double x : row.samples) {
      samples.push_back(x * 1e3);
      var += (x - row.time_avg) * (x - row.time_avg);
    }
    phases.back()["samples_ms"] = samples;
    phases.back()["stddev_ms"] = row.samples.size() > 1 ? std::sqrt(var / static_cast<double>(row.samples.size() - 1)) * 1e3 : 0.0;
    if (row.has_ceiling()) {  // absent, not null, without a ceiling: scripts test for the key
      phases.back()["ceiling_gbps"] = row.ceiling_gbps();
      phases.back()["ceiling_bytes"] = row.ceiling_bytes;
      phases.back()["ceiling_ms"] = row.ceiling_time * 1e3;
      phases.back()["efficiency"] = row.efficiency();
    }
    if (row.device_copy_time > 0) {
      phases.back()["device_copy_ms"] = row.device_copy_time * 1e3;
      phases.back()["device_copy_bytes"] = row.device_copy_bytes;
      phases.back()["device_efficiency"] = row.device_efficiency();
    }
  }
  int64_t peak = 0;
  for (int64_t p : r.peak_bytes) peak = std::max(peak, p);
  const PlanOptions& o = plan.options;
  json j{{"format", "reshard-run"},
         {"version", 1},
         {"status", r.rows.back().wrong > 0 ? "failed" : "ok"},
         {"timestamp", utc_now()},
         {"hosts", r.hosts},
         {"host_cores", r.host_cores},
         {"host_ranks", r.host_ranks},
         {"rank_cpus", r.rank_cpus},
         {"node_map",
          {{"status", to_string(r.node_map.status)},
           {"plan_gpus_per_node", r.node_map.plan_gpus_per_node},
           {"launch_ranks_per_host", r.node_map.launch_ranks_per_host},
           {"hosts", r.node_map.hosts},
           {"detail", r.node_map.detail}}},
         {"build", build_json()},
         {"versions", {{"reshard", RESHARD_VERSION}, {"mpi_library", mpi_library}, {"transport", transport_version}}},
         {"world_size", world},
         {"arguments",
          {{"plan", a.plan_path},
           {"transport", transport},
           {"algo", to_string(r.algo)},
           {"iters", a.iters},
           {"warmup", a.warmup},
           {"timeout_s", a.timeout_s},
           {"check", a.check},
           {"ceiling", a.ceiling}}},
         {"command_line", a.command_line},
         {"plan",
          {{"fingerprint", plan.fingerprint},
           {"generator", plan.generator},
           {"model", plan.model_name},
           {"model_digest", plan.model_digest},
           {"options",
            {{"gen_layout", to_string(o.gen_layout)},
             {"bulk", to_string(o.bulk)},
             {"fanout", to_string(o.fanout)},
             {"gen_precision", to_string(o.gen_precision)},
             {"bucket_bytes", o.bucket_bytes},
             {"gpus_per_node", o.gpus_per_node}}},
           {"params", plan.params.size()},
           {"transfers", plan.transfers.size()},
           {"fanouts", plan.fanouts.size()},
           {"buckets", plan.buckets.size()},
           {"train", par(plan.system.train)},
           {"gen", par(plan.system.gen)}}},
         {"phases", phases},
         {"total_time_ms", r.rows.back().time_avg * 1e3},
         {"peak_bytes_max", peak},
         {"peak_bytes_per_rank", r.peak_bytes},
         {"wrong", r.rows.back().wrong < 0 ? json(nullptr) : json(r.wrong_total)},
         {"first_bad_param", r.first_bad_param.empty() ? json(nullptr) : json(r.first_bad_param)},
         {"first_bad_rank", r.first_bad_rank}};
  const nlohmann::ordered_json knobs = batch_policy_json(a.exec);  // as simulate --json has them
  for (const auto& [key, value] : knobs.items()) j["arguments"][key] = value;
  if (!r.device.empty()) j["versions"]["device"] = r.device;
  if (!r.transport_mode.empty()) j["transport_mode"] = r.transport_mode;
  if (!r.transport_settings.empty()) j["transport_settings"] = r.transport_settings;
  if (r.rows.back().has_ceiling()) {
    j["ceiling_gbps"] = r.rows.back().ceiling_gbps();
    j["ceiling_kind"] = r.ceiling_kind;
    j["efficiency"] = r.rows.back().efficiency();
  }
  if (r.rows.back().device_copy_time > 0) j["device_efficiency"] = r.rows.back().device_efficiency();
  return j;
}

}  // namespace reshard
