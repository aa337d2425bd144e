// RESHARD_MPI_CHECK(call): turns a failing MPI call (the communicator must use MPI_ERRORS_RETURN)
// into Error(Runtime) with the call text, file:line and MPI_Error_string. Only for MPI-aware code.
#pragma once
#ifndef RESHARD_HAVE_MPI
#error "mpi_check.h needs an MPI build (RESHARD_HAVE_MPI)"
#endif
#include <mpi.h>

#include <string>

#include "reshard/core/error.h"

namespace reshard {

inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, len);
}

[[noreturn]] inline void throw_mpi_error(const char* call, const char* file, int line, int code) {
  throw runtime_error(std::string("MPI call ") + call + " failed (" + file + ":" + std::to_string(line) +
                      "): " + mpi_error_string(code));
}

}  // namespace reshard

#define RESHARD_MPI_CHECK(call)                                                              \
  do {                                                                                       \
    const int reshard_mpi_rc_ = (call);                                                      \
    if (reshard_mpi_rc_ != MPI_SUCCESS) ::reshard::throw_mpi_error(#call, __FILE__, __LINE__, reshard_mpi_rc_); \
  } while (0)
