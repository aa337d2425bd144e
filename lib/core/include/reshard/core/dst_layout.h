// Destination layouts (docs/layouts.md): how the generation side stores each HF param. One contract,
// one implementation per --gen-layout (hf, vllm, megatron):
//
//   planning:  DestinationLayout::assign(HF name, rule) -> StorageAssignment (storage name, how the
//              param is fused into it), recorded per param in the plan (ParamPlan::dst_*);
//   everyone:  DstMap, from the plan alone -> for a param on a dst rank, the pieces of its local box
//              and where each lands (storage, offset).
//
// The planner, storage layout (dst_storages), static verify and the executor see a destination only
// through these two, so a new destination is one more DestinationLayout. Pure, single-threaded.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/grouping.h"
#include "reshard/core/plan.h"
#include "reshard/core/rules.h"

namespace reshard {

// Where one bulk param lands on the generation side. Empty `storage`: its own tensor, named as the param.
struct StorageAssignment {
  std::string storage;  // local tensor name (with split_dim: the stem of "<storage><index>")
  int fuse_dim = -1;    // dim along which the storage concatenates its members; -1: the param alone
  int fuse_index = 0;   // canonical member order (gate 0, up 1; q 0, k 1, v 2)
  int fuse_groups = 1;  // > 1: members interleave per group along fuse_dim (ParamPlan::dst_fuse_groups)
  int split_dim = -1;   // >= 0: one storage per local index along this dim (ParamPlan::dst_split_dim)
};

class DestinationLayout {
 public:
  virtual ~DestinationLayout() = default;
  virtual GenLayout kind() const = 0;
  // True: gen experts live on their own (etp, ep, edp) mesh in Megatron's expert order, independent of
  // tp; false: they use the tp axis (as ep when gen ep > 1, see docs/design.md).
  virtual bool expert_mesh() const { return false; }
  // True: Mamba2 in_proj / conv1d are cut per section on the gen side (the engine's mixer); false:
  // torch.chunk of the HF tensor (hf).
  virtual bool sectioned_mixers() const { return false; }
  // Before classification: reads what the layout needs from the model (Megatron: the query groups of
  // each attention layer; vLLM: heads, KV heads, vocab) and refuses what the engine refuses. Every
  // problem goes to `problems`, naming the engine's rule and the numbers.
  virtual void prepare(const std::vector<LogicalParam>& params, const SystemConfig& system, const PlanOptions& options,
                       Problems& problems) {}
  // The gen placements of bulk param `name` (by gen mesh dim name), given the rule's torch.chunk
  // defaults in `dst`: where the engine cuts differently (replicated KV heads, a padded vocab, an
  // expert map), the layout replaces them.
  virtual void place(const std::string& name, const Dims& shape, const ParamRule& rule,
                     std::map<std::string, Placement>& dst) const {}
  // The storage of bulk param `name` (a grouped expert's logical name) of rank `ndim`, classified by `rule`.
  virtual StorageAssignment assign(const std::string& name, const ParamRule& rule, int ndim) const = 0;
  // The engine's name for misc param `name`'s whole tensor where it differs (Megatron); "": its own.
  virtual std::string misc_name(const std::string& name) const { return ""; }
  // A value change the engine makes beyond the bytes ("zero_centered": it keeps value - 1); "": none.
  // Such a param takes the misc path, and the plan says so.
  virtual std::string transform(const std::string& name) const { return ""; }
};

std::unique_ptr<DestinationLayout> make_destination_layout(GenLayout layout);

// One piece of a param's local box on a dst rank: a global box and where it starts in one storage.
struct DstPiece {
  int storage = 0;  // index among the param's storages (0 unless dst_split_dim >= 0)
  Box box;          // global region, inside the rank's dst box
  Dims offset;      // where `box` starts inside the storage tensor
};

// The dst side of a plan: for each bulk param and dst mesh position, its pieces. Built from the plan's
// dst_* fields alone (a decoded plan needs no DestinationLayout).
class DstMap {
 public:
  explicit DstMap(const Plan& plan);

  // The pieces of param p's dst box at dst mesh position `flat`: layout piece, then split index, then group.
  std::vector<DstPiece> pieces(uint32_t p, int flat) const;
  // What the dst layout gives p at `flat`: global boxes and their offsets in the local tensor.
  std::vector<LocalPiece> held(uint32_t p, int flat) const;
  // The piece holding all of `box` (inside one of p's held pieces at `flat`), with `offset` moved to
  // box's origin; nullopt when `box` crosses a piece boundary (another expert, another group, outside).
  std::optional<DstPiece> locate(uint32_t p, int flat, const Box& box) const;
  // The same, given held(p, flat) (saves recomputing it per transfer).
  std::optional<DstPiece> locate(uint32_t p, int flat, const Box& box, const std::vector<LocalPiece>& own) const;
  // How far p's local tensor at `flat` reaches into its storage (padding included): the storage is at
  // least this large (per split index with dst_split_dim; interleaved members: 0, their pieces say).
  Dims reach(uint32_t p, int flat) const;
  // A param whose pieces are not one box per rank (split, interleaved, cyclic or sectioned).
  bool piecewise(uint32_t p) const;
  // Problems found while building (an interleave whose groups do not align with the dst shards).
  const std::vector<std::string>& problems() const { return problems_; }

  // "<dst_storage>" or, with dst_split_dim, "<dst_storage><index>".
  static std::string storage_name(const ParamPlan& p, int index);

 private:
  // Per param: rows per group along the fuse dim, the member's origin within a group, the group stride;
  // with one group, `origins` per dst flat (the running sum of earlier members' local extents).
  struct Fuse {
    int64_t rows = 0, origin = 0, stride = 0;
    std::vector<int64_t> origins;
  };
  std::optional<DstPiece> to_storage(uint32_t p, int flat, const Box& box, const Dims& local) const;

  const Plan& plan_;
  std::vector<Fuse> fuse_;
  std::vector<std::string> problems_;
};

}  // namespace reshard
