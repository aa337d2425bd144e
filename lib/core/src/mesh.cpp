#include "reshard/core/mesh.h"

#include <algorithm>

#include "reshard/core/error.h"

namespace reshard {

int Mesh::dim_index(const std::string& name) const {
  auto it = std::find(dim_names.begin(), dim_names.end(), name);
  return it == dim_names.end() ? -1 : static_cast<int>(it - dim_names.begin());
}

std::vector<int> Mesh::coords(int flat) const {
  std::vector<int> c(dim_sizes.size());
  for (int d = ndim() - 1; d >= 0; --d) {
    c[d] = flat % dim_sizes[d];
    flat /= dim_sizes[d];
  }
  return c;
}

int Mesh::flat_index_of_rank(int global_rank) const {
  // Meshes built by make_mesh are contiguous ranges; sliced ones are not, so search.
  if (!ranks.empty() && ranks.back() - ranks.front() + 1 == size() && global_rank >= ranks.front() &&
      global_rank <= ranks.back() && ranks[global_rank - ranks.front()] == global_rank)
    return global_rank - ranks.front();
  auto it = std::find(ranks.begin(), ranks.end(), global_rank);
  return it == ranks.end() ? -1 : static_cast<int>(it - ranks.begin());
}

Mesh Mesh::slice(const std::string& name, int coord) const {
  int d = dim_index(name);
  if (d < 0) return *this;
  Mesh out;
  for (int i = 0; i < ndim(); ++i) {
    if (i == d) continue;
    out.dim_names.push_back(dim_names[i]);
    out.dim_sizes.push_back(dim_sizes[i]);
  }
  for (int flat = 0; flat < size(); ++flat)
    if (coords(flat)[d] == coord) out.ranks.push_back(ranks[flat]);
  return out;
}

Mesh make_mesh(const std::vector<std::pair<std::string, int>>& inner_first, int offset) {
  Mesh m;
  int total = 1;
  for (auto it = inner_first.rbegin(); it != inner_first.rend(); ++it) {
    if (it->second == 1) continue;
    m.dim_names.push_back(it->first);
    m.dim_sizes.push_back(it->second);
    total *= it->second;
  }
  m.ranks.resize(total);
  for (int i = 0; i < total; ++i) m.ranks[i] = offset + i;
  return m;
}

std::string Placement::str() const { return replicate() ? "R" : "S(" + std::to_string(shard_dim) + ")"; }

Placement Placement::parse(const std::string& s) {
  if (s == "R") return Placement{};
  if (s.size() >= 4 && s.rfind("S(", 0) == 0 && s.back() == ')') {
    const std::string digits = s.substr(2, s.size() - 3);
    if (!digits.empty() && digits.size() <= 2 && std::all_of(digits.begin(), digits.end(), ::isdigit)) {
      int d = std::stoi(digits);
      if (d < kMaxDims) return Placement{d};
    }
  }
  throw config_error("bad placement '" + s + "' (expected \"R\" or \"S(d)\" with d < " +
                     std::to_string(kMaxDims) + ")");
}

Box Layout::local_box(const Dims& global_shape, int flat) const {
  Box b = full_box(global_shape);
  const std::vector<int> c = mesh.coords(flat);
  for (int d = 0; d < mesh.ndim(); ++d) {
    const Placement& p = placements[d];
    if (p.replicate()) continue;
    // Nested sharding of one tensor dim: chunk the current range again.
    const int td = p.shard_dim;
    Range r = chunk_range(b.extent[td], mesh.dim_sizes[d], c[d]);
    b.offset[td] += r.begin;
    b.extent[td] = r.size();
  }
  return b;
}

bool Layout::uneven(const Dims& global_shape) const {
  Dims sizes = global_shape;
  for (int d = 0; d < mesh.ndim(); ++d) {
    const Placement& p = placements[d];
    if (p.replicate()) continue;
    if (chunks_uneven(sizes[p.shard_dim], mesh.dim_sizes[d])) return true;
    sizes[p.shard_dim] = chunk_range(sizes[p.shard_dim], mesh.dim_sizes[d], 0).size();
  }
  return false;
}

}  // namespace reshard
