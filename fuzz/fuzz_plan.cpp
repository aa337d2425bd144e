// Fuzz target: the plan loader (JSON and CBOR), what `reshard inspect` does with a loaded plan, and the
// static checks `reshard run` makes on load (verify_plan without the layout re-plan).
#include <vector>

#include "fuzz_target.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/stats.h"
#include "reshard/core/summary.h"
#include "reshard/core/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return reshard::fuzz::run(data, size, [](std::string_view bytes) {
    const std::vector<uint8_t> v(bytes.begin(), bytes.end());
    const reshard::Plan plan = reshard::decode_plan(v, "fuzz.plan");
    const reshard::PlanStats stats = reshard::compute_stats(plan);
    (void)reshard::format_summary(plan, stats);
    (void)reshard::verify_plan(plan, 8, false);
  });
}
