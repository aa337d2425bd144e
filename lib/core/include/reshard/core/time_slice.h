// One GPU time-sliced between processes (no MPS): when each context's copy work is done.
//
// The contexts with work queued take turns: the one switched in runs its queue until it is empty or,
// while another context waits, until its slice is used up; switching to another context costs
// `switch_seconds` (switching back to the context still loaded after the GPU idled costs nothing).
// Work that arrives for the running context joins its queue, first come first served, but while another
// context waits the turn goes on past an item only if more of the context's work was queued when that
// item started: work queued while it runs waits for the context's next turn. (scripts/gpu_turns.sh,
// results/gpu/turns_h100/: two processes each keeping D kernels of 250-1000 us in flight, the next
// launched after the oldest is done, switch every D kernels at D = 1 and 2 whatever the host's delay
// (0-200 us) and the kernels' length, and only at the slice's end from D = 3, where the next kernel is
// always queued before the one ahead of it starts.) The slice and the switch are measured by
// scripts/gpu_timeslice.sh (results/gpu/timeslice/).
#pragma once
#include <cstdint>
#include <vector>

namespace reshard {

struct SliceWork {
  double ready = 0;    // when it can start
  int context = 0;     // the process (rank) whose context runs it, 0 <= context < contexts
  double seconds = 0;  // its copy time with the GPU to itself
  // An earlier item (its index in the input) that must be done before this one is queued: items held
  // for one item go out together once it is done (a copier's next wait's launches, after the copies
  // its last wait waited for).
  int64_t after = -1;
};

struct SliceSchedule {
  std::vector<double> done;          // per work item (input order): when it is done
  std::vector<int64_t> switches_in;  // per context: the switches into it
  double end = 0;                    // when the last work is done
};

SliceSchedule schedule_time_slices(const std::vector<SliceWork>& work, int contexts, double slice_seconds,
                                   double switch_seconds);

}  // namespace reshard
