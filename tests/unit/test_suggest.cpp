#include <gtest/gtest.h>

#include "reshard/core/suggest.h"

namespace reshard {
namespace {

TEST(Suggest, EditDistanceCountsSwapsAsOne) {
  EXPECT_EQ(edit_distance("model", "model"), 0);
  EXPECT_EQ(edit_distance("modle", "model"), 1);   // adjacent swap
  EXPECT_EQ(edit_distance("mdel", "model"), 1);    // deletion
  EXPECT_EQ(edit_distance("simulte", "simulate"), 1);
  EXPECT_EQ(edit_distance("", "run"), 3);
}

TEST(Suggest, ClosestNameOnlyForTypos) {
  const std::vector<std::string> commands{"plan", "inspect", "verify", "run", "simulate"};
  EXPECT_EQ(closest_name("simulte", commands), "simulate");
  EXPECT_EQ(closest_name("pln", commands), "plan");
  EXPECT_EQ(closest_name("bogus", commands), "");  // nothing close: no guess
  EXPECT_EQ(closest_name("train-gpu", {"train-gpus", "gen-gpus", "train"}), "train-gpus");
}

}  // namespace
}  // namespace reshard
