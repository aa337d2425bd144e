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
  EXPECT_NE(e.find("the count 99999999999 after '*' in 'E(t|)*99999999999' is too large (at most 9999999)"),
            std::string::npos) << e;
}

// pipeline_parallel_layer_layout.py PipelineParallelLayerLayout.parse_str_to_list: commas dropped, then
// re.sub r'\(([^)]+)\)\*(\d+)' (body up to the first ')'), then re.sub r'(.)\*(\d+)' on that result,
// then split on '|'. Each table below is that rule applied by hand.
TEST(MegatronStages, LayoutRepeatsUnrollAsMegatronDoes) {
  MegatronPipeline m = pipe(2);
  // "E|t*31(t)*2t*3L" -> "E|t*31ttt*3L" -> "E|" + 31 t + "tt" + 3 t + "L": pp0 E; pp1 36 t + L.
  m.layout = "E|t*31(t)*2t*3L";
  EXPECT_EQ(stages(36, m).layer, std::vector<int>(36, 1));
  // "E(t*9)*2|(t*9)*2L" -> "Et*9t*9|t*9t*9L": pp0 E + t0-17; pp1 t18-35 + L.
  m.layout = "E(t*9)*2|(t*9)*2L";
  std::vector<int> half(18, 0);
  half.insert(half.end(), 18, 1);
  EXPECT_EQ(stages(36, m).layer, half);
  // A count after a group's count repeats the group's last symbol: "(t)*2*3" -> "tt*3" -> 4 t.
  m.layout = "E(t)*2*3|ttL";
  EXPECT_EQ(stages(6, m).layer, (std::vector<int>{0, 0, 0, 0, 1, 1}));
  // Commas go first, so "t*1,2" is 12 t.
  m.layout = "Et*1,2|t,tL";
  EXPECT_EQ(stages(14, m).layer, (std::vector<int>{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}));
  // Leading zeros count for nothing ("t*00000003" is 3 t; 8 digits are not too many).
  m.layout = "Et*00000003|tL";
  EXPECT_EQ(stages(4, m).layer, (std::vector<int>{0, 0, 0, 1}));
  // Count 0 drops its symbol or group: "E(tt|)*0t*0t|tL" -> "Et|tL".
  m.layout = "E(tt|)*0t*0t|tL";
  EXPECT_EQ(stages(2, m).layer, (std::vector<int>{0, 1}));
  // Step 3's x is any character: "(*0" is dropped, so Megatron accepts "E(*0t|tL" as "Et|tL".
  m.layout = "E(*0t|tL";
  EXPECT_EQ(stages(2, m).layer, (std::vector<int>{0, 1}));
  // A group's separator joins its neighbours: "E(t|t)*2L" -> "Et|tt|tL", flat stages Et | tt | tL.
  MegatronPipeline three = pipe(3);
  three.layout = "E(t|t)*2L";
  EXPECT_EQ(stages(4, three).layer, (std::vector<int>{0, 1, 1, 2}));
  // '|' repeats too: "Et|*2tL" -> "Et||tL", flat stages Et | (empty) | tL.
  three.layout = "Et|*2tL";
  EXPECT_EQ(stages(2, three).layer, (std::vector<int>{0, 2}));
}

TEST(MegatronStages, LayoutRepeatRefusals) {
  MegatronPipeline m = pipe(2);
  std::string e;
  // "E|t*32(t)*2t*3L" -> "E|t*32ttt*3L" -> 32 + 2 + 3 = 37 t.
  m.layout = "E|t*32(t)*2t*3L";
  stages(36, m, &e);
  EXPECT_NE(e.find("--pipeline-layout has 37 decoder layers (t), the model has 36"), std::string::npos) << e;
  e.clear();
  m.layout = "Et*1000000000|t*1000000000L";
  stages(36, m, &e);
  EXPECT_NE(e.find("the count 1000000000 after '*' in 'Et*1000000000|t*1000000000L' is too large (at most 9999999)"),
            std::string::npos) << e;
  e.clear();
  m.layout = "Et*10000000|tL";  // the first count past the bound
  stages(2, m, &e);
  EXPECT_NE(e.find("the count 10000000 after '*'"), std::string::npos) << e;
  e.clear();
  // No nesting: the body ends at the first ')': "E((t)*2)*3|L" -> "E(t(t)*3|L" -> "E(t(t)))|L".
  m.layout = "E((t)*2)*3|L";
  stages(2, m, &e);
  EXPECT_NE(e.find("invalid layer character '('"), std::string::npos) << e;
  e.clear();
  // A '*' with no count stays and is no layer.
  m.layout = "Et*|tL";
  stages(2, m, &e);
  EXPECT_NE(e.find("invalid layer character '*'"), std::string::npos) << e;
}

}  // namespace
}  // namespace reshard
