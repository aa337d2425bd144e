// cuda-ipc push mode (private to lib/exec): a broadcast root's copies of one source box to several
// members become ONE fan-out copy (read once, written to each), which on ranks sharing a GPU saves
// the re-reads (cuda_ipc_transport.cpp, docs/gpu.md).
#pragma once
#include <algorithm>
#include <functional>
#include <vector>

#include "reshard/core/box.h"

namespace reshard {

// One box copy a push root queues, before copies of one source box to several members are merged.
struct PushCopy {
  const void* src;
  Dims src_shape, src_at;
  void* dst;
  Dims dst_shape, dst_at, extent;
};

// Orders push copies by everything but their destination: copies that compare equal read the same
// source box into tensors of one shape at one offset, so they merge into one fan-out. (A sort, not a
// map keyed by vectors: a misc bucket's root merges ~1000 copies per step, on its critical path.)
inline int compare_dims(const Dims& a, const Dims& b) {
  if (a.n != b.n) return a.n < b.n ? -1 : 1;
  for (int i = 0; i < a.n; ++i)
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  return 0;
}
inline int compare_fanout(const PushCopy& a, const PushCopy& b) {
  if (a.src != b.src) return std::less<const void*>()(a.src, b.src) ? -1 : 1;
  for (int c : {compare_dims(a.src_at, b.src_at), compare_dims(a.extent, b.extent), compare_dims(a.dst_at, b.dst_at),
                compare_dims(a.src_shape, b.src_shape), compare_dims(a.dst_shape, b.dst_shape)})
    if (c != 0) return c;
  return 0;
}

// f(copy, destinations) once per group of copies that compare equal (compare_fanout).
template <class F>
void for_each_fanout(const std::vector<PushCopy>& copies, F&& f) {
  std::vector<size_t> order(copies.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return compare_fanout(copies[a], copies[b]) < 0; });
  std::vector<void*> dsts;
  for (size_t first = 0; first < order.size();) {
    const PushCopy& c = copies[order[first]];
    dsts.clear();
    size_t end = first;
    for (; end < order.size() && compare_fanout(copies[order[end]], c) == 0; ++end) dsts.push_back(copies[order[end]].dst);
    f(c, dsts);
    first = end;
  }
}

}  // namespace reshard
