// Rank meshes and DTensor-style placements. A Layout (mesh + one placement per mesh dim) says
// which box of a global tensor each rank holds.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reshard/core/box.h"

namespace reshard {

// A row-major grid of global ranks. dims[0] is the outermost (slowest-varying) axis.
struct Mesh {
  std::vector<std::string> dim_names;  // e.g. {"pp", "dp", "tp"}
  std::vector<int> dim_sizes;
  std::vector<int> ranks;  // flat, row-major, size == product(dim_sizes)

  int size() const { return static_cast<int>(ranks.size()); }
  int ndim() const { return static_cast<int>(dim_sizes.size()); }
  int dim_index(const std::string& name) const;  // -1 when absent
  std::vector<int> coords(int flat) const;
  int flat_index_of_rank(int global_rank) const;  // -1 when not in the mesh
  // The sub-mesh at `coord` along dim `name`, that dim removed.
  Mesh slice(const std::string& name, int coord) const;
};

// Build a mesh from dims given innermost-first (e.g. {{"tp",4},{"dp",2},{"pp",2}}): size-1 dims are
// dropped and the rest reversed into a row-major grid, so the first surviving dim varies fastest.
// Ranks are offset + linear index.
Mesh make_mesh(const std::vector<std::pair<std::string, int>>& inner_first, int offset);

// Shard(dim) or Replicate, per mesh dim.
struct Placement {
  int shard_dim = -1;  // -1: Replicate
  bool replicate() const { return shard_dim < 0; }
  std::string str() const;  // "S(0)" or "R"
  static Placement parse(const std::string& s);  // throws Error(Config)
};

struct Layout {
  Mesh mesh;
  std::vector<Placement> placements;  // one per mesh dim

  // Box held by the rank at flat mesh index `flat` (torch.chunk semantics).
  Box local_box(const Dims& global_shape, int flat) const;
  bool uneven(const Dims& global_shape) const;
};

}  // namespace reshard
