// What one executor pack or unpack launch (`Memory::copy_box` → cuda_copy_box) costs the issuing host
// thread, with the rank alone on its GPU (P = 1) and with P processes time-slicing one GPU (no MPS, the
// `*-shared-1gpu` presets' case):
//   mpirun -np P reshard_copy_box_launch [--launches N] [--reps R]
// Every rank uses device 0 and one non-blocking stream (as CudaContext makes them). Cases: a box
// contiguous in source and destination (one cudaMemcpyAsync) and a column cut of a row-major 2-D
// tensor of 2-byte elements into a dense buffer (the row-copy kernel), each of 4 KiB, 64 KiB and 1 MiB.
// Per case and repetition, all ranks start together (a barrier) and each times N calls back to back:
//   issue_us  host time per call until the N-th returns (what simulate's `per_launch_us` prices);
//   drain_us  host time per call until the stream has run all N (the GPU's pace when it is slower).
// N stays under the driver's queue depth so issuing never blocks on a full queue. Reported per case:
// each rank's median over repetitions, then the mean, min and max over ranks. Output: one JSON
// document on rank 0's stdout. Exit 2 on bad arguments, 3 on a CUDA or MPI failure (every rank aborts).
// scripts/gpu_copy_box_launch.sh runs it for several P (docs/calibration.md, "Copy launches alone").
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda_region_ops.h"

constexpr char kProbeName[] = "reshard_copy_box_launch";
#include "gpu_probe.h"

namespace {

struct Args {
  int launches = 256;
  int reps = 9;
};

bool parse_args(int argc, char** argv, Args& a, std::string& problems) {
  probe_flags(argc, argv, problems, [&](const std::string& flag, const std::string& v) {
    char* end = nullptr;
    if (flag == "--launches" || flag == "--reps") {
      const long n = std::strtol(v.c_str(), &end, 10);
      if (*end || n < 1 || n > 1000) problems += "  " + flag + ": expected 1..1000, got '" + v + "'\n";
      (flag == "--launches" ? a.launches : a.reps) = static_cast<int>(n);
    } else {
      problems += "  unknown flag '" + flag + "'\n";
    }
  });
  return problems.empty();
}

struct Case {
  const char* kind;  // "contiguous" (cudaMemcpyAsync) or "strided" (the row-copy kernel)
  int64_t bytes;
  reshard::Dims src_shape, src_offset, extent;
};

// rows x cols 2-byte elements cut from columns [cols, 2 cols) of a [rows, 2 cols] tensor.
Case strided(int64_t rows, int64_t cols) {
  return {"strided", rows * cols * 2, {rows, 2 * cols}, {0, cols}, {rows, cols}};
}
Case contiguous(int64_t bytes) { return {"contiguous", bytes, {bytes / 2}, {0}, {bytes / 2}}; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  Args a;
  if (!probe_start(argc, argv, a, parse_args, rank, size)) return 2;
  CUDA_CHECK(cudaSetDevice(0));
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const std::vector<Case> cases = {contiguous(4096),  contiguous(65536), contiguous(1 << 20),
                                   strided(16, 128),  strided(64, 512),  strided(512, 1024)};
  constexpr size_t kBuffer = size_t{4} << 20;  // every case's source tensor fits
  void *src = nullptr, *dst = nullptr;
  CUDA_CHECK(cudaMalloc(&src, kBuffer));
  CUDA_CHECK(cudaMalloc(&dst, kBuffer));
  CUDA_CHECK(cudaMemset(src, 0x5a, kBuffer));

  struct Result {
    double issue_us, drain_us;
  };
  std::vector<Result> mine;
  for (const Case& c : cases) {
    const reshard::Dims dst_zero = reshard::Dims::zeros(c.extent.n);
    auto launch = [&] {
      reshard::cuda_copy_box(src, c.src_shape, c.src_offset, dst, c.extent, dst_zero, c.extent, 2, stream);
    };
    launch();  // first launch of this kernel or copy: module load, outside the measurement
    CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<double> issue, drain;
    for (int rep = 0; rep < a.reps; ++rep) {
      MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < a.launches; ++i) launch();
      issue.push_back(seconds_since(t0) * 1e6 / a.launches);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      drain.push_back(seconds_since(t0) * 1e6 / a.launches);
    }
    mine.push_back({probe_median(issue), probe_median(drain)});
  }

  std::vector<Result> all(rank == 0 ? mine.size() * static_cast<size_t>(size) : 0);
  MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size() * 2), MPI_DOUBLE, all.data(),
                       static_cast<int>(mine.size() * 2), MPI_DOUBLE, 0, MPI_COMM_WORLD));
  if (rank == 0) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("{\"format\": \"reshard-copy-box-launch\", \"version\": 1, \"ranks\": %d, \"device\": \"%s\", "
                "\"launches\": %d, \"reps\": %d,\n \"cases\": [",
                size, prop.name, a.launches, a.reps);
    for (size_t k = 0; k < cases.size(); ++k) {
      double stat[2][3] = {{0, 1e300, 0}, {0, 1e300, 0}};  // {issue, drain} x {mean, min, max}
      for (int r = 0; r < size; ++r) {
        const Result& x = all[static_cast<size_t>(r) * cases.size() + k];
        const double v[2] = {x.issue_us, x.drain_us};
        for (int j = 0; j < 2; ++j) {
          stat[j][0] += v[j] / size;
          stat[j][1] = std::min(stat[j][1], v[j]);
          stat[j][2] = std::max(stat[j][2], v[j]);
        }
      }
      std::printf("%s\n  {\"kind\": \"%s\", \"bytes\": %lld, \"issue_us\": {\"mean\": %.3f, \"min\": %.3f, "
                  "\"max\": %.3f}, \"drain_us\": {\"mean\": %.3f, \"min\": %.3f, \"max\": %.3f}}",
                  k ? "," : "", cases[k].kind, static_cast<long long>(cases[k].bytes), stat[0][0], stat[0][1],
                  stat[0][2], stat[1][0], stat[1][1], stat[1][2]);
    }
    std::printf("\n]}\n");
  }
  cudaFree(src);
  cudaFree(dst);
  cudaStreamDestroy(stream);
  MPI_Finalize();
  return 0;
}
