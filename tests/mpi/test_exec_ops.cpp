// Executor pieces that need no MPI (label unit): host region ops, box splitting, and the ordering
// contract of the op lists (what makes batches match and never deadlock), checked across all ranks.
#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "reshard/core/fp8_block.h"
#include "reshard/core/model.h"
#include "reshard/core/pattern.h"
#include "reshard/core/planner.h"
#include "reshard/core/landing_layout.h"
#include "memory.h"
#include "reshard/core/ops.h"

namespace reshard {
namespace {

TEST(SplitBox, CoversOnceWithinLimit) {
  const Dims extent{7, 5, 3};
  for (int64_t limit : {2, 6, 30, 44, 90, 1000}) {
    std::vector<int> hits(7 * 5 * 3, 0);
    for (const Box& b : split_box(extent, 2, limit)) {
      EXPECT_LE(b.elements() * 2, std::max<int64_t>(limit, 2)) << limit;
      for (int64_t i = 0; i < b.extent[0]; ++i)
        for (int64_t j = 0; j < b.extent[1]; ++j)
          for (int64_t k = 0; k < b.extent[2]; ++k)
            ++hits[linear_index(Dims{b.offset[0] + i, b.offset[1] + j, b.offset[2] + k}, extent)];
    }
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), static_cast<long>(hits.size())) << limit;
  }
}

TEST(HostRegionOps, PackUnpackRoundTripAndCopyBox) {
  const Dims shape{6, 5, 4};
  std::vector<uint16_t> t(shape.product()), back(shape.product(), 0), dense(2 * 3 * 2);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint16_t>(i * 3 + 1);
  const Dims off{1, 2, 1}, ext{2, 3, 2};
  host_pack(t.data(), shape, off, ext, 2, dense.data());
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 2; ++k)
        EXPECT_EQ(dense[linear_index(Dims{i, j, k}, ext)], t[linear_index(Dims{1 + i, 2 + j, 1 + k}, shape)]);
  host_unpack(dense.data(), back.data(), shape, off, ext, 2);
  int64_t copied = 0;
  for (size_t i = 0; i < t.size(); ++i) copied += back[i] == t[i];
  EXPECT_EQ(copied, ext.product());
}

TEST(HostRegionOps, PatternFillThenCountFindsEachFlippedByte) {
  const Dims storage{4, 10};
  RegionSpec r{storage, Dims{1, 2}, Dims{2, 7}, Dims{100, 30}, Dims{50, 3}, 2, param_seed("w")};
  std::vector<uint8_t> buf(storage.product() * 2, kPoisonByte);
  EXPECT_GT(host_count_wrong(buf.data(), r), 0);
  host_fill_pattern(buf.data(), r);
  EXPECT_EQ(host_count_wrong(buf.data(), r), 0);
  // Byte (row 1, col 2, byte 1) is global element (50, 3): global byte (50*30+3)*2+1.
  EXPECT_EQ(buf[(1 * 10 + 2) * 2 + 1], pattern_byte(r.seed, (50 * 30 + 3) * 2 + 1));
  buf[(2 * 10 + 8) * 2] ^= 0xff;
  buf[0] ^= 0xff;  // outside the region: not counted
  EXPECT_EQ(host_count_wrong(buf.data(), r), 1);
}

// For every pair of ranks, the sends of one match the receives of the other in order and size,
// and every member of a group posts the same broadcasts in the same order.
void expect_matching_ops(const Plan& plan, const OpListOptions& o) {
  using Key = std::tuple<int, int, int, int>;  // group, src, dst, stream
  std::map<Key, std::vector<int64_t>> sends, recvs;
  std::map<int, std::vector<std::vector<std::pair<int, int64_t>>>> bcasts;  // group -> per member sequence
  for (int r = 0; r < plan.world(); ++r) {
    const RankStorages s = rank_storages(plan, r);
    std::map<int, std::vector<std::pair<int, int64_t>>> mine;
    for (const Op& op : build_ops(plan, r, s, o)) {
      EXPECT_LE(op.bytes(), o.max_message_bytes);
      if (op.kind == OpKind::Send) sends[{op.group, r, op.peer, op.stream}].push_back(op.bytes());
      if (op.kind == OpKind::Recv) recvs[{op.group, op.peer, r, op.stream}].push_back(op.bytes());
      if (op.kind == OpKind::Broadcast) mine[op.group].emplace_back(op.peer, op.bytes());
    }
    for (int g = 0; g < static_cast<int>(plan.groups.size()); ++g)
      if (std::binary_search(plan.groups[g].ranks.begin(), plan.groups[g].ranks.end(), r))
        bcasts[g].push_back(mine[g]);
  }
  EXPECT_EQ(sends, recvs);
  for (const auto& [g, seqs] : bcasts)
    for (const auto& seq : seqs) EXPECT_EQ(seq, seqs.front()) << "group " << g;
}

// A block-FP8 shard with block boundaries inside it, dequantized on the host, is exactly the
// dequant pattern of its global box (what destinations are checked against), and the check counts
// every flipped byte.
TEST(HostRegionOps, DequantShardMatchesTheGlobalDequantPattern) {
  const Dims shape{2, 300, 260};
  const Box shard{Dims{1, 100, 7}, Dims{1, 150, 250}};
  const uint64_t seed = param_seed("w"), scale_seed = block_scale_seed(seed);
  auto memory = make_host_memory();
  std::vector<uint8_t> values(static_cast<size_t>(shard.extent.product()));
  host_fill_pattern(values.data(), RegionSpec{shard.extent, Dims::zeros(3), shard.extent, shape, shard.offset, 1, seed, true});
  std::vector<float> scales(static_cast<size_t>(fp8_block_cover(shard).extent.product()));
  EXPECT_EQ(scales.size(), 1u * 3u * 2u);  // rows 100..249 touch 2 blocks, cols 7..256 touch 3
  host_fill_block_scales(scales.data(), shape, shard, scale_seed);
  std::vector<uint16_t> bf16(values.size());
  // In two boxes (as two ops would), which together cover the shard.
  const Box top{Dims{0, 0, 0}, Dims{1, 70, 250}}, bottom{Dims{0, 70, 0}, Dims{1, 80, 250}};
  memory->dequant_block_fp8(values.data(), scales.data(), shard, top, bf16.data(), 0);
  memory->dequant_block_fp8(values.data(), scales.data(), shard, bottom, bf16.data(), 0);

  RegionSpec want{shard.extent, Dims::zeros(3), shard.extent, shape, shard.offset, 2, seed, false};
  want.dequant = true;
  want.scale_seed = scale_seed;
  EXPECT_EQ(host_count_wrong(bf16.data(), want), 0);
  std::vector<uint16_t> filled(bf16.size());
  host_fill_pattern(filled.data(), want);
  EXPECT_EQ(filled, bf16);
  bf16[12345] ^= 0x0101;
  bf16[0] ^= 0x8000;
  EXPECT_EQ(host_count_wrong(bf16.data(), want), 3);
}

// Landings live from their first to their last op; the layout keeps those that are live at once
// apart, reuses space otherwise, and the pool is no larger than the live peak needs here.
TEST(LandingLayout, LiveLandingsNeverShareSpace) {
  std::vector<Landing> landings;
  for (int64_t elems : {100, 40, 40, 100, 8, 64}) landings.push_back(Landing{true, 0, 0, 0, Dims{elems}});
  auto op = [](std::vector<int> ls) {
    Op o;
    for (int l : ls) o.pieces.push_back(Piece{0, Dims{1}, Dims{0}, Dims{0}, Dims{1}, l});
    return o;
  };
  // 0 lives over ops 0-1; 1 and 2 share op 1-2 (a misc chunk and the next); 3 after 0 ended; 4 and 5 late.
  const std::vector<Op> ops = {op({0}), op({0, 1, 2}), op({2, 3}), op({3}), op({}), op({4, 5, 4})};
  const LandingLayout layout = layout_landings(ops, landings, 0);  // no budget: reuse at once
  std::vector<int64_t> first(6, -1), last(6, -1);
  for (size_t i = 0; i < ops.size(); ++i)
    for (int l : landings_of(ops[i])) {
      if (first[l] < 0) first[l] = static_cast<int64_t>(i);
      last[l] = static_cast<int64_t>(i);
    }
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b) {
      const bool live_together = first[a] <= last[b] && first[b] <= last[a];
      const bool share = layout.offset[a] < layout.offset[b] + landing_bytes(landings[b]) &&
                         layout.offset[b] < layout.offset[a] + landing_bytes(landings[a]);
      EXPECT_FALSE(live_together && share) << a << " and " << b;
    }
  EXPECT_EQ(landings_of(ops[5]), (std::vector<int>{4, 5}));
  EXPECT_EQ(layout.offset[3], 0);  // landing 0's space, free once op 1 is done
  EXPECT_EQ(layout.max_op_bytes, 256 + 128 + 128);  // op 1: 200 + 80 + 80 bytes, 64-byte aligned
  EXPECT_EQ(layout.pool_bytes, layout.max_op_bytes);
  // With a budget, space is reused only after going round it: landing 3 goes after 2, not into 0's.
  const LandingLayout ring = layout_landings(ops, landings, 4096);
  EXPECT_EQ(ring.offset[3], 512);
  EXPECT_EQ(ring.pool_bytes, 256 + 128 + 128 + 256 + 64 + 128);  // every landing fits the budget once
  const LandingLayout tight = layout_landings(ops, landings, 640);  // landing 3 wraps; 4 follows it
  EXPECT_EQ(tight.offset[3], 0);
  EXPECT_EQ(tight.offset[4], 256);
  EXPECT_EQ(tight.pool_bytes, 512);
}

TEST(OpLists, SendsMatchReceivesAndBroadcastsAgree) {
  for (const char* model : {"vllm-qwen2.json", "tiny-moe.json"})
    for (FanoutMode fan : {FanoutMode::Direct, FanoutMode::TwoPhase})
      for (Algo algo : {Algo::Reshard, Algo::Golden}) {
        SystemConfig sys;
        sys.train.num_gpus = 4;
        sys.train.pp = 2;
        sys.train.ep = std::string(model) == "tiny-moe.json" ? 2 : 1;
        sys.train.tp = sys.train.ep == 1 ? 2 : 1;
        sys.gen.num_gpus = 4;
        sys.gen.tp = 2;
        PlanOptions po;
        po.fanout = fan;
        po.bulk = BulkMode::All;
        po.gen_layout = GenLayout::Vllm;
        po.head_dim = 16;
        const Plan plan = plan_reshard(load_model(std::string(RESHARD_TEST_DATA) + "/" + model), sys, po);
        for (int streams : {1, 3}) expect_matching_ops(plan, OpListOptions{algo, streams, 3000});
      }
}

}  // namespace
}  // namespace reshard
