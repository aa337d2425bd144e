// Train and generation parallelism: from flags ("tp=1,pp=2,ep=8") or an NCCL M2N
// reshard_model_bench system JSON. dp is derived: dp = num_gpus / (tp * pp) (CP folds into dp).
#pragma once
#include <string>
#include <string_view>

#include "reshard/core/error.h"

namespace reshard {

// The most ranks a side may have: plans, meshes and per-rank tables stay bounded (docs/reliability.md).
inline constexpr int kMaxRanksPerSide = 1 << 16;

struct Parallelism {
  int num_gpus = 0;
  int tp = 1, pp = 1, ep = 1;
  // Expert tensor parallel size. 0: not given — validate_system() applies Megatron's default, tp
  // (megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__), on the train side and
  // on a Megatron destination, and sets etp_default; 1 on a vLLM / hf destination.
  int etp = 0;
  int cp = 1;
  int dp = 0;  // derived by validate(); a given dp must agree
  bool etp_default = false;  // etp came from Megatron's default (tp), not from the user
  // Virtual pipeline stages per pp rank (Megatron's virtual_pipeline_model_parallel_size; train only).
  int vpp = 1;
  // Expert data parallel size on the train side: num_gpus / (etp * ep * pp).
  int edp() const { return num_gpus / (etp * ep * pp); }
};

struct SystemConfig {
  Parallelism train, gen;
};

// Parses "tp=2,pp=1,ep=4" into `p` (keys: tp pp ep etp cp dp vpp). Every problem goes into `problems`,
// prefixed with `side` ("train"/"gen").
void parse_parallelism_spec(std::string_view spec, const std::string& side, Parallelism& p, Problems& problems);
// Reads {"train": {"num_gpus", "tp_size", "pp_size", "ep_size", "cp_size", "dp_size", "etp_size"?, "vpp_size"?},
// "generation": {...}}. Throws Error(Config) naming the file, key and position.
SystemConfig load_system_json(const std::string& path);
SystemConfig parse_system_json(std::string_view text, const std::string& origin);
// Checks divisibility and the gen rules (gen ep in {1, tp}, gen etp == 1, cp == 1 on gen),
// derives dp. Adds every violation, naming the field and the values. `gen_expert_mesh`: the
// destination has its own expert mesh (Megatron: etp, ep, edp): gen ep and etp are then free, but
// etp*ep must divide the gen GPUs, and gen pp must be 1.
void validate_system(SystemConfig& sys, Problems& problems, bool gen_expert_mesh = false);

}  // namespace reshard
