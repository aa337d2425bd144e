// Helpers shared by the unit tests: systems, model files, and a small MoE model built in code.
#pragma once
#include <cstdint>
#include <string>

#include "reshard/core/model.h"
#include "reshard/core/parallelism.h"
#include "reshard/core/planner.h"
#include "reshard/core/simulate.h"

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
inline std::string test_model(const std::string& file) {
  return std::string(RESHARD_TEST_MODELS_DIR) + "/" + file;
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

// small_mlp(n) from DP over `train_gpus` to TP `gen_tp` over `gen_gpus`.
inline Plan small_mlp_plan(int n, const std::string& name, int train_gpus, int gen_gpus, int gen_tp) {
  return plan_reshard(small_mlp(n, name), system_of(train_gpus, 1, 1, 1, gen_gpus, gen_tp), PlanOptions{});
}

// The simulator's view of one device shared by every rank, with box ops (cuda-ipc) and one batch:
// every cost zero and every rate `gbps`, so a test sets only what it measures.
// One misc tensor of 16 KiB (the message cap's floor is 4 KiB) over 1 train + `gen` gen ranks: one bucket.
inline Plan bucket_over(int gen, const std::string& name) {
  ModelMeta model;
  model.name = name;
  model.tensors.push_back({"model.norm.weight", Dims{8192}, DType::BF16});
  return plan_reshard(model, system_of(1, 1, 1, 1, gen, 1), PlanOptions{});
}

// u: the bucket's bytes through one unit_links link, in seconds.
inline double bucket_seconds(const Plan& p) { return static_cast<double>(p.buckets.at(0).bytes) / 1e9; }

// Links at 1 GB/s full duplex, no copies, latency or per-op costs; MPI broadcasts linear up to 4
// members, binomial from `binomial_min`.
inline SystemModel unit_links(const std::string& name, int64_t binomial_min) {
  SystemModel m;
  m.name = name;
  m.gpus_per_node = 1 << 20;
  m.nvlink_gbps = m.nic_gbps = 1;
  m.nvlink_latency_us = m.nic_latency_us = m.launch_us = m.per_op_us = 0;
  m.linear_broadcast_max = 4;
  m.binomial_broadcast_min = binomial_min;
  return m;
}

inline SystemModel one_shared_gpu(const std::string& name, double gbps) {
  SystemModel m;
  m.name = name;
  m.gpus_per_node = 1 << 20;
  m.nvlink_gbps = m.nic_gbps = m.copy_gbps = m.shared_copy_gbps = gbps;
  m.nvlink_latency_us = m.nic_latency_us = m.launch_us = m.per_op_us = 0;
  m.box_ops = true;
  m.linear_broadcast_max = 1 << 20;
  m.batch.batch_ops = 1 << 20;
  return m;
}

// one_shared_gpu time-sliced between processes (serial_issue, no MPS): every cost zero but the context
// switch (switch_us) and the time slice (slice_us, 0: a switch per pass).
inline SystemModel time_sliced_gpu(const std::string& name, double switch_us, double slice_us = 0,
                                   double gbps = 1e9) {
  SystemModel m = one_shared_gpu(name, gbps);
  m.serial_issue = true;
  m.switch_us = switch_us;
  m.slice_us = slice_us;
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
