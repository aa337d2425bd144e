// The host microbenchmarks' timer (scripts/calibrate.sh --measure-host, scripts/bcast_probe.cpp): the
// median over `reps` of (barrier, f, barrier), each the slowest rank's time. Median, not best: the runs
// these rates predict report mean times.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <vector>

template <class F>
double median_time(F f, int reps) {
  std::vector<double> ts;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    f();
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ts.push_back(t);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
