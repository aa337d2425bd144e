#include "reshard/exec/landing_layout.h"

#include <algorithm>

namespace reshard {

int64_t landing_bytes(const Landing& l) { return (l.bytes() + 63) / 64 * 64; }

std::vector<int> landings_of(const Op& op) {
  std::vector<int> out;
  for (const Piece& p : op.pieces)
    if (p.landing >= 0 && std::find(out.begin(), out.end(), p.landing) == out.end()) out.push_back(p.landing);
  return out;
}

LandingLayout layout_landings(const std::vector<Op>& ops, const std::vector<Landing>& landings) {
  LandingLayout out;
  out.offset.assign(landings.size(), -1);
  std::vector<int64_t> first(landings.size(), -1), last(landings.size(), -1);
  std::vector<int> order;  // landings by first use
  for (size_t i = 0; i < ops.size(); ++i) {
    int64_t need = 0;
    for (int l : landings_of(ops[i])) {
      if (first[l] < 0) {
        first[l] = static_cast<int64_t>(i);
        order.push_back(l);
      }
      last[l] = static_cast<int64_t>(i);
      need += landing_bytes(landings[l]);
    }
    out.max_op_bytes = std::max(out.max_op_bytes, need);
  }
  std::vector<int> live;  // placed landings whose last op is at or after the current first op
  for (int l : order) {
    live.erase(std::remove_if(live.begin(), live.end(), [&](int k) { return last[k] < first[l]; }), live.end());
    std::sort(live.begin(), live.end(), [&](int a, int b) { return out.offset[a] < out.offset[b]; });
    const int64_t bytes = landing_bytes(landings[l]);
    int64_t at = 0;
    for (int k : live) {
      if (out.offset[k] - at >= bytes) break;
      at = std::max(at, out.offset[k] + landing_bytes(landings[k]));
    }
    out.offset[l] = at;
    out.pool_bytes = std::max(out.pool_bytes, at + bytes);
    live.push_back(l);
  }
  return out;
}

}  // namespace reshard
