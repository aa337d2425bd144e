// Name rules: which path a param takes and how it is sharded on each side. Matches NeMo RL's
// nccl_reshard conventions (see docs/design.md). Which local storage a param lands in on the
// generation side is the destination layout's business (dst_layout.h).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "reshard/core/plan.h"
#include "reshard/core/user_regex.h"

namespace reshard {

// One entry of a --rules FILE: {"match": REGEX, "path": "bulk"|"misc",
//  "train_shard_dim": d|null, "gen_shard_dim": d|null, "expert": false}.
// The shard dims are sharded over TP on each side (null: replicated). First match wins, before the
// built-in rules.
struct CustomRule {
  std::string pattern;
  UserRegex re;
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
  int gen_tp_dim = -1;      // tensor dim sharded over gen TP (ETP for experts on a Megatron destination)
};

// `name` is the (grouped) param name, `ndim` its rank. MTP params (mtp.* or --mtp-layers) are
// classified by the caller, not here.
ParamRule classify_param(const std::string& name, int ndim, bool grouped_expert, BulkMode bulk,
                         const std::vector<CustomRule>& custom);

// Layer index of "...layers.N..." (the first such segment), or -1.
int layer_index(const std::string& name);

}  // namespace reshard
