// Megatron-Core's linear_qkv, private to lib/core: per query group [q heads of the group; k; v]
// (Megatron-Bridge models/conversion/param_mapping.py QKVMapping merge_qkv_weights / merge_qkv_biases),
// one column-parallel linear over all fused rows (megatron/core/transformer/attention.py
// SelfAttention; tensor_parallel/layers.py ColumnParallelLinear: rank r holds fused rows
// [r F / tp, (r + 1) F / tp)).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/grouping.h"
#include "reshard/core/mesh.h"

namespace reshard {

// One attention block's q/k/v rows, per query group.
struct QkvShape {
  int64_t groups = 0;    // query groups (KV heads)
  int64_t q_rows = 0;    // q_proj rows per group (heads per group x head dim, x 2 when gated)
  int64_t head_dim = 0;  // k and v rows per group
  // Output-gated attention (Qwen3-Next, Qwen3.5: attn_output_gate): q_proj holds [q_h; z_h] per head,
  // seen as q_proj rows = 2 x o_proj's input (HF modeling_qwen3_next.py Qwen3NextAttention.forward).
  bool gated = false;
  int64_t heads() const { return groups * q_rows / head_dim / (gated ? 2 : 1); }
};

// "model.layers.N.self_attn." -> its shape, for every block with q/k/v weights; problems where the
// rows are not whole heads and groups. `head_dim_from` names where the head dim came from.
std::map<std::string, QkvShape> qkv_shapes(const std::vector<LogicalParam>& params, int64_t head_dim,
                                           const std::string& head_dim_from, Problems& problems);

// Megatron-Core's rule (transformer_config.py TransformerConfig.__post_init__): num_attention_heads
// % tp == 0 and (num_query_groups % tp == 0 or tp % num_query_groups == 0); "" when it holds.
std::string qkv_tp_problem(const QkvShape& s, int tp, const std::string& side);

// The placement of part `which` (0 q, 1 k, 2 v) of the block over `tp` ranks: whole groups per rank
// (S(0)) when the groups divide by tp, else each rank's contiguous chunk of the fused rows. `exact`
// (a destination storage that does not interleave): always the fused cut, a gated q's rows reordered from
// HF's [q_0; z_0; q_1; z_1; ...] to Megatron's [q_0; q_1; ...; z_0; z_1; ...] (attention.py
// get_query_key_value_tensors; Megatron-Bridge QKVMapping with attention_output_gate).
Placement qkv_placement(const QkvShape& s, int which, int tp, bool exact);
// Whether the plain per-group interleave ([q_g; k_g; v_g], dst_fuse_groups) lands the block.
bool qkv_interleaves(const QkvShape& s, int tp);

}  // namespace reshard
