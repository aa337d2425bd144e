#include "reshard/core/landing_layout.h"

#include <algorithm>
#include <string>

#include "reshard/core/error.h"

namespace reshard {

int64_t landing_bytes(const Landing& l) { return (l.bytes() + 63) / 64 * 64; }

void check_landings_fit(const Plan& plan, const std::vector<Landing>& landings, int rank, int64_t staging_bytes) {
  for (const Landing& l : landings)
    if (landing_bytes(l) > staging_bytes)
      throw config_error("param " + plan.params[l.param].name + ": its BF16 landing of " +
                         std::to_string(landing_bytes(l)) + " bytes on rank " + std::to_string(rank) +
                         " exceeds --staging-bytes " + std::to_string(staging_bytes) +
                         (l.src_side ? " (block-FP8 shards are dequantized whole before they are sent)"
                                     : " (MXFP8 shards land whole before they are quantized)") +
                         "; raise --staging-bytes");
}

std::vector<int> landings_of(const Op& op) {
  std::vector<int> out;
  for (const Piece& p : op.pieces)
    if (p.landing >= 0 && std::find(out.begin(), out.end(), p.landing) == out.end()) out.push_back(p.landing);
  return out;
}

LandingLayout layout_landings(const std::vector<Op>& ops, const std::vector<Landing>& landings, int64_t budget) {
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
  // Ring placement within `budget`: each landing goes to the first gap at or after the previous
  // one's end, wrapping to the start when the budget is used up, so space is reused (and a batch
  // ended for it) only once per `budget` bytes of landings, not once per landing.
  int64_t total = 0;
  for (int l : order) total += landing_bytes(landings[l]);
  const int64_t cap = std::max<int64_t>(std::min(budget, total), 1);
  std::vector<int> live;  // placed landings whose last op is at or after the current first op
  int64_t cursor = 0;
  for (int l : order) {
    live.erase(std::remove_if(live.begin(), live.end(), [&](int k) { return last[k] < first[l]; }), live.end());
    std::sort(live.begin(), live.end(), [&](int a, int b) { return out.offset[a] < out.offset[b]; });
    const int64_t bytes = landing_bytes(landings[l]);
    auto fit_from = [&](int64_t at) {  // first gap of `bytes` at or after `at` among the live landings
      for (int k : live) {
        const int64_t end = out.offset[k] + landing_bytes(landings[k]);
        if (end <= at) continue;
        if (out.offset[k] - at >= bytes) break;
        at = end;
      }
      return at;
    };
    int64_t at = fit_from(cursor);
    if (at + bytes > cap && cursor > 0) at = fit_from(0);
    out.offset[l] = at;
    out.pool_bytes = std::max(out.pool_bytes, at + bytes);
    cursor = at + bytes;
    live.push_back(l);
  }
  return out;
}

}  // namespace reshard
