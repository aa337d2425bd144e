// The cpu-mpi-local host microbenchmark (scripts/calibrate.sh --measure-host compiles and runs it;
// docs/performance.md, "cpu-mpi-local"): memcpy on one rank and on all at once, MPI point-to-point one
// pair, all pairs at once and the first half to the second (every sender to every receiver), and
// MPI_Ibcast over rank 0 + the second half. One JSON line from rank 0.
#include <mpi.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "mpi_busy_handoff.h"
#include "mpi_median_time.h"
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const size_t n = size_t(256) << 20;
  const int reps = 7;
  std::vector<char> a(n, 1), b(n, 2);
  auto timed = [&](auto f) { return median_time(f, reps); };  // scripts/mpi_median_time.h
  const double gb = double(n) / 1e9;
  const int half = size / 2;
  // In 4 MiB chunks, as the transports copy (pieces, MPI fragments): one 256 MiB memcpy is above glibc's
  // non-temporal threshold (3/4 of the shared cache) on hosts with a large L3 and measures a store path
  // (no read-for-ownership) that no transport copy takes: 21.6 vs 12.8 GB/s on the 2-core VM.
  const size_t chunk = size_t(4) << 20;
  auto copy = [&] { for (size_t o = 0; o < n; o += chunk) memcpy(b.data() + o, a.data() + o, chunk); };
  const double t1 = timed([&] { if (rank == 0) copy(); });
  const double tall = timed(copy);
  const double tpair = timed([&] {
    MPI_Request r = MPI_REQUEST_NULL;
    if (rank == 0) MPI_Isend(a.data(), int(n), MPI_BYTE, half, 0, MPI_COMM_WORLD, &r);
    if (rank == half) MPI_Irecv(b.data(), int(n), MPI_BYTE, 0, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  });
  const double tp2p = timed([&] {
    MPI_Request r;
    if (rank < half) MPI_Isend(a.data(), int(n), MPI_BYTE, rank + half, 0, MPI_COMM_WORLD, &r);
    else MPI_Irecv(b.data(), int(n), MPI_BYTE, rank - half, 0, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  });
  // The first half to the second, every sender to every receiver at once (n / half to each), as a
  // reshard's train ranks feed its gen ranks: on the device host 8 -> 8 so ran at 3.3 GB/s per sender
  // where 8 disjoint pairs ran at 5.2 (results/cpu_waits.md, the probe).
  const size_t part = n / std::max(half, 1);
  const double tmany = timed([&] {
    std::vector<MPI_Request> rs;
    for (int k = 0; k < half; ++k) {
      MPI_Request r;
      const int at = (rank % half + k) % half;  // staggered: not every sender to one receiver first
      if (rank < half) MPI_Isend(a.data() + at * part, int(part), MPI_BYTE, half + at, 1, MPI_COMM_WORLD, &r);
      else if (rank < 2 * half) MPI_Irecv(b.data() + at * part, int(part), MPI_BYTE, at, 1, MPI_COMM_WORLD, &r);
      else break;
      rs.push_back(r);
    }
    MPI_Waitall(int(rs.size()), rs.data(), MPI_STATUSES_IGNORE);
  });
  // Rank 0 sends one whole message to each of ranks 1..k at once, as libnbc's broadcast root and
  // relays post theirs: without single copy the first takes one pair's time and each further one
  // adds the sender's copy-in (simulate --fan-gbps = (k - 1) x size / (t_k - t_1); 11.3 GB/s on the
  // device host, results/gpu/bcast_probe/).
  const int fan_k = std::min(8, size - 1);
  auto root_sends = [&](int k) {
    return timed([&] {
      std::vector<MPI_Request> rs;
      if (rank == 0)
        for (int j = 1; j <= k; ++j) { rs.emplace_back(); MPI_Isend(a.data(), int(n), MPI_BYTE, j, 2, MPI_COMM_WORLD, &rs.back()); }
      else if (rank <= k) { rs.emplace_back(); MPI_Irecv(b.data(), int(n), MPI_BYTE, 0, 2, MPI_COMM_WORLD, &rs.back()); }
      MPI_Waitall(int(rs.size()), rs.data(), MPI_STATUSES_IGNORE);
    });
  };
  const double ts1 = root_sends(1), tsk = fan_k > 1 ? root_sends(fan_k) : ts1;
  MPI_Comm g;
  MPI_Comm_split(MPI_COMM_WORLD, (rank == 0 || rank >= half) ? 0 : MPI_UNDEFINED, rank, &g);
  const double tb = timed([&] {
    if (g == MPI_COMM_NULL) return;
    MPI_Request r;
    MPI_Ibcast(rank == 0 ? a.data() : b.data(), int(n), MPI_BYTE, 0, g, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  });
  // A batch's hand-off while the other ranks copy (simulate --latency-us; mpi_busy_handoff.h).
  const double handoff = busy_handoff_seconds();
  if (rank == 0) {
    printf("{\"ranks\": %d, \"memcpy_one_rank_gbps\": %.3f, \"memcpy_all_ranks_aggregate_gbps\": %.3f, "
           "\"p2p_one_pair_gbps\": %.3f, \"p2p_all_pairs_aggregate_gbps\": %.3f, "
           "\"p2p_half_to_half_aggregate_gbps\": %.3f, \"ibcast_256MiB_to_%d_ms\": %.3f, \"root_sends_1_ms\": %.3f, ",
           size, gb / t1, size * gb / tall, gb / tpair, half * gb / tp2p, half * double(part * half) / 1e9 / tmany,
           size - half, tb * 1e3, ts1 * 1e3);
    if (fan_k > 1) printf("\"root_sends_%d_ms\": %.3f, ", fan_k, tsk * 1e3);  // 2 ranks: only the one send
    printf("\"fan_gbps\": %.3f, \"latency_busy_us\": %.2f}\n",
           fan_k > 1 && tsk > ts1 ? (fan_k - 1) * gb / (tsk - ts1) : 0.0, handoff * 1e6);
  }
  if (g != MPI_COMM_NULL) MPI_Comm_free(&g);
  MPI_Finalize();
}
