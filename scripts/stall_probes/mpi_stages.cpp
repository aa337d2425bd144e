// Issue 18's stalls (docs/calibration.md, "Twenty iterations"): stages like a reshard's bulk stages
// without reshard. k pairs exchange m messages of 4 MiB (rank i < k sends to half + i; Isend/Irecv
// polled with MPI_Testsome, as lib/exec/src/mpi_wait.cpp polls) while the other ranks wait in a polled
// MPI_Ibarrier; each stage between two barriers is timed (the slowest rank's). Prints one JSON line
// with the median, the mean, the largest and how many stages took 100 ms more than the median.
// With COPY 1 each sender first copies every message into its send buffer and each receiver copies
// every message out once it is in, on the rank's thread, as reshard's MPI path packs and unpacks.
// usage: mpirun -np N mpi_stages STAGES K M [COPY]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void polled_barrier() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  for (int done = 0; !done;) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4 && argc != 5) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_stages STAGES K M [COPY]\n");
    MPI_Finalize();
    return 2;
  }
  const int stages = std::atoi(argv[1]), half = size / 2, k = std::min(std::atoi(argv[2]), half), m = std::atoi(argv[3]);
  const bool copy = argc == 5 && std::atoi(argv[4]) != 0;
  const size_t n = size_t(4) << 20;
  std::vector<char> a(n * size_t(m), 1), b(n * size_t(m), 2), c(n * size_t(m), 3);
  std::vector<double> ms;
  const int i = rank < half ? rank : rank - half;
  const bool paired = i < k && rank < 2 * half;
  for (int s = 0; s < stages; ++s) {
    polled_barrier();
    const double t0 = MPI_Wtime();
    if (paired) {
      std::vector<MPI_Request> rs(size_t(m), MPI_REQUEST_NULL);
      for (int j = 0; j < m; ++j) {
        char* at = (rank < half ? a.data() : b.data()) + size_t(j) * n;
        if (copy && rank < half) std::memcpy(at, c.data() + size_t(j) * n, n);  // the pack
        if (rank < half) MPI_Isend(at, int(n), MPI_BYTE, rank + half, j, MPI_COMM_WORLD, &rs[size_t(j)]);
        else MPI_Irecv(at, int(n), MPI_BYTE, rank - half, j, MPI_COMM_WORLD, &rs[size_t(j)]);
      }
      std::vector<int> idx(static_cast<size_t>(m));
      for (int left = m; left > 0;) {
        int count = 0;
        MPI_Testsome(m, rs.data(), &count, idx.data(), MPI_STATUSES_IGNORE);
        if (count == MPI_UNDEFINED) break;
        left -= count;
        if (copy && rank >= half)  // the unpacks of what arrived
          for (int q = 0; q < count; ++q) std::memcpy(c.data() + size_t(idx[size_t(q)]) * n, b.data() + size_t(idx[size_t(q)]) * n, n);
      }
    }
    polled_barrier();
    double t = MPI_Wtime() - t0;
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ms.push_back(t * 1e3);
  }
  if (rank == 0) {
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    const double median = sorted[sorted.size() / 2];
    double mean = 0;
    int stalled = 0;
    std::string at;  // the stalled stages, counted from 0: a first-use cost would stall stage 0 only
    for (size_t s = 0; s < ms.size(); ++s) {
      mean += ms[s] / double(ms.size());
      if (ms[s] > median + 100) {
        ++stalled;
        at += (at.empty() ? "" : ", ") + std::to_string(s);
      }
    }
    std::printf("{\"ranks\": %d, \"pairs\": %d, \"messages\": %d, \"copy\": %d, \"stages\": %d, \"median_ms\": %.2f, \"mean_ms\": %.2f, "
                "\"max_ms\": %.2f, \"stages_over_median_plus_100ms\": %d, \"stalled_stages\": [%s]}\n",
                size, k, m, int(copy), stages, median, mean, sorted.back(), stalled, at.c_str());
  }
  MPI_Finalize();
}
