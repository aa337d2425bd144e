// See time_slice.h.
#include "reshard/core/time_slice.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace reshard {

SliceSchedule schedule_time_slices(const std::vector<SliceWork>& work, int contexts, double slice_seconds,
                                   double switch_seconds) {
  constexpr double kEps = 1e-15;
  std::vector<size_t> order(work.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return work[a].ready < work[b].ready; });
  SliceSchedule out;
  out.done.assign(work.size(), 0);
  out.switches_in.assign(static_cast<size_t>(contexts), 0);
  std::vector<std::deque<std::pair<size_t, double>>> queue(static_cast<size_t>(contexts));  // (item, left)
  std::vector<bool> in_turn(static_cast<size_t>(contexts), false);
  std::deque<int> turn;  // contexts with work queued, not switched in, in the order their work came
  double t = 0, left = slice_seconds;
  int cur = -1;
  size_t next = 0;
  for (size_t i = 0; i < work.size(); ++i) {  // `after` names another item of the same context
    const int64_t a = work[i].after;
    if (a >= 0 && (static_cast<size_t>(a) >= work.size() || static_cast<size_t>(a) == i ||
                   work[static_cast<size_t>(a)].context != work[i].context))
      throw std::invalid_argument("schedule_time_slices: item " + std::to_string(i) + " is after item " +
                                  std::to_string(a) + ", not another item of its context");
  }
  std::vector<bool> finished_item(work.size(), false);
  std::map<size_t, std::vector<size_t>> held;  // per item: the ready items waiting for it (SliceWork::after)
  auto enqueue = [&](size_t i) {
    const int c = work[i].context;
    if (c != cur && !in_turn[static_cast<size_t>(c)] && queue[static_cast<size_t>(c)].empty()) {
      turn.push_back(c);
      in_turn[static_cast<size_t>(c)] = true;
    }
    queue[static_cast<size_t>(c)].emplace_back(i, work[i].seconds);
  };
  // The running context's item last started, and whether another of its items was queued then: only
  // then does its turn go on past that item while another context waits (time_slice.h).
  size_t started = SIZE_MAX;
  bool more_when_started = false;
  auto admit = [&] {
    for (; next < order.size() && work[order[next]].ready <= t; ++next) {
      const size_t i = order[next];
      const int64_t a = work[i].after;
      if (a >= 0 && !finished_item[static_cast<size_t>(a)])  // in range: checked above
        held[static_cast<size_t>(a)].push_back(i);
      else
        enqueue(i);
    }
  };
  auto next_in_turn = [&] {
    const int c = turn.front();
    turn.pop_front();
    in_turn[static_cast<size_t>(c)] = false;
    return c;
  };
  auto switch_to = [&](int c) {
    t += switch_seconds;
    ++out.switches_in[static_cast<size_t>(c)];
    cur = c;
    left = slice_seconds;
    started = SIZE_MAX;
  };
  auto yield_turn = [&] {  // the running context goes to the back of the turns, its work still queued
    const int c = next_in_turn();
    turn.push_back(cur);
    in_turn[static_cast<size_t>(cur)] = true;
    switch_to(c);
  };

  while (true) {
    admit();
    if (cur >= 0 && !queue[static_cast<size_t>(cur)].empty()) {
      // Run the oldest item until it is done, the next arrival, or (someone waiting) the slice's end.
      auto& [item, rest] = queue[static_cast<size_t>(cur)].front();
      if (item != started) {
        started = item;
        more_when_started = queue[static_cast<size_t>(cur)].size() > 1;
      }
      double run = rest;
      if (next < order.size()) run = std::min(run, work[order[next]].ready - t);
      if (!turn.empty()) run = std::min(run, left);
      t += run;
      rest -= run;
      left -= run;
      const bool finished = rest <= kEps;
      if (finished) {
        const size_t done_item = item;
        out.done[done_item] = t;
        finished_item[done_item] = true;
        queue[static_cast<size_t>(cur)].pop_front();
        if (auto h = held.find(done_item); h != held.end()) {  // what waited for it goes out together
          for (size_t i : h->second) enqueue(i);
          held.erase(h);
        }
      }
      // Preempted, or done with what the GPU saw queued when the item started.
      const bool dry = finished && !more_when_started;
      if (!turn.empty() && !queue[static_cast<size_t>(cur)].empty() && (left <= kEps || dry)) yield_turn();
      continue;
    }
    if (!turn.empty()) {
      const int c = next_in_turn();
      if (c != cur) switch_to(c);
      else left = slice_seconds;
      continue;
    }
    if (next < order.size()) {
      t = std::max(t, work[order[next]].ready);  // idle; the last context stays loaded
      continue;
    }
    break;
  }
  out.end = t;
  return out;
}

}  // namespace reshard
