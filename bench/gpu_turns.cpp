// In what order ONE GPU runs several processes' queued kernels (no MPS: their contexts time-slice it),
// the question behind simulate's turns (lib/core/include/reshard/core/time_slice.h: a context runs its
// queued work until it is empty or, while another waits, for one slice).
//   mpirun -np P reshard_gpu_turns [--kernels K] [--work-us S] [--depth D] [--host-us H] [--reps N]
//                                  [--streams T] [--fill 0|1]
// Every rank, after a barrier, launches K kernels on its own T streams (kernel i on stream i mod T, as
// the executor's copiers launch on one stream per PP stage), each of one thread (--fill 1: two blocks of
// 1024 threads per SM, so that a kernel holds the whole GPU as a copy does) that reads
// %globaltimer until it has RUN S us (steps between reads longer than 5 us, its context switched out,
// are not counted), keeping at most D in flight: before launching the next it waits for its oldest to
// finish and then spins H us on the host (the executor's handshake between a finished pass and the next
// launch). D = 1 is a window of one; a large D queues them all at once. Each kernel records its first
// and last clock read. Rank 0 orders all kernels by first read and reports per repetition: the span
// (earliest first read to latest last), the work (P x K x S), the changes of rank from one kernel to
// the next (each a context switch), and (span - work) / changes, the cost of one change. The kernel is
// PTX loaded at run time, so this stays a plain C++ file on the CUDA runtime (scripts/gpu_turns.sh
// builds it with mpicxx where bench/ is not configured). Output: one JSON document on rank 0's stdout.
// Exit 2 on bad arguments, 3 on a CUDA or MPI failure.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

constexpr char kProbeName[] = "gpu_turns";
#include "gpu_probe.h"

namespace {

struct Args {
  int kernels = 16;
  double work_us = 250;
  int depth = 4;
  double host_us = 50;
  int reps = 3;
  int streams = 1;
  bool fill = false;  // one block per SM of 1024 threads, twice: a kernel that holds the whole GPU
};

bool parse_args(int argc, char** argv, Args& a, std::string& problems) {
  probe_flags(argc, argv, problems, [&](const std::string& flag, const std::string& v) {
    char* end = nullptr;
    if (flag == "--kernels" || flag == "--depth" || flag == "--reps" || flag == "--streams") {
      const long n = std::strtol(v.c_str(), &end, 10);
      const long most = flag == "--streams" ? 64 : 4096;
      if (*end || n < 1 || n > most)
        problems += "  " + flag + ": expected 1.." + std::to_string(most) + ", got '" + v + "'\n";
      (flag == "--kernels" ? a.kernels : flag == "--depth" ? a.depth : flag == "--reps" ? a.reps : a.streams) =
          static_cast<int>(n);
    } else if (flag == "--work-us" || flag == "--host-us") {
      const double x = std::strtod(v.c_str(), &end);
      const bool work = flag == "--work-us";
      if (*end || !(work ? x > 0 && x <= 100000 : x >= 0 && x <= 100000))
        problems += "  " + flag + ": expected " + (work ? "(0" : "[0") + ", 100000], got '" + v + "'\n";
      (work ? a.work_us : a.host_us) = x;
    } else if (flag == "--fill") {
      if (v != "0" && v != "1") problems += "  --fill: expected 0 or 1, got '" + v + "'\n";
      a.fill = v == "1";
    } else {
      problems += "  unknown flag '" + flag + "'\n";
    }
  });
  return problems.empty();
}

// Each thread reads %globaltimer until it has run `work` ns (steps of at most 5 us between reads: a
// longer one is its context switched out); thread 0 of block 0 stores its first and last read at
// out[0], out[1].
constexpr char kWorkPtx[] = R"(
.version 7.0
.target sm_70
.address_size 64
.visible .entry reshard_work(.param .u64 out_param, .param .u64 work_param)
{
  .reg .pred %p<5>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<12>;
  ld.param.u64 %rd1, [out_param];
  cvta.to.global.u64 %rd1, %rd1;
  ld.param.u64 %rd2, [work_param];
  mov.u64 %rd3, %globaltimer;
  mov.u64 %rd4, %rd3;
  mov.u64 %rd5, 0;
LOOP:
  mov.u64 %rd6, %globaltimer;
  sub.u64 %rd7, %rd6, %rd4;
  mov.u64 %rd4, %rd6;
  setp.gt.u64 %p1, %rd7, 5000;
  @%p1 bra CHECK;
  add.u64 %rd5, %rd5, %rd7;
CHECK:
  setp.lt.u64 %p2, %rd5, %rd2;
  @%p2 bra LOOP;
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ctaid.x;
  or.b32 %r3, %r1, %r2;
  setp.ne.u32 %p3, %r3, 0;
  @%p3 bra DONE;
  st.global.u64 [%rd1], %rd3;
  st.global.u64 [%rd1+8], %rd4;
DONE:
  ret;
}
)";

void spin_host(double us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

struct Kernel {
  uint64_t first = 0, last = 0;
  int rank = 0;
};

struct Rep {
  double span_us = 0, work_us = 0;
  int64_t changes = 0;
};

// All ranks' kernels of one repetition, ordered by first read.
Rep analyse(std::vector<Kernel> all, const Args& a, int size) {
  std::sort(all.begin(), all.end(), [](const Kernel& x, const Kernel& y) { return x.first < y.first; });
  Rep r;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const Kernel& k : all) {
    lo = std::min(lo, k.first);
    hi = std::max(hi, k.last);
  }
  r.span_us = static_cast<double>(hi - lo) * 1e-3;
  r.work_us = a.work_us * a.kernels * size;
  for (size_t i = 1; i < all.size(); ++i) r.changes += all[i].rank != all[i - 1].rank;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int rank = 0, size = 1;
  Args a;
  if (!probe_start(argc, argv, a, parse_args, rank, size)) return 2;
  CUDA_CHECK(cudaSetDevice(0));
  std::vector<cudaStream_t> streams(static_cast<size_t>(a.streams));
  for (cudaStream_t& s : streams) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaLibrary_t lib = nullptr;
  cudaKernel_t kernel = nullptr;
  CUDA_CHECK(cudaLibraryLoadData(&lib, kWorkPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUDA_CHECK(cudaLibraryGetKernel(&kernel, lib, "reshard_work"));
  int sms = 1;
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const dim3 grid(a.fill ? static_cast<unsigned>(2 * sms) : 1u), block(a.fill ? 1024u : 1u);
  uint64_t* buf = nullptr;
  CUDA_CHECK(cudaMalloc(&buf, static_cast<size_t>(2 * a.kernels) * sizeof(uint64_t)));
  std::vector<cudaEvent_t> done(static_cast<size_t>(a.kernels));
  for (cudaEvent_t& e : done) CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  auto launch = [&](int i, double us) {
    uint64_t* out = buf + 2 * i;
    uint64_t work = static_cast<uint64_t>(us * 1e3);
    void* args[] = {&out, &work};
    cudaStream_t s = streams[static_cast<size_t>(i % a.streams)];
    CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, block, args, 0, s));
    CUDA_CHECK(cudaEventRecord(done[static_cast<size_t>(i)], s));
  };
  launch(0, 10);  // loads and JIT-compiles the kernel outside the measurement
  CUDA_CHECK(cudaDeviceSynchronize());

  std::vector<Rep> reps;
  std::vector<uint64_t> mine(static_cast<size_t>(2 * a.kernels));
  std::vector<uint64_t> all(rank == 0 ? mine.size() * static_cast<size_t>(size) : 0);
  for (int rep = 0; rep < a.reps; ++rep) {
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    std::deque<int> in_flight;
    for (int i = 0; i < a.kernels; ++i) {
      if (static_cast<int>(in_flight.size()) == a.depth) {
        CUDA_CHECK(cudaEventSynchronize(done[static_cast<size_t>(in_flight.front())]));
        in_flight.pop_front();
        spin_host(a.host_us);
      }
      launch(i, a.work_us);
      in_flight.push_back(i);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(mine.data(), buf, mine.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_UINT64_T, all.data(),
                         static_cast<int>(mine.size()), MPI_UINT64_T, 0, MPI_COMM_WORLD));
    if (rank != 0) continue;
    std::vector<Kernel> kernels;
    for (int r = 0; r < size; ++r)
      for (int i = 0; i < a.kernels; ++i) {
        const size_t at = (static_cast<size_t>(r) * static_cast<size_t>(a.kernels) + static_cast<size_t>(i)) * 2;
        kernels.push_back(Kernel{all[at], all[at + 1], r});
      }
    reps.push_back(analyse(kernels, a, size));
  }
  if (rank == 0) {
    cudaDeviceProp prop{};
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    std::printf("{\"format\": \"reshard-gpu-turns\", \"version\": 1, \"ranks\": %d, \"device\": \"%s\", "
                "\"kernels\": %d, \"work_us\": %.1f, \"depth\": %d, \"host_us\": %.1f, \"streams\": %d, \"fill\": %d,\n \"reps\": [",
                size, prop.name, a.kernels, a.work_us, a.depth, a.host_us, a.streams, a.fill ? 1 : 0);
    for (size_t i = 0; i < reps.size(); ++i) {
      const Rep& r = reps[i];
      const double per = r.changes > 0 ? (r.span_us - r.work_us) / static_cast<double>(r.changes) : 0;
      std::printf("%s\n  {\"span_us\": %.1f, \"work_us\": %.1f, \"changes\": %lld, \"us_per_change\": %.1f}",
                  i ? "," : "", r.span_us, r.work_us, static_cast<long long>(r.changes), per);
    }
    std::printf("\n]}\n");
  }
  for (cudaEvent_t& e : done) cudaEventDestroy(e);
  cudaFree(buf);
  cudaLibraryUnload(lib);
  for (cudaStream_t& s : streams) cudaStreamDestroy(s);
  MPI_Finalize();
  return 0;
}
