// Megatron-Core's pipeline split (stages.h), as literal tables worked out by hand from
// NVIDIA/Megatron-LM d98e8a64: megatron/core/transformer/transformer_block.py get_num_layers_to_build,
// transformer_layer.py get_transformer_layer_offset (chunk k = v * pp + r takes the next layers),
// pipeline_parallel_layer_layout.py PipelineParallelLayerLayout (flat stage i -> pp rank i % pp,
// vp stage i / pp) and transformer_config.py TransformerConfig.__post_init__ (the refusals).
#include <gtest/gtest.h>

#include "reshard/core/stages.h"

namespace reshard {
namespace {

TrainStages stages(int layers, MegatronPipeline m, std::string* error = nullptr) {
  Problems pr;
  TrainStages t = megatron_train_stages(layers, m, pr);
  if (error) {
    for (const std::string& p : pr.list()) *error += p + "\n";
  } else {
    EXPECT_TRUE(pr.empty()) << (pr.empty() ? "" : pr.list()[0]);
  }
  return t;
}

MegatronPipeline pipe(int pp, int vpp = 1, int first = 0, int last = 0) {
  MegatronPipeline m;
  m.pp = pp;
  m.vpp = vpp;
  m.first = first;
  m.last = last;
  return m;
}

TEST(MegatronStages, FirstAndLastStageLayers) {
  // DeepSeek-V3's 61 layers on pp 16, first 3, last 2: 56 middle layers, 4 on each of 14 stages.
  const TrainStages t = stages(61, pipe(16, 1, 3, 2));
  std::vector<int> want;
  for (int i = 0; i < 3; ++i) want.push_back(0);
  for (int s = 1; s <= 14; ++s)
    for (int i = 0; i < 4; ++i) want.push_back(s);
  want.push_back(15);
  want.push_back(15);
  EXPECT_EQ(t.layer, want);
  EXPECT_EQ(t.output, 15);
  EXPECT_EQ(t.final_norm, 15);
}

TEST(MegatronStages, VirtualPipelineIsRoundRobinOverChunks) {
  // L=8, pp=2, vpp=2: 2 per chunk. pp0/v0 0,1; pp1/v0 2,3; pp0/v1 4,5; pp1/v1 6,7.
  EXPECT_EQ(stages(8, pipe(2, 2)).layer, (std::vector<int>{0, 0, 1, 1, 0, 0, 1, 1}));
  // L=8, pp=2, vpp=4: one per chunk, pp0 holds 0, 2, 4, 6.
  EXPECT_EQ(stages(8, pipe(2, 4)).layer, (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}));
  // L=12, pp=3, vpp=2, first 2, last 2: 8 middle layers on pp1, 4 per virtual stage: pp0 [0] [6];
  // pp1 [1-4] [7-10]; pp2 [5] [11].
  EXPECT_EQ(stages(12, pipe(3, 2, 2, 2)).layer, (std::vector<int>{0, 1, 1, 1, 1, 2, 0, 1, 1, 1, 1, 2}));
  // L=16, pp=4, vpp=2, first 2, last 6: pp0 [0] [8]; pp1 [1,2] [9,10]; pp2 [3,4] [11,12];
  // pp3 [5-7] [13-15].
  EXPECT_EQ(stages(16, pipe(4, 2, 2, 6)).layer,
            (std::vector<int>{0, 1, 1, 2, 2, 3, 3, 3, 0, 1, 1, 2, 2, 3, 3, 3}));
  // L=10, pp=2, vpp=2, first 4 only: pp0 [0,1] [5,6]; pp1 [2-4] [7-9].
  EXPECT_EQ(stages(10, pipe(2, 2, 4, 0)).layer, (std::vector<int>{0, 0, 1, 1, 1, 0, 0, 1, 1, 1}));
}

TEST(MegatronStages, EmbeddingAndLossCountAsLayers) {
  // L=6, pp=2, account for both: 8 slots, 4 per rank: pp0 E + 0,1,2; pp1 3,4,5 + L.
  MegatronPipeline m = pipe(2);
  m.account_for_embedding = m.account_for_loss = true;
  EXPECT_EQ(stages(6, m).layer, (std::vector<int>{0, 0, 0, 1, 1, 1}));
  // Same with vpp=2 (2 slots per chunk): pp0/v0 E+[0]; pp1/v0 [1,2]; pp0/v1 [3,4]; pp1/v1 [5]+L.
  m.vpp = 2;
  EXPECT_EQ(stages(6, m).layer, (std::vector<int>{0, 1, 1, 0, 0, 1}));
  // Embedding only: L=7, pp=2: 8 slots: pp0 E + 0,1,2; pp1 3..6.
  MegatronPipeline e = pipe(2);
  e.account_for_embedding = true;
  EXPECT_EQ(stages(7, e).layer, (std::vector<int>{0, 0, 0, 1, 1, 1, 1}));
}

TEST(MegatronStages, LayoutString) {
  // "Ett|tt|tt|ttL" on pp=2: 4 stages, vpp 2; the same split as L=8, pp=2, vpp=2.
  MegatronPipeline m = pipe(2);
  m.layout = "Ett|tt|tt|ttL";
  EXPECT_EQ(stages(8, m).layer, (std::vector<int>{0, 0, 1, 1, 0, 0, 1, 1}));
  // DeepSeek-V3's "Et*3|(tt|)*29,m|L" on pp=16: 32 stages, vpp 2. Flat stage 0 (pp0/v0) E + t0-2;
  // stages 1..29 two each (stage i -> pp i % 16): t3,4 on pp1 ... t29,30 on pp14, t31,32 on pp15,
  // t33,34 on pp0 (stage 16) ... t59,60 on pp13 (stage 29); stage 30 (pp14/v1) m; stage 31 L.
  MegatronPipeline d = pipe(16);
  d.layout = "Et*3|(tt|)*29,m|L";
  d.mtp_layers = 1;
  const TrainStages t = stages(61, d);
  ASSERT_EQ(t.layer.size(), 61u);
  EXPECT_EQ(t.layer[0], 0);
  EXPECT_EQ(t.layer[2], 0);
  EXPECT_EQ(t.layer[3], 1);
  EXPECT_EQ(t.layer[4], 1);
  EXPECT_EQ(t.layer[29], 14);
  EXPECT_EQ(t.layer[30], 14);
  EXPECT_EQ(t.layer[31], 15);
  EXPECT_EQ(t.layer[32], 15);
  EXPECT_EQ(t.layer[33], 0);
  EXPECT_EQ(t.layer[59], 13);
  EXPECT_EQ(t.layer[60], 13);
  EXPECT_EQ(t.mtp, 14);
  EXPECT_EQ(t.output, 15);
  EXPECT_EQ(t.final_norm, 13);  // with MTP, beside the last decoder layer
  EXPECT_EQ(t.embedding, 0);
}

TEST(MegatronStages, RefusalsNameMegatronsRule) {
  std::string e;
  stages(10, pipe(2, 2, 3, 3), &e);  // 3 first-stage layers over vpp 2; 4 middle layers, 0 middle stages
  EXPECT_NE(e.find("the 3 first-stage layers are not divisible by vpp=2"), std::string::npos) << e;
  EXPECT_NE(e.find("4 middle layers remain for 0 middle stages"), std::string::npos) << e;
  e.clear();
  stages(12, pipe(2, 2, 6, 6), &e);  // legal config, but Megatron's offset divides by 0 middle stages
  EXPECT_NE(e.find("divides by zero middle stages"), std::string::npos) << e;
  e.clear();
  stages(9, pipe(2), &e);
  EXPECT_NE(e.find("9 layers are not divisible by pp=2"), std::string::npos) << e;
  e.clear();
  stages(12, pipe(2, 4), &e);  // 6 per rank over vpp 4
  EXPECT_NE(e.find("6 layers per pp rank are not divisible by vpp=4"), std::string::npos) << e;
  e.clear();
  MegatronPipeline m = pipe(2, 1, 2, 0);
  m.account_for_loss = true;
  stages(8, m, &e);
  EXPECT_NE(e.find("cannot be combined with --account-for-embedding"), std::string::npos) << e;
  e.clear();
  MegatronPipeline l = pipe(2);
  l.layout = "Ett|tt|t|L";  // 5 decoder layers, model has 6
  stages(6, l, &e);
  EXPECT_NE(e.find("--pipeline-layout has 5 decoder layers (t), the model has 6"), std::string::npos) << e;
  e.clear();
  l.layout = "Ett|ttt|tL";  // 3 stages on pp 2
  stages(6, l, &e);
  EXPECT_NE(e.find("--pipeline-layout has 3 stages, not divisible by pp=2"), std::string::npos) << e;
  e.clear();
  l.layout = "Ett|tx|tt|L";
  stages(6, l, &e);
  EXPECT_NE(e.find("invalid layer character 'x'"), std::string::npos) << e;
  e.clear();
  l.layout = "Ett|tt|tt|L";
  l.vpp = 4;
  stages(6, l, &e);
  EXPECT_NE(e.find("gives 2 virtual stages per pp rank, vpp=4 conflicts"), std::string::npos) << e;
  e.clear();
  l.vpp = 1;
  l.layout = "E(t|)*99999999999";
  stages(6, l, &e);
  EXPECT_NE(e.find("'*' must be followed by a count"), std::string::npos) << e;
}

}  // namespace
}  // namespace reshard
