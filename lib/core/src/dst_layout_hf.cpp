// --gen-layout hf: every param is its own local tensor under its HF name (the seed's layout).
#include "dst_layouts.h"

namespace reshard {
namespace {

class HfLayout final : public DestinationLayout {
 public:
  GenLayout kind() const override { return GenLayout::Hf; }
  StorageAssignment assign(const std::string&, const ParamRule&, int) const override { return {}; }
};

}  // namespace

std::unique_ptr<DestinationLayout> make_hf_layout() { return std::make_unique<HfLayout>(); }

}  // namespace reshard
