// Device-host experiment: how a rank's copy rate depends on what the other ranks do.
#include <mpi.h>
#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>
int rank, size;
const size_t n = size_t(64) << 20, chunk = size_t(4) << 20;
std::vector<char> a, b;
void copy() { for (size_t o = 0; o < n; o += chunk) memcpy(b.data() + o, a.data() + o, chunk); }
// t(active): seconds for the active ranks' work; idle ranks either spin (MPI_Barrier) or sleep-poll.
template <class F> double timed(F f, bool active, bool sleep_idle) {
  std::vector<double> ts;
  for (int r = 0; r < 5; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), t = 0;
    if (active) { f(); t = MPI_Wtime() - t0; }
    if (sleep_idle) {
      MPI_Request q; MPI_Ibarrier(MPI_COMM_WORLD, &q); int done = 0;
      while (!done) { MPI_Test(&q, &done, MPI_STATUS_IGNORE); if (!done) usleep(200); }
    } else MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    ts.push_back(t);
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  a.assign(n, 1); b.assign(2 * n, 2);
  const double gb = double(n) / 1e9;
  for (int sleep_idle = 0; sleep_idle < 2; ++sleep_idle)
    for (int k : {1, 2, 4, 8, 12, 16}) {
      if (k > size) continue;
      double t = timed(copy, rank < k, sleep_idle);
      if (rank == 0) printf("memcpy active=%d idle=%s per_rank_gbps=%.2f aggregate=%.2f\n", k, sleep_idle ? "sleep" : "spin", gb / t, k * gb / t);
    }
  // p2p: S senders -> R receivers, every sender sends n/R... each receiver gets msgs from all senders.
  auto fan = [&](int S, int R, int sleep_idle) {
    // senders 0..S-1, receivers S..S+R-1; sender s sends to receivers (s + j*S) % R ... simple: all pairs
    const size_t m = n / size_t(R);  // each sender sends n total split over R receivers
    std::vector<MPI_Request> q;
    auto f = [&] {
      q.clear();
      if (rank < S) for (int r = 0; r < R; ++r) { q.emplace_back(); MPI_Isend(a.data() + r * m, int(m), MPI_BYTE, S + r, 0, MPI_COMM_WORLD, &q.back()); }
      else if (rank < S + R) for (int s = 0; s < S; ++s) { q.emplace_back(); MPI_Irecv(b.data() + size_t(s) * m, int(m), MPI_BYTE, s, 0, MPI_COMM_WORLD, &q.back()); }
      MPI_Waitall(int(q.size()), q.data(), MPI_STATUSES_IGNORE);
    };
    double t = timed(f, rank < S + R, sleep_idle);
    if (rank == 0) printf("p2p S=%d R=%d idle=%s bytes_per_sender=%zu t_ms=%.2f per_sender_gbps=%.2f aggregate=%.2f\n", S, R, sleep_idle ? "sleep" : "spin", size_t(R) * m, t * 1e3, R * m / t / 1e9, double(S) * R * m / t / 1e9);
  };
  for (int sleep_idle = 0; sleep_idle < 2; ++sleep_idle) {
    fan(1, 1, sleep_idle);
    if (size >= 16) { fan(4, 8, sleep_idle); fan(8, 8, sleep_idle); fan(4, 4, sleep_idle); fan(8, 4, sleep_idle); }
  }
  MPI_Finalize();
}
