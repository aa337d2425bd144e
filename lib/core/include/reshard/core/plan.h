// The transfer plan: the contract between `reshard plan`, `reshard run` and `reshard verify`.
// Plain data; build it with plan_reshard() (planner.h), serialize with plan_io.h.
// Ranks are global: train ranks 0..T-1, then gen ranks T..T+G-1.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "reshard/core/box.h"
#include "reshard/core/dtype.h"
#include "reshard/core/mesh.h"
#include "reshard/core/parallelism.h"

namespace reshard {

inline constexpr int kPlanVersion = 1;
inline constexpr const char* kPlanFormat = "reshard-plan";

enum class Path : uint8_t { Bulk, Misc };
enum class Fanout : uint8_t { Direct, TwoPhase };
enum class BulkMode : uint8_t { Ffn, All };
// --gen-layout: how the generation side stores weights (docs/layouts.md).
enum class GenLayout : uint8_t { Hf, Vllm, Megatron };
enum class FanoutMode : uint8_t { Auto, Direct, TwoPhase };
// --gen-precision: what the generation side stores (docs/precision.md). Auto: what was trained
// (bf16 for a BF16 model, fp8 for a block-FP8 model).
enum class GenPrecision : uint8_t { Auto, Bf16, Fp8, Mxfp8 };
// --scales: block-FP8 weight_scale_inv tensors go whole on the misc path, or resharded by block.
enum class ScalesPath : uint8_t { Misc, Bulk };
// --gen-expert-placement: which global experts a vLLM EP rank holds (fused_moe/layer.py
// determine_expert_map): linear (contiguous, the first E % ep ranks one more) or round_robin (e % ep).
enum class ExpertPlacement : uint8_t { Linear, RoundRobin };
// --train-order: Megatron's RankGenerator order (megatron/training/initialize.py: tp-cp-ep-dp-pp, or
// tp-cp-ep-pp-dp with --use-tp-pp-dp-mapping); the leftmost varies fastest.
enum class RankOrder : uint8_t { TpCpEpDpPp, TpCpEpPpDp };

struct PlanOptions {
  BulkMode bulk = BulkMode::Ffn;
  GenLayout gen_layout = GenLayout::Hf;
  FanoutMode fanout = FanoutMode::Auto;
  int64_t bucket_bytes = int64_t{1} << 30;
  std::vector<std::string> exclude;  // regexes (ECMAScript); matching params are dropped
  std::vector<int> mtp_layers;       // model.layers.N that are really the MTP module
  int first_stage_layers = 0;        // 0: Megatron's even split
  int last_stage_layers = 0;
  std::vector<int> layer_to_stage;   // explicit map (index = decoder layer); empty: computed
  std::string rules_json;            // contents of --rules FILE, empty when none
  GenPrecision gen_precision = GenPrecision::Auto;
  ScalesPath scales = ScalesPath::Misc;
  int head_dim = 0;  // --head-dim: attention heads = q rows / head_dim; 0: from q_norm/k_norm
  ExpertPlacement gen_expert_placement = ExpertPlacement::Linear;
  int ssm_groups = 0;
  int linear_key_heads = 0;
  // --train-vocab-pad / --gen-vocab-pad: Megatron's make_vocab_size_divisible_by (the vocab padded to a
  // multiple of N x tp, megatron/training/vocab_utils.py calculate_padded_vocab_size); 0: no padding,
  // Megatron-Bridge's default (should_pad_vocab False). gen: Megatron destinations only.
  int train_vocab_pad = 0, gen_vocab_pad = 0;
  // Megatron's pipeline split beyond first/last stage layers (train side; stages.h).
  std::string pipeline_layout;  // --pipeline-layout: pipeline_model_parallel_layout; empty: none
  bool account_for_embedding = false, account_for_loss = false;  // *_in_pipeline_split
  // --gpus-per-node: ranks r and s share a node (NVLink domain) iff r / N == s / N. > 0: two-phase
  // fan-outs cross each node's boundary once per byte (planner_bulk.cpp); 0: unknown, node-blind.
  int gpus_per_node = 0;
  RankOrder train_order = RankOrder::TpCpEpDpPp;  // --linear-key-heads: gated delta net key heads (config.json linear_num_key_heads); 0: unknown  // --ssm-groups: Mamba2 n_groups (config.json), for the TP cut of in_proj / conv1d; 0: unknown
};

// One bulk point-to-point transfer of a box of one param. Offsets are element coordinates.
struct Transfer {
  uint32_t param = 0;
  int32_t src = 0, dst = 0;  // global ranks
  int32_t dst_storage = 0;   // which of the param's dst storages (ParamPlan::dst_split_dim); 0 otherwise
  Box box;                   // global region
  Dims src_local;            // box origin inside the source rank's local shard
  Dims dst_local;            // box origin inside the destination rank's local storage tensor
};

// Second phase of a two-phase fan-out: `root` (a gen replica that received `box` in phase one)
// broadcasts it to the other replicas of communicator `group`; all replicas hold the same dst box,
// so `dst_local` is the same on each.
struct FanoutOp {
  uint32_t param = 0;
  int32_t root = 0;
  int32_t group = 0;
  int32_t dst_storage = 0;  // as Transfer::dst_storage
  Box box;
  Dims dst_local;
};

struct ParamPlan {
  std::string name;                  // HF name, or the grouped name "{prefix}.{proj}.weight"
  std::vector<std::string> members;  // HF names it stands for (grouped experts: one per expert)
  std::string rule;                  // which rule classified it ("ffn", "expert", "attn", "misc", ...)
  DType dtype = DType::BF16;
  Dims shape;
  Path path = Path::Misc;
  int pp_stage = 0;      // train PP stage that owns it
  int gen_pp_stage = 0;  // gen PP stage that holds it; -1: every stage (vLLM's vision towers)
  // Misc only: the engine's name for the whole tensor where it differs (Megatron); empty: `name`.
  std::string dst_name;
  // "zero_centered": the engine keeps value - 1 (Megatron-Bridge RMSNorm2ZeroCenteredRMSNormMapping);
  // the bytes travel as the checkpoint holds them and the receiver subtracts 1. Empty: none. Misc only.
  std::string dst_transform;

  // Bulk only.
  Layout src, dst;
  std::string dst_storage;  // local tensor it lands in on gen ranks (fused for --gen-layout vllm)
  int dst_fuse_dim = -1;    // dim along which dst_storage concatenates its members; -1: not fused
  int dst_fuse_index = 0;   // this param's position among the storage's members
  // > 1: the members interleave along dst_fuse_dim in this many groups, [m0_g, m1_g, ...] for each
  // local group g (Megatron linear_qkv: [q_g, k_g, v_g]); a member's rows per group = its size / groups.
  int dst_fuse_groups = 1;
  // >= 0: one storage per local index along this dim, named dst_storage + index ("...weight0",
  // "...weight1": Megatron's per-expert tensors); transfers name theirs in Transfer::dst_storage.
  int dst_split_dim = -1;
  Fanout fanout = Fanout::Direct;
  int group = -1;           // bulk communicator (CommGroup index)
  bool uneven = false;      // some shard is short or empty
  // MXFP8 generation storage: BF16 on the wire into short-lived staging, quantized on receive into
  // e4m3 values (dst_storage) + E8M0 scales (scale_storage, last dim / 32). False: lands as sent.
  bool mxfp8 = false;
  std::string scale_storage;
  // The training side holds block-FP8 e4m3 + float32 <name>_scale_inv; it dequantizes to the
  // logical BF16 `dtype` before sending (Megatron destinations, docs/precision.md).
  bool src_dequant = false;
  uint64_t transfer_begin = 0, transfer_count = 0;  // range in Plan::transfers
  uint64_t fanout_begin = 0, fanout_count = 0;      // range in Plan::fanouts

  // Misc only.
  int bucket = -1;
  int64_t bucket_offset = 0;  // bytes

  int64_t bytes() const { return shape.product() * dtype_size(dtype); }
};

struct CommGroup {
  std::string kind;  // "misc", "bulk" (one per train PP stage) or "fanout" (gen replicas)
  int pp_stage = -1;
  std::vector<int> ranks;  // sorted global ranks
};

struct MiscBucket {
  int root = 0;   // global train rank that broadcasts it
  int group = 0;  // CommGroup index (the misc group)
  int pp_stage = 0;
  int64_t bytes = 0;
  std::vector<uint32_t> params;  // param indices, in packing order
};

struct Plan {
  std::string generator;    // "reshard <version>"
  std::string fingerprint;  // 16 hex digits over model + parallelism + options
  std::string model_name;
  std::string model_digest;  // 16 hex digits over the model's names, shapes, dtypes
  int64_t model_tensors = 0;
  SystemConfig system;
  PlanOptions options;

  std::vector<ParamPlan> params;
  std::vector<Transfer> transfers;
  std::vector<FanoutOp> fanouts;
  std::vector<CommGroup> groups;
  std::vector<MiscBucket> buckets;

  int train_world() const { return system.train.num_gpus; }
  int gen_world() const { return system.gen.num_gpus; }
  int world() const { return train_world() + gen_world(); }
  bool is_gen(int rank) const { return rank >= train_world(); }
};

// Names used in plans and on the command line.
const char* to_string(Path p);
const char* to_string(Fanout f);
const char* to_string(BulkMode m);
const char* to_string(GenLayout l);
const char* to_string(FanoutMode m);
const char* to_string(GenPrecision p);
const char* to_string(ScalesPath s);
const char* to_string(ExpertPlacement e);
const char* to_string(RankOrder o);

}  // namespace reshard
