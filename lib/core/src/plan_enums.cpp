// Names of the plan enums, shared by the plan file and the command line.
#include "reshard/core/plan_enums.h"

#include <array>
#include <utility>

#include "reshard/core/error.h"

namespace reshard {
namespace {

// One table per enum, so to_string and parse cannot drift apart.
template <class E, size_t N>
using Names = std::array<std::pair<E, const char*>, N>;

constexpr Names<Path, 2> kPathNames{{{Path::Bulk, "bulk"}, {Path::Misc, "misc"}}};
constexpr Names<Fanout, 2> kFanoutNames{{{Fanout::Direct, "direct"}, {Fanout::TwoPhase, "two-phase"}}};
constexpr Names<BulkMode, 2> kBulkModeNames{{{BulkMode::Ffn, "ffn"}, {BulkMode::All, "all"}}};
constexpr Names<GenLayout, 3> kGenLayoutNames{
    {{GenLayout::Hf, "hf"}, {GenLayout::Vllm, "vllm"}, {GenLayout::Megatron, "megatron"}}};
constexpr Names<FanoutMode, 3> kFanoutModeNames{
    {{FanoutMode::Auto, "auto"}, {FanoutMode::Direct, "direct"}, {FanoutMode::TwoPhase, "two-phase"}}};
constexpr Names<GenPrecision, 4> kGenPrecisionNames{{{GenPrecision::Auto, "auto"},
                                                     {GenPrecision::Bf16, "bf16"},
                                                     {GenPrecision::Fp8, "fp8"},
                                                     {GenPrecision::Mxfp8, "mxfp8"}}};
constexpr Names<ScalesPath, 2> kScalesPathNames{{{ScalesPath::Misc, "misc"}, {ScalesPath::Bulk, "bulk"}}};
constexpr Names<ExpertPlacement, 2> kExpertPlacementNames{
    {{ExpertPlacement::Linear, "linear"}, {ExpertPlacement::RoundRobin, "round_robin"}}};
constexpr Names<RankOrder, 2> kRankOrderNames{
    {{RankOrder::TpCpEpDpPp, "tp-cp-ep-dp-pp"}, {RankOrder::TpCpEpPpDp, "tp-cp-ep-pp-dp"}}};

template <class E, size_t N>
const char* name_of(const Names<E, N>& names, E e) {
  for (const auto& [value, name] : names) {
    if (value == e) return name;
  }
  return "?";
}

template <class E, size_t N>
E parse_name(const Names<E, N>& names, const std::string& s, const char* what) {
  std::string accepted;
  for (const auto& [value, name] : names) {
    if (s == name) return value;
    accepted += accepted.empty() ? "" : ", ";
    accepted += name;
  }
  throw config_error(std::string("unknown ") + what + " '" + s + "' (expected one of: " + accepted + ")");
}

}  // namespace

const char* to_string(Path p) { return name_of(kPathNames, p); }
const char* to_string(Fanout f) { return name_of(kFanoutNames, f); }
const char* to_string(BulkMode m) { return name_of(kBulkModeNames, m); }
const char* to_string(GenLayout l) { return name_of(kGenLayoutNames, l); }
const char* to_string(FanoutMode m) { return name_of(kFanoutModeNames, m); }
const char* to_string(GenPrecision p) { return name_of(kGenPrecisionNames, p); }
const char* to_string(ScalesPath s) { return name_of(kScalesPathNames, s); }
const char* to_string(ExpertPlacement e) { return name_of(kExpertPlacementNames, e); }
const char* to_string(RankOrder o) { return name_of(kRankOrderNames, o); }

Path parse_path(const std::string& s) { return parse_name(kPathNames, s, "path"); }
Fanout parse_fanout(const std::string& s) { return parse_name(kFanoutNames, s, "fanout"); }
BulkMode parse_bulk_mode(const std::string& s) { return parse_name(kBulkModeNames, s, "bulk mode"); }
GenLayout parse_gen_layout(const std::string& s) { return parse_name(kGenLayoutNames, s, "gen layout"); }
FanoutMode parse_fanout_mode(const std::string& s) { return parse_name(kFanoutModeNames, s, "fanout mode"); }
GenPrecision parse_gen_precision(const std::string& s) {
  return parse_name(kGenPrecisionNames, s, "gen precision");
}
ScalesPath parse_scales_path(const std::string& s) { return parse_name(kScalesPathNames, s, "scales path"); }
RankOrder parse_rank_order(const std::string& s) { return parse_name(kRankOrderNames, s, "rank order"); }
ExpertPlacement parse_expert_placement(const std::string& s) {
  return parse_name(kExpertPlacementNames, s, "expert placement");
}

}  // namespace reshard
