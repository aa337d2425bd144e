#!/usr/bin/env python3
"""Writes the small synthetic models of tests/data/vllm-*.json: one per model family of the vLLM
layout tests (tests/unit/test_vllm_layout.cpp). Names and shape relations follow the HF modeling
code of each family (transformers models/<family>/modeling_<family>.py); sizes are small and chosen
so that vLLM accepts gen tp 1, 2 and 4 (and refuses what the tests say it refuses).
Run: python3 scripts/tiny_models.py  (rewrites the files; they are committed)."""
import json
import os

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "data")


def write(name, model, params):
    with open(os.path.join(OUT, name), "w") as f:
        json.dump({"model": model, "source": "synthetic (scripts/tiny_models.py)", "params": params}, f, indent=1)
        f.write("\n")


def t(shape, dtype="bfloat16"):
    return {"shape": list(shape), "dtype": dtype}


def attention(p, pre, hidden, heads, kv, hd, bias=False, qk_norm=False):
    for proj, rows in (("q_proj", heads * hd), ("k_proj", kv * hd), ("v_proj", kv * hd)):
        p[f"{pre}self_attn.{proj}.weight"] = t((rows, hidden))
        if bias:
            p[f"{pre}self_attn.{proj}.bias"] = t((rows,))
    p[f"{pre}self_attn.o_proj.weight"] = t((hidden, heads * hd))
    if qk_norm:
        p[f"{pre}self_attn.q_norm.weight"] = t((hd,))
        p[f"{pre}self_attn.k_norm.weight"] = t((hd,))


def mlp(p, pre, hidden, inter):
    p[f"{pre}gate_proj.weight"] = t((inter, hidden))
    p[f"{pre}up_proj.weight"] = t((inter, hidden))
    p[f"{pre}down_proj.weight"] = t((hidden, inter))


# Qwen2 (modeling_qwen2.py): q/k/v with biases, o_proj without; vocab 1000 (vLLM pads to 1024);
# 4 heads of 16, 2 KV heads (gen tp 4: each KV head on 2 ranks).
def qwen2():
    p, H, V = {}, 64, 1000
    p["model.embed_tokens.weight"] = t((V, H))
    for l in range(2):
        pre = f"model.layers.{l}."
        p[pre + "input_layernorm.weight"] = t((H,))
        attention(p, pre, H, 4, 2, 16, bias=True)
        p[pre + "post_attention_layernorm.weight"] = t((H,))
        mlp(p, pre + "mlp.", H, 128)
    p["model.norm.weight"] = t((H,))
    p["lm_head.weight"] = t((V, H))
    write("vllm-qwen2.json", "synthetic Qwen2 (biases)", p)


# Qwen3-MoE (modeling_qwen3_moe.py): q_norm/k_norm give the head dim; 6 experts (vLLM linear EP over 4:
# 2, 2, 1, 1); router mlp.gate.
def qwen3_moe():
    p, H, V, E = {}, 64, 999, 6
    p["model.embed_tokens.weight"] = t((V, H))
    for l in range(2):
        pre = f"model.layers.{l}."
        p[pre + "input_layernorm.weight"] = t((H,))
        attention(p, pre, H, 4, 2, 16, qk_norm=True)
        p[pre + "post_attention_layernorm.weight"] = t((H,))
        p[pre + "mlp.gate.weight"] = t((E, H))
        for e in range(E):
            mlp(p, f"{pre}mlp.experts.{e}.", H, 32)
    p["model.norm.weight"] = t((H,))
    p["lm_head.weight"] = t((V, H))
    write("vllm-qwen3-moe.json", "synthetic Qwen3-MoE", p)


# Mixtral (modeling_mixtral.py): block_sparse_moe.gate router, experts.N.w1 (gate) / w3 (up) / w2 (down).
def mixtral():
    p, H, V, E = {}, 64, 1024, 4
    p["model.embed_tokens.weight"] = t((V, H))
    for l in range(2):
        pre = f"model.layers.{l}."
        p[pre + "input_layernorm.weight"] = t((H,))
        attention(p, pre, H, 4, 2, 16)
        p[pre + "post_attention_layernorm.weight"] = t((H,))
        p[pre + "block_sparse_moe.gate.weight"] = t((E, H))
        for e in range(E):
            q = f"{pre}block_sparse_moe.experts.{e}."
            p[q + "w1.weight"] = t((48, H))
            p[q + "w3.weight"] = t((48, H))
            p[q + "w2.weight"] = t((H, 48))
    p["model.norm.weight"] = t((H,))
    p["lm_head.weight"] = t((V, H))
    write("vllm-mixtral.json", "synthetic Mixtral", p)


# DeepSeek-V3 MLA (modeling_deepseek_v3.py): 4 heads, q_lora_rank 32, kv_lora_rank 32, nope 16, rope 8,
# v_head_dim 16; layer 0 dense, layer 1 MoE (8 routed experts, shared_experts, grouped-topk bias).
def deepseek():
    p, H, V, heads, ql, kl, nope, rope, vd = {}, 64, 1000, 4, 32, 32, 16, 8, 16
    p["model.embed_tokens.weight"] = t((V, H))
    for l in range(2):
        pre = f"model.layers.{l}."
        a = pre + "self_attn."
        p[pre + "input_layernorm.weight"] = t((H,))
        p[a + "q_a_proj.weight"] = t((ql, H))
        p[a + "q_a_layernorm.weight"] = t((ql,))
        p[a + "q_b_proj.weight"] = t((heads * (nope + rope), ql))
        p[a + "kv_a_proj_with_mqa.weight"] = t((kl + rope, H))
        p[a + "kv_a_layernorm.weight"] = t((kl,))
        p[a + "kv_b_proj.weight"] = t((heads * (nope + vd), kl))
        p[a + "o_proj.weight"] = t((H, heads * vd))
        p[pre + "post_attention_layernorm.weight"] = t((H,))
        if l == 0:
            mlp(p, pre + "mlp.", H, 128)
        else:
            p[pre + "mlp.gate.weight"] = t((8, H))
            p[pre + "mlp.gate.e_score_correction_bias"] = t((8,), "float32")
            for e in range(8):
                mlp(p, f"{pre}mlp.experts.{e}.", H, 32)
            mlp(p, pre + "mlp.shared_experts.", H, 32)
    p["model.norm.weight"] = t((H,))
    p["lm_head.weight"] = t((V, H))
    write("vllm-deepseek-mla.json", "synthetic DeepSeek-V3 (MLA)", p)


# Qwen3.5 / Qwen3-VL (modeling_qwen3_vl.py): the language model under model.language_model., the vision
# tower under model.visual. with a 5-D Conv3d patch_embed ([out, in, t, h, w]).
def qwen35_vl():
    p, H, V = {}, 64, 1000
    p["model.visual.patch_embed.proj.weight"] = t((32, 3, 2, 4, 4))
    p["model.visual.patch_embed.proj.bias"] = t((32,))
    p["model.visual.blocks.0.attn.qkv.weight"] = t((96, 32))
    p["model.visual.blocks.0.attn.proj.weight"] = t((32, 32))
    p["model.visual.merger.linear_fc1.weight"] = t((128, 128))
    p["model.visual.merger.linear_fc2.weight"] = t((H, 128))
    p["model.language_model.embed_tokens.weight"] = t((V, H))
    for l in range(2):
        pre = f"model.language_model.layers.{l}."
        p[pre + "input_layernorm.weight"] = t((H,))
        attention(p, pre, H, 4, 2, 16, qk_norm=True)
        p[pre + "post_attention_layernorm.weight"] = t((H,))
        mlp(p, pre + "mlp.", H, 128)
    p["model.language_model.norm.weight"] = t((H,))
    p["lm_head.weight"] = t((V, H))
    write("vllm-qwen3-vl.json", "synthetic Qwen3-VL / Qwen3.5 (vision tower)", p)


# NemotronH (modeling_nemotron_h.py): layer 0 a Mamba2 mixer (8 heads of 8, d_inner 64, n_groups x
# d_state = 32; in_proj [z | x | B | C | dt] = 64 + 64 + 32 + 32 + 8 rows, conv1d [x | B | C]), layer 1
# attention under "mixer." (4 heads of 16, 2 KV heads), layer 2 an ungated (ReLU^2) MoE with shared
# experts; "backbone." names.
def nemotron_h():
    p, H, V = {}, 64, 1000
    p["backbone.embeddings.weight"] = t((V, H))
    m = "backbone.layers.0.mixer."
    p["backbone.layers.0.norm.weight"] = t((H,))
    p[m + "in_proj.weight"] = t((2 * 64 + 2 * 32 + 8, H))
    p[m + "conv1d.weight"] = t((64 + 2 * 32, 1, 4))
    p[m + "conv1d.bias"] = t((64 + 2 * 32,))
    for n in ("A_log", "D", "dt_bias"):
        p[m + n] = t((8,))
    p[m + "norm.weight"] = t((64,))
    p[m + "out_proj.weight"] = t((H, 64))
    p["backbone.layers.1.norm.weight"] = t((H,))
    attention(p, "backbone.layers.1.", H, 4, 2, 16)
    for k in list(p):
        if k.startswith("backbone.layers.1.self_attn."):
            p[k.replace("self_attn.", "mixer.")] = p.pop(k)
    x = "backbone.layers.2.mixer."
    p["backbone.layers.2.norm.weight"] = t((H,))
    p[x + "gate.weight"] = t((4, H))
    p[x + "gate.e_score_correction_bias"] = t((4,), "float32")
    for e in range(4):
        p[f"{x}experts.{e}.up_proj.weight"] = t((32, H))
        p[f"{x}experts.{e}.down_proj.weight"] = t((H, 32))
    p[x + "shared_experts.up_proj.weight"] = t((48, H))
    p[x + "shared_experts.down_proj.weight"] = t((H, 48))
    p["backbone.norm_f.weight"] = t((H,))
    p["lm_head.weight"] = t((V, H))
    write("vllm-nemotron-h.json", "synthetic NemotronH (Mamba2, attention, ungated MoE)", p)


# Gated delta net layer (modeling_qwen3_next.py / modeling_qwen3_5.py): 4 key heads and 8 value heads of
# 8, so key_dim 32, value_dim 64; conv kernel 4.
def gdn(p, pre, H, qwen35):
    a = pre + "linear_attn."
    if qwen35:  # separate in_proj_qkv ([q | k | v]), in_proj_z, in_proj_b, in_proj_a
        p[a + "in_proj_qkv.weight"] = t((2 * 32 + 64, H))
        p[a + "in_proj_z.weight"] = t((64, H))
        p[a + "in_proj_b.weight"] = t((8, H))
        p[a + "in_proj_a.weight"] = t((8, H))
    else:  # grouped per key head: [q 8 | k 8 | v 16 | z 16] x 4, [b 2 | a 2] x 4
        p[a + "in_proj_qkvz.weight"] = t((4 * 48, H))
        p[a + "in_proj_ba.weight"] = t((16, H))
    p[a + "conv1d.weight"] = t((2 * 32 + 64, 1, 4))
    p[a + "A_log"] = t((8,), "float32")
    p[a + "dt_bias"] = t((8,))
    p[a + "norm.weight"] = t((8,))
    p[a + "out_proj.weight"] = t((H, 64))


# Qwen3-Next: layer 0 gated delta net, layer 1 gated attention (q_proj holds query and gate: 2 x 4 heads
# of 16), MoE with a shared expert and its gate.
def qwen3_next():
    p, H, V = {}, 64, 1000
    p["model.embed_tokens.weight"] = t((V, H))
    for l in range(2):
        pre = f"model.layers.{l}."
        p[pre + "input_layernorm.weight"] = t((H,))
        if l == 0:
            gdn(p, pre, H, False)
        else:
            attention(p, pre, H, 8, 2, 16, qk_norm=True)
            p[pre + "self_attn.o_proj.weight"] = t((H, 4 * 16))
        p[pre + "post_attention_layernorm.weight"] = t((H,))
        p[pre + "mlp.gate.weight"] = t((4, H))
        for e in range(4):
            mlp(p, f"{pre}mlp.experts.{e}.", H, 32)
        mlp(p, pre + "mlp.shared_expert.", H, 48)
        p[pre + "mlp.shared_expert_gate.weight"] = t((1, H))
    p["model.norm.weight"] = t((H,))
    p["lm_head.weight"] = t((V, H))
    write("vllm-qwen3-next.json", "synthetic Qwen3-Next (gated delta net)", p)


# Qwen3.5 (VL names): layer 0 gated delta net with separate in_proj_qkv / z / b / a, layer 1 attention.
def qwen35():
    p, H, V = {}, 64, 1000
    p["model.visual.patch_embed.proj.weight"] = t((32, 3, 2, 4, 4))
    p["model.language_model.embed_tokens.weight"] = t((V, H))
    for l in range(2):
        pre = f"model.language_model.layers.{l}."
        p[pre + "input_layernorm.weight"] = t((H,))
        if l == 0:
            gdn(p, pre, H, True)
        else:
            attention(p, pre, H, 4, 2, 16, qk_norm=True)
        p[pre + "post_attention_layernorm.weight"] = t((H,))
        mlp(p, pre + "mlp.", H, 128)
    p["model.language_model.norm.weight"] = t((H,))
    p["lm_head.weight"] = t((V, H))
    write("vllm-qwen3.5.json", "synthetic Qwen3.5 (gated delta net, VL names)", p)


if __name__ == "__main__":
    qwen3_next()
    qwen35()
    nemotron_h()
    qwen2()
    qwen3_moe()
    mixtral()
    deepseek()
    qwen35_vl()
