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

// Shard(dim) or Replicate, per mesh dim. A Shard cuts its tensor dim over the mesh dim one of these
// ways (the string form in the plan file; docs/plan-format.md):
//   "S(d)"              torch.chunk: ceil(n/size) per coordinate, trailing chunks short or empty (DTensor)
//   "S(d,blocks=k)"     k equal blocks, each held by size/k consecutive coordinates: coordinate c holds
//                       block c / (size/k) (vLLM QKVParallelLinear's replicated KV heads)
//   "S(d,pad=P)"        the dim padded to P, cut in P/size rows each; the local tensor has P/size rows,
//                       the rows past n are padding no transfer writes (vLLM VocabParallelEmbedding)
//   "S(d,balanced)"     n/size each, the first n % size coordinates one more (vLLM linear expert map)
//   "S(d,cyclic)"       index i on coordinate i % size, at local index i / size (vLLM round_robin experts)
//   "S(d,sections=[a,b,...])"  the dim is sections of a, b, ... rows, each chunked over the mesh dim; the
//                       local tensor concatenates the coordinate's chunk of every section (vLLM's
//                       sharded mamba / conv1d loaders); "br" is a section b every coordinate holds
//                       whole (vLLM's duplicated Mamba2 groups when n_groups == 1)
//   "S(d,groups=G,sections=[a,b,...])"  the dim is G groups of a + b + ... rows; a coordinate holds
//                       groups [c G / size, (c + 1) G / size) and its local tensor is section-major: the
//                       a-rows of each held group, then the b-rows, ... (Megatron-Core's GatedDeltaNet
//                       in_proj over HF's per-key-head in_proj_qkvz)
//   "S(d,fused=[G,P,l0,a0,l1,a1,...])"  the dim is G groups of l0 + l1 + ... rows, each group's runs
//                       landing at rows a0, a1, ... of a group of P rows in a fused tensor of G x P rows;
//                       the fused tensor is cut in equal contiguous chunks over the mesh dim and a
//                       coordinate's local tensor is its whole chunk, this tensor's rows at their places
//                       in it, the other rows its partners' (Megatron-Core's linear_qkv: q, k or v of
//                       [q_g; k_g; v_g] when tp > query groups, and the gated q's [q heads; z heads])
struct Placement {
  enum class Cut : uint8_t { Chunk, Blocks, Pad, Balanced, Cyclic, Sections, Groups, Fused };
  int shard_dim = -1;  // -1: Replicate
  Cut cut = Cut::Chunk;
  int64_t count = 0;              // Blocks: k; Pad: P; Groups: G
  std::vector<int64_t> sections;  // Sections (< 0: that many rows, replicated); Fused: {P, l0, a0, ...}

  bool replicate() const { return shard_dim < 0; }
  bool plain() const { return replicate() || cut == Cut::Chunk; }
  // One contiguous run per coordinate (false: cyclic and sections give several).
  bool contiguous() const {
    return cut != Cut::Cyclic && cut != Cut::Sections && cut != Cut::Groups && cut != Cut::Fused;
  }
  std::string str() const;  // "S(0)", "S(0,blocks=4)", ..., or "R"
  static Placement parse(const std::string& s);  // throws Error(Config)
  // Problems of this placement on a tensor dim of `extent` over a mesh dim of `size` ("" when none).
  std::string check(int64_t extent, int size) const;
  bool operator==(const Placement& o) const {
    return shard_dim == o.shard_dim && (replicate() || (cut == o.cut && count == o.count && sections == o.sections));
  }
  bool operator!=(const Placement& o) const { return !(*this == o); }

  static Placement shard(int dim) { return Placement{dim, Cut::Chunk, 0, {}}; }
  static Placement blocks(int dim, int64_t k) { return Placement{dim, Cut::Blocks, k, {}}; }
  static Placement pad(int dim, int64_t padded) { return Placement{dim, Cut::Pad, padded, {}}; }
  static Placement balanced(int dim) { return Placement{dim, Cut::Balanced, 0, {}}; }
  static Placement cyclic(int dim) { return Placement{dim, Cut::Cyclic, 0, {}}; }
  static Placement split(int dim, std::vector<int64_t> sections) { return Placement{dim, Cut::Sections, 0, std::move(sections)}; }
  static Placement grouped(int dim, int64_t groups, std::vector<int64_t> sections) {
    return Placement{dim, Cut::Groups, groups, std::move(sections)};
  }
  // `runs`: (rows, position in the fused group) per run of one of this tensor's groups, in order.
  static Placement fused(int dim, int64_t groups, int64_t period, const std::vector<std::pair<int64_t, int64_t>>& runs) {
    Placement p{dim, Cut::Fused, groups, {period}};
    for (const auto& [rows, at] : runs) p.sections.insert(p.sections.end(), {rows, at});
    return p;
  }
};

// One piece of what a rank holds: a global box and where it starts in the rank's local tensor.
struct LocalPiece {
  Box box;
  Dims at;
};

struct Layout {
  Mesh mesh;
  std::vector<Placement> placements;  // one per mesh dim

  // Every placement is Replicate or a torch.chunk Shard: one box per rank, at the local origin.
  bool plain() const;
  // Each rank holds one box (possibly padded): no cyclic or sectioned placement.
  bool single_box() const;
  // Box held by the rank at flat mesh index `flat`. Needs single_box(); a padded dim gives the rows
  // actually held (the local tensor may be longer: local_shape).
  Box local_box(const Dims& global_shape, int flat) const;
  // The pieces held by the rank at `flat` (empty ones dropped), in local-offset order per placement.
  std::vector<LocalPiece> local_pieces(const Dims& global_shape, int flat) const;
  // Elements the rank at `flat` holds (its pieces; padding excluded).
  int64_t held_elements(const Dims& global_shape, int flat) const;
  // Shape of the rank's local tensor (padding included).
  Dims local_shape(const Dims& global_shape, int flat) const;
  bool uneven(const Dims& global_shape) const;
};

}  // namespace reshard
