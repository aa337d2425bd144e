// Issue 18's stalls (docs/calibration.md, "Twenty iterations"): does the kernel starve a runnable
// process among many? N processes, each for SECONDS alternating a 4 MiB memcpy (COPY_PERCENT of its
// turns) and sched_yield, as MPI ranks that copy and then wait with yield_when_idle; each records how
// long it went unscheduled (gaps above 20 ms between two clock reads; one copy takes well under 1 ms).
// Prints one JSON line per process. usage: yield_crowd N SECONDS COPY_PERCENT
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: yield_crowd N SECONDS COPY_PERCENT\n");
    return 2;
  }
  const int n = std::atoi(argv[1]), copy_percent = std::atoi(argv[3]);
  const double seconds = std::atof(argv[2]);
  for (int p = 0; p < n; ++p) {
    if (fork() != 0) continue;
    std::vector<char> a(size_t(4) << 20, 1), b(size_t(4) << 20, 2);
    std::srand(unsigned(p) + 1);
    int gaps = 0;
    double lost_ms = 0, largest_ms = 0;
    long turns = 0;
    const double t0 = now();
    for (double last = t0; last - t0 < seconds; ++turns) {
      if (std::rand() % 100 < copy_percent) std::memcpy(b.data(), a.data(), a.size());
      else sched_yield();
      const double t = now(), ms = (t - last) * 1e3;
      if (ms > 20) { ++gaps; lost_ms += ms; if (ms > largest_ms) largest_ms = ms; }
      last = t;
    }
    std::printf("{\"process\": %d, \"turns\": %ld, \"gaps_over_20ms\": %d, \"lost_ms\": %.0f, \"largest_ms\": %.0f}\n", p,
                turns, gaps, lost_ms, largest_ms);
    std::fflush(stdout);
    _exit(0);
  }
  while (wait(nullptr) > 0) {
  }
}
