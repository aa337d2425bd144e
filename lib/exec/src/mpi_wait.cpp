// Bounded MPI waits: see mpi_wait.h.
#ifdef RESHARD_HAVE_MPI
#include "mpi_wait.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace reshard {

int wait_bounded(std::vector<MPI_Request>& requests, MPI_Status* statuses, double timeout_s,
                 const std::function<Waiting(const std::vector<bool>& pending)>& waiting_for) {
  const int n = static_cast<int>(requests.size());
  if (n == 0) return MPI_SUCCESS;
  std::vector<int> done(static_cast<size_t>(n));
  std::vector<MPI_Status> got(static_cast<size_t>(n));
  std::vector<bool> pending(static_cast<size_t>(n), true);
  if (statuses != nullptr)
    for (int i = 0; i < n; ++i) statuses[i].MPI_ERROR = MPI_ERR_PENDING;
  int left = n;
  double last = MPI_Wtime();
  while (left > 0) {
    int count = 0;
    const int rc = MPI_Testsome(n, requests.data(), &count, done.data(), got.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return rc;
    if (count == MPI_UNDEFINED) break;  // every request was already null
    for (int k = 0; k < count; ++k) {
      const int i = done[static_cast<size_t>(k)];
      pending[static_cast<size_t>(i)] = false;
      if (statuses != nullptr) {
        statuses[i] = got[static_cast<size_t>(k)];
        if (rc == MPI_SUCCESS) statuses[i].MPI_ERROR = MPI_SUCCESS;  // only set by MPI on errors
      }
    }
    left -= count;
    if (rc == MPI_ERR_IN_STATUS) return rc;
    if (count > 0) {
      last = MPI_Wtime();
    } else if (timeout_s > 0 && MPI_Wtime() - last > timeout_s) {
      abort_on_timeout(timeout_s, waiting_for(pending));
    }
  }
  return MPI_SUCCESS;
}

void abort_on_timeout(double timeout_s, const Waiting& waiting) {
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fflush(stdout);
  std::fprintf(stderr, "reshard: rank %d: timed out after %g s waiting for %s (dead or hung?) in %s; aborting every rank\n",
               rank, timeout_s, waiting.who.c_str(), waiting.where.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::_Exit(3);
}

std::string rank_list(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size() && i < 16; ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  if (ranks.size() > 16) s += ", ... (" + std::to_string(ranks.size()) + " in all)";
  return s;
}

}  // namespace reshard
#endif
