// The control plane: world size, agreement on config, barriers, timing and count reductions.
// Always MPI (a duplicate of MPI_COMM_WORLD with MPI_ERRORS_RETURN, every call checked), whatever
// transport moves the data. The header is MPI-free so callers need no mpi.h; without MPI support
// constructing a Control throws Error(Config).
// Every method except rank()/size()/now()/set_timeout()/timeout()/abort() is collective over the world.
// Collectives are polled, not blocking: once set_timeout() is given a limit, a collective that waits
// that long (a rank died, stopped or never came) prints "reshard: rank R: timed out after T s waiting
// for ..." (rank 0 names the ranks that never arrived) and aborts the world with exit code 3.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reshard/core/error.h"

namespace reshard {

// Thrown by Control::agree on every rank: the failure is known everywhere, so callers exit with its
// code (rank 0 reporting it) instead of aborting the world.
class AgreedError : public Error {
 public:
  using Error::Error;
};

class Control {
 public:
  static bool built();  // MPI support compiled in
  // For a rank that fails before it ever joins the world (a usage error) while other ranks of the launch
  // may already wait for it in MPI_Init or a first collective (an MPMD launch: their command lines
  // differ): joins MPI, flushes and aborts the world with `exit_code`. Without MPI, just exits.
  [[noreturn]] static void abort_launch(int exit_code);
  // Initializes MPI when nobody has (and finalizes it in the destructor), then duplicates the world.
  Control();
  ~Control();
  Control(const Control&) = delete;
  Control& operator=(const Control&) = delete;

  int rank() const;
  int size() const;
  double now() const;  // seconds (MPI_Wtime)
  void set_timeout(double seconds);  // <= 0: no limit (the default)
  double timeout() const;
  void barrier();

  int64_t sum(int64_t v);
  int64_t max(int64_t v);
  int64_t min(int64_t v);
  double max(double v);
  double min(double v);
  void sum(std::vector<int64_t>& v);  // element-wise, in place, on every rank
  void max(std::vector<int64_t>& v);
  std::vector<int64_t> gather(int64_t v);              // on rank 0: one value per rank; empty elsewhere
  std::vector<uint8_t> allgather(const std::vector<uint8_t>& mine, int64_t bytes_each);  // rank-major
  std::string broadcast(const std::string& s, int root);

  // Agreement on a failure: every rank passes its own (code, message); when any code is non-zero,
  // every rank throws AgreedError(code of the lowest failing rank, its message). Collective.
  void agree(int code, const std::string& message);

  [[noreturn]] void abort(int exit_code);  // MPI_Abort of the world: the last resort against a hang

  // The MPI_Comm (as void* to keep mpi.h out of this header); for transports only.
  void* native_comm();
  std::string mpi_library_version() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace reshard
