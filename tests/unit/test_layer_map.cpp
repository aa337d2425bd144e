// --layer-map and --mtp-layers (layer_map.h): what a file or list gives, and every problem named.
#include <gtest/gtest.h>

#include "reshard/core/layer_map.h"

namespace reshard {
namespace {

bool has(const Problems& p, const std::string& text) {
  for (const std::string& s : p.list())
    if (s.find(text) != std::string::npos) return true;
  return false;
}

TEST(LayerMap, AListAndAnObjectGiveTheStageOfEachLayer) {
  Problems p;
  EXPECT_EQ(parse_layer_map("[0, 0, 1, 1]", "m.json", p), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(parse_layer_map(R"({"2": 1, "0": 0, "1": 0})", "m.json", p), (std::vector<int>{0, 0, 1}));
  EXPECT_TRUE(p.empty());
}

TEST(LayerMap, EveryProblemIsNamedWithTheFileAndPlace) {
  Problems p;
  parse_layer_map(R"({"0": 0, "5": 1, "1": -2})", "m.json", p);
  EXPECT_TRUE(has(p, "--layer-map m.json: key '5' is not a layer index in [0, 3)")) << p.list().front();
  EXPECT_TRUE(has(p, "--layer-map m.json: layer 1: stage must be a non-negative integer, got -2"));
  EXPECT_TRUE(has(p, "--layer-map m.json: layer 2 is missing"));
  EXPECT_EQ(p.list().size(), 3u);
  Problems q;
  parse_layer_map("[0, 1", "bad.json", q);
  EXPECT_TRUE(has(q, "--layer-map bad.json: malformed JSON at byte"));
  Problems r;
  parse_layer_map("7", "n.json", r);
  EXPECT_TRUE(has(r, "expected an object {\"<layer>\": stage} or a list of stages"));
}

TEST(LayerMap, LayerListsParseAndRefuseWhatIsNotALayer) {
  Problems p;
  EXPECT_EQ(parse_layer_list("61", "--mtp-layers", p), (std::vector<int>{61}));
  EXPECT_EQ(parse_layer_list("0,61", "--mtp-layers", p), (std::vector<int>{0, 61}));
  EXPECT_TRUE(p.empty());
  parse_layer_list("x,-1", "--mtp-layers", p);
  EXPECT_EQ(p.list().size(), 2u);
  EXPECT_TRUE(has(p, "--mtp-layers"));
}

}  // namespace
}  // namespace reshard
