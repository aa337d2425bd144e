// Expert grouping: per-expert HF tensors "(.+\.experts)\.(\d+)\.(gate|up|down)_proj\.weight" become
// one logical tensor "{prefix}.{proj}.weight" of shape [E, ...], and their block-FP8 siblings
// "...experts.N.{proj}.weight_scale_inv" likewise "{prefix}.{proj}.weight_scale_inv". A pre-fused
// "experts.gate_up_proj" [E, 2I, H] splits into gate and up halves, "experts.down_proj" [E, H, I]
// is taken as is.
// Everything else passes through. Output keeps metadata order (a group sits at its first member).
#pragma once
#include <string>
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/model.h"

namespace reshard {

struct LogicalParam {
  std::string name;
  std::vector<std::string> members;  // HF tensors it stands for
  Dims shape;
  DType dtype = DType::BF16;
  bool grouped_expert = false;
};

// Every problem (missing expert, duplicate expert, shapes or dtypes disagreeing in a group, odd
// fused size) goes into `problems`, naming the group and the values.
std::vector<LogicalParam> group_params(const std::vector<TensorMeta>& tensors, Problems& problems);

}  // namespace reshard
