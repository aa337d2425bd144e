// What it costs several processes to issue GPU work on ONE GPU at once (the h200-shared-1gpu case:
// without CUDA MPS their contexts time-slice the GPU), against one process alone.
//   mpirun -np P reshard_gpu_timeslice [--window-s S] [--reps N] [--sizes B,B,...] [--depth D]
// Every rank uses device 0 and its own stream, two buffers of the largest size, and runs, all ranks
// at once, for --window-s seconds of wall time per repetition (so every rank contends for the whole
// window; a fixed step count would let early finishers leave the late ones alone):
//   sync      for each size B: loop { cudaMemcpyAsync(dst, src, B, device-to-device); cudaStreamSynchronize }
//   pipelined for the smallest size: loop { D copies back to back; cudaStreamSynchronize } (the queue
//             never runs dry: what one context's copies cost the GPU without a sync between them)
//   graph     the same D copies as one CUDA graph launch (no host gap between them even where the host
//             issues a copy slower than the GPU runs it)
// Per mode and size it reports, for the median repetition by aggregate rate: each rank's steps and
// seconds, the time per step per rank (mean, min, max over ranks), the aggregate steps/s over all ranks
// (sum of rank rates), its inverse (the GPU's time per step when shared) and the aggregate GB/s of bytes
// copied. scripts/gpu_timeslice.sh runs it for several P and derives the switch cost (docs/performance.md,
// "h200-shared-1gpu"). Output: one JSON document on rank 0's stdout. Exit 2 on bad arguments, 3 on a
// CUDA or MPI failure (every rank aborts).
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

namespace {

[[noreturn]] void die(const char* what, const char* detail, const char* file, int line) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "gpu_timeslice: rank %d: %s failed: %s (%s:%d)\n", rank, what, detail, file, line);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();
}

#define CUDA_CHECK(call)                                                          \
  do {                                                                            \
    const cudaError_t e_ = (call);                                                \
    if (e_ != cudaSuccess) die(#call, cudaGetErrorString(e_), __FILE__, __LINE__); \
  } while (0)

#define MPI_CHECK(call)                                                             \
  do {                                                                              \
    const int e_ = (call);                                                          \
    if (e_ != MPI_SUCCESS) {                                                        \
      char s_[MPI_MAX_ERROR_STRING];                                                \
      int n_ = 0;                                                                   \
      MPI_Error_string(e_, s_, &n_);                                                \
      die(#call, s_, __FILE__, __LINE__);                                           \
    }                                                                               \
  } while (0)

struct Args {
  double window_s = 0.2;
  int reps = 3;
  int depth = 32;
  std::vector<int64_t> sizes = {int64_t{4} << 10, int64_t{1} << 20, int64_t{8} << 20, int64_t{64} << 20};
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
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      problems += "  " + flag + ": missing value (or unknown flag)\n";
      break;
    }
    const std::string v = argv[++i];
    char* end = nullptr;
    if (flag == "--window-s") {
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
  }
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

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Args a;
  std::string problems;
  if (!parse_args(argc, argv, a, problems)) {
    if (rank == 0) std::fprintf(stderr, "gpu_timeslice: bad arguments:\n%s", problems.c_str());
    MPI_Finalize();
    return 2;
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
