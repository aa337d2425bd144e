// reshard_corrupt_plan IN MODE OUT: plants one corruption in a plan file, for the tests that prove
// `reshard verify` rejects it. MODE: drop | wrong-source | shift | duplicate. The param's transfer
// ranges are kept consistent so that only the planted fault is wrong.
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
