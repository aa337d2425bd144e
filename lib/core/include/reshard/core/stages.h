// Decoder layer -> pipeline stage, on each side.
#pragma once
#include <string>
#include <vector>

#include "reshard/core/error.h"

namespace reshard {

// Megatron-Core's pipeline split inputs (train side; TransformerConfig fields).
struct MegatronPipeline {
  int pp = 1;
  int vpp = 1;    // virtual_pipeline_model_parallel_size (1: none)
  int first = 0;  // num_layers_in_first_pipeline_stage (0: not set)
  int last = 0;   // num_layers_in_last_pipeline_stage (0: not set)
  bool account_for_embedding = false;  // account_for_embedding_in_pipeline_split
  bool account_for_loss = false;       // account_for_loss_in_pipeline_split
  std::string layout;                  // pipeline_model_parallel_layout ("Et|(tt|)*3,m|L"); empty: none
  int mtp_layers = 0;                  // mtp_num_layers
};

// Which pp rank holds what.
struct TrainStages {
  std::vector<int> layer;  // decoder layer -> pp rank
  int embedding = 0;       // word embeddings and pre-process modules (vision towers): pre_process
  int output = 0;          // output_layer: post_process
  int final_norm = 0;      // decoder.final_layernorm
  int mtp = 0;             // the MTP layers
};

// Megatron's split (megatron/core/transformer/transformer_block.py get_num_layers_to_build,
// transformer_layer.py get_transformer_layer_offset, pipeline_parallel_layer_layout.py): chunk
// k = v * pp + r (virtual stage v of pp rank r) takes the next count(r, v) decoder layers. Every
// configuration Megatron refuses is a problem naming its rule and the numbers.
TrainStages megatron_train_stages(int layers, const MegatronPipeline& pipeline, Problems& problems);

// vLLM's get_pp_indices split: layers/pp each, the remainder going one each to the stages just
// before the last.
std::vector<int> vllm_layer_stages(int layers, int pp);

}  // namespace reshard
