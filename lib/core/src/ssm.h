// Mamba2 mixers (NemotronH): sizes from the shapes, and the TP sections of in_proj and conv1d (private
// to lib/core). Both engines cut them per section: Megatron-Core MambaMixer (megatron/core/ssm/
// mamba_mixer.py: in_proj partition_sizes [d_inner, d_inner, G N, G N, heads] / tp, conv1d [x, B, C])
// and vLLM MambaMixer2 (layers/mamba/mamba_mixer2.py mamba_v2_sharded_weight_loader), which with
// n_groups == 1 gives every rank the whole B and C.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "reshard/core/error.h"
#include "reshard/core/grouping.h"
#include "reshard/core/mesh.h"

namespace reshard {

struct MambaShape {
  int64_t inner = 0;         // d_inner = heads x head dim (norm.weight)
  int64_t groups_state = 0;  // n_groups x d_state (B and C each)
  int64_t heads = 0;         // A_log
};

// Mixer prefix ("...mixer.") -> sizes, for every mixer whose in_proj, conv1d, norm and A_log agree.
std::map<std::string, MambaShape> mamba_shapes(const std::vector<LogicalParam>& params, Problems& problems);

// The sections of `part` ("in_proj.weight", "conv1d.weight", "conv1d.bias") over tp with `groups`
// n_groups; B and C replicated when `duplicate_groups` (vLLM, n_groups == 1 < tp).
std::vector<int64_t> mamba_sections(const MambaShape& m, const std::string& part, bool duplicate_groups);

// Gated delta nets (Qwen3-Next, Qwen3.5), from the shapes: conv1d rows = 2 key_dim + value_dim,
// A_log = value heads, norm = value head dim, out_proj columns = value_dim.
struct GdnShape {
  int64_t key_dim = 0, value_dim = 0, value_heads = 0;
};
// "...linear_attn." -> sizes, for every GDN whose tensors agree.
std::map<std::string, GdnShape> gdn_shapes(const std::vector<LogicalParam>& params, Problems& problems);

// The TP cut of GDN `part` with `key_heads` key heads: Megatron-Core's GatedDeltaNet (megatron/core/ssm/
// gated_delta_net: a rank's in_proj holds q, k, v, z, b, a of its key heads, section-major; Bridge
// qwen3_next_bridge.py GDNLinearMapping) when `megatron`, else vLLM's (layers/mamba/gdn/
// qwen_gdn_linear_attn.py: Qwen3-Next's grouped in_proj_qkvz / in_proj_ba by contiguous rows, Qwen3.5's
// in_proj_qkv and conv1d per [key_dim, key_dim, value_dim] section). An empty placement: plain torch.chunk.
Placement gdn_placement(const GdnShape& g, int64_t key_heads, const std::string& part, bool megatron);

}  // namespace reshard
