// Failure handling of the plain-C++ GPU probes run under mpirun (gpu_timeslice.cpp, gpu_turns.cpp): a
// failed CUDA or MPI call prints the program, rank, call and reason, and aborts every rank with exit 3.
// Each program defines kProbeName before including this.
#pragma once
#include <cuda_runtime.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>

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
