#include "reshard/core/after_loading.h"

#include "names.h"

namespace reshard {

std::vector<std::string> after_loading_notes(const Plan& plan) {
  std::vector<std::string> out;
  bool mxfp8 = false;
  for (const ParamPlan& p : plan.params) mxfp8 = mxfp8 || p.mxfp8;
  if (plan.options.gen_layout == GenLayout::Megatron && mxfp8)
    out.push_back("MXFP8: the plan lands compact, unswizzled E8M0 scales [M, K/32] (a staged format); "
                  "TransformerEngine's MXFP8Tensor keeps rowwise scale_inv padded to [roundup(M, 128), "
                  "roundup(K/32, 4)] (transformer_engine/pytorch/tensor/mxfp8_tensor.py, MXFP8Quantizer."
                  "get_scale_shape): copy the rows into it with that pitch; TE swizzles them for the GEMM itself");
  if (plan.options.gen_layout != GenLayout::Vllm) return out;
  bool kv_b = false, w13 = false, misc = false;
  for (const ParamPlan& p : plan.params) {
    if (p.path == Path::Misc) misc = true;
    if (p.path != Path::Bulk) continue;
    kv_b = kv_b || names::ends_with(p.name, "kv_b_proj.weight");
    w13 = w13 || names::ends_with(p.dst_storage, "w13_weight");
  }
  if (kv_b)
    out.push_back("MLA: decode uses W_UK_T / W_UV derived from kv_b_proj at load (vllm/model_executor/layers/attention/"
                  "mla_attention.py MLAAttention.process_weights_after_loading); writing kv_b_proj does not update "
                  "them: run process_weights_after_loading after the refit");
  if (w13)
    out.push_back("MoE: the plan writes w13_weight as the loader lays it out, [w1; w3]; FlashInfer CUTLASS BF16 MoE "
                  "swaps it to [w3; w1] after loading and ROCm AITER shuffles w13 / w2 (fused_moe/oracle/"
                  "unquantized.py convert_to_unquantized_kernel_format): with those backends, write before the "
                  "conversion or run it again after the refit");
  if (misc)
    out.push_back("misc tensors arrive whole under their HF names: pass them through vLLM's load_weights, which "
                  "renames, fuses, pads and transforms them (e.g. Mamba2 A = -exp(A_log))");
  return out;
}

}  // namespace reshard
