// Static proof of a plan against the golden semantics (broadcast every full tensor, each
// destination keeps its slice): every gen rank receives exactly its region of every bulk param,
// exactly once, each piece from a rank that holds it, in bounds; every misc param sits in
// exactly one bucket, within the bucket's bytes.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

struct VerifyReport {
  std::vector<std::string> problems;  // "param P, rank R, box B: what is wrong"; capped
  int64_t problem_count = 0;          // all problems, also those beyond the cap
  int64_t params_checked = 0, transfers_checked = 0, elements_checked = 0;
  bool ok() const { return problem_count == 0; }
};

// `layouts`: also plan the model again and compare with the engines' layouts (verify_layouts; `run`
// leaves it to `reshard verify`, its own checks being what keeps every access in bounds).
VerifyReport verify_plan(const Plan& plan, size_t max_listed = 50, bool layouts = true);

// What `run` and `simulate` check before they use a plan: verify_plan without the layouts. Throws
// Error(Config) naming `origin`, the problem count and the first eight problems.
void require_verified(const Plan& plan, const std::string& origin);

// The plan's layouts against the engine's (verify_layouts.cpp): its params planned again from the
// model they stand for, every difference in path, mesh, placements or storage one problem. Part of
// verify_plan; Megatron destinations are not rebuilt (their block-FP8 sources drop scales).
void verify_layouts(const Plan& plan, const std::function<void(const std::string&)>& problem);

}  // namespace reshard
