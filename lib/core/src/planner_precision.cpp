#include "planner_precision.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "reshard/core/dst_layout.h"
#include "reshard/core/mxfp8.h"

namespace reshard {
namespace {

constexpr std::string_view kScaleSuffix = "_scale_inv";

bool is_scale_name(const std::string &n) {
  return n.size() > kScaleSuffix.size() &&
         n.compare(n.size() - kScaleSuffix.size(), kScaleSuffix.size(),
                   kScaleSuffix) == 0;
}

const char *train_name(bool fp8) { return fp8 ? "block-fp8" : "bf16"; }

// Rules whose params stay BF16 under MXFP8: vLLM keeps embeddings, norms and
// routers unquantized.
bool quantizable(const ParamPlan &p) {
  return p.path == Path::Bulk && p.dtype == DType::BF16 && p.shape.n >= 2 &&
         p.rule != "vocab" && p.rule != "norm" && p.rule != "router";
}

// Shard boundaries of `layout` along `dim` strictly inside the tensor, sorted.
std::set<int64_t> inner_boundaries(const Layout &layout, const Dims &shape,
                                   int dim) {
  std::set<int64_t> out;
  for (int f = 0; f < layout.mesh.size(); ++f) {
    for (const LocalPiece &q : layout.local_pieces(shape, f))
      for (int64_t x : {q.box.offset[dim], q.box.offset[dim] + q.box.extent[dim]})
        if (x > 0 && x < shape[dim])
          out.insert(x);
  }
  return out;
}

std::string list(const std::vector<int64_t> &xs) {
  std::string s;
  for (size_t i = 0; i < xs.size() && i < 8; ++i)
    s += (i ? ", " : "") + std::to_string(xs[i]);
  if (xs.size() > 8)
    s += ", ... (" + std::to_string(xs.size()) + " in all)";
  return s;
}

} // namespace

std::vector<int> scale_owners(const std::vector<LogicalParam> &params) {
  std::unordered_map<std::string, int> index;
  for (size_t i = 0; i < params.size(); ++i)
    index.emplace(params[i].name, static_cast<int>(i));
  std::vector<int> owner(params.size(), -1);
  for (size_t i = 0; i < params.size(); ++i) {
    const std::string &n = params[i].name;
    if (!is_scale_name(n))
      continue;
    auto it = index.find(n.substr(0, n.size() - kScaleSuffix.size()));
    if (it != index.end() && params[it->second].dtype == DType::F8_E4M3)
      owner[i] = it->second;
  }
  return owner;
}

GenPrecision check_precision_pair(const std::vector<LogicalParam> &params,
                                  const PlanOptions &options,
                                  Problems &problems) {
  std::unordered_map<std::string, const LogicalParam *> by_name;
  for (const LogicalParam &p : params)
    by_name.emplace(p.name, &p);
  bool train_fp8 = false;
  for (const LogicalParam &p : params) {
    if (p.dtype == DType::F8_E5M2)
      problems.add(p.name + ": float8_e5m2 weights are not a supported "
                            "training precision (bf16 or block-fp8 e4m3)");
    if (p.dtype != DType::F8_E4M3)
      continue;
    train_fp8 = true;
    const std::string sname = p.name + std::string(kScaleSuffix);
    auto it = by_name.find(sname);
    if (p.shape.n < 2) {
      problems.add(p.name + ": float8_e4m3fn tensor of shape " + p.shape.str() +
                   " is not a block-FP8 weight (needs >= 2 dims)");
      continue;
    }
    Dims want = p.shape;
    for (int d = p.shape.n - 2; d < p.shape.n; ++d)
      want[d] = (p.shape[d] + kFp8BlockEdge - 1) / kFp8BlockEdge;
    if (it == by_name.end()) {
      problems.add(p.name + ": float8_e4m3fn weight has no float32 " + sname +
                   " sibling of shape " + want.str() +
                   " (block-FP8: one scale per 128x128 block)");
      continue;
    }
    const LogicalParam &s = *it->second;
    if (s.dtype != DType::F32 || s.shape != want)
      problems.add(sname + ": block-FP8 scale is " +
                   std::string(dtype_name(s.dtype)) + " " + s.shape.str() +
                   ", expected float32 " + want.str() + " for weight " +
                   p.shape.str());
  }
  // The weights' floating dtype when not BF16 (float16 or float32 models):
  // reshard moves bytes as trained and casts nothing, so only `auto` lands them.
  const char *wide = nullptr;
  int64_t bf16_weights = 0;
  for (const LogicalParam &p : params) {
    if (p.shape.n < 2)
      continue;
    if (p.dtype == DType::BF16)
      ++bf16_weights;
    if (p.dtype == DType::F16)
      wide = "float16";
    else if (p.dtype == DType::F32 && !wide)
      wide = "float32";
  }
  if (wide && std::string_view(wide) == "float32" && bf16_weights > 0)
    wide = nullptr;  // a BF16 model with float32 extras (routers, biases)
  if (wide && !train_fp8 && options.gen_precision != GenPrecision::Auto) {
    if (options.gen_precision == GenPrecision::Mxfp8)
      // NeMo RL refuses it too: nemo_rl/weight_sync/nccl_reshard_utils.py
      // check_nccl_reshard_refit_support ("... requires policy.precision='bfloat16'
      // for receiver-side MXFP8 quantization").
      problems.add(std::string("--gen-precision mxfp8 on a ") + wide +
                   " model: receiver-side MXFP8 quantization requires bfloat16 "
                   "weights (NeMo RL: \"requires policy.precision='bfloat16'\", "
                   "nccl_reshard_utils.py check_nccl_reshard_refit_support)");
    else
      problems.add(std::string("--gen-precision ") +
                   to_string(options.gen_precision) + " on a " + wide +
                   " model: reshard moves the weights as trained and casts "
                   "nothing (supported: auto, which lands " + wide + ")");
    return GenPrecision::Auto;
  }
  // A Megatron destination takes logical BF16 (block-FP8 dequantized on the
  // source), then BF16 or MXFP8 storage.
  const bool megatron = options.gen_layout == GenLayout::Megatron;
  GenPrecision gen = options.gen_precision;
  if (gen == GenPrecision::Auto)
    gen = train_fp8 && !megatron ? GenPrecision::Fp8 : GenPrecision::Bf16;
  const bool bf16_or_mx = gen == GenPrecision::Bf16 || gen == GenPrecision::Mxfp8;
  const bool ok = megatron ? bf16_or_mx
                           : (!train_fp8 && bf16_or_mx) ||
                                 (train_fp8 && gen == GenPrecision::Fp8);
  if (!ok && megatron)
    problems.add(std::string("precision pair ") + train_name(train_fp8) +
                 " train -> " + to_string(gen) +
                 " gen is not supported with --gen-layout megatron (it receives "
                 "logical BF16: bf16 or mxfp8)");
  else if (!ok)
    problems.add(std::string("precision pair ") + train_name(train_fp8) +
                 " train -> " + to_string(gen) +
                 " gen is not supported (supported: bf16 -> bf16, block-fp8 -> "
                 "fp8, bf16 -> mxfp8; block-fp8 -> bf16/mxfp8 with "
                 "--gen-layout megatron)");
  if (megatron && options.scales == ScalesPath::Bulk)
    problems.add("--scales bulk: a Megatron destination receives logical BF16, "
                 "so no scales travel (use the default --scales misc)");
  if (options.scales == ScalesPath::Bulk && !train_fp8)
    problems.add("--scales bulk: the model has no block-FP8 weights (no "
                 "float8_e4m3fn tensors), so no scales to reshard");
  return gen;
}

// Block-FP8 bytes are a slice of the checkpoint's only where every shard starts on a 128-block:
// - train: TransformerEngine quantizes each rank's own shard on its own 128 x 128 grid from the
//   shard's origin (transformer_engine/pytorch/tensor/float8_blockwise_tensor.py,
//   Float8BlockQuantizer; scale_inv ceil(M/128) x roundup(ceil(K/128), 4) per rank);
// - gen fp8: vLLM refuses partitions that are not whole blocks
//   (vllm/model_executor/layers/quantization/utils/fp8_utils.py validate_fp8_block_shape).
// Elsewhere a rank's e4m3 bytes and scales decode differently from the checkpoint's slice.
static void check_block_grids(const ParamPlan &p, bool gen_fp8,
                       GroupedProblems &refused) {
  if (p.dtype != DType::F8_E4M3 && !p.src_dequant)
    return;
  const auto check = [&](const Layout &layout, const std::string &why) {
    for (int d = std::max(0, p.shape.n - 2); d < p.shape.n; ++d) {
      std::vector<int64_t> bad;
      for (int64_t b : inner_boundaries(layout, p.shape, d))
        if (b % kFp8BlockEdge != 0)
          bad.push_back(b);
      if (!bad.empty())
        refused.add(why + " shard boundaries along dim " + std::to_string(d) +
                        " (size " + std::to_string(p.shape[d]) + ") at " +
                        list(bad) + " are not multiples of 128",
                    p.name);
    }
  };
  check(p.src, "block-FP8: TransformerEngine quantizes each train rank's "
               "shard on its own 128x128 grid (Float8BlockQuantizer), so "
               "its e4m3 bytes and scales are a slice of the checkpoint's "
               "only on 128-block boundaries; train (src)");
  if (gen_fp8)
    check(p.dst, "block-FP8: vLLM refuses fp8 partitions that are not "
                 "whole 128-blocks (fp8_utils.py validate_fp8_block_shape); "
                 "gen (dst)");
}

void apply_precision(Plan &plan, GenPrecision gen,
                     const std::vector<int> &owners, Problems &problems) {
  GroupedProblems refused;
  for (const ParamPlan &p : plan.params)
    if (p.path == Path::Bulk)
      check_block_grids(p, gen == GenPrecision::Fp8, refused);
  refused.flush(problems);
  for (size_t i = 0; i < plan.params.size(); ++i) {
    ParamPlan &p = plan.params[i];
    if (p.path != Path::Bulk)
      continue;
    const int w = i < owners.size() ? owners[i] : -1;
    if (w >= 0) {
      // A scale tensor's layout is its weight's in block units: every weight
      // shard boundary on the two blocked (last) dims must be a multiple of
      // 128.
      const ParamPlan &weight = plan.params[w];
      for (const auto &[side, layout] :
           {std::pair<const char *, const Layout *>{"train (src)", &weight.src},
            std::pair<const char *, const Layout *>{"gen (dst)",
                                                    &weight.dst}}) {
        for (int d = weight.shape.n - 2; d < weight.shape.n; ++d) {
          std::vector<int64_t> bad;
          for (int64_t b : inner_boundaries(*layout, weight.shape, d))
            if (b % kFp8BlockEdge != 0)
              bad.push_back(b);
          if (!bad.empty())
            problems.add("--scales bulk: " + weight.name + ": " + side +
                         " shard boundaries along dim " + std::to_string(d) +
                         " (size " + std::to_string(weight.shape[d]) +
                         ") not on a 128-block boundary: " + list(bad));
        }
      }
    }
    if (gen != GenPrecision::Mxfp8 || !quantizable(p))
      continue;
    p.mxfp8 = true;
    const int k = p.shape.n - 1;
    if (p.shape[k] % kMxBlock != 0) {
      problems.add("--gen-precision mxfp8: " + p.name + ": K (last dim) " +
                   std::to_string(p.shape[k]) + " is not divisible by 32");
      continue;
    }
    std::set<int64_t> bad;
    for (int f = 0; f < p.dst.mesh.size(); ++f) {
      const int64_t extent = p.dst.local_shape(p.shape, f)[k];
      if (extent % kMxBlock != 0)
        bad.insert(extent);
    }
    if (!bad.empty())
      problems.add("--gen-precision mxfp8: " + p.name +
                   ": gen shards have K (last dim) extents " +
                   list({bad.begin(), bad.end()}) + " of " +
                   std::to_string(p.shape[k]) + ", not divisible by 32");
  }
}

bool drop_source_scales(std::vector<LogicalParam> &params) {
  const std::vector<int> owner = scale_owners(params);
  bool fp8 = false;
  for (const LogicalParam &p : params)
    fp8 = fp8 || p.dtype == DType::F8_E4M3;
  std::vector<LogicalParam> kept;
  kept.reserve(params.size());
  for (size_t i = 0; i < params.size(); ++i)
    if (owner[i] < 0)
      kept.push_back(std::move(params[i]));
  params = std::move(kept);
  return fp8;
}

void name_scale_storages(Plan &plan) {
  for (ParamPlan &p : plan.params)
    if (p.mxfp8)
      p.scale_storage = p.dst_storage + "_scale";
}

} // namespace reshard
