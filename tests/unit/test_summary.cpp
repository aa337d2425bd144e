// Plan summaries and per-param views (what `reshard plan --summary` and `reshard inspect` print).
#include <gtest/gtest.h>

#include <algorithm>

#include "reshard/core/error.h"
#include "reshard/core/planner.h"
#include "reshard/core/stats.h"
#include "reshard/core/summary.h"
#include "reshard/core/units.h"
#include "test_support.h"

namespace reshard {
namespace {

using test::small_moe;
using test::system_of;


bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Summary, TextCarriesTheStats) {
  const Plan plan = plan_reshard(small_moe(4, 8), system_of(8, 2, 1, 4, 4, 4), PlanOptions{});
  const PlanStats st = compute_stats(plan);
  const std::string s = format_summary(plan, st);
  EXPECT_TRUE(has(s, plan.fingerprint));
  EXPECT_TRUE(has(s, "tiny-moe"));
  EXPECT_TRUE(has(s, "8 GPUs: tp=1 pp=2 ep=4"));
  EXPECT_TRUE(has(s, std::to_string(st.transfers) + " transfers"));
  EXPECT_TRUE(has(s, std::to_string(st.buckets) + " buckets"));
  EXPECT_TRUE(has(s, "rank " + std::to_string(st.busiest_rank) + " ("));
  EXPECT_TRUE(has(s, "(" + std::to_string(st.lower_bound_bytes) + " B)"));
  char frac[32];
  std::snprintf(frac, sizeof frac, "(%.1f %%)", st.bulk_fraction * 100);
  EXPECT_TRUE(has(s, frac)) << s;
  // 12 ranks: every rank has a row.
  for (int r = 0; r < plan.world(); ++r) {
    char row[16];
    std::snprintf(row, sizeof row, "\n%6d ", r);
    EXPECT_TRUE(has(s, row)) << "rank " << r << " missing:\n" << s;
  }
}

TEST(Summary, LargeWorldListsOnlyTheBusiest) {
  const Plan plan = plan_reshard(small_moe(2, 16), system_of(16, 1, 1, 16, 16, 16), PlanOptions{});
  const PlanStats st = compute_stats(plan);
  ASSERT_GT(st.ranks.size(), kFullTableRanks);
  const std::vector<int> top = busiest_ranks(st, kTopRanks);
  ASSERT_EQ(top.size(), kTopRanks);
  EXPECT_EQ(top.front(), st.busiest_rank);
  for (size_t i = 1; i < top.size(); ++i) {
    const RankStats &a = st.ranks[top[i - 1]], &b = st.ranks[top[i]];
    EXPECT_GE(std::max(a.bulk_send_bytes, a.bulk_recv_bytes), std::max(b.bulk_send_bytes, b.bulk_recv_bytes));
  }
  const std::string s = format_summary(plan, st);
  const std::string table = s.substr(s.find("  rank side"));
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), static_cast<long>(kTopRanks) + 1);
  EXPECT_TRUE(has(s, "busiest 8 of 32 ranks"));
}

TEST(Summary, JsonMatchesStats) {
  const Plan plan = plan_reshard(small_moe(4, 8), system_of(8, 2, 1, 4, 4, 4), PlanOptions{});
  const PlanStats st = compute_stats(plan);
  const auto j = summary_json(plan, st);
  EXPECT_EQ(j["fingerprint"], plan.fingerprint);
  EXPECT_EQ(j["transfers"].get<int64_t>(), st.transfers);
  EXPECT_EQ(j["bytes"]["bulk"].get<int64_t>(), st.bulk_bytes);
  EXPECT_EQ(j["params"]["total"].get<int64_t>(), static_cast<int64_t>(plan.params.size()));
  ASSERT_EQ(j["ranks"].size(), st.ranks.size());
  int64_t sent = 0, received = 0;
  for (const auto& r : j["ranks"]) {
    sent += r["bulk_send_bytes"].get<int64_t>();
    received += r["bulk_recv_bytes"].get<int64_t>();
  }
  EXPECT_EQ(sent, received);  // every byte sent is received once (direct fan-out here)
  const auto one = summary_json(plan, st, {9});
  ASSERT_EQ(one["ranks"].size(), 1u);
  EXPECT_EQ(one["ranks"][0]["rank"], 9);
  EXPECT_EQ(one["ranks"][0]["side"], "gen");
}

TEST(Summary, ParamViewListsTransfersWithCap) {
  const Plan plan = plan_reshard(small_moe(4, 8), system_of(8, 2, 1, 4, 4, 4), PlanOptions{});
  // A member name finds its grouped param.
  const uint32_t i = find_param(plan, "model.layers.1.mlp.experts.5.down_proj.weight");
  const ParamPlan& p = plan.params[i];
  EXPECT_EQ(p.name, "model.layers.1.mlp.experts.down_proj.weight");
  EXPECT_EQ(find_param(plan, p.name), i);
  ASSERT_GT(p.transfer_count, 2u);
  const std::string full = format_param(plan, i, 1000);
  const std::string capped = format_param(plan, i, 2);
  EXPECT_FALSE(has(full, "more\n"));
  EXPECT_TRUE(has(capped, "... " + std::to_string(p.transfer_count - 2) + " more"));
  const Transfer& t = plan.transfers[p.transfer_begin];
  EXPECT_TRUE(has(capped, t.box.str()));
  EXPECT_TRUE(has(full, "members    8: "));
  EXPECT_TRUE(has(full, "train pp " + std::to_string(p.pp_stage)));
  for (const Placement& pl : p.src.placements) EXPECT_TRUE(has(full, pl.str()));

  const auto j = param_json(plan, i, 2);
  EXPECT_EQ(j["transfer_count"].get<uint64_t>(), p.transfer_count);
  ASSERT_EQ(j["transfers"].size(), 2u);
  EXPECT_EQ(j["transfers"][0]["src"], t.src);
  EXPECT_EQ(j["transfers"][0]["extent"].get<std::vector<int64_t>>(), t.box.extent.to_vector());
  EXPECT_EQ(j["src"]["placements"].size(), p.src.placements.size());
  EXPECT_EQ(j["members"].size(), 8u);
}

TEST(Summary, MiscParamShowsBucket) {
  const Plan plan = plan_reshard(small_moe(2, 4), system_of(4, 1, 1, 4, 4, 4), PlanOptions{});
  const uint32_t i = find_param(plan, "model.norm.weight");
  const ParamPlan& p = plan.params[i];
  ASSERT_EQ(p.path, Path::Misc);
  const std::string s = format_param(plan, i, 8);
  EXPECT_TRUE(
      has(s, "bucket     " + std::to_string(p.bucket) + " at byte " + std::to_string(p.bucket_offset)));
  EXPECT_TRUE(has(s, "float32"));
  EXPECT_EQ(param_json(plan, i, 8)["bucket"], p.bucket);
}

// The precision row says what the sources hold and how the destination stores a param, where that
// differs from its dtype; BF16 -> BF16 params have none.
TEST(Summary, ParamViewNamesPrecision) {
  ModelMeta m = small_moe(1, 2);
  for (TensorMeta& t : m.tensors)
    if (t.name.find("experts") != std::string::npos) t.shape = t.shape[0] == 12 ? Dims{128, 256} : Dims{256, 128};
  PlanOptions o;
  o.gen_layout = GenLayout::Megatron;
  o.gen_precision = GenPrecision::Mxfp8;
  const Plan mx = plan_reshard(m, system_of(2, 1, 1, 2, 2, 2), o);
  const std::string s = format_param(mx, find_param(mx, "model.layers.0.mlp.experts.gate_proj.weight"), 1);
  EXPECT_TRUE(has(s, "precision  lands as MXFP8 (e4m3 + E8M0 scales in "
                     "decoder.layers.0.mlp.experts.linear_fc1.weight<i>_scale), quantized on receive"))
      << s;
  EXPECT_FALSE(has(s, "dequantized"));
  EXPECT_FALSE(has(format_param(mx, find_param(mx, "model.norm.weight"), 1), "precision"));
  EXPECT_EQ(param_json(mx, find_param(mx, "model.layers.0.mlp.experts.gate_proj.weight"), 1)["mxfp8_scale_storage"],
            "decoder.layers.0.mlp.experts.linear_fc1.weight_scale");

  ModelMeta fp8;
  fp8.name = "fp8";
  fp8.tensors = {{"model.layers.0.mlp.gate_proj.weight", {256, 128}, DType::F8_E4M3},
                 {"model.layers.0.mlp.gate_proj.weight_scale_inv", {2, 1}, DType::F32}};
  PlanOptions meg;
  meg.gen_layout = GenLayout::Megatron;
  const Plan dq = plan_reshard(fp8, system_of(2, 1, 1, 1, 2, 2), meg);
  EXPECT_TRUE(has(format_param(dq, 0, 1), "precision  sources hold block-FP8 (e4m3 + float32 _scale_inv), "
                                          "dequantized before sending"));
  EXPECT_EQ(param_json(dq, 0, 1)["src_dequant"], true);
}

TEST(Summary, UnknownParamNamesNearMatches) {
  const Plan plan = plan_reshard(small_moe(2, 4), system_of(4, 1, 1, 4, 4, 4), PlanOptions{});
  try {
    find_param(plan, "q_proj");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Config);
    EXPECT_TRUE(has(e.what(), "'q_proj'"));
    EXPECT_TRUE(has(e.what(), "model.layers.0.self_attn.q_proj.weight"));
  }
}

}  // namespace
}  // namespace reshard
