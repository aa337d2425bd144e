// DstMap: where each piece of a bulk param's dst box lands, from the plan's dst_* fields (dst_layout.h).
#include <algorithm>
#include <map>

#include "planner_bulk.h"
#include "reshard/core/dst_layout.h"

namespace reshard {

DstMap::DstMap(const Plan& plan) : plan_(plan), fuse_(plan.params.size()) {
  const std::vector<std::vector<int64_t>> origins = fused_origins(plan);
  std::map<std::string, std::vector<uint32_t>> interleaved;  // storage -> members, groups > 1
  for (uint32_t i = 0; i < plan.params.size(); ++i) {
    const ParamPlan& p = plan.params[i];
    if (p.path != Path::Bulk) continue;
    fuse_[i].origins = origins[i];
    if (p.dst_split_dim >= p.shape.n || (p.dst_split_dim >= 0 && p.dst_split_dim == p.dst_fuse_dim))
      problems_.push_back("param " + p.name + ": split dim " + std::to_string(p.dst_split_dim) +
                          " is outside the tensor or equals its fuse dim");
    if (p.dst_fuse_groups > 1 && p.dst_fuse_dim >= 0) interleaved[p.dst_storage].push_back(i);
  }
  for (auto& [name, members] : interleaved) {
    std::sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
      return plan.params[a].dst_fuse_index < plan.params[b].dst_fuse_index;
    });
    int64_t stride = 0;
    for (uint32_t m : members) {
      const ParamPlan& p = plan.params[m];
      const int64_t size = p.shape[p.dst_fuse_dim], groups = p.dst_fuse_groups;
      if (size % groups != 0) {
        problems_.push_back("param " + p.name + ": " + std::to_string(size) + " rows along dim " +
                            std::to_string(p.dst_fuse_dim) + " do not split into " + std::to_string(groups) +
                            " groups (storage " + name + ")");
        continue;
      }
      fuse_[m].rows = size / groups;
      fuse_[m].origin = stride;
      stride += fuse_[m].rows;
    }
    for (uint32_t m : members) fuse_[m].stride = stride;
    // Every dst shard must hold whole groups, the same number for every member.
    const ParamPlan& first = plan.params[members[0]];
    bool plain = true;
    for (uint32_t m : members)
      if (!plan.params[m].dst.plain()) {
        problems_.push_back("param " + plan.params[m].name + ": an interleaved storage (" + name +
                            ") needs a torch.chunk gen layout");
        plain = false;
      }
    for (int f = 0; plain && f < first.dst.mesh.size(); ++f) {
      int64_t local_groups = -1;
      for (uint32_t m : members) {
        const ParamPlan& p = plan.params[m];
        if (fuse_[m].rows == 0 || f >= p.dst.mesh.size()) continue;
        const Box b = p.dst.local_box(p.shape, f);
        const int d = p.dst_fuse_dim;
        if (b.offset[d] % fuse_[m].rows != 0 || b.extent[d] % fuse_[m].rows != 0) {
          problems_.push_back("param " + p.name + ": gen shard " + b.str() + " does not hold whole groups of " +
                              std::to_string(fuse_[m].rows) + " rows (storage " + name + ", " +
                              std::to_string(p.dst_fuse_groups) + " groups)");
          continue;
        }
        const int64_t n = b.extent[d] / fuse_[m].rows;
        if (local_groups >= 0 && n != local_groups)
          problems_.push_back("param " + p.name + ": gen rank " + std::to_string(p.dst.mesh.ranks[f]) + " holds " +
                              std::to_string(n) + " groups, its storage partners " + std::to_string(local_groups));
        local_groups = n;
      }
    }
  }
}

std::string DstMap::storage_name(const ParamPlan& p, int index) {
  return p.dst_split_dim >= 0 ? p.dst_storage + std::to_string(index) : p.dst_storage;
}

bool DstMap::piecewise(uint32_t p) const {
  const ParamPlan& param = plan_.params[p];
  return param.dst_split_dim >= 0 || (param.dst_fuse_dim >= 0 && fuse_[p].rows > 0) || !param.dst.single_box();
}

Dims DstMap::reach(uint32_t p, int flat) const {
  const ParamPlan& param = plan_.params[p];
  Dims r = param.dst.local_shape(param.shape, flat);
  const int sd = param.dst_split_dim, fd = param.dst_fuse_dim;
  if (sd >= 0 && sd < r.n) r[sd] = std::min<int64_t>(r[sd], 1);
  if (fd >= 0 && fd < r.n) {
    const Fuse& fu = fuse_[p];
    if (fu.rows > 0) r[fd] = 0;  // interleaved: its pieces say
    else if (!fu.origins.empty()) r[fd] += fu.origins[flat];
  }
  return r;
}

std::vector<LocalPiece> DstMap::held(uint32_t p, int flat) const {
  const ParamPlan& param = plan_.params[p];
  return param.dst.local_pieces(param.shape, flat);
}

std::optional<DstPiece> DstMap::locate(uint32_t p, int flat, const Box& box) const {
  return locate(p, flat, box, held(p, flat));
}

std::optional<DstPiece> DstMap::locate(uint32_t p, int flat, const Box& box, const std::vector<LocalPiece>& own) const {
  for (const LocalPiece& lp : own)
    if (contains(lp.box, box)) {
      Dims local = relative(box, lp.box.offset);
      for (int d = 0; d < local.n; ++d) local[d] += lp.at[d];
      return to_storage(p, flat, box, local);
    }
  return std::nullopt;
}

// A box at `local` in the param's local tensor -> its storage and offset there; nullopt when it
// crosses a storage piece (two experts of a split, two groups of an interleave).
std::optional<DstPiece> DstMap::to_storage(uint32_t p, int flat, const Box& box, const Dims& local) const {
  const ParamPlan& param = plan_.params[p];
  const int sd = param.dst_split_dim, fd = param.dst_fuse_dim;
  const Fuse& fu = fuse_[p];
  DstPiece out{0, box, local};
  if (sd >= 0 && sd < box.offset.n) {
    if (box.extent[sd] != 1) return std::nullopt;
    out.storage = static_cast<int>(out.offset[sd]);
    out.offset[sd] = 0;
  }
  if (fd >= 0 && fu.rows > 0) {
    const int64_t x = out.offset[fd], g = x / fu.rows, r = x % fu.rows;
    if (r + box.extent[fd] > fu.rows) return std::nullopt;
    out.offset[fd] = g * fu.stride + fu.origin + r;
  } else if (fd >= 0 && !fu.origins.empty()) {
    out.offset[fd] += fu.origins[flat];
  }
  return out;
}

std::vector<DstPiece> DstMap::pieces(uint32_t p, int flat) const {
  const ParamPlan& param = plan_.params[p];
  std::vector<DstPiece> out;
  const int sd = param.dst_split_dim, fd = param.dst_fuse_dim;
  const Fuse& fu = fuse_[p];
  for (const LocalPiece& lp : held(p, flat)) {
    const Box& own = lp.box;
    const bool split = sd >= 0 && sd < own.offset.n, grouped = fd >= 0 && fu.rows > 0;
    const int64_t nsplit = split ? own.extent[sd] : 1;
    // Group boundaries fall at multiples of fu.rows in local coordinates.
    std::vector<std::pair<int64_t, int64_t>> runs;  // (begin, size) along fd, relative to own
    if (grouped) {
      const int64_t a = lp.at[fd], e = own.extent[fd];
      for (int64_t x = a; x < a + e;) {
        const int64_t end = std::min(a + e, (x / fu.rows + 1) * fu.rows);
        runs.push_back({x - a, end - x});
        x = end;
      }
    } else {
      runs.push_back({0, 0});
    }
    for (int64_t j = 0; j < nsplit; ++j) {
      for (const auto& [begin, size] : runs) {
        Box b = own;
        if (split) {
          b.offset[sd] += j;
          b.extent[sd] = 1;
        }
        if (grouped) {
          b.offset[fd] += begin;
          b.extent[fd] = size;
        }
        Dims local = relative(b, own.offset);
        for (int d = 0; d < local.n; ++d) local[d] += lp.at[d];
        // A misaligned interleave (reported in problems()) still gets a piece, at its plain offset.
        const std::optional<DstPiece> at = to_storage(p, flat, b, local);
        out.push_back(at ? *at : DstPiece{0, b, local});
      }
    }
  }
  return out;
}

}  // namespace reshard
