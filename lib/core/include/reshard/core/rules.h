// Name rules: which path a param takes, how it is sharded on each side, which local storage it
// lands in on the generation side. Matches NeMo RL's nccl_reshard conventions (see docs/design.md).
#pragma once
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

// One entry of a --rules FILE: {"match": REGEX, "path": "bulk"|"misc",
//  "train_shard_dim": d|null, "gen_shard_dim": d|null, "expert": false}.
// The shard dims are sharded over TP on each side (null: replicated). First match wins, before the
// built-in rules.
struct CustomRule {
  std::string pattern;
  std::regex re;
  Path path = Path::Bulk;
  int train_shard_dim = -1;
  int gen_shard_dim = -1;
  bool expert = false;
};

// Parses the rules JSON ({"rules": [...]}, or a bare list); every problem (bad regex, bad key) is
// added to `problems` naming the entry.
std::vector<CustomRule> parse_rules(const std::string& json_text, const std::string& origin, Problems& problems);

struct ParamRule {
  Path path = Path::Misc;
  std::string rule;         // short name of the matching rule
  bool expert = false;      // grouped experts: dim 0 is the expert dim, lives on the expert mesh
  int train_tp_dim = -1;    // tensor dim sharded over train TP (ETP for experts); -1: replicated
  int gen_tp_dim = -1;      // tensor dim sharded over gen TP (experts with gen EP: see planner)
  std::string fused_storage;  // --gen-layout vllm: storage name; empty: own name
  int fuse_dim = -1;
  int fuse_rank = 0;        // canonical order inside the fused storage (gate 0, up 1; q 0, k 1, v 2)
};

// `name` is the (grouped) param name, `ndim` its rank. MTP params (mtp.* or --mtp-layers) are
// classified by the caller, not here.
ParamRule classify_param(const std::string& name, int ndim, bool grouped_expert, BulkMode bulk,
                         GenLayout layout, const std::vector<CustomRule>& custom);

// Layer index of "...layers.N..." (the first such segment), or -1.
int layer_index(const std::string& name);

}  // namespace reshard
