// Human and JSON views of a plan: what `reshard plan --summary` and `reshard inspect` print.
// Pure functions of (plan, stats); the CLI only chooses which to print.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reshard/core/plan.h"
#include "reshard/core/stats.h"

namespace reshard {

inline constexpr size_t kFullTableRanks = 16;  // worlds up to this size list every rank
inline constexpr size_t kTopRanks = 8;         // larger worlds list their busiest ranks only

// Ranks by bulk load (max of sent and received, then misc bytes), busiest first; ties by rank.
std::vector<int> busiest_ranks(const PlanStats& stats, size_t count);

// Model, fingerprint, parallelism, options, param and byte counts, transfers, lower bound, busiest
// rank, efficiency; then the per-rank table: every rank when the world has at most kFullTableRanks
// ranks, else the kTopRanks busiest.
std::string format_summary(const Plan& plan, const PlanStats& stats);
// The per-rank table for `ranks` (global ranks, printed in the given order).
std::string format_rank_table(const Plan& plan, const PlanStats& stats, const std::vector<int>& ranks);
// One param: layouts (mesh dims, ranks, placements), stages, rule, storage, fan-out, and its transfers
// and fan-out ops, at most `max_transfers` each with a "... N more" line.
std::string format_param(const Plan& plan, uint32_t param, size_t max_transfers);

// The same as JSON. `ranks`: the ranks to list (empty: all).
nlohmann::ordered_json summary_json(const Plan& plan, const PlanStats& stats,
                                    const std::vector<int>& ranks = {});
nlohmann::ordered_json rank_json(const Plan& plan, const RankStats& r);
nlohmann::ordered_json param_json(const Plan& plan, uint32_t param, size_t max_transfers);

// The param named `name`, or the grouped param that has `name` as a member. Throws Error(Config)
// naming `name` (and a few params whose names contain it) when there is none.
uint32_t find_param(const Plan& plan, const std::string& name);

}  // namespace reshard
