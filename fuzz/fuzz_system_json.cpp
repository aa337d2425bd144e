// Fuzz target: the system config reader and the parallelism checks that follow it.
#include "fuzz_target.h"
#include "reshard/core/parallelism.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return reshard::fuzz::run(data, size, [](std::string_view text) {
    reshard::SystemConfig sys = reshard::parse_system_json(text, "fuzz.json");
    reshard::Problems problems;
    reshard::validate_system(sys, problems);
    problems.throw_if_any("fuzz.json: invalid system config");
    if (sys.train.edp() <= 0) __builtin_trap();  // a validated config has a positive expert dp
  });
}
