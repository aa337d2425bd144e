// Helpers shared by the unit tests: systems, model files, and a small MoE model built in code.
#pragma once
#include <cstdint>
#include <string>

#include "reshard/core/model.h"
#include "reshard/core/parallelism.h"

namespace reshard::test {

inline SystemConfig sys(int train_gpus, Parallelism train, int gen_gpus, Parallelism gen) {
  train.num_gpus = train_gpus;
  gen.num_gpus = gen_gpus;
  return SystemConfig{train, gen};
}

// Train: pp, tp, ep over train_gpus (dp the rest); gen: tp over gen_gpus.
inline SystemConfig system_of(int train_gpus, int train_pp, int train_tp, int train_ep, int gen_gpus, int gen_tp) {
  SystemConfig s;
  s.train.num_gpus = train_gpus;
  s.train.pp = train_pp;
  s.train.tp = train_tp;
  s.train.ep = train_ep;
  s.gen.num_gpus = gen_gpus;
  s.gen.tp = gen_tp;
  return s;
}

inline std::string test_data(const std::string& file) {
  return std::string(RESHARD_SOURCE_DIR) + "/tests/data/" + file;
}
inline std::string shared_model(const std::string& file) {
  return std::string(RESHARD_SHARED_MODELS) + "/" + file;
}

// `n` MLP weights of 16 x 32 BF16 (1 KiB each), one norm (misc).
inline ModelMeta small_mlp(int n, const std::string& name) {
  ModelMeta m;
  m.name = name;
  for (int l = 0; l < n; ++l)
    m.tensors.push_back({"model.layers." + std::to_string(l) + ".mlp.down_proj.weight", Dims{16, 32}, DType::BF16});
  m.tensors.push_back({"model.norm.weight", Dims{32}, DType::BF16});
  return m;
}

// Embeddings, per layer attention + norm + `experts` experts of [inter, 16] / [16, inter], a float32
// final norm.
inline ModelMeta small_moe(int layers, int experts, int64_t inter = 12, const std::string& name = "tiny-moe") {
  ModelMeta m;
  m.name = name;
  m.tensors.push_back({"model.embed_tokens.weight", Dims{64, 16}, DType::BF16});
  for (int l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    m.tensors.push_back({p + "self_attn.q_proj.weight", Dims{16, 16}, DType::BF16});
    m.tensors.push_back({p + "input_layernorm.weight", Dims{16}, DType::BF16});
    for (int e = 0; e < experts; ++e) {
      const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
      m.tensors.push_back({x + "gate_proj.weight", Dims{inter, 16}, DType::BF16});
      m.tensors.push_back({x + "up_proj.weight", Dims{inter, 16}, DType::BF16});
      m.tensors.push_back({x + "down_proj.weight", Dims{16, inter}, DType::BF16});
    }
  }
  m.tensors.push_back({"model.norm.weight", Dims{16}, DType::F32});
  return m;
}

}  // namespace reshard::test
