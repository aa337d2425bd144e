// Static verification of a plan against the golden semantics: what each gen rank must end up
// holding is recomputed from the dst layout alone, then the plan's transfers must deliver exactly
// that, once, from ranks that hold it under the src layout, into the storage piece and offset that the
// destination layout (DstMap) gives for it.
#include "reshard/core/verify.h"

#include <algorithm>
#include <map>

#include "reshard/core/dst_layout.h"
#include "reshard/core/error.h"
#include "reshard/core/storage.h"

namespace reshard {
namespace {

class Verifier {
 public:
  Verifier(const Plan& plan, size_t max_listed, bool layouts)
      : plan_(plan), max_listed_(max_listed), layouts_(layouts), map_(plan) {}

  VerifyReport run() {
    for (const std::string& p : map_.problems()) problem(p);
    for (uint32_t p = 0; p < plan_.params.size(); ++p) {
      const ParamPlan& param = plan_.params[p];
      ++report_.params_checked;
      if (param.path == Path::Bulk) check_bulk(p);
      if (param.mxfp8) check_mxfp8(param);
    }
    check_misc();
    check_storage_regions();
    if (layouts_) verify_layouts(plan_, [this](const std::string& s) { problem(s); });
    return std::move(report_);
  }

 private:
  void problem(const std::string& s) {
    ++report_.problem_count;
    if (report_.problems.size() < max_listed_) report_.problems.push_back(s);
  }

  std::string where(const ParamPlan& p, int rank, const Box& box) const {
    return "param " + p.name + ", rank " + std::to_string(rank) + ", box " + box.str();
  }

  void check_bulk(uint32_t p) {
    const ParamPlan& param = plan_.params[p];
    const Box whole = full_box(param.shape);
    if (param.transfer_begin + param.transfer_count > plan_.transfers.size() ||
        param.fanout_begin + param.fanout_count > plan_.fanouts.size()) {
      problem("param " + param.name + ": transfer or fan-out range outside the plan");
      return;
    }
    // Every transfer runs on the param's bulk communicator: both ends must be in it.
    const std::vector<int>* group = nullptr;
    if (param.group < 0 || param.group >= static_cast<int>(plan_.groups.size()))
      problem("param " + param.name + ": bulk group " + std::to_string(param.group) + " does not exist");
    else
      group = &plan_.groups[param.group].ranks;
    const auto in_group = [&](int r) { return group && std::binary_search(group->begin(), group->end(), r); };
    // Boxes each dst rank receives, in dst-local coordinates of the global tensor.
    std::map<int, std::vector<Box>> received;
    for (uint64_t i = param.transfer_begin; i < param.transfer_begin + param.transfer_count; ++i) {
      const Transfer& t = plan_.transfers[i];
      ++report_.transfers_checked;
      if (t.param != p) problem(where(param, t.dst, t.box) + ": transfer " + std::to_string(i) + " belongs to another param");
      if (t.box.offset.n != param.shape.n || t.box.extent.n != param.shape.n || t.box.empty() || !contains(whole, t.box)) {
        problem(where(param, t.dst, t.box) + ": box is empty or outside the tensor " + param.shape.str());
        continue;
      }
      if (group && (!in_group(t.src) || !in_group(t.dst))) {
        problem(where(param, t.dst, t.box) + ": rank " + std::to_string(in_group(t.src) ? t.dst : t.src) +
                " is not in the param's bulk group " + std::to_string(param.group));
        continue;
      }
      const int sf = param.src.mesh.flat_index_of_rank(t.src);
      if (sf < 0) {
        problem(where(param, t.dst, t.box) + ": source rank " + std::to_string(t.src) + " is not in the source mesh");
        continue;
      }
      const std::vector<LocalPiece> held = param.src.local_pieces(param.shape, sf);
      auto from = std::find_if(held.begin(), held.end(), [&](const LocalPiece& q) { return contains(q.box, t.box); });
      if (from == held.end()) {
        problem(where(param, t.dst, t.box) + ": source rank " + std::to_string(t.src) + " holds only " +
                (held.empty() ? std::string("nothing") : held[0].box.str() + (held.size() > 1 ? " ..." : "")));
        continue;
      }
      Dims want = relative(t.box, from->box.offset);
      for (int d = 0; d < want.n; ++d) want[d] += from->at[d];
      if (t.src_local != want)
        problem(where(param, t.dst, t.box) + ": source local offset " + t.src_local.str() + " should be " + want.str());
      if (!check_dst(p, t.dst, t.box, t.dst_storage, t.dst_local)) continue;
      received[t.dst].push_back(t.box);
    }
    for (uint64_t i = param.fanout_begin; i < param.fanout_begin + param.fanout_count; ++i) {
      const FanoutOp& f = plan_.fanouts[i];
      if (f.group < 0 || f.group >= static_cast<int>(plan_.groups.size())) {
        problem(where(param, f.root, f.box) + ": fan-out group " + std::to_string(f.group) + " does not exist");
        continue;
      }
      const std::vector<int>& members = plan_.groups[f.group].ranks;
      if (std::find(members.begin(), members.end(), f.root) == members.end()) {
        problem(where(param, f.root, f.box) + ": fan-out root is not in its group");
        continue;
      }
      // The root must have received the whole box in phase one.
      int64_t covered = 0;
      for (const Box& b : received[f.root])
        if (auto x = intersect(b, f.box)) covered += x->elements();
      if (covered != f.box.elements())
        problem(where(param, f.root, f.box) + ": fan-out root did not receive this box in phase one");
      for (int r : members) {
        if (r == f.root) continue;
        if (check_dst(p, r, f.box, f.dst_storage, f.dst_local)) received[r].push_back(f.box);
      }
    }
    // Every dst rank: exactly its box, exactly once.
    for (int f = 0; f < param.dst.mesh.size(); ++f) {
      const int rank = param.dst.mesh.ranks[f];
      const std::vector<LocalPiece> held = map_.held(p, f);
      int64_t needed = 0;
      for (const LocalPiece& q : held) needed += q.box.elements();
      const Box need = held.size() == 1 ? held[0].box : param.dst.local_box(param.shape, f);
      std::vector<Box>& got = received[rank];
      int64_t total = 0;
      for (const Box& b : got) total += b.elements();
      report_.elements_checked += needed;
      const auto twice = find_overlap(got);
      const bool overlap = twice.has_value();
      if (overlap) problem(where(param, rank, twice->second) + ": received twice (overlaps " + twice->first.str() + ")");
      if (!overlap && total != needed)
        problem(where(param, rank, need) + ": receives " + std::to_string(total) + " of its " +
                std::to_string(needed) + " elements");
    }
    for (auto& [rank, boxes] : received)
      if (param.dst.mesh.flat_index_of_rank(rank) < 0 && !boxes.empty())
        problem(where(param, rank, boxes[0]) + ": rank is not in the destination mesh");
  }

  // MXFP8: BF16 on the wire, and every gen shard spans whole 32-element blocks along K (the last dim).
  void check_mxfp8(const ParamPlan& param) {
    if (param.path != Path::Bulk || param.dtype != DType::BF16 || param.shape.n < 1 || param.scale_storage.empty()) {
      problem("param " + param.name + ": mxfp8 needs a bulk bfloat16 param with a scale storage");
      return;
    }
    const int k = param.shape.n - 1;
    for (int f = 0; f < param.dst.mesh.size(); ++f)
      for (const LocalPiece& q : param.dst.local_pieces(param.shape, f))
        if (q.box.extent[k] % 32 != 0 || q.box.offset[k] % 32 != 0 || q.at[k] % 32 != 0) {
          problem(where(param, param.dst.mesh.ranks[f], q.box) + ": mxfp8 shard does not span whole 32-element K blocks");
          break;
        }
  }

  // The box must lie in what `rank` holds under the dst layout, inside one storage piece, at the right
  // storage and local offset.
  bool check_dst(uint32_t p, int rank, const Box& box, int dst_storage, const Dims& dst_local) {
    const ParamPlan& param = plan_.params[p];
    const int df = param.dst.mesh.flat_index_of_rank(rank);
    if (df < 0) {
      problem(where(param, rank, box) + ": destination is not in the destination mesh");
      return false;
    }
    const std::vector<LocalPiece> own = map_.held(p, df);
    if (std::none_of(own.begin(), own.end(), [&](const LocalPiece& q) { return contains(q.box, box); })) {
      std::string holds;
      for (size_t i = 0; i < own.size() && i < 4; ++i) holds += (i ? " " : "") + own[i].box.str();
      if (own.size() > 4) holds += " ... (" + std::to_string(own.size()) + " pieces)";
      problem(where(param, rank, box) + ": destination holds only " + (own.empty() ? "nothing" : holds));
      return false;
    }
    const std::optional<DstPiece> at = map_.locate(p, df, box, own);
    if (!at) {
      problem(where(param, rank, box) + ": crosses a destination storage piece (another expert or query group)");
      return false;
    }
    if (dst_storage != at->storage) {
      problem(where(param, rank, box) + ": destination storage " + DstMap::storage_name(param, dst_storage) +
              " should be " + DstMap::storage_name(param, at->storage));
      return false;
    }
    if (dst_local != at->offset) {
      problem(where(param, rank, box) + ": destination local offset " + dst_local.str() + " should be " +
              at->offset.str());
      return false;
    }
    return true;
  }

  void check_misc() {
    std::vector<int> seen(plan_.params.size(), 0);
    for (size_t b = 0; b < plan_.buckets.size(); ++b) {
      const MiscBucket& bucket = plan_.buckets[b];
      const std::string name = "bucket " + std::to_string(b);
      if (bucket.group < 0 || bucket.group >= static_cast<int>(plan_.groups.size())) {
        problem(name + ": group " + std::to_string(bucket.group) + " does not exist");
        continue;
      }
      const std::vector<int>& members = plan_.groups[bucket.group].ranks;
      for (int r = plan_.train_world(); r < plan_.world(); ++r)
        if (!std::binary_search(members.begin(), members.end(), r)) {
          problem(name + ": gen rank " + std::to_string(r) + " is not in its group");
          break;
        }
      if (!std::binary_search(members.begin(), members.end(), bucket.root))
        problem(name + ": root " + std::to_string(bucket.root) + " is not in its group");
      if (bucket.root < 0 || bucket.root >= plan_.train_world()) problem(name + ": root " + std::to_string(bucket.root) + " is not a train rank");
      int64_t offset = 0;
      for (uint32_t i : bucket.params) {
        if (i >= plan_.params.size()) {
          problem(name + ": param index " + std::to_string(i) + " outside the plan");
          continue;
        }
        const ParamPlan& p = plan_.params[i];
        ++seen[i];
        if (p.path != Path::Misc) problem(name + ": param " + p.name + " is not a misc param");
        if (p.bucket != static_cast<int>(b) || p.bucket_offset != offset)
          problem(name + ": param " + p.name + " should sit at offset " + std::to_string(offset) + ", plan says bucket " +
                  std::to_string(p.bucket) + " offset " + std::to_string(p.bucket_offset));
        if (p.pp_stage != bucket.pp_stage) problem(name + ": param " + p.name + " is from another stage");
        offset += p.bytes();
      }
      if (offset != bucket.bytes) problem(name + ": holds " + std::to_string(offset) + " bytes, plan says " + std::to_string(bucket.bytes));
    }
    for (uint32_t i = 0; i < plan_.params.size(); ++i) {
      const ParamPlan& p = plan_.params[i];
      if (p.path == Path::Misc && seen[i] != 1)
        problem("param " + p.name + ": in " + std::to_string(seen[i]) + " misc buckets, expected exactly 1");
    }
  }

  // No two params (or pieces) land in one region of a gen rank's storage: each would overwrite the other.
  void check_storage_regions() {
    for (int rank = plan_.train_world(); rank < plan_.world(); ++rank) {
      for (const LocalStorage& s : dst_storages(plan_, rank)) {
        std::vector<Box> regions;
        for (const StorageMember& m : s.members)
          if (!m.box.empty()) regions.push_back(Box{m.offset, m.box.extent});
        if (const auto clash = find_overlap(regions))
          problem("gen rank " + std::to_string(rank) + ", storage " + s.name + ": regions " + clash->first.str() +
                  " and " + clash->second.str() + " overlap (two params land in one place)");
      }
    }
  }

  const Plan& plan_;
  size_t max_listed_;
  bool layouts_;
  DstMap map_;
  VerifyReport report_;
};

}  // namespace

VerifyReport verify_plan(const Plan& plan, size_t max_listed, bool layouts) {
  return Verifier(plan, max_listed, layouts).run();
}

void require_verified(const Plan& plan, const std::string& origin) {
  const VerifyReport v = verify_plan(plan, 8, false);
  if (v.ok()) return;
  std::string what = origin + " fails static verification (" + std::to_string(v.problem_count) +
                     (v.problem_count == 1 ? " problem" : " problems") + "; reshard verify lists them):";
  for (const std::string& p : v.problems) {  // piece by piece: GCC 12's -Wrestrict misfires on "literal" + p
    what += "\n  - ";
    what += p;
  }
  throw config_error(what);
}

}  // namespace reshard
