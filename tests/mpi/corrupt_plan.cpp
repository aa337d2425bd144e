// reshard_corrupt_plan IN MODE OUT: plants one corruption in a plan file, for the tests that prove
// `reshard verify` rejects it and `reshard run` refuses it before allocating anything. MODE: drop |
// wrong-source | shift | duplicate | src-local (a source offset far outside the shard) | huge-bucket
// (2^62 bucket bytes) | same-storage (two params landing in one storage region) | group-drop-rank
// (a bulk group missing a destination rank). The param's transfer
// ranges are kept consistent so that only the planted fault is wrong.
#include <algorithm>
#include <cstdio>
#include <string>

#include "reshard/core/error.h"
#include "reshard/core/plan_io.h"

using namespace reshard;

namespace {

// First bulk param with at least one transfer.
uint32_t victim(const Plan& plan) {
  for (uint32_t p = 0; p < plan.params.size(); ++p)
    if (plan.params[p].path == Path::Bulk && plan.params[p].transfer_count > 0) return p;
  throw config_error("plan has no bulk transfer to corrupt");
}

void shift_ranges(Plan& plan, uint32_t p, int64_t delta) {
  plan.params[p].transfer_count += delta;
  for (uint32_t q = 0; q < plan.params.size(); ++q)
    if (q != p && plan.params[q].path == Path::Bulk && plan.params[q].transfer_begin > plan.params[p].transfer_begin)
      plan.params[q].transfer_begin += delta;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s IN drop|wrong-source|shift|duplicate OUT\n", argv[0]);
    return 2;
  }
  try {
    Plan plan = load_plan(argv[1]);
    const std::string mode = argv[2];
    const uint32_t p = victim(plan);
    const uint64_t i = plan.params[p].transfer_begin;
    Transfer& t = plan.transfers[i];
    if (mode == "drop") {
      plan.transfers.erase(plan.transfers.begin() + static_cast<int64_t>(i));
      shift_ranges(plan, p, -1);
    } else if (mode == "duplicate") {
      plan.transfers.insert(plan.transfers.begin() + static_cast<int64_t>(i), t);
      shift_ranges(plan, p, +1);
    } else if (mode == "shift") {
      t.box.offset[0] += 1;
    } else if (mode == "wrong-source") {
      // A train rank whose shard does not contain the box; else any rank outside the source mesh.
      const ParamPlan& param = plan.params[p];
      int bad = -1;
      for (int f = 0; f < param.src.mesh.size() && bad < 0; ++f)
        if (!contains(param.src.local_box(param.shape, f), t.box)) bad = param.src.mesh.ranks[f];
      t.src = bad >= 0 ? bad : t.dst;
    } else if (mode == "src-local") {
      t.src_local[0] += int64_t{1} << 40;
    } else if (mode == "huge-bucket") {
      if (plan.buckets.empty()) throw config_error("plan has no bucket");
      plan.buckets[0].bytes = int64_t{1} << 62;
    } else if (mode == "same-storage") {
      // The next bulk param of the same shape and layouts lands where the victim does.
      bool done = false;
      for (uint32_t q = p + 1; q < plan.params.size() && !done; ++q) {
        ParamPlan& other = plan.params[q];
        if (other.path == Path::Bulk && other.shape == plan.params[p].shape &&
            other.dst.placements == plan.params[p].dst.placements && other.dst_fuse_dim < 0) {
          other.dst_storage = plan.params[p].dst_storage;
          done = true;
        }
      }
      if (!done) throw config_error("no param of the victim's shape to clash with");
    } else if (mode == "group-drop-rank") {
      std::vector<int>& ranks = plan.groups[static_cast<size_t>(plan.params[p].group)].ranks;
      ranks.erase(std::find(ranks.begin(), ranks.end(), t.dst));
    } else {
      throw config_error("unknown mode " + mode);
    }
    save_plan(plan, argv[3], plan_format_for_path(argv[3]), true);
    std::printf("planted %s in param %s (transfer %llu)\n", mode.c_str(), plan.params[p].name.c_str(),
                static_cast<unsigned long long>(i));
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "reshard_corrupt_plan: %s\n", e.what());
    return e.exit_code();
  }
}
