// The shared parts of the plain-C++ GPU probes run under mpirun (gpu_timeslice.cpp, gpu_turns.cpp): their
// start (MPI and the arguments) and failure handling (a failed CUDA or MPI call prints the program, rank,
// call and reason, and aborts every rank with exit 3). Each program defines kProbeName before including
// this.
#pragma once
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

[[noreturn]] inline void probe_die(const char* what, const char* detail, const char* file, int line) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "%s: rank %d: %s failed: %s (%s:%d)\n", kProbeName, rank, what, detail, file, line);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();
}

#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    const cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) probe_die(#call, cudaGetErrorString(e_), __FILE__, __LINE__); \
  } while (0)

#define MPI_CHECK(call)                                                             \
  do {                                                                              \
    const int e_ = (call);                                                          \
    if (e_ != MPI_SUCCESS) {                                                        \
      char s_[MPI_MAX_ERROR_STRING];                                                \
      int n_ = 0;                                                                   \
      MPI_Error_string(e_, s_, &n_);                                                \
      probe_die(#call, s_, __FILE__, __LINE__);                                     \
    }                                                                               \
  } while (0)

// MPI_Init, this rank and the world's size, then the arguments: on a bad one rank 0 prints every problem
// `parse` found, MPI is finalized and false is returned (the program exits 2).
template <class Args, class Parse>
bool probe_start(int& argc, char**& argv, Args& a, Parse parse, int& rank, int& size) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string problems;
  if (parse(argc, argv, a, problems)) return true;
  if (rank == 0) std::fprintf(stderr, "%s: bad arguments:\n%s", kProbeName, problems.c_str());
  MPI_Finalize();
  return false;
}

// Calls take(flag, value) for each "--flag value" pair of argv, in order; a last flag without a value
// is a problem of its own.
template <class Take>
void probe_flags(int argc, char** argv, std::string& problems, Take take) {
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      problems += "  " + flag + ": missing value (or unknown flag)\n";
      return;
    }
    take(flag, std::string(argv[i + 1]));
  }
}

// The median of v (the mean of the middle two for an even count); 0 when empty.
inline double probe_median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
