// Issue 18's stalls (docs/calibration.md, "Twenty iterations"): does the machine itself take the CPU
// away? One thread per core, each pinned, reads the clock in a loop for SECONDS and records every gap
// above 1 ms between two reads (time it did not run although it never blocked). Run it on an idle
// machine. Prints one JSON line per core. usage: idle_gaps [SECONDS]
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

static double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 30;
  const int cores = int(std::thread::hardware_concurrency());
  struct Gaps { int count = 0; double lost_ms = 0, largest_ms = 0; };
  std::vector<Gaps> gaps(static_cast<size_t>(cores));
  const double t0 = now();
  std::vector<std::thread> threads;
  for (int c = 0; c < cores; ++c)
    threads.emplace_back([&, c] {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(c, &set);
      pthread_setaffinity_np(pthread_self(), sizeof set, &set);
      Gaps& g = gaps[size_t(c)];
      for (double last = now(); last - t0 < seconds;) {
        const double t = now(), ms = (t - last) * 1e3;
        if (ms > 1) { ++g.count; g.lost_ms += ms; if (ms > g.largest_ms) g.largest_ms = ms; }
        last = t;
      }
    });
  for (auto& t : threads) t.join();
  for (int c = 0; c < cores; ++c)
    std::printf("{\"core\": %d, \"seconds\": %.0f, \"gaps_over_1ms\": %d, \"lost_ms\": %.1f, \"largest_ms\": %.1f}\n", c,
                seconds, gaps[size_t(c)].count, gaps[size_t(c)].lost_ms, gaps[size_t(c)].largest_ms);
}
