// Model metadata: the HF parameter names, global shapes and dtypes of a checkpoint, in file order.
// Readers never touch tensor data (safetensors: the 8-byte length + JSON header only).
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reshard/core/box.h"
#include "reshard/core/dtype.h"

namespace reshard {

struct TensorMeta {
  std::string name;
  Dims shape;
  DType dtype = DType::BF16;
  // > 0: the file gives this many dims, more than a plan holds (kMaxDims); `shape` is then empty and
  // the planner refuses the tensor unless --exclude drops it.
  int too_many_dims = 0;
  int64_t bytes() const { return shape.product() * dtype_size(dtype); }
};

struct ModelMeta {
  std::string name;    // "model" field when present, else the file's stem
  std::string origin;  // path it was read from
  std::vector<std::string> shard_files;  // a safetensors index's shards, read beside it (outputs never replace them)
  std::vector<TensorMeta> tensors;  // file order (load-bearing: misc buckets follow it)
};

// Dispatches on the file: *.safetensors, *.safetensors.index.json, otherwise metadata JSON
// ({"<name>": {"shape", "dtype"}} or {"params": {...}}). Every problem found (unknown dtype,
// bad shape, ...) is reported in one Error(Config) naming the file and the tensor.
ModelMeta load_model(const std::string& path);
ModelMeta parse_model_json(std::string_view text, const std::string& origin);
ModelMeta read_safetensors(const std::string& path);
// The same from memory: `bytes` is the start of a safetensors file of `file_size` bytes (at least the
// 8-byte length and the header; tensor data is not needed).
ModelMeta parse_safetensors_header(std::string_view bytes, uint64_t file_size, const std::string& origin);
// Reads the index's weight_map and every shard file's header (shards beside the index).
ModelMeta read_safetensors_index(const std::string& path);

}  // namespace reshard
