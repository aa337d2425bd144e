// reshard run / reshard verify --execute: setup agreed over the world, timed phases, checks, the
// nccl-tests-style table and the JSON record.
#include "reshard/exec/runner.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fault_hook.h"
#include "progress.h"
#include "reshard/core/output_file.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/storage.h"
#include "reshard/core/units.h"
#include "reshard/core/verify.h"
#include "reshard/core/hash.h"
#include "reshard/core/memory_estimate.h"
#include "ceiling.h"
#include "cuda_ipc_settings.h"
#include "wait_trace.h"
#include "report.h"

namespace reshard {
namespace {

// Runs f; any failure on any rank becomes an agreed error on all ranks.
template <class F>
void agreed(Control& ctl, F&& f) {
  int code = 0;
  std::string message;
  try {
    f();
  } catch (const Error& e) {
    code = e.exit_code();
    message = e.what();
  } catch (const std::exception& e) {
    code = 3;
    message = e.what();
  }
  if (code != 0 && ctl.rank() != 0) message = "rank " + std::to_string(ctl.rank()) + ": " + message;
  ctl.agree(code, message);
}

std::string validate(const RunArgs& a) {
  Problems pr;
  for (const std::string& p : a.flag_problems) pr.add(p);
  if (a.iters < 1) pr.add("--iters must be at least 1 (got " + std::to_string(a.iters) + ")");
  if (a.warmup < 0) pr.add("--warmup must be at least 0 (got " + std::to_string(a.warmup) + ")");
  a.exec.validate(pr);
  if (!(a.timeout_s > 0)) pr.add("--timeout must be positive seconds (got " + std::to_string(a.timeout_s) + ")");
  if (a.algo != "reshard" && a.algo != "golden") pr.add("--algo must be reshard or golden (got '" + a.algo + "')");
  if (a.ceiling != "auto" && a.ceiling != "on" && a.ceiling != "off")
    pr.add("--ceiling must be auto, on or off (got '" + a.ceiling + "')");
  try {
    pr.throw_if_any("invalid arguments:");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The same text hashes the same in every build (std::hash need not): core's FNV-1a (hash.h).
int64_t stable_hash(const std::string& s) { return static_cast<int64_t>(Hasher().add(s).value()); }

// Every flag that shapes the collective sequence, and the plan file's content, as "name value" pairs:
// ranks started differently would otherwise wait on each other until --timeout.
std::vector<std::pair<std::string, std::string>> shaping_flags(const RunArgs& a, int64_t plan_content) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(plan_content));
  return {{"--plan content (hash)", hex},
          {"--transport", a.transport},
          {"--algo", a.algo},
          {"--iters", std::to_string(a.iters)},
          {"--warmup", std::to_string(a.warmup)},
          {"--check", a.check ? "on" : "off"},
          {"--ceiling", a.ceiling},
          {"--timeout", std::to_string(a.timeout_s)},
          {"--streams", std::to_string(a.exec.streams)},
          {"--batch-ops", std::to_string(a.exec.batch_ops)},
          {"--batch-bytes", std::to_string(a.exec.batch_bytes)},
          {"--staging-bytes", std::to_string(a.exec.staging_bytes)},
          {"--window", std::to_string(a.exec.window)},
          {"--window-per-stream", a.exec.per_stream_window ? "on" : "off"}};
}

// Collectively: every rank's shaping flags equal rank 0's, else an agreed Error(Config) naming the
// lowest rank that differs and how.
void check_flag_agreement(Control& ctl, const RunArgs& a, int64_t plan_content) {
  const auto flags = shaping_flags(a, plan_content);
  std::string mine;
  for (const auto& [name, value] : flags) mine += name + "=" + value + "\n";
  const std::string root = ctl.broadcast(mine, 0);
  std::string differs;
  if (root != mine) {
    size_t at = 0;
    for (const auto& [name, value] : flags) {
      const size_t end = root.find('\n', at);
      const std::string theirs = root.substr(at, end - at);
      at = end + 1;
      const std::string want = theirs.substr(theirs.find('=') + 1);
      if (want != value) differs += (differs.empty() ? "" : ", ") + name + " " + value + " (rank 0: " + want + ")";
    }
  }
  const int64_t first = ctl.min(differs.empty() ? INT64_MAX : ctl.rank());
  if (first == INT64_MAX) return;
  const std::string what = ctl.broadcast(differs, static_cast<int>(first));
  ctl.agree(2, "rank " + std::to_string(first) + " was started differently from rank 0: " + what +
                   " (every rank must get the same plan file and run flags)");
}

// Collectively, before anything is allocated: the ranks sharing a memory pool (one host, one GPU)
// must fit in what it has free; else an agreed Error(Config) with the estimate and what is there.
void check_memory_fits(Control& ctl, const Plan& plan, const BatchPolicy& o, const Memory& memory) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string pool = memory.pool() + " of " + host;
  const int64_t key = stable_hash(pool), need = rank_memory(plan, ctl.rank(), o).total();
  int64_t avail = memory.available_bytes();
  if (const char* fake = std::getenv("RESHARD_FAKE_AVAILABLE_BYTES")) avail = std::atoll(fake);  // test hook
  std::vector<uint8_t> mine(24);
  std::memcpy(mine.data(), &key, 8);
  std::memcpy(mine.data() + 8, &need, 8);
  std::memcpy(mine.data() + 16, &avail, 8);
  const std::vector<uint8_t> all = ctl.allgather(mine, 24);
  int64_t total = 0, ranks = 0, least = INT64_MAX;
  for (int r = 0; r < ctl.size(); ++r) {
    int64_t k, n, v;
    std::memcpy(&k, all.data() + 24 * r, 8);
    std::memcpy(&n, all.data() + 24 * r + 8, 8);
    std::memcpy(&v, all.data() + 24 * r + 16, 8);
    if (k != key) continue;
    total += n;
    ++ranks;
    if (v >= 0) least = std::min(least, v);
  }
  const bool short_of = least != INT64_MAX && total > least;
  ctl.agree(short_of ? 2 : 0,
            pool + ": its " + std::to_string(ranks) + " rank(s) need about " + format_bytes(total) +
                " (storages, staging and landings, the largest misc bucket), " + format_bytes(least == INT64_MAX ? 0 : least) +
                " is available: use more GPUs or hosts, a smaller --staging-bytes or --bucket-bytes");
}

// The wait traces this run's transport will write (wait_trace.h): --mpi-trace with the MPI transport,
// --ipc-trace (or RESHARD_CUDA_IPC_TRACE) with cuda-ipc; other transports write none.
std::vector<TraceOutput> trace_outputs(const RunArgs& a) {
  std::vector<TraceOutput> out;
  if (a.transport == "mpi" && !a.mpi_trace.empty()) out.push_back({"--mpi-trace", a.mpi_trace, a.force, {a.plan_path}});
  if (a.transport == "cuda-ipc") {
    const TransportOptions::CudaIpc flags{a.ipc_mode, a.ipc_boxes, a.ipc_batch, a.ipc_memcpy_min, a.ipc_launch_bytes,
                                          a.ipc_trace};
    const std::string prefix = CudaIpcSettings::resolve(flags, 0).trace;
    if (!prefix.empty()) out.push_back({"--ipc-trace", prefix, a.force, {a.plan_path}});
  }
  return out;
}

struct Session {
  Control& ctl;
  Plan plan;
  std::unique_ptr<Transport> transport;
  FaultTransport* fault = nullptr;  // the RESHARD_FAULT test hook, when set (owned by `transport`)
  std::unique_ptr<Memory> memory;
  std::unique_ptr<Executor> exec;

  Session(Control& control, const RunArgs& a) : ctl(control) {
    ctl.set_timeout(a.timeout_s);  // no wait for another rank outlasts --timeout (a bad value: no limit)
    check_build_agreement(ctl);    // first: another build may not even read the same plan
    std::optional<FaultSpec> fault_spec;
    agreed(ctl, [&] {
      const std::string bad = validate(a);
      if (!bad.empty()) throw config_error(bad);
      if (ctl.rank() == 0 && !a.json_path.empty())
        if (const std::string out = output_problem("--json", a.json_path, a.force, {a.plan_path}); !out.empty())
          throw config_error(out);
      for (const TraceOutput& t : trace_outputs(a))  // each rank's own file, before anything moves
        if (const std::string out = wait_trace_problem(t, ctl.rank(), a.json_path); !out.empty())
          throw config_error(out);
      fault_spec = fault_from_env();
    });
    int64_t plan_content = 0;
    agreed(ctl, [&] {
      plan = load_plan(a.plan_path);
      // The content, not the file's bytes: the same plan as JSON on one rank and CBOR on another agrees.
      const std::vector<uint8_t> canonical = encode_plan(plan, PlanFormat::Cbor);
      plan_content = stable_hash(std::string(canonical.begin(), canonical.end()));
    });
    check_plan_agreement(ctl, plan, a.plan_path);
    check_flag_agreement(ctl, a, plan_content);
    // Before any allocation or communication: every transfer, fan-out and bucket in bounds, on its
    // meshes and groups, and no two params in one storage region (a hand-edited plan must not crash a
    // run or move bytes from outside a shard). Every rank checks the same plan, so all agree.
    agreed(ctl, [&] { require_verified(plan, a.plan_path); });
    TransportOptions options;
    options.timeout_s = a.timeout_s;
    options.ipc = {a.ipc_mode, a.ipc_boxes, a.ipc_batch, a.ipc_memcpy_min, a.ipc_launch_bytes, a.ipc_trace};
    options.mpi_trace = a.mpi_trace;
    options.force_traces = a.force;
    options.trace_inputs = {a.plan_path};
    agreed(ctl, [&] { transport = make_transport(a.transport, ctl, options); });
    if (fault_spec) {
      auto wrapped = std::make_unique<FaultTransport>(std::move(transport), *fault_spec, ctl.rank());
      fault = wrapped.get();
      transport = std::move(wrapped);
    }
    transport->setup(plan.groups, a.exec.streams);  // collective; MPI failures here abort
    agreed(ctl, [&] { memory = make_memory_for(*transport); });
    check_memory_fits(ctl, plan, a.exec, *memory);
    agreed(ctl, [&] { exec = std::make_unique<Executor>(plan, ctl.rank(), *transport, *memory, a.exec); });
  }
};

// Times f on every rank between barriers; returns the max over ranks in seconds.
template <class F>
double timed(Control& ctl, F&& f) {
  ctl.barrier();
  const double t0 = ctl.now();
  f();
  const double t = ctl.now() - t0;
  return ctl.max(t);
}

// Exit-code plumbing shared by both commands: agreed errors exit quietly off rank 0, local faults
// abort the world after printing.
// The JSON is published only once complete and never over a non-regular file or the plan
// (output_file.h): an interrupted run leaves no truncated file under the final name.
void write_json_atomic(const std::string& path, const nlohmann::json& j, bool force, const std::string& plan_path) {
  write_output("--json", path, j.dump(2) + "\n", force, {plan_path});
}

// A run that every rank agreed to end in an error still leaves its --json record (status "error"),
// unless the error is the --json path itself, or the file is not ours to write.
void write_error_record(const RunArgs& a, int code, const std::string& message) {
  if (a.json_path.empty()) return;
  try {
    if (!output_problem("--json", a.json_path, a.force, {a.plan_path}).empty()) return;
    write_json_atomic(a.json_path, error_json(a, code, message), a.force, a.plan_path);
  } catch (const std::exception&) {  // best effort: the message above is the report
  }
}

template <class F>
int guarded(const RunArgs& a, F&& body) {
  Control ctl;  // without MPI support this throws the config error that says so
  std::unique_ptr<Session> s;
  try {
    s = std::make_unique<Session>(ctl, a);
    return body(*s);
  } catch (const AgreedError& e) {
    // Rank 0 prints before anyone exits: mpirun kills the stragglers as soon as one rank exits
    // non-zero, which could otherwise swallow the message.
    if (ctl.rank() == 0) {
      std::fprintf(stderr, "reshard: %s\n", e.what());
      std::fflush(stderr);
      write_error_record(a, e.exit_code(), e.what());
    }
    ctl.barrier();
    return e.exit_code();
  } catch (const Error& e) {
    // The world is aborted without tearing the session down: a transport's teardown may wait on the
    // very peer that failed (e.g. a cuda-ipc timeout), and the process ends here anyway.
    (void)s.release();
    std::fprintf(stderr, "reshard: rank %d: %s\n", ctl.rank(), e.what());
    ctl.abort(e.exit_code());
  } catch (const std::exception& e) {
    (void)s.release();
    std::fprintf(stderr, "reshard: rank %d: internal error: %s\n", ctl.rank(), e.what());
    ctl.abort(3);
  }
}

}  // namespace

std::string build_identity() {
  const char* fake = std::getenv("RESHARD_FAKE_VERSION");  // test hook: pose as another build
  const std::string version = fake != nullptr && *fake != '\0' ? fake : RESHARD_VERSION;
  return "reshard " + version + " (plan format " + kPlanFormat + " v" + std::to_string(kPlanVersion) + ")";
}

void check_build_agreement(Control& ctl) {
  const std::string mine = build_identity();
  const int64_t h = stable_hash(mine);
  const int64_t lo = ctl.min(h), hi = ctl.max(h);
  if (lo == hi) return;
  // Name the lowest rank of each extreme, with its build.
  const int a = static_cast<int>(ctl.min(static_cast<int64_t>(h == lo ? ctl.rank() : ctl.size())));
  const int b = static_cast<int>(ctl.min(static_cast<int64_t>(h == hi ? ctl.rank() : ctl.size())));
  const std::string first = ctl.broadcast(mine, a), second = ctl.broadcast(mine, b);
  ctl.agree(2, "ranks run different reshard builds: rank " + std::to_string(std::min(a, b)) + " runs " +
                   (a < b ? first : second) + ", rank " + std::to_string(std::max(a, b)) + " runs " +
                   (a < b ? second : first) + ": run the same reshard binary on every rank");
}

void check_plan_agreement(Control& ctl, const Plan& plan, const std::string& origin) {
  int64_t fp = 0;
  bool parsed = true;
  try {
    size_t used = 0;
    fp = static_cast<int64_t>(std::stoull(plan.fingerprint, &used, 16));
    parsed = used == plan.fingerprint.size();
  } catch (const std::exception&) {
    parsed = false;
  }
  ctl.agree(parsed ? 0 : 2, origin + ": fingerprint '" + plan.fingerprint + "' is not 16 hex digits");
  const int64_t lo = ctl.min(fp), hi = ctl.max(fp);
  if (lo != hi)
    ctl.agree(2, "ranks loaded different plans (fingerprints differ across ranks, e.g. " + plan.fingerprint +
                     " here): give every rank the same --plan file");
  if (ctl.size() != plan.world())
    ctl.agree(2, origin + " is for " + std::to_string(plan.train_world()) + " train + " + std::to_string(plan.gen_world()) +
                     " gen = " + std::to_string(plan.world()) + " ranks, but the world has " + std::to_string(ctl.size()) +
                     ": run mpirun -np " + std::to_string(plan.world()));
}

int run_main(const RunArgs& a) {
  return guarded(a, [&](Session& s) -> int {
    Control& ctl = s.ctl;
    Executor& ex = *s.exec;
    const Algo algo = a.algo == "golden" ? Algo::Golden : Algo::Reshard;
    const int phases = phase_count(s.plan);
    // The record the table and the JSON both render: everything but times and wrong bytes, ceiling
    // included, so that every row is complete when it is printed.
    const bool ceiling = a.ceiling == "on" || (a.ceiling == "auto" && s.memory->kind() == MemoryKind::Device);
    RunReport rep = make_report(ctl, s.plan, ex, algo, *s.transport, *s.memory, a.warmup, a.iters, ceiling);
    const bool rank0 = ctl.rank() == 0;
    if (const std::string advice = node_map_advice(rep.node_map); rank0 && !advice.empty()) {
      std::fprintf(stderr, "reshard: %s\n", advice.c_str());
      std::fflush(stderr);
    }
    auto print = [&](const std::string& text) {
      if (!rank0) return;
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    };
    const std::string mode = rep.transport_mode.empty() ? "" : " " + rep.transport_mode;
    print(format_header(rep, a, s.transport->name() + mode + " (" + s.transport->version() + ", " +
                                    ctl.mpi_library_version() + ")"));
    ex.fill_sources();
    // Row by row, as nccl-tests goes size by size: a row's warm-up and timed iterations, back to back,
    // then the row. The total (every phase at once) runs first: it pays any first-use costs (with
    // --warmup 0), so no phase row, each of which then runs alone, can look slower than the whole. Its
    // row prints last. --check runs the whole list once more, untimed, into poisoned destinations and
    // checks that run alone. Poisoning before every timed iteration put a gap before each (a memset per
    // destination storage) that the phase rows did not have: on two H100 machines, 4096 storages, the
    // total read 1.2-1.8 ms over its one phase with it and -1.0..+0.1 ms without (results/gpu/poison_gap_h100/).
    Progress progress(rank0);
    const int steps = a.warmup + a.iters;
    for (int k = 0; k <= phases; ++k) {
      const int ph = k == 0 ? phases : k - 1;
      PhaseRow& row = rep.rows[static_cast<size_t>(ph)];
      const bool total = ph == phases;
      std::vector<double> times;
      for (int it = 0; it < steps; ++it) {
        if (it == a.warmup && s.fault && total) s.fault->arm();
        const double t = timed(ctl, [&] { total ? ex.run(algo) : ex.run_phase(algo, ph); });
        if (it >= a.warmup) times.push_back(t);
        progress.show(row.name, it + 1, steps, row.bytes * (it + 1));
      }
      set_samples(row, times);
      progress.clear();
      if (total && a.check) {
        ex.poison_destinations();
        timed(ctl, [&] { ex.run(algo); });
        add_wrong(ctl, rep, ex);
      }
      if (!total) print(format_row(rep, row));
    }
    print(format_row(rep, rep.rows.back()) + format_footer(rep));
    agreed(ctl, [&] {
      if (ctl.rank() == 0 && !a.json_path.empty())
        write_json_atomic(a.json_path, report_json(rep, a, s.transport->name(), s.transport->version(),
                                                   ctl.mpi_library_version(), ctl.size()),
                          a.force, a.plan_path);
    });
    if (a.check && rep.wrong_total > 0) {
      if (ctl.rank() == 0)
        std::fprintf(stderr, "reshard: verification failed: %lld wrong bytes; first bad param %s on rank %d\n",
                     static_cast<long long>(rep.wrong_total), rep.first_bad_param.c_str(), rep.first_bad_rank);
      return 1;
    }
    return 0;
  });
}

int verify_execute_main(const RunArgs& a) {
  return guarded(a, [&](Session& s) -> int {
    Control& ctl = s.ctl;
    Executor& ex = *s.exec;
    const bool rank0 = ctl.rank() == 0;
    auto say = [&](const std::string& text) {
      if (!rank0) return;
      std::fputs(text.c_str(), stdout);
      std::fflush(stdout);
    };
    say("# reshard verify --execute\n#  plan: " + a.plan_path + "  fingerprint: " + s.plan.fingerprint +
        "  model: " + s.plan.model_name + "  world: " + std::to_string(ctl.size()) +
        "  transport: " + s.transport->name() + "\n");
    Progress progress(rank0);
    ex.fill_sources();
    ex.poison_destinations();
    if (s.fault) s.fault->arm();
    progress.show("reshard", 0, 2, 0);
    const double t_plan = timed(ctl, [&] { ex.run(Algo::Reshard); });
    std::vector<int64_t> wrong_plan = ex.count_wrong();
    ex.snapshot_destinations();
    ex.poison_destinations();
    progress.clear();
    say("#  plan (reshard) ran in " + std::to_string(t_plan * 1e3) + " ms\n");
    progress.show("golden", 1, 2, 0);
    const double t_golden = timed(ctl, [&] { ex.run(Algo::Golden); });
    progress.clear();
    say("#  golden ran in " + std::to_string(t_golden * 1e3) + " ms; comparing\n");
    std::vector<int64_t> wrong_golden = ex.count_wrong();
    std::vector<int64_t> diff = ex.count_different_from_snapshot();
    // Per rank and param mismatches travel to rank 0 as text lines (capped).
    std::string mine;
    int listed = 0;
    for (size_t p = 0; p < diff.size() && listed < 20; ++p)
      if (diff[p] > 0) {
        mine += "  param " + s.plan.params[p].name + ", rank " + std::to_string(ctl.rank()) + ": " +
                std::to_string(diff[p]) + " bytes differ between plan and golden\n";
        ++listed;
      }
    int64_t compared = 0;
    for (const LocalStorage& st : ex.storages().dst)
      for (const StorageMember& m : st.members)  // MXFP8: e4m3 values plus one scale per 32
        compared += st.mxfp8() ? m.box.elements() + m.box.elements() / 32
                               : m.box.elements() * dtype_size(s.plan.params[m.param].dtype);
    const int64_t diff_local = [&] {
      int64_t n = 0;
      for (int64_t d : diff) n += d;
      return n;
    }();
    const int64_t diff_total = ctl.sum(diff_local);
    const int64_t compared_total = ctl.sum(compared);
    ctl.sum(wrong_plan);
    ctl.sum(wrong_golden);
    int64_t wp = 0, wg = 0;
    for (int64_t w : wrong_plan) wp += w;
    for (int64_t w : wrong_golden) wg += w;
    // Gather the lines: rank by rank through broadcasts from each rank with something to say.
    int64_t any = ctl.sum(mine.empty() ? 0 : 1);
    std::string lines;
    if (any > 0)
      for (int r = 0; r < ctl.size(); ++r) {
        const int64_t speaks = ctl.max(static_cast<int64_t>(r == ctl.rank() && !mine.empty()));
        if (speaks) lines += ctl.broadcast(mine, r);
      }
    if (ctl.rank() == 0) {
      std::printf("#  compared %lld destination bytes over %d gen ranks: plan vs golden %lld differ; "
                  "#wrong vs pattern: plan %lld, golden %lld\n",
                  static_cast<long long>(compared_total), s.plan.gen_world(), static_cast<long long>(diff_total),
                  static_cast<long long>(wp), static_cast<long long>(wg));
      std::fputs(lines.c_str(), stdout);
      const bool ok = diff_total == 0 && wp == 0 && wg == 0;
      std::printf("%s\n", ok ? "VERIFY PASSED: plan and golden agree on every destination byte"
                             : "VERIFY FAILED");
      std::fflush(stdout);
    }
    return diff_total == 0 && wp == 0 && wg == 0 ? 0 : 1;
  });
}

}  // namespace reshard
