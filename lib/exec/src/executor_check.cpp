// The executor's checks (executor.h): sources filled with the pattern, destinations poisoned, and
// every destination byte compared with what it must hold, or with a snapshot of another run.
#include "executor.h"

#include "reshard/core/error.h"
#include "reshard/core/fp8_block.h"
#include "reshard/core/mxfp8.h"
#include "reshard/core/pattern.h"

namespace reshard {
namespace {


// What a destination holds of param p at global box (global_offset, extent), placed at storage_offset
// of a tensor of storage_shape: the param's pattern in its dtype, or for a block-FP8-trained param the
// BF16 its sources dequantized (RegionSpec::dequant).
RegionSpec destination_region(const ParamPlan& p, const Dims& storage_shape, const Dims& storage_offset,
                              const Dims& extent, const Dims& global_offset) {
  RegionSpec r{storage_shape, storage_offset, extent,       p.shape, global_offset, dtype_size(p.dtype),
               param_seed(p.name), p.dtype == DType::F8_E4M3};
  if (p.src_dequant) {
    r.dequant = true;
    r.scale_seed = block_scale_seed(r.seed);
  }
  return r;
}

// A storage member's pattern region: on sources in the storage's own element type (e4m3 for
// block-FP8), on destinations what they must hold.
RegionSpec region(const Plan& plan, const LocalStorage& s, const StorageMember& m, bool src) {
  const ParamPlan& p = plan.params[m.param];
  if (!src) return destination_region(p, s.shape, m.offset, m.box.extent, m.box.offset);
  return RegionSpec{s.shape,          m.offset,           m.box.extent,
                    p.shape,          m.box.offset,       dtype_size(s.dtype),
                    param_seed(p.name), s.dtype == DType::F8_E4M3};
}


}  // namespace

void Executor::fill_sources() {
  for (size_t i = 0; i < storages_.src.size(); ++i) {
    const LocalStorage& s = storages_.src[i];
    for (const StorageMember& m : s.members) memory_.fill_pattern(src_buf_[i].get(), region(plan_, s, m, true));
    if (!s.block_fp8) continue;
    const StorageMember& m = s.members.at(0);
    std::vector<float> scales(static_cast<size_t>(s.scale_shape.product()));
    host_fill_block_scales(scales.data(), plan_.params[m.param].shape, m.box,
                           block_scale_seed(param_seed(plan_.params[m.param].name)));
    memory_.upload(src_scale_buf_[i].get(), scales.data(), s.scale_bytes());
  }
  memory_.sync(-1);
}

void Executor::poison_destinations() {
  for (size_t i = 0; i < storages_.dst.size(); ++i) {
    memory_.memset(dst_buf_[i].get(), kPoisonByte, storages_.dst[i].bytes());
    if (dst_scale_buf_[i]) memory_.memset(dst_scale_buf_[i].get(), kPoisonByte, storages_.dst[i].scale_bytes());
  }
  memory_.sync(-1);
}

std::vector<int64_t> Executor::count_wrong() {
  std::vector<int64_t> wrong(plan_.params.size(), 0);
  for (size_t i = 0; i < storages_.dst.size(); ++i) {
    if (storages_.dst[i].mxfp8()) {
      count_wrong_mxfp8(i, wrong);
      continue;
    }
    for (const StorageMember& m : storages_.dst[i].members)
      wrong[m.param] += memory_.count_wrong(dst_buf_[i].get(), region(plan_, storages_.dst[i], m, false));
  }
  return wrong;
}

// MXFP8 storages: every e4m3 value and E8M0 scale byte against the CPU reference quantizer applied to
// the BF16 pattern of the member's global box (what the sources hold).
int64_t Executor::count_wrong_mxfp8(size_t storage, std::vector<int64_t>& wrong) {
  const LocalStorage& s = storages_.dst[storage];
  std::vector<uint8_t> values(static_cast<size_t>(s.bytes())), scales(static_cast<size_t>(s.scale_bytes()));
  memory_.sync(-1);
  memory_.download(values.data(), dst_buf_[storage].get(), s.bytes());
  memory_.download(scales.data(), dst_scale_buf_[storage].get(), s.scale_bytes());
  int64_t total = 0;
  for (const StorageMember& m : s.members) {
    const ParamPlan& p = plan_.params[m.param];
    const Dims& extent = m.box.extent;
    const Dims scale_extent = mxfp8_scale_shape(extent);
    const int64_t n = extent.product();
    std::vector<uint16_t> bf16(static_cast<size_t>(n));
    host_fill_pattern(bf16.data(), destination_region(p, extent, Dims::zeros(extent.n), extent, m.box.offset));
    std::vector<uint8_t> want_v(static_cast<size_t>(n)), want_s(static_cast<size_t>(scale_extent.product()));
    mxfp8_quantize(bf16.data(), extent, want_v.data(), want_s.data());
    std::vector<uint8_t> got_v(want_v.size()), got_s(want_s.size());
    host_copy_box(values.data(), s.shape, m.offset, got_v.data(), extent, Dims::zeros(extent.n), extent, 1);
    Dims scale_offset = m.offset;
    scale_offset[scale_offset.n - 1] /= kMxBlock;
    host_copy_box(scales.data(), s.scale_shape, scale_offset, got_s.data(), scale_extent, Dims::zeros(extent.n),
                  scale_extent, 1);
    int64_t bad = 0;
    for (size_t j = 0; j < want_v.size(); ++j) bad += want_v[j] != got_v[j];
    for (size_t j = 0; j < want_s.size(); ++j) bad += want_s[j] != got_s[j];
    wrong[m.param] += bad;
    total += bad;
  }
  return total;
}

void Executor::snapshot_destinations() {
  if (!snapshot_taken_)
    for (const LocalStorage& s : storages_.dst) {
      snapshot_.emplace_back(memory_, s.bytes());
      snapshot_scale_.push_back(s.mxfp8() ? Block(memory_, s.scale_bytes()) : Block());
    }
  snapshot_taken_ = true;
  for (size_t i = 0; i < storages_.dst.size(); ++i) {
    memory_.copy_bytes(snapshot_[i].get(), dst_buf_[i].get(), storages_.dst[i].bytes());
    if (snapshot_scale_[i]) memory_.copy_bytes(snapshot_scale_[i].get(), dst_scale_buf_[i].get(), storages_.dst[i].scale_bytes());
  }
  memory_.sync(-1);
}

std::vector<int64_t> Executor::count_different_from_snapshot() {
  std::vector<int64_t> diff(plan_.params.size(), 0);
  if (!snapshot_taken_) throw runtime_error("count_different_from_snapshot() before snapshot_destinations()");
  for (size_t i = 0; i < storages_.dst.size(); ++i) {
    const LocalStorage& s = storages_.dst[i];
    for (const StorageMember& m : s.members) {
      diff[m.param] += memory_.count_different(snapshot_[i].get(), dst_buf_[i].get(), s.shape, m.offset, m.box.extent,
                                               s.mxfp8() ? 1 : dtype_size(plan_.params[m.param].dtype));
      if (!s.mxfp8()) continue;
      Dims offset = m.offset;
      offset[offset.n - 1] /= kMxBlock;
      diff[m.param] += memory_.count_different(snapshot_scale_[i].get(), dst_scale_buf_[i].get(), s.scale_shape, offset,
                                               mxfp8_scale_shape(m.box.extent), 1);
    }
  }
  return diff;
}

}  // namespace reshard
