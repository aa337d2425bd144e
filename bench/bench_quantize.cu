// MXFP8 quantize throughput on one GPU against the device copy ceiling measured
// in the same run.
//   bench_quantize OUT.json [--mib N] [--iters N]
// Reports GB/s of BF16 read (1 GB/s = 1e9 B/s) for cuda_quantize_mxfp8 on a
// dense [rows, 7168] tensor and for cudaMemcpyAsync device-to-device of the
// same BF16 bytes, best and median of the timed iterations (CUDA events), and
// the ratio quantize / copy (issue 6 goal: >= 0.7), for each element
// conversion (Mxfp8Convert; hardware is the default). Also a fused-box case (a
// gate half of a w13 [E, 2I, K] storage) and a check that the device bytes
// match the CPU reference on the first 4 MiB. Writes the same numbers as JSON
// to OUT.json (replaced).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "reshard/core/mxfp8.h"
#include "cuda_quantize.h"

namespace {

#define CHECK(call)                                                            \
  do {                                                                         \
    const cudaError_t e_ = (call);                                             \
    if (e_ != cudaSuccess) {                                                   \
      std::fprintf(stderr, "bench_quantize: %s failed: %s\n", #call,           \
                   cudaGetErrorString(e_));                                    \
      std::exit(3);                                                            \
    }                                                                          \
  } while (0)

struct Timing {
  double best_ms = 0, median_ms = 0;
};

template <class F> Timing time_it(int iters, F &&f) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  f(); // warm-up
  CHECK(cudaDeviceSynchronize());
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    CHECK(cudaEventRecord(a));
    f();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return {ms.front(), ms[ms.size() / 2]};
}

double gbps(int64_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e-3) / 1e9 : 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: bench_quantize OUT.json [--mib N] [--iters N]\n");
    return 2;
  }
  const std::string out_path = argv[1];
  int64_t mib = 1024;
  int iters = 20;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--mib") == 0)
      mib = std::atoll(argv[i + 1]);
    else if (std::strcmp(argv[i], "--iters") == 0)
      iters = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "bench_quantize: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (mib < 4 || iters < 1) {
    std::fprintf(stderr,
                 "bench_quantize: --mib must be >= 4 and --iters >= 1\n");
    return 2;
  }
  int device = 0;
  CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, device));

  const int64_t k = 7168;
  const int64_t rows = (mib << 20) / (2 * k);
  const reshard::Dims extent{rows, k};
  const int64_t n = rows * k, bf16_bytes = n * 2;
  void *in = nullptr, *copy = nullptr, *values = nullptr, *scales = nullptr;
  CHECK(cudaMalloc(&in, static_cast<size_t>(bf16_bytes)));
  CHECK(cudaMalloc(&copy, static_cast<size_t>(bf16_bytes)));
  CHECK(cudaMalloc(&values, static_cast<size_t>(n)));
  CHECK(cudaMalloc(&scales, static_cast<size_t>(n / 32)));
  // Random normal-ish BF16 weights (magnitudes near 2^-6), so blocks look like
  // real checkpoints.
  std::vector<uint16_t> host(
      static_cast<size_t>(std::min<int64_t>(n, int64_t{2} << 20)));
  std::mt19937_64 rng(1);
  for (auto &h : host)
    h = static_cast<uint16_t>(((rng() & 1) << 15) | ((117 + rng() % 8) << 7) |
                              (rng() & 0x7F));
  for (int64_t at = 0; at < n; at += static_cast<int64_t>(host.size())) {
    const int64_t len =
        std::min<int64_t>(static_cast<int64_t>(host.size()), n - at);
    CHECK(cudaMemcpy(static_cast<uint16_t *>(in) + at, host.data(),
                     static_cast<size_t>(len * 2), cudaMemcpyHostToDevice));
  }

  const Timing cp = time_it(iters, [&] {
    CHECK(cudaMemcpyAsync(copy, in, static_cast<size_t>(bf16_bytes),
                          cudaMemcpyDeviceToDevice));
  });
  // Fused box: the gate half [E, I, K] of a w13 [E, 2I, K] storage (strided
  // rows).
  const int64_t e = 8, inter = rows / (2 * e) > 0 ? rows / (2 * e) : 1;
  const reshard::Dims half{e, inter, k}, fused{e, 2 * inter, k};
  const int64_t half_bytes = half.product() * 2;
  const int64_t check_rows =
      std::min<int64_t>(rows, (int64_t{4} << 20) / (2 * k));
  std::vector<uint16_t> src(static_cast<size_t>(check_rows * k));
  std::vector<uint8_t> want_v(src.size()), want_s(src.size() / 32);
  CHECK(cudaMemcpy(src.data(), in, src.size() * 2, cudaMemcpyDeviceToHost));
  reshard::mxfp8_quantize(src.data(), reshard::Dims{check_rows, k},
                          want_v.data(), want_s.data());

  // Both element conversions (the default, hardware, first).
  struct Result {
    const char *name;
    Timing dense, fused;
    bool match = false;
  };
  std::vector<Result> results;
  for (const auto convert : {reshard::Mxfp8Convert::kHardware,
                             reshard::Mxfp8Convert::kInteger}) {
    Result r;
    r.name = convert == reshard::Mxfp8Convert::kHardware ? "hardware"
                                                          : "integer";
    r.dense = time_it(iters, [&] {
      reshard::cuda_quantize_mxfp8(in, extent, values, scales, extent,
                                   reshard::Dims{0, 0}, nullptr, convert);
    });
    r.fused = time_it(iters, [&] {
      reshard::cuda_quantize_mxfp8(in, half, values, scales, fused,
                                   reshard::Dims{0, inter, 0}, nullptr,
                                   convert);
    });
    // Device bytes against the CPU reference on the first rows.
    CHECK(cudaMemset(values, 0xA5, static_cast<size_t>(n)));
    CHECK(cudaMemset(scales, 0xA5, static_cast<size_t>(n / 32)));
    reshard::cuda_quantize_mxfp8(in, extent, values, scales, extent,
                                 reshard::Dims{0, 0}, nullptr, convert);
    CHECK(cudaDeviceSynchronize());
    std::vector<uint8_t> got_v(src.size()), got_s(src.size() / 32);
    CHECK(cudaMemcpy(got_v.data(), values, got_v.size(),
                     cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(got_s.data(), scales, got_s.size(),
                     cudaMemcpyDeviceToHost));
    r.match = got_v == want_v && got_s == want_s;
    results.push_back(r);
  }
  bool match = true;
  for (const Result &r : results)
    match = match && r.match;

  const double copy_gbps = gbps(bf16_bytes, cp.best_ms);
  std::printf("# bench_quantize: %s, BF16 [%lld, %lld] = %.1f MiB, %d iters "
              "(best / median)\n",
              prop.name, static_cast<long long>(rows),
              static_cast<long long>(k), bf16_bytes / 1048576.0, iters);
  std::printf("  copy D2D                 %8.3f / %8.3f ms  %8.1f GB/s of "
              "BF16\n",
              cp.best_ms, cp.median_ms, copy_gbps);
  for (const Result &r : results) {
    const double dg = gbps(bf16_bytes, r.dense.best_ms),
                 fg = gbps(half_bytes, r.fused.best_ms);
    std::printf("  quantize dense %-9s %8.3f / %8.3f ms  %8.1f GB/s of BF16  "
                "(%.2f of copy)\n",
                r.name, r.dense.best_ms, r.dense.median_ms, dg, dg / copy_gbps);
    std::printf("  quantize fused %-9s %8.3f / %8.3f ms  %8.1f GB/s of BF16  "
                "(%.2f of copy)\n",
                r.name, r.fused.best_ms, r.fused.median_ms, fg, fg / copy_gbps);
    std::printf("  %s: device vs CPU reference on %lld rows: %s\n", r.name,
                static_cast<long long>(check_rows),
                r.match ? "identical" : "DIFFERENT");
  }

  const std::string tmp = out_path + ".tmp";
  {
    std::ofstream j(tmp);
    j << "{\n  \"benchmark\": \"bench_quantize\",\n  \"device\": \""
      << prop.name << "\",\n"
      << "  \"shape\": [" << rows << ", " << k
      << "],\n  \"bf16_bytes\": " << bf16_bytes << ",\n"
      << "  \"iters\": " << iters << ",\n"
      << "  \"copy_d2d\": {\"best_ms\": " << cp.best_ms
      << ", \"median_ms\": " << cp.median_ms << ", \"gbps\": " << copy_gbps
      << "},\n";
    // quantize_dense / quantize_fused_box: the default (hardware) conversion;
    // the *_integer records: the integer one.
    for (const Result &r : results) {
      const std::string suffix =
          std::string(r.name) == "hardware" ? "" : "_" + std::string(r.name);
      const double dg = gbps(bf16_bytes, r.dense.best_ms),
                   fg = gbps(half_bytes, r.fused.best_ms);
      j << "  \"quantize_dense" << suffix
        << "\": {\"best_ms\": " << r.dense.best_ms
        << ", \"median_ms\": " << r.dense.median_ms << ", \"gbps\": " << dg
        << ", \"fraction_of_copy\": " << dg / copy_gbps
        << ", \"matches_cpu_reference\": " << (r.match ? "true" : "false")
        << "},\n"
        << "  \"quantize_fused_box" << suffix
        << "\": {\"bf16_bytes\": " << half_bytes
        << ", \"best_ms\": " << r.fused.best_ms
        << ", \"median_ms\": " << r.fused.median_ms << ", \"gbps\": " << fg
        << ", \"fraction_of_copy\": " << fg / copy_gbps << "},\n";
    }
    j << "  \"matches_cpu_reference\": " << (match ? "true" : "false")
      << "\n}\n";
    if (!j) {
      std::fprintf(stderr, "bench_quantize: cannot write %s\n", tmp.c_str());
      return 3;
    }
  }
  std::rename(tmp.c_str(), out_path.c_str());
  cudaFree(in);
  cudaFree(copy);
  cudaFree(values);
  cudaFree(scales);
  return match ? 0 : 1;
}
