// Broadcast probe (issue 18; results/gpu/bcast_probe/): MPI_Ibcast time against members (the rest of
// the world idle), two at once over every rank, a root's k whole sends at once, disjoint pairs and a
// two-hop relay; median of 5 (barrier, op, barrier; max over ranks). One JSON object per line.
// usage: mpicxx -O2 -std=c++17 scripts/bcast_probe.cpp -o bp && mpirun -np N ./bp [MiB, default 100]
#include <mpi.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "mpi_median_time.h"
int rank, size;
template <class F> double timed(F f) { return median_time(f, 5); }
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t mib = argc > 1 ? size_t(atoi(argv[1])) : 100;
  const size_t n = mib << 20;
  std::vector<char> a(n, 1), b(n, 2), c(n, 3);
  auto out = [&](const char* what, int members, double t) {
    if (rank == 0) printf("{\"world\": %d, \"what\": \"%s\", \"members\": %d, \"mib\": %d, \"ms\": %.3f}\n", size, what, members, int(mib), t * 1e3);
    fflush(stdout);
  };
  // One Ibcast over ranks 0..m-1 (the rest idle in the barrier).
  for (int m : {2, 3, 4, 5, 8, 9, 16, 17, 32}) {
    if (m > size) continue;
    MPI_Comm g;
    MPI_Comm_split(MPI_COMM_WORLD, rank < m ? 0 : MPI_UNDEFINED, rank, &g);
    double t = timed([&] {
      if (g == MPI_COMM_NULL) return;
      MPI_Request r;
      MPI_Ibcast(rank == 0 ? a.data() : b.data(), int(n), MPI_BYTE, 0, g, &r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    });
    out("ibcast", m, t);
    if (g != MPI_COMM_NULL) MPI_Comm_free(&g);
  }
  // Two Ibcasts at once over all ranks, roots 0 and size/4 (a16's misc: two buckets, roots 0 and 4).
  {
    int r2 = size / 4;
    double t = timed([&] {
      MPI_Request r[2];
      MPI_Ibcast(rank == 0 ? a.data() : b.data(), int(n), MPI_BYTE, 0, MPI_COMM_WORLD, &r[0]);
      MPI_Ibcast(rank == r2 ? a.data() : c.data(), int(n), MPI_BYTE, r2, MPI_COMM_WORLD, &r[1]);
      MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    });
    out("two_ibcasts_all", size, t);
  }
  // The root sends k whole messages at once (Isend to ranks 1..k): does its link split k ways?
  for (int k : {1, 2, 4, 8}) {
    if (k >= size) continue;
    double t = timed([&] {
      std::vector<MPI_Request> rs;
      if (rank == 0)
        for (int j = 1; j <= k; ++j) { rs.emplace_back(); MPI_Isend(a.data(), int(n), MPI_BYTE, j, 7, MPI_COMM_WORLD, &rs.back()); }
      else if (rank <= k) { rs.emplace_back(); MPI_Irecv(b.data(), int(n), MPI_BYTE, 0, 7, MPI_COMM_WORLD, &rs.back()); }
      MPI_Waitall(int(rs.size()), rs.data(), MPI_STATUSES_IGNORE);
    });
    out("root_sends_k", k, t);
  }
  // k receivers each get one message from its own sender (disjoint pairs 2j -> 2j+1): aggregate.
  for (int k : {1, 4, 8, 16}) {
    if (2 * k > size) continue;
    double t = timed([&] {
      MPI_Request r = MPI_REQUEST_NULL;
      if (rank < 2 * k) {
        if (rank % 2 == 0) MPI_Isend(a.data(), int(n), MPI_BYTE, rank + 1, 8, MPI_COMM_WORLD, &r);
        else MPI_Irecv(b.data(), int(n), MPI_BYTE, rank - 1, 8, MPI_COMM_WORLD, &r);
      }
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    });
    out("pairs_k", k, t);
  }
  // Store and forward: 0 -> 1 whole, then 1 -> 2 whole (a binomial relay's hop).
  if (size >= 3) {
    double t = timed([&] {
      MPI_Request r = MPI_REQUEST_NULL;
      if (rank == 0) MPI_Send(a.data(), int(n), MPI_BYTE, 1, 9, MPI_COMM_WORLD);
      if (rank == 1) { MPI_Recv(b.data(), int(n), MPI_BYTE, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE); MPI_Send(b.data(), int(n), MPI_BYTE, 2, 9, MPI_COMM_WORLD); }
      if (rank == 2) MPI_Recv(b.data(), int(n), MPI_BYTE, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    });
    out("relay_2hops", 3, t);
  }
  // memcpy of 100 MiB on one rank (4 MiB chunks).
  {
    const size_t chunk = std::min(n, size_t(4) << 20);
    double t = timed([&] { if (rank == 0) for (size_t o = 0; o < n; o += chunk) memcpy(b.data() + o, a.data() + o, chunk); });
    out("memcpy_one", 1, t);
  }
  MPI_Finalize();
}
