// A one-line progress bar on rank 0's terminal while `run` and `verify --execute` work (private to
// lib/exec): redrawn in place on stderr, erased before each result row goes to stdout. Nothing is
// drawn unless stderr is a terminal (mpirun forwards output through pipes unless told otherwise,
// e.g. `mpirun --tag-output` or a job log), so logs and CI output hold only the rows.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>

#include <unistd.h>

#include "report.h"

namespace reshard {

class Progress {
 public:
  explicit Progress(bool rank0) : on_(rank0 && isatty(STDERR_FILENO) == 1) {}
  // `what` is at step `done` of `steps`, having moved `bytes`.
  void show(const std::string& what, int done, int steps, int64_t bytes) {
    if (!on_) return;
    constexpr int kWidth = 24;
    const int filled = steps > 0 ? done * kWidth / steps : 0;
    std::fprintf(stderr, "\r\033[K# %-10s [%s%s] %d/%d  %s moved", what.c_str(), std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, steps, human_bytes(bytes).c_str());
    std::fflush(stderr);
  }
  void clear() {
    if (!on_) return;
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }

 private:
  bool on_;
};

}  // namespace reshard
