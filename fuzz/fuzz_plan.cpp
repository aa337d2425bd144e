// Fuzz target: the plan loader (JSON and CBOR) and what `reshard inspect` does with a loaded plan.
#include <vector>

#include "fuzz_target.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/stats.h"
#include "reshard/core/summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return reshard::fuzz::run(data, size, [](std::string_view bytes) {
    const std::vector<uint8_t> v(bytes.begin(), bytes.end());
    const reshard::Plan plan = reshard::decode_plan(v, "fuzz.plan");
    const reshard::PlanStats stats = reshard::compute_stats(plan);
    (void)reshard::format_summary(plan, stats);
  });
}
