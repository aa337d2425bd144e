// Fused dst storages (vllm, megatron): the order of their members, the fallback to one storage per
// param, and where each member starts along the fuse dim on every dst rank (used by DstMap).
#include <algorithm>
#include <map>

#include "planner_bulk.h"

namespace reshard {
namespace {

// Members of one fused storage must agree outside the fuse dim: dtype, mesh, split, and on every rank
// the same local extent and the same cut of every other dim.
bool same_outside(const ParamPlan& a, const ParamPlan& b, int fuse_dim) {
  if (a.shape.n != b.shape.n || a.dtype != b.dtype || a.dst.mesh.ranks != b.dst.mesh.ranks) return false;
  if (a.dst_fuse_groups != b.dst_fuse_groups || a.dst_split_dim != b.dst_split_dim) return false;
  for (int d = 0; d < a.shape.n; ++d)
    if (d != fuse_dim && a.shape[d] != b.shape[d]) return false;
  if (a.dst.placements.size() != b.dst.placements.size()) return false;
  for (size_t i = 0; i < a.dst.placements.size(); ++i) {
    const Placement &pa = a.dst.placements[i], &pb = b.dst.placements[i];
    if (pa.shard_dim != pb.shard_dim) return false;
    if (pa.shard_dim != fuse_dim && pa != pb) return false;
  }
  if (a.dst.plain() && b.dst.plain()) return true;
  for (int f = 0; f < a.dst.mesh.size(); ++f) {
    const Dims sa = a.dst.local_shape(a.shape, f), sb = b.dst.local_shape(b.shape, f);
    for (int d = 0; d < a.shape.n; ++d)
      if (d != fuse_dim && sa[d] != sb[d]) return false;
  }
  return true;
}

}  // namespace

void finalize_fused_storages(Plan& plan) {
  std::map<std::string, std::vector<uint32_t>> by_storage;
  for (uint32_t i = 0; i < plan.params.size(); ++i) {
    const ParamPlan& p = plan.params[i];
    if (p.path == Path::Bulk && p.dst_fuse_dim >= 0) by_storage[p.dst_storage].push_back(i);
  }
  for (auto& [name, members] : by_storage) {
    std::stable_sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
      return plan.params[a].dst_fuse_index < plan.params[b].dst_fuse_index;
    });
    bool ok = true;
    for (uint32_t m : members) ok = ok && same_outside(plan.params[members[0]], plan.params[m], plan.params[m].dst_fuse_dim);
    for (size_t k = 0; k < members.size(); ++k) {
      ParamPlan& p = plan.params[members[k]];
      if (ok) {
        p.dst_fuse_index = static_cast<int>(k);
      } else {  // cannot fuse: every member keeps its own storage
        p.dst_storage = p.name;
        p.dst_fuse_dim = -1;
        p.dst_fuse_index = 0;
        p.dst_fuse_groups = 1;
      }
    }
  }
}

std::vector<std::vector<int64_t>> fused_origins(const Plan& plan) {
  std::vector<std::vector<int64_t>> out(plan.params.size());
  std::map<std::string, std::vector<uint32_t>> by_storage;
  for (uint32_t i = 0; i < plan.params.size(); ++i) {
    const ParamPlan& p = plan.params[i];
    if (p.path == Path::Bulk && p.dst_fuse_dim >= 0) by_storage[p.dst_storage].push_back(i);
  }
  for (auto& [name, members] : by_storage) {
    std::sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
      return plan.params[a].dst_fuse_index < plan.params[b].dst_fuse_index;
    });
    const ParamPlan& first = plan.params[members[0]];
    std::vector<int64_t> running(first.dst.mesh.size(), 0);
    for (uint32_t m : members) {
      const ParamPlan& p = plan.params[m];
      if (p.dst_fuse_index > 0) out[m] = running;
      for (int f = 0; f < p.dst.mesh.size(); ++f) running[f] += p.dst.local_shape(p.shape, f)[p.dst_fuse_dim];
    }
  }
  return out;
}

}  // namespace reshard
