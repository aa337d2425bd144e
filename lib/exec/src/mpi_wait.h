// Bounded MPI waits (private to lib/exec): requests are polled (MPI_Testsome) instead of waited on,
// so a dead or stopped rank ends the run after --timeout seconds without progress instead of hanging
// it. On timeout the rank prints one line naming what it waited for and aborts the world at once:
// unwinding would free buffers MPI still owns, and the other ranks are usually stuck as well.
#pragma once
#ifndef RESHARD_HAVE_MPI
#error "mpi_wait.h needs an MPI build (RESHARD_HAVE_MPI)"
#endif
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

namespace reshard {

// Completes every request (each becomes MPI_REQUEST_NULL). `statuses` (null, or one per request)
// receives each request's status with MPI_ERROR set (MPI_ERR_PENDING for requests left unfinished by
// an error). Returns MPI_SUCCESS or the MPI error (MPI_ERR_IN_STATUS: see the statuses).
// timeout_s <= 0: no limit. When no request completes for timeout_s seconds, `waiting_for(pending)`
// (pending[i] is true for request i still open) says whom the rank waited for, and
// abort_on_timeout() ends the world.
struct Waiting {
  std::string who;    // "rank 2", "ranks 2, 3", "another rank"
  std::string where;  // "4 unfinished MPI ops", "control-plane barrier #12"
};
int wait_bounded(std::vector<MPI_Request>& requests, MPI_Status* statuses, double timeout_s,
                 const std::function<Waiting(const std::vector<bool>& pending)>& waiting_for);

// Prints "reshard: rank R: timed out after T s waiting for WHO (dead or hung?) in WHERE; aborting
// every rank", flushes stdout and stderr, and calls MPI_Abort(MPI_COMM_WORLD, 3).
[[noreturn]] void abort_on_timeout(double timeout_s, const Waiting& waiting);

// "rank 2" or "ranks 0, 2, 3" (sorted, unique, the first 16 listed).
std::string rank_list(std::vector<int> ranks);

}  // namespace reshard
