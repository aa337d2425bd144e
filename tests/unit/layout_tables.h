// Per-rank layout tables for the engine-layout tests: a rank's local tensors (shape, and for every
// piece the HF param, its global box and where it starts in the local tensor) compared with tables
// worked out by hand from the engine's source.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/model.h"
#include "reshard/core/storage.h"
#include "reshard/core/verify.h"
#include "test_support.h"

namespace reshard::test {

struct Piece {
  std::string param, box, at;
  bool operator<(const Piece& o) const { return std::tie(param, box, at) < std::tie(o.param, o.box, o.at); }
  bool operator==(const Piece& o) const { return std::tie(param, box, at) == std::tie(o.param, o.box, o.at); }
};
struct Tensor {
  std::string name, shape;
  std::vector<Piece> pieces;
};

inline Plan plan_of(const std::string& model, int train_gpus, Parallelism train, int gen_gpus, Parallelism gen,
             const PlanOptions& o) {
  Plan plan = plan_reshard(load_model(test_data(model)), sys(train_gpus, train, gen_gpus, gen), o);
  const VerifyReport v = verify_plan(plan);
  EXPECT_TRUE(v.ok()) << (v.problems.empty() ? "" : v.problems[0]);
  return plan;
}

// `got` holds exactly `want`'s shape and pieces (empty boxes aside: an empty torch.chunk remainder).
inline void expect_tensor(const Plan& plan, const LocalStorage& got, const Tensor& want, const std::string& where) {
  EXPECT_EQ(got.shape.str(), want.shape) << where << " " << want.name;
  std::vector<Piece> pieces, expected = want.pieces;
  for (const StorageMember& m : got.members)
    if (!m.box.empty()) pieces.push_back({plan.params[m.param].name, m.box.str(), m.offset.str()});
  std::sort(pieces.begin(), pieces.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(pieces.size(), expected.size()) << where << " " << want.name;
  for (size_t i = 0; i < std::min(pieces.size(), expected.size()); ++i)
    EXPECT_TRUE(pieces[i] == expected[i]) << where << " " << want.name << ": got " << pieces[i].param << " "
                                          << pieces[i].box << " at " << pieces[i].at << ", want " << expected[i].param
                                          << " " << expected[i].box << " at " << expected[i].at;
}

// The local tensors named in `want`, among `got` (a rank's storages), hold exactly these shapes and pieces.
inline void expect_tensors(const Plan& plan, const std::vector<LocalStorage>& got, const std::vector<Tensor>& want,
                    const std::string& where) {
  for (const Tensor& w : want) {
    auto it = std::find_if(got.begin(), got.end(), [&](const LocalStorage& s) { return s.name == w.name; });
    if (it == got.end()) {
      ADD_FAILURE() << where << " has no local tensor " << w.name;
      continue;
    }
    expect_tensor(plan, *it, w, where);
  }
}

inline void expect_rank(const Plan& plan, int rank, const std::vector<Tensor>& want) {
  expect_tensors(plan, dst_storages(plan, rank), want, "gen rank " + std::to_string(rank));
}

inline void expect_src(const Plan& plan, int rank, const Tensor& want) {
  expect_tensors(plan, src_storages(plan, rank), {want}, "train rank " + std::to_string(rank));
}

inline std::string refusal(const std::string& model, int train_gpus, Parallelism train, int gen_gpus, Parallelism gen,
                    const PlanOptions& o) {
  try {
    plan_reshard(load_model(test_data(model)), sys(train_gpus, train, gen_gpus, gen), o);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    return e.what();
  }
  ADD_FAILURE() << model << " was planned; the engine refuses it";
  return "";
}

inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace reshard::test
