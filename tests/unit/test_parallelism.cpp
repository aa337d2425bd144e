#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "reshard/core/parallelism.h"

namespace reshard {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::string joined(const Problems& p) {
  std::string s;
  for (const std::string& x : p.list()) s += x + "\n";
  return s;
}

TEST(ParallelSpec, ParsesKeys) {
  Parallelism p;
  Problems problems;
  parse_parallelism_spec("tp=2, pp=1,ep=4,etp=1,cp=1", "train", p, problems);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.pp, 1);
  EXPECT_EQ(p.ep, 4);
  EXPECT_EQ(p.dp, 0);  // not given: derived later
}

TEST(ParallelSpec, EveryBadItemReported) {
  Parallelism p;
  Problems problems;
  parse_parallelism_spec("tp=x,pp=0,zz=3,ep=-1,cp=2k,etp", "gen", p, problems);
  const std::string all = joined(problems);
  EXPECT_EQ(problems.list().size(), 6u) << all;
  EXPECT_TRUE(has(all, "gen: tp=x is not a positive integer")) << all;
  EXPECT_TRUE(has(all, "gen: pp=0 is not a positive integer")) << all;
  EXPECT_TRUE(has(all, "gen: unknown key 'zz'")) << all;
  EXPECT_TRUE(has(all, "gen: ep=-1")) << all;
  EXPECT_TRUE(has(all, "gen: cp=2k")) << all;
  EXPECT_TRUE(has(all, "'etp' is not key=value")) << all;
}

SystemConfig from_specs(int train_gpus, const char* train, int gen_gpus, const char* gen) {
  SystemConfig sys;
  Problems problems;
  sys.train.num_gpus = train_gpus;
  sys.gen.num_gpus = gen_gpus;
  parse_parallelism_spec(train, "train", sys.train, problems);
  parse_parallelism_spec(gen, "gen", sys.gen, problems);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  return sys;
}

TEST(ParallelValidate, DerivesDp) {
  SystemConfig sys = from_specs(16, "tp=1,pp=2,ep=8,etp=1,cp=1", 16, "tp=8,ep=1");
  Problems problems;
  validate_system(sys, problems);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  EXPECT_EQ(sys.train.dp, 8);
  EXPECT_EQ(sys.train.edp(), 1);
  EXPECT_EQ(sys.gen.dp, 2);
}

TEST(ParallelValidate, CpFoldsIntoDp) {
  SystemConfig sys = from_specs(16, "tp=2,pp=2,cp=2,dp=4", 8, "tp=4,ep=4");
  Problems problems;
  validate_system(sys, problems);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  EXPECT_EQ(sys.train.dp, 4);
  EXPECT_EQ(sys.gen.dp, 2);
}

TEST(ParallelValidate, EveryViolationNamed) {
  SystemConfig sys = from_specs(12, "tp=4,pp=2,ep=5,dp=3", 8, "tp=4,ep=2,etp=2,cp=2");
  Problems problems;
  validate_system(sys, problems);
  const std::string all = joined(problems);
  EXPECT_TRUE(has(all, "train: num_gpus 12 is not divisible by tp*pp = 8 (tp=4, pp=2)")) << all;
  // etp not given: Megatron's default, tp = 4 (ModelParallelConfig.__post_init__)
  EXPECT_TRUE(has(all, "train: num_gpus 12 is not divisible by etp*ep*pp = 40 (etp=4, ep=5, pp=2)")) << all;
  EXPECT_TRUE(has(all, "gen: ep 2 must be 1 or equal tp = 4")) << all;
  EXPECT_TRUE(has(all, "gen: etp must be 1")) << all;
  EXPECT_TRUE(has(all, "gen: cp must be 1")) << all;
  EXPECT_EQ(problems.list().size(), 5u) << all;
}

TEST(ParallelValidate, DpDisagreementAndCp) {
  SystemConfig sys = from_specs(16, "tp=2,pp=1,dp=4", 4, "tp=2");
  sys.train.cp = 3;
  sys.gen.num_gpus = 0;
  Problems problems;
  validate_system(sys, problems);
  const std::string all = joined(problems);
  EXPECT_TRUE(has(all, "train: dp 8 (num_gpus/(tp*pp)) is not divisible by cp = 3")) << all;
  EXPECT_TRUE(has(all, "train: dp 4 disagrees with num_gpus/(tp*pp) = 8")) << all;
  EXPECT_TRUE(has(all, "gen: num_gpus must be positive, got 0")) << all;
}

TEST(ParallelSystemJson, ReadsBenchFormat) {
  const std::string text = R"({
    "train": {"num_gpus": 16, "tp_size": 1, "pp_size": 2, "ep_size": 8, "cp_size": 1, "dp_size": 8},
    "generation": {"num_gpus": 16, "tp_size": 8, "pp_size": 1, "ep_size": 1, "cp_size": 1, "dp_size": 2}
  })";
  const auto path = std::filesystem::temp_directory_path() / ("reshard_sys_" + std::to_string(getpid()) + ".json");
  std::ofstream(path) << text;
  SystemConfig sys = load_system_json(path.string());
  std::filesystem::remove(path);
  EXPECT_EQ(sys.train.num_gpus, 16);
  EXPECT_EQ(sys.train.pp, 2);
  EXPECT_EQ(sys.train.ep, 8);
  EXPECT_EQ(sys.gen.tp, 8);
  Problems problems;
  validate_system(sys, problems);
  EXPECT_TRUE(problems.empty()) << joined(problems);
  EXPECT_EQ(sys.gen.dp, 2);
}

TEST(ParallelSystemJson, GenAliasAndErrors) {
  SystemConfig sys = parse_system_json(R"({"train": {"num_gpus": 8, "tp_size": 8},
                                           "gen": {"num_gpus": 4, "etp_size": 1}})", "s.json");
  EXPECT_EQ(sys.train.tp, 8);
  EXPECT_EQ(sys.gen.num_gpus, 4);
  try {
    parse_system_json(R"({"train": {"tp_size": 0, "tp_sise": 2, "pp_size": "2"}})", "s.json");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::Config);
    EXPECT_TRUE(has(msg, "s.json")) << msg;
    EXPECT_TRUE(has(msg, "train: missing num_gpus")) << msg;
    EXPECT_TRUE(has(msg, "train.tp_size: expected a positive integer, got 0")) << msg;
    EXPECT_TRUE(has(msg, "unknown key 'tp_sise'")) << msg;
    EXPECT_TRUE(has(msg, "train.pp_size: expected a positive integer, got \"2\"")) << msg;
    EXPECT_TRUE(has(msg, "missing \"generation\"")) << msg;
  }
  try {
    parse_system_json("{\"train\": {]}", "bad.json");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "bad.json: malformed JSON at byte 12")) << e.what();
  }
  try {
    load_system_json("/nonexistent/sys.json");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "cannot open --parallelism /nonexistent/sys.json")) << e.what();
  }
}

}  // namespace
}  // namespace reshard
