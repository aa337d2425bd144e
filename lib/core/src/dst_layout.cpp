// The --gen-layout -> DestinationLayout factory.
#include "dst_layouts.h"

namespace reshard {

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
