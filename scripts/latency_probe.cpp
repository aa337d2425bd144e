// Probe for issue 18's oversubscribed CPU runs (scripts/oversub_probe.sh): does a world larger than
// the host's cores slow the ranks that work, when the others only wait (in a barrier, polling)?
// Prints one JSON line: 8-byte ping-pong latency (one pair; every pair at once; one pair while every
// other rank copies memory, as in a reshard's stages where the ranks not in a hand-off pack, unpack
// or copy), and the point-to-point rate of k pairs at once (rank i < k sends 64 MiB to rank half + i)
// for several k, the rest idle; and the busy hand-off with only c of the other ranks copying, the rest
// waiting in the barrier (a stage's ranks work while the others wait), for several c.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "mpi_busy_handoff.h"
#include "mpi_median_time.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int half = size / 2, trips = 200;
  auto pingpong = [&](int pairs) {
    const int i = rank < half ? rank : rank - half;
    if (i >= pairs || rank >= 2 * half) return;
    mpi_pingpong(rank < half ? rank + half : rank - half, rank < half, trips);  // mpi_busy_handoff.h
  };
  const double one = median_time([&] { pingpong(1); }, 7) / (2.0 * trips);
  const double all = median_time([&] { pingpong(half); }, 7) / (2.0 * trips);
  const double busy = busy_handoff_seconds(trips);  // mpi_busy_handoff.h
  std::string by_copiers;
  for (int c : {0, 2, 4, 6, 8, 10, 14, 22, 30}) {
    if (c > size - 2) break;
    char item[64];
    std::snprintf(item, sizeof item, "%s\"%d\": %.2f", by_copiers.empty() ? "" : ", ", c,
                  busy_handoff_seconds(trips, 5, c) * 1e6);
    by_copiers += item;
  }
  const size_t n = size_t(64) << 20;
  std::vector<char> a(n, 1), b(n, 2);
  std::string rates;
  for (int k : {1, 2, 4, 6, 8, 12, 16}) {
    if (k > half) break;
    const double t = median_time([&] {
      const int i = rank < half ? rank : rank - half;
      if (i >= k || rank >= 2 * half) return;
      if (rank < half) MPI_Send(a.data(), int(n), MPI_BYTE, rank + half, 4, MPI_COMM_WORLD);
      else MPI_Recv(b.data(), int(n), MPI_BYTE, rank - half, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }, 5);
    char item[64];
    std::snprintf(item, sizeof item, "%s\"%d\": %.3f", rates.empty() ? "" : ", ", k, double(n) / 1e9 / t);
    rates += item;
  }
  const char* y = std::getenv("OMPI_MCA_mpi_yield_when_idle");
  if (rank == 0)
    std::printf("{\"ranks\": %d, \"latency_one_pair_us\": %.2f, \"latency_all_pairs_us\": %.2f, "
                "\"latency_busy_us\": %.2f, \"latency_busy_us_with_c_copiers\": {%s}, "
                "\"pair_gbps_with_k_pairs\": {%s}, \"yield\": \"%s\"}\n",
                size, one * 1e6, all * 1e6, busy * 1e6, by_copiers.c_str(), rates.c_str(), y ? y : "unset");
  MPI_Finalize();
}
