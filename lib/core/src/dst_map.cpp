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
    for (int f = 0; f < first.dst.mesh.size(); ++f) {
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
  return param.dst_split_dim >= 0 || (param.dst_fuse_dim >= 0 && fuse_[p].rows > 0);
}

std::optional<DstPiece> DstMap::locate(uint32_t p, int flat, const Box& box) const {
  const ParamPlan& param = plan_.params[p];
  return locate(p, flat, box, param.dst.local_box(param.shape, flat));
}

std::optional<DstPiece> DstMap::locate(uint32_t p, int flat, const Box& box, const Box& own) const {
  const ParamPlan& param = plan_.params[p];
  if (!contains(own, box)) return std::nullopt;
  const int sd = param.dst_split_dim, fd = param.dst_fuse_dim;
  const Fuse& fu = fuse_[p];
  DstPiece out{0, box, relative(box, own.offset)};
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
  const Box own = param.dst.local_box(param.shape, flat);
  std::vector<DstPiece> out;
  if (own.empty()) return out;
  const int sd = param.dst_split_dim, fd = param.dst_fuse_dim;
  const Fuse& fu = fuse_[p];
  const bool split = sd >= 0 && sd < own.offset.n, grouped = fd >= 0 && fu.rows > 0;
  const int64_t nsplit = split ? own.extent[sd] : 1;
  const int64_t ngroups = grouped ? (own.extent[fd] + fu.rows - 1) / fu.rows : 1;
  for (int64_t j = 0; j < nsplit; ++j) {
    for (int64_t g = 0; g < ngroups; ++g) {
      Box b = own;
      if (split) {
        b.offset[sd] += j;
        b.extent[sd] = 1;
      }
      if (grouped) {
        b.offset[fd] += g * fu.rows;
        b.extent[fd] = std::min(fu.rows, own.extent[fd] - g * fu.rows);
      }
      // A misaligned interleave (reported in problems()) still gets a piece, at its plain offset.
      const std::optional<DstPiece> at = locate(p, flat, b, own);
      out.push_back(at ? *at : DstPiece{0, b, relative(b, own.offset)});
    }
  }
  return out;
}

}  // namespace reshard
