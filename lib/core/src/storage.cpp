#include "reshard/core/storage.h"

#include <algorithm>
#include <map>

#include "reshard/core/dst_layout.h"
#include "reshard/core/fp8_block.h"
#include "reshard/core/mxfp8.h"

namespace reshard {

namespace {

// A source storage holding `box` of param i whole, as planned.
LocalStorage src_storage(const ParamPlan& p, uint32_t i, const Box& box) {
  LocalStorage s{p.name, p.dtype, box.extent, {StorageMember{i, box, Dims::zeros(p.shape.n)}}, {}, {}};
  return s;
}

// A block-FP8 source storage: e4m3 values plus the float32 scales of the blocks its box touches.
LocalStorage src_storage_fp8(const ParamPlan& p, uint32_t i, const Box& box) {
  LocalStorage s = src_storage(p, i, box);
  if (p.src_dequant) {
    if (p.shape.n < 2) throw config_error("param " + p.name + ": block-FP8 needs at least 2 dims, got " + p.shape.str());
    s.dtype = DType::F8_E4M3;
    s.block_fp8 = true;
    s.scale_name = p.name + "_scale_inv";
    s.scale_shape = fp8_block_cover(box).extent;
  }
  return s;
}

}  // namespace

std::vector<LocalStorage> src_storages(const Plan& plan, int rank) {
  std::vector<LocalStorage> out;
  if (plan.is_gen(rank)) return out;  // train ranks hold every source (and root every bucket)
  for (uint32_t i = 0; i < plan.params.size(); ++i) {
    const ParamPlan& p = plan.params[i];
    if (p.path != Path::Bulk) continue;
    const int f = p.src.mesh.flat_index_of_rank(rank);
    if (f < 0) continue;
    if (p.src.single_box()) {
      LocalStorage s = p.src_dequant ? src_storage_fp8(p, i, p.src.local_box(p.shape, f))
                                     : src_storage(p, i, p.src.local_box(p.shape, f));
      if (!p.src.plain() && !p.src_dequant) s.shape = p.src.local_shape(p.shape, f);  // a padded vocab's rows
      out.push_back(std::move(s));
      continue;
    }
    // A sectioned source (Megatron's mamba in_proj): one local tensor holding every piece.
    LocalStorage s{p.name, p.dtype, p.src.local_shape(p.shape, f), {}, {}, {}};
    for (const LocalPiece& q : p.src.local_pieces(p.shape, f)) s.members.push_back(StorageMember{i, q.box, q.at});
    out.push_back(std::move(s));
  }
  for (const MiscBucket& bucket : plan.buckets) {
    if (bucket.root != rank) continue;
    for (uint32_t i : bucket.params) {
      const ParamPlan& p = plan.params[i];
      out.push_back(p.src_dequant ? src_storage_fp8(p, i, full_box(p.shape)) : src_storage(p, i, full_box(p.shape)));
    }
  }
  return out;
}

std::vector<LocalStorage> dst_storages(const Plan& plan, int rank) {
  std::vector<LocalStorage> out;
  if (!plan.is_gen(rank)) return out;
  const DstMap map(plan);
  std::map<std::string, size_t> index;  // storage name -> position in out
  for (uint32_t i = 0; i < plan.params.size(); ++i) {
    const ParamPlan& p = plan.params[i];
    if (p.path != Path::Bulk) continue;
    const int f = p.dst.mesh.flat_index_of_rank(rank);
    if (f < 0) continue;
    std::vector<DstPiece> pieces = map.pieces(i, f);
    // The param's local tensor spans its storage to `reach` (padding included), and an empty torch.chunk
    // remainder still names its storage.
    const Dims reach = map.reach(i, f);
    if (pieces.empty()) {
      const Box own = p.dst.local_box(p.shape, f);
      const Box none{own.offset, Dims::zeros(p.shape.n)};
      const std::optional<DstPiece> at = map.locate(i, f, none, {LocalPiece{none, Dims::zeros(p.shape.n)}});
      pieces.push_back(at ? *at : DstPiece{0, none, Dims::zeros(p.shape.n)});
    }
    for (const DstPiece& piece : pieces) {
      const std::string name = DstMap::storage_name(p, piece.storage);
      auto [it, fresh] = index.try_emplace(name, out.size());
      if (fresh) out.push_back(LocalStorage{name, p.dtype, Dims::zeros(p.shape.n), {}, {}, {}});
      LocalStorage& s = out[it->second];
      s.members.push_back(StorageMember{i, piece.box, piece.offset});
      for (int d = 0; d < p.shape.n; ++d)
        s.shape[d] = std::max({s.shape[d], piece.offset[d] + piece.box.extent[d], reach[d]});
      if (p.mxfp8) {
        s.dtype = DType::F8_E4M3;
        s.scale_name = p.dst_split_dim >= 0 ? name + "_scale" : p.scale_storage;
      }
    }
  }
  for (LocalStorage& s : out)
    if (!s.scale_name.empty()) s.scale_shape = mxfp8_scale_shape(s.shape);
  for (uint32_t i = 0; i < plan.params.size(); ++i) {
    const ParamPlan& p = plan.params[i];
    if (p.path != Path::Misc) continue;
    out.push_back(LocalStorage{p.dst_name.empty() ? p.name : p.dst_name, p.dtype, p.shape,
                               {StorageMember{i, full_box(p.shape), Dims::zeros(p.shape.n)}}, {}, {}});
  }
  return out;
}

}  // namespace reshard
