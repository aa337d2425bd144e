// What it costs several processes to issue GPU work on ONE GPU at once (the h200-shared-1gpu case:
// without CUDA MPS their contexts time-slice the GPU), against one process alone.
//   mpirun -np P reshard_gpu_timeslice [--mode copies] [--window-s S] [--reps N] [--sizes B,B,...] [--depth D]
//   mpirun -np P reshard_gpu_timeslice --mode slice [--spin-ms MS] [--gap-us US] [--max-gaps N] [--reps N]
// Mode copies (the default). Every rank uses device 0 and its own stream, two buffers of the largest
// size, and runs, all ranks at once, for --window-s seconds of wall time per repetition (so every rank
// contends for the whole window; a fixed step count would let early finishers leave the late ones alone):
//   sync      for each size B: loop { cudaMemcpyAsync(dst, src, B, device-to-device); cudaStreamSynchronize }
//   pipelined for the smallest size: loop { D copies back to back; cudaStreamSynchronize } (the queue
//             never runs dry: what one context's copies cost the GPU without a sync between them)
//   graph     the same D copies as one CUDA graph launch (no host gap between them even where the host
//             issues a copy slower than the GPU runs it)
// Per mode and size it reports, for the median repetition by aggregate rate: each rank's steps and
// seconds, the time per step per rank (mean, min, max over ranks), the aggregate steps/s over all ranks
// (sum of rank rates), its inverse (the GPU's time per step when shared) and the aggregate GB/s of bytes
// copied.
// Mode slice: the GPU's TIME SLICE. Every rank launches at once (after a barrier) one kernel of one
// thread that reads %globaltimer (the GPU's nanosecond clock, one for all contexts) in a tight loop for
// --spin-ms of wall time and records every step between successive reads longer than --gap-us (at most
// --max-gaps of them): the times its context was switched out. Between two gaps the rank ran: one time
// slice; a gap is the other contexts' slices and the switches between them. Only the window where all
// P kernels run counts (from the latest first read to the earliest last one), and only running intervals
// with a gap at both ends (the first and last are cut by the kernel's start and end). Reported over all
// repetitions: running intervals and gaps (count, median, mean, p10, p90, min, max, us), the share of the
// window some rank ran, and two switch costs: from the share, (window - time run) / switches into a rank
// in it, and from one round, (median gap - (P-1) x median slice) / P (a gap holds P-1 other slices and P
// switches). The kernel is PTX loaded at run time (cudaLibraryLoadData), so this stays a plain C++ file
// on the CUDA runtime.
// scripts/gpu_timeslice.sh runs both modes for several P and derives the switch cost and the time slice
// (docs/performance.md, "h200-shared-1gpu"). Output: one JSON document on rank 0's stdout. Exit 2 on bad
// arguments, 3 on a CUDA or MPI failure (every rank aborts).
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

constexpr char kProbeName[] = "gpu_timeslice";
#include "gpu_probe.h"

namespace {

struct Args {
  std::string mode = "copies";
  double window_s = 0.2;
  int reps = 3;
  int depth = 32;
  std::vector<int64_t> sizes = {int64_t{4} << 10, int64_t{1} << 20, int64_t{8} << 20, int64_t{64} << 20};
  double spin_ms = 200;   // mode slice: each kernel's wall time
  double gap_us = 5;      // mode slice: a step between two clock reads longer than this is a gap
  int64_t max_gaps = 16384;  // mode slice: gaps recorded per kernel
};

// "4096", "4Ki", "64Mi", "1Gi": bytes (positive).
bool parse_bytes(const std::string& s, int64_t& out) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end == s.c_str() || errno == ERANGE || v <= 0) return false;
  const std::string unit(end);
  const int shift = unit.empty() ? 0 : unit == "Ki" ? 10 : unit == "Mi" ? 20 : unit == "Gi" ? 30 : -1;
  if (shift < 0 || v > (INT64_MAX >> shift)) return false;
  out = static_cast<int64_t>(v) << shift;
  return true;
}

// Every problem is collected; rank 0 prints them and all ranks exit 2.
bool parse_args(int argc, char** argv, Args& a, std::string& problems) {
  probe_flags(argc, argv, problems, [&](const std::string& flag, const std::string& v) {
    char* end = nullptr;
    if (flag == "--mode") {
      a.mode = v;
      if (v != "copies" && v != "slice") problems += "  --mode: expected copies or slice, got '" + v + "'\n";
    } else if (flag == "--spin-ms" || flag == "--gap-us") {
      const double x = std::strtod(v.c_str(), &end);
      const double hi = flag == "--spin-ms" ? 10000 : 1000;
      if (*end || !(x > 0 && x <= hi)) problems += "  " + flag + ": expected (0, " + std::to_string(static_cast<int>(hi)) + "], got '" + v + "'\n";
      (flag == "--spin-ms" ? a.spin_ms : a.gap_us) = x;
    } else if (flag == "--max-gaps") {
      const long long n = std::strtoll(v.c_str(), &end, 10);
      if (*end || n < 1 || n > (int64_t{1} << 24)) problems += "  --max-gaps: expected 1..16777216, got '" + v + "'\n";
      a.max_gaps = n;
    } else if (flag == "--window-s") {
      a.window_s = std::strtod(v.c_str(), &end);
      if (*end || !(a.window_s > 0 && a.window_s <= 60)) problems += "  --window-s: expected (0, 60], got '" + v + "'\n";
    } else if (flag == "--reps" || flag == "--depth") {
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end || n < 1 || n > 100000) problems += "  " + flag + ": expected 1..100000, got '" + v + "'\n";
      (flag == "--reps" ? a.reps : a.depth) = static_cast<int>(n);
    } else if (flag == "--sizes") {
      a.sizes.clear();
      size_t at = 0;
      while (at <= v.size()) {
        const size_t comma = std::min(v.find(',', at), v.size());
        int64_t b = 0;
        if (!parse_bytes(v.substr(at, comma - at), b))
          problems += "  --sizes: '" + v.substr(at, comma - at) + "' is not a size (4096, 4Ki, 64Mi)\n";
        else
          a.sizes.push_back(b);
        at = comma + 1;
      }
      std::sort(a.sizes.begin(), a.sizes.end());
    } else {
      problems += "  unknown flag '" + flag + "'\n";
    }
  });
  return problems.empty();
}

struct RankRun {
  double seconds = 0;
  int64_t steps = 0;
};

struct Result {
  std::string mode;
  int64_t bytes = 0;
  int copies_per_step = 1;
  std::vector<RankRun> ranks;  // the median repetition
  std::vector<double> rep_rates;
  double rate() const {  // aggregate steps/s
    double r = 0;
    for (const RankRun& x : ranks) r += static_cast<double>(x.steps) / x.seconds;
    return r;
  }
};

class Bench {
 public:
  Bench(const Args& a, int rank, int size) : a_(a), rank_(rank), size_(size) {
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    const int64_t max = a.sizes.back();
    CUDA_CHECK(cudaMalloc(&src_, static_cast<size_t>(max)));
    CUDA_CHECK(cudaMalloc(&dst_, static_cast<size_t>(max)));
    CUDA_CHECK(cudaMemset(src_, rank & 0xff, static_cast<size_t>(max)));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  ~Bench() {
    if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
    if (graph_) cudaGraphDestroy(graph_);
    cudaFree(src_);
    cudaFree(dst_);
    cudaStreamDestroy(stream_);
  }

  // One mode and size: a warm-up window, then `reps` windows; keeps the repetition of median rate.
  // Mode "graph" launches the copies as one captured graph.
  Result measure(const std::string& mode, int64_t bytes, int copies) {
    Result out;
    out.mode = mode;
    out.bytes = bytes;
    out.copies_per_step = copies;
    cudaGraphExec_t exec = mode == "graph" ? graph(bytes, copies) : nullptr;
    window(bytes, copies, exec, std::min(a_.window_s, 0.05));
    std::vector<std::vector<RankRun>> reps;
    for (int r = 0; r < a_.reps; ++r) {
      const RankRun mine = window(bytes, copies, exec, a_.window_s);
      std::vector<RankRun> all(static_cast<size_t>(size_));
      MPI_CHECK(MPI_Allgather(&mine, sizeof(RankRun), MPI_BYTE, all.data(), sizeof(RankRun), MPI_BYTE,
                              MPI_COMM_WORLD));
      reps.push_back(all);
    }
    std::vector<std::pair<double, size_t>> by_rate;
    for (size_t r = 0; r < reps.size(); ++r) {
      Result tmp;
      tmp.ranks = reps[r];
      by_rate.push_back({tmp.rate(), r});
      out.rep_rates.push_back(tmp.rate());
    }
    std::sort(by_rate.begin(), by_rate.end());
    out.ranks = reps[by_rate[by_rate.size() / 2].second];
    return out;
  }

 private:
  // `copies` device-to-device copies of `bytes` captured on the stream as one graph (kept until the end).
  cudaGraphExec_t graph(int64_t bytes, int copies) {
    CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    for (int c = 0; c < copies; ++c)
      CUDA_CHECK(cudaMemcpyAsync(dst_, src_, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream_));
    CUDA_CHECK(cudaStreamEndCapture(stream_, &graph_));
    CUDA_CHECK(cudaGraphInstantiate(&graph_exec_, graph_, 0));
    return graph_exec_;
  }

  // All ranks start together (barrier) and each issues steps until its own clock passes the window.
  RankRun window(int64_t bytes, int copies, cudaGraphExec_t exec, double seconds) {
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    RankRun run;
    const double t0 = MPI_Wtime();
    double now = t0;
    do {
      if (exec) {
        CUDA_CHECK(cudaGraphLaunch(exec, stream_));
      } else {
        for (int c = 0; c < copies; ++c)
          CUDA_CHECK(cudaMemcpyAsync(dst_, src_, static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, stream_));
      }
      CUDA_CHECK(cudaStreamSynchronize(stream_));
      ++run.steps;
      now = MPI_Wtime();
    } while (now - t0 < seconds);
    run.seconds = now - t0;
    return run;
  }

  const Args& a_;
  int rank_, size_;
  cudaStream_t stream_ = nullptr;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t graph_exec_ = nullptr;
  void* src_ = nullptr;
  void* dst_ = nullptr;
};

void print_json(const Args& a, int size, const std::vector<Result>& results) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  std::printf("{\"format\": \"reshard-gpu-timeslice\", \"version\": 1, \"ranks\": %d, \"device\": \"%s\",\n"
              " \"cuda_runtime\": %d, \"cuda_driver\": %d, \"window_s\": %.3f, \"reps\": %d, \"depth\": %d,\n"
              " \"records\": [",
              size, prop.name, runtime, driver, a.window_s, a.reps, a.depth);
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    double mean = 0, lo = 1e30, hi = 0;
    int64_t steps = 0;
    for (const RankRun& x : r.ranks) {
      const double us = x.seconds / static_cast<double>(x.steps) * 1e6;
      mean += us / static_cast<double>(r.ranks.size());
      lo = std::min(lo, us);
      hi = std::max(hi, us);
      steps += x.steps;
    }
    const double rate = r.rate();
    std::printf("%s\n  {\"mode\": \"%s\", \"bytes\": %lld, \"copies_per_step\": %d, \"steps\": %lld,"
                " \"step_us_per_rank\": %.3f, \"step_us_per_rank_min\": %.3f, \"step_us_per_rank_max\": %.3f,"
                " \"aggregate_steps_per_s\": %.1f, \"aggregate_step_us\": %.4f, \"aggregate_gbps\": %.3f,"
                " \"rep_aggregate_steps_per_s\": [",
                i ? "," : "", r.mode.c_str(), static_cast<long long>(r.bytes), r.copies_per_step,
                static_cast<long long>(steps), mean, lo, hi, rate, 1e6 / rate,
                rate * static_cast<double>(r.bytes) * r.copies_per_step / 1e9);
    for (size_t k = 0; k < r.rep_rates.size(); ++k) std::printf("%s%.1f", k ? ", " : "", r.rep_rates[k]);
    std::printf("], \"rank_steps\": [");
    for (size_t k = 0; k < r.ranks.size(); ++k)
      std::printf("%s%lld", k ? ", " : "", static_cast<long long>(r.ranks[k].steps));
    std::printf("], \"rank_seconds\": [");
    for (size_t k = 0; k < r.ranks.size(); ++k) std::printf("%s%.6f", k ? ", " : "", r.ranks[k].seconds);
    std::printf("]}");
  }
  std::printf("\n]}\n");
}

// ---- Mode slice: the time slice ----

// One thread reads %globaltimer until `duration` ns have passed since its first read; each step between
// two reads longer than `gap` ns is stored as (read before, read after) from out + 32 B, at most `cap` of
// them. out[0..3]: first read, last read, gaps seen (may exceed cap), reads. PTX (JIT-compiled by the
// driver for the device), so no nvcc is needed to build this file.
constexpr char kSpinPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry reshard_spin(.param .u64 out_param, .param .u64 duration_param, .param .u64 gap_param,
                             .param .u64 cap_param)
{
  .reg .pred %p<4>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [out_param];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [duration_param];
  ld.param.u64 %rd3, [gap_param];
  ld.param.u64 %rd4, [cap_param];
  mov.u64 %rd5, %globaltimer;
  mov.u64 %rd6, %rd5;
  mov.u64 %rd7, 0;
  mov.u64 %rd12, 0;
  add.u64 %rd8, %rd1, 32;
LOOP:
  mov.u64 %rd9, %globaltimer;
  add.u64 %rd12, %rd12, 1;
  sub.u64 %rd10, %rd9, %rd6;
  setp.le.u64 %p1, %rd10, %rd3;
  @%p1 bra NEXT;
  setp.ge.u64 %p2, %rd7, %rd4;
  @%p2 bra COUNT;
  st.global.u64 [%rd8], %rd6;
  st.global.u64 [%rd8+8], %rd9;
  add.u64 %rd8, %rd8, 16;
COUNT:
  add.u64 %rd7, %rd7, 1;
NEXT:
  mov.u64 %rd6, %rd9;
  sub.u64 %rd11, %rd9, %rd5;
  setp.lt.u64 %p3, %rd11, %rd2;
  @%p3 bra LOOP;
  st.global.u64 [%rd1], %rd5;
  st.global.u64 [%rd1+8], %rd6;
  st.global.u64 [%rd1+16], %rd7;
  st.global.u64 [%rd1+24], %rd12;
  ret;
}
)";

struct Spin {  // one kernel's header (the words at out[0..3])
  uint64_t first = 0, last = 0, gaps = 0, reads = 0;
};

class SliceBench {
 public:
  explicit SliceBench(const Args& a) : a_(a) {
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaLibraryLoadData(&lib_, kSpinPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    CUDA_CHECK(cudaLibraryGetKernel(&kernel_, lib_, "reshard_spin"));
    CUDA_CHECK(cudaMalloc(&buf_, static_cast<size_t>(4 + 2 * a.max_gaps) * sizeof(uint64_t)));
    CUDA_CHECK(cudaDeviceSynchronize());
  }
  ~SliceBench() {
    cudaFree(buf_);
    cudaLibraryUnload(lib_);
    cudaStreamDestroy(stream_);
  }

  // One kernel of `ms` wall time; `gaps` gets its recorded gaps as (before, after) pairs, ns.
  Spin run(double ms, std::vector<uint64_t>& gaps) {
    uint64_t duration = static_cast<uint64_t>(ms * 1e6), gap = static_cast<uint64_t>(a_.gap_us * 1e3);
    uint64_t cap = static_cast<uint64_t>(a_.max_gaps);
    void* args[] = {&buf_, &duration, &gap, &cap};
    CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel_), dim3(1), dim3(1), args, 0, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
    Spin s;
    CUDA_CHECK(cudaMemcpy(&s, buf_, sizeof s, cudaMemcpyDeviceToHost));
    gaps.assign(2 * std::min(s.gaps, cap), 0);
    if (!gaps.empty())
      CUDA_CHECK(cudaMemcpy(gaps.data(), static_cast<uint64_t*>(buf_) + 4, gaps.size() * sizeof(uint64_t),
                            cudaMemcpyDeviceToHost));
    return s;
  }

 private:
  const Args& a_;
  cudaStream_t stream_ = nullptr;
  cudaLibrary_t lib_ = nullptr;
  cudaKernel_t kernel_ = nullptr;
  void* buf_ = nullptr;
};

// One repetition as rank 0 sees it: every rank's kernel.
struct SliceRep {
  double window_us = 0;  // all kernels running: latest first read to earliest last (known) read
  double run_us = 0;     // time some rank ran inside the window, summed over ranks
  int64_t switches = 0;  // gaps ending inside the window: the GPU switched into a rank
  std::vector<double> running, gaps;  // us; running intervals with a gap at both ends, gaps, inside the window
  bool truncated = false;
  double read_ns = 0;  // mean time per clock read over ranks
  std::vector<std::pair<double, double>> spans;  // per rank: first and last read, us after the earliest first
};

SliceRep analyse(const std::vector<Spin>& spins, const std::vector<std::vector<uint64_t>>& gaps) {
  SliceRep rep;
  const size_t ranks = spins.size();
  std::vector<uint64_t> end(ranks);
  uint64_t lo = 0, hi = UINT64_MAX;
  for (size_t r = 0; r < ranks; ++r) {
    const size_t n = gaps[r].size() / 2;
    rep.truncated |= spins[r].gaps > n;
    end[r] = spins[r].gaps > n && n > 0 ? gaps[r][2 * n - 1] : spins[r].last;  // after the last gap recorded
    lo = std::max(lo, spins[r].first);
    hi = std::min(hi, end[r]);
    rep.read_ns += static_cast<double>(spins[r].last - spins[r].first) /
                   static_cast<double>(std::max<uint64_t>(spins[r].reads, 1)) / static_cast<double>(ranks);
  }
  uint64_t origin = UINT64_MAX;
  for (const Spin& sp : spins) origin = std::min(origin, sp.first);
  for (size_t r = 0; r < ranks; ++r)
    rep.spans.push_back({static_cast<double>(spins[r].first - origin) * 1e-3, static_cast<double>(end[r] - origin) * 1e-3});
  if (hi <= lo) return rep;  // the kernels did not overlap (ran one after another: no time-slicing)
  rep.window_us = static_cast<double>(hi - lo) * 1e-3;
  auto overlap = [&](uint64_t a, uint64_t b) { return a < hi && b > lo ? std::min(b, hi) - std::max(a, lo) : 0; };
  for (size_t r = 0; r < ranks; ++r) {
    const std::vector<uint64_t>& g = gaps[r];
    const size_t n = g.size() / 2;
    uint64_t start = spins[r].first;
    for (size_t i = 0; i <= n; ++i) {  // running interval i: [start, next gap's before] (the last: to the end)
      const uint64_t stop = i < n ? g[2 * i] : end[r];
      rep.run_us += static_cast<double>(overlap(start, stop)) * 1e-3;
      if (i > 0 && i < n && start >= lo && stop <= hi) rep.running.push_back(static_cast<double>(stop - start) * 1e-3);
      if (i == n) break;
      const uint64_t before = g[2 * i], after = g[2 * i + 1];
      if (before >= lo && after <= hi) rep.gaps.push_back(static_cast<double>(after - before) * 1e-3);
      if (after > lo && after < hi) ++rep.switches;
      start = after;
    }
  }
  return rep;
}

// count, median, mean, p10, p90, min, max of `v` as a JSON object (only the count when empty).
std::string dist_json(std::vector<double> v) {
  if (v.empty()) return "{\"count\": 0}";
  std::sort(v.begin(), v.end());
  auto q = [&](double f) {
    const double at = f * static_cast<double>(v.size() - 1);
    const size_t i = static_cast<size_t>(at);
    return i + 1 < v.size() ? v[i] + (at - static_cast<double>(i)) * (v[i + 1] - v[i]) : v[i];
  };
  double mean = 0;
  for (double x : v) mean += x / static_cast<double>(v.size());
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "{\"count\": %zu, \"median\": %.3f, \"mean\": %.3f, \"p10\": %.3f, \"p90\": %.3f, \"min\": %.3f, \"max\": %.3f}",
                v.size(), q(0.5), mean, q(0.1), q(0.9), v.front(), v.back());
  return buf;
}

// The slice record over every repetition (rank 0).
void print_slice_json(const Args& a, int size, const char* device, int runtime, int driver,
                      const std::vector<SliceRep>& reps, const std::vector<int64_t>& rank_gaps) {
  std::vector<double> running, gaps;
  double window = 0, run = 0, read_ns = 0;
  int64_t switches = 0;
  bool truncated = false;
  for (const SliceRep& r : reps) {
    running.insert(running.end(), r.running.begin(), r.running.end());
    gaps.insert(gaps.end(), r.gaps.begin(), r.gaps.end());
    window += r.window_us;
    run += r.run_us;
    switches += r.switches;
    truncated |= r.truncated;
    read_ns += r.read_ns / static_cast<double>(reps.size());
  }
  std::printf("{\"format\": \"reshard-gpu-timeslice-slice\", \"version\": 1, \"ranks\": %d, \"device\": \"%s\",\n"
              " \"cuda_runtime\": %d, \"cuda_driver\": %d, \"spin_ms\": %.3f, \"gap_threshold_us\": %.3f,"
              " \"max_gaps\": %lld, \"reps\": %d,\n",
              size, device, runtime, driver, a.spin_ms, a.gap_us, static_cast<long long>(a.max_gaps), a.reps);
  std::printf(" \"read_ns\": %.2f, \"truncated\": %s, \"window_us\": %.3f, \"run_us\": %.3f, \"run_share\": %s,"
              " \"switches\": %lld,\n",
              read_ns, truncated ? "true" : "false", window, run,
              window > 0 ? std::to_string(run / window).c_str() : "null", static_cast<long long>(switches));
  const double ms = probe_median(running), mg = probe_median(gaps);
  std::printf(" \"switch_from_share_us\": %s, \"switch_from_round_us\": %s,\n",
              switches > 0 ? std::to_string((window - run) / static_cast<double>(switches)).c_str() : "null",
              !running.empty() && !gaps.empty() ? std::to_string((mg - (size - 1) * ms) / size).c_str() : "null");
  std::printf(" \"running_us\": %s,\n \"gaps_us\": %s,\n \"per_rep\": [",
              dist_json(running).c_str(), dist_json(gaps).c_str());
  for (size_t i = 0; i < reps.size(); ++i) {
    const SliceRep& r = reps[i];
    std::printf("%s\n  {\"window_us\": %.3f, \"run_share\": %.4f, \"switches\": %lld, \"running_median_us\": %.3f,"
                " \"running_count\": %zu, \"gap_median_us\": %.3f, \"gap_count\": %zu, \"spans_us\": [",
                i ? "," : "", r.window_us, r.window_us > 0 ? r.run_us / r.window_us : 0.0,
                static_cast<long long>(r.switches), probe_median(r.running), r.running.size(), probe_median(r.gaps),
                r.gaps.size());
    for (size_t k = 0; k < r.spans.size(); ++k)
      std::printf("%s[%.1f, %.1f]", k ? ", " : "", r.spans[k].first, r.spans[k].second);
    std::printf("]}");
  }
  std::printf("],\n \"rank_gaps\": [");
  for (int r = 0; r < size; ++r) std::printf("%s%lld", r ? ", " : "", static_cast<long long>(rank_gaps[r]));
  std::printf("]}\n");
}

// Mode slice on every rank; rank 0 prints the JSON.
void run_slice(const Args& a, int rank, int size) {
  SliceBench bench(a);
  std::vector<uint64_t> mine;
  bench.run(1.0, mine);  // loads and JIT-compiles the kernel outside the measurement
  std::vector<SliceRep> reps;
  std::vector<int64_t> rank_gaps(static_cast<size_t>(size), 0);
  for (int rep = 0; rep < a.reps; ++rep) {
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    const Spin s = bench.run(a.spin_ms, mine);
    std::vector<Spin> spins(static_cast<size_t>(size));
    MPI_CHECK(MPI_Gather(&s, sizeof s, MPI_BYTE, spins.data(), sizeof s, MPI_BYTE, 0, MPI_COMM_WORLD));
    const int count = static_cast<int>(mine.size());
    std::vector<int> counts(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
    MPI_CHECK(MPI_Gather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, MPI_COMM_WORLD));
    std::vector<uint64_t> all;
    if (rank == 0) {
      for (int r = 1; r < size; ++r) offsets[r] = offsets[r - 1] + counts[r - 1];
      all.resize(static_cast<size_t>(offsets.back() + counts.back()));
    }
    MPI_CHECK(MPI_Gatherv(mine.data(), count, MPI_UINT64_T, all.data(), counts.data(), offsets.data(), MPI_UINT64_T,
                          0, MPI_COMM_WORLD));
    if (rank != 0) continue;
    std::vector<std::vector<uint64_t>> gaps(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
      gaps[r].assign(all.begin() + offsets[r], all.begin() + offsets[r] + counts[r]);
      rank_gaps[r] += static_cast<int64_t>(spins[r].gaps);
    }
    reps.push_back(analyse(spins, gaps));
  }
  if (rank != 0) return;
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  print_slice_json(a, size, prop.name, runtime, driver, reps, rank_gaps);
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  Args a;
  if (!probe_start(argc, argv, a, parse_args, rank, size)) return 2;
  if (a.mode == "slice") {
    run_slice(a, rank, size);
    MPI_Finalize();
    return 0;
  }
  std::vector<Result> results;
  {
    Bench bench(a, rank, size);
    for (int64_t b : a.sizes) results.push_back(bench.measure("sync", b, 1));
    results.push_back(bench.measure("pipelined", a.sizes.front(), a.depth));
    results.push_back(bench.measure("graph", a.sizes.front(), a.depth));
  }
  if (rank == 0) print_json(a, size, results);
  MPI_Finalize();
  return 0;
}
