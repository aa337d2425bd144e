// What cuda-ipc ranks tell each other about an op (private to lib/exec; CUDA + MPI builds only):
// the describing side's pieces, as plain structs copied bytewise between ranks of one build, and
// the overlaps of the two sides' pieces in wire coordinates (each overlap is one box copy).
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "reshard/core/box.h"

namespace reshard {

// One op's description (a message holds several back to back): a header, then `pieces` pieces.
struct OpHeader {
  int64_t bytes = 0;
  int32_t owner = 0, group = 0;  // owner: the describing rank
  int32_t elem_size = 0, pieces = 0;
  Dims wire_extent;
};
struct PieceDesc {
  int64_t alloc_id = 0, base_offset = 0;  // the tensor's base inside the owner's allocation
  Dims shape, offset, wire_offset, extent;
  cudaIpcMemHandle_t handle{};
};
struct Description {
  OpHeader head;
  std::vector<PieceDesc> pieces;
};

// Appends one description to a message.
void append_description(std::string& message, const OpHeader& head, const std::vector<PieceDesc>& pieces);
// Splits a message from `peer` into its descriptions; Error(Runtime) when it is malformed.
std::vector<Description> parse_descriptions(const std::string& message, int peer);

// Calls f(w, h, overlap, w_at, h_at) for every overlap (in wire coordinates) of a piece w of `want`
// (the side that must be covered: the destinations) with a piece h of `have` (the sources); w_at and
// h_at are the overlap's offsets inside w's and h's tensors. Returns the elements covered. Pieces
// have wire_offset, extent and offset. 1-D wires (misc buckets: ~100 params each side) are swept over
// `have` sorted by start; other wires have few pieces and take every pair.
template <class W, class H, class F>
int64_t for_each_overlap(const std::vector<W>& want, const std::vector<H>& have, F&& f) {
  std::vector<const H*> src;
  for (const H& h : have) src.push_back(&h);
  const bool flat = !want.empty() && want.front().extent.n == 1;
  if (flat)
    std::sort(src.begin(), src.end(), [](const H* a, const H* b) { return a->wire_offset[0] < b->wire_offset[0]; });
  int64_t covered = 0;
  for (const W& w : want) {
    const Box box{w.wire_offset, w.extent};
    size_t first = 0;
    if (flat) {  // the last piece starting at or before w may overlap it; earlier ones end before it
      auto it = std::upper_bound(src.begin(), src.end(), box.offset[0],
                                 [](int64_t v, const H* h) { return v < h->wire_offset[0]; });
      first = it == src.begin() ? 0 : static_cast<size_t>(it - src.begin()) - 1;
    }
    for (size_t i = first; i < src.size(); ++i) {
      const H& h = *src[i];
      if (flat && h.wire_offset[0] >= box.offset[0] + box.extent[0]) break;
      const auto o = intersect(box, Box{h.wire_offset, h.extent});
      if (!o || o->empty()) continue;
      Dims w_at = w.offset, h_at = h.offset;
      for (int k = 0; k < w_at.n; ++k) {
        w_at[k] += o->offset[k] - w.wire_offset[k];
        h_at[k] += o->offset[k] - h.wire_offset[k];
      }
      f(w, h, *o, w_at, h_at);
      covered += o->elements();
    }
  }
  return covered;
}

}  // namespace reshard
