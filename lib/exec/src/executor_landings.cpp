// The executor's BF16 landings (executor.h, docs/precision.md): opened at their place in the op list's
// layout, block-FP8 sources dequantized into them, MXFP8 members quantized out of them when done.
#include "executor.h"

#include <algorithm>

#include "reshard/core/error.h"

namespace reshard {

// Opens the landings of `op` that are closed, at their place in the layout of `algo`: when a landing
// still open is in the way, the batches up to the one holding its last op end first and free it.
// Block-FP8 sources are dequantized into theirs on the op's prep stream (before its packs and sends).
void Executor::open_landings(const Op& op, Algo algo, BatchWindow& window) {
  const LandingLayout& layout = landing_layout_[static_cast<int>(algo)];
  for (int l : landings_of(op)) {
    if (landing_at_[l] >= 0) continue;
    const int64_t at = layout.offset[l], end = at + landing_bytes(storages_.landings[l]);
    auto in_the_way = [&] {
      for (int k : open_landings_)
        if (landing_at_[k] < end && at < landing_at_[k] + landing_bytes(storages_.landings[k])) return true;
      return false;
    };
    if (in_the_way()) {
      // The landing in the way closes with its last op on this rank: post the open batches (one may
      // hold that op), then wait for the oldest batches only until it has closed.
      apply(window.post_open());
      for (int lane = 0; in_the_way() && (lane = window.retire_oldest()) >= 0;) retire_oldest(lane);
    }
    if (in_the_way())  // the layout rules this out; a bug if it happens
      throw runtime_error("landing of " + plan_.params[storages_.landings[l].param].name +
                          " overlaps an open landing after its batch ended");
    landing_at_[l] = at;
    open_landings_.push_back(l);
    const Landing& land = storages_.landings[l];
    if (!land.src_side || land.by_box) continue;
    const StorageMember& m = storages_.src[land.storage].members[land.member];
    memory_.dequant_block_fp8(src_buf_[land.storage].get(), src_scale_buf_[land.storage].get(), m.box,
                              Box{Dims::zeros(m.box.extent.n), m.box.extent}, static_cast<uint8_t*>(landing_.get()) + at,
                              prep_stream(op.stream));
  }
}

// A sending op through by-box landings: its boxes are dequantized into the landing first (on its
// prep stream, before its packs and sends).
void Executor::dequant_boxes(const Op& op) {
  for (const Piece& p : op.pieces) {
    if (p.landing < 0 || !storages_.landings[p.landing].by_box) continue;
    const Landing& land = storages_.landings[p.landing];
    const StorageMember& m = storages_.src[land.storage].members[land.member];
    memory_.dequant_block_fp8(src_buf_[land.storage].get(), src_scale_buf_[land.storage].get(), m.box,
                              Box{p.storage_offset, p.extent}, static_cast<uint8_t*>(landing_.get()) + landing_at_[p.landing],
                              prep_stream(op.stream));
  }
}

// After the last op through landing `l` completed: an MXFP8 member is quantized into its storage (on
// `stream`, after the batch's unpacks); either way its space is released.
void Executor::close_landing(int l, int stream) {
  const Landing& land = storages_.landings[l];
  if (!land.src_side) {
    const LocalStorage& s = storages_.dst[land.storage];
    const StorageMember& m = s.members[land.member];
    memory_.quantize_mxfp8(static_cast<uint8_t*>(landing_.get()) + landing_at_[l], m.box.extent, dst_buf_[land.storage].get(),
                           dst_scale_buf_[land.storage].get(), s.shape, m.offset, stream);
  }
  landing_at_[l] = -1;
  open_landings_.erase(std::find(open_landings_.begin(), open_landings_.end(), l));
}

}  // namespace reshard
