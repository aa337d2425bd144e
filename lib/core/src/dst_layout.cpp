// The --gen-layout -> DestinationLayout factory.
#include "dst_layouts.h"
#include "names.h"

namespace reshard {

int64_t find_head_dim(const std::vector<LogicalParam>& params, const PlanOptions& options, std::string& from) {
  if (options.head_dim > 0) {
    from = "--head-dim";
    return options.head_dim;
  }
  for (const LogicalParam& p : params)
    if (p.shape.n == 1 && (names::ends_with(p.name, "self_attn.q_norm.weight") ||
                           names::ends_with(p.name, "self_attn.k_norm.weight"))) {
      from = p.name;
      return p.shape[0];
    }
  return 0;
}

std::unique_ptr<DestinationLayout> make_destination_layout(GenLayout layout) {
  switch (layout) {
    case GenLayout::Vllm:
      return make_vllm_layout();
    case GenLayout::Megatron:
      return make_megatron_layout();
    case GenLayout::Hf:
      break;
  }
  return make_hf_layout();
}

}  // namespace reshard
