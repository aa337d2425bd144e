// reshard plan: model metadata + parallelism + options -> a plan file and/or its summary.
// Every input is read and checked before planning; all problems are reported together (exit 2) and
// no output file is written on any error.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "commands.h"
#include "reshard/core/error.h"
#include "reshard/core/input_file.h"
#include "reshard/core/layer_map.h"
#include "reshard/core/model.h"
#include "reshard/core/plan_enums.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/planner.h"
#include "reshard/core/rules.h"
#include "reshard/core/stats.h"
#include "reshard/core/summary.h"
#include "reshard/core/output_file.h"
#include "reshard/core/units.h"
#include "reshard/core/user_regex.h"

namespace reshard::cli {
namespace {

struct PlanArgs {
  std::string model, system, output, format, layer_map, rules, mtp_layers;
  std::string train_gpus, gen_gpus, train, gen;
  std::string first_stage_layers, last_stage_layers, head_dim, ssm_groups, linear_key_heads, train_vocab_pad,
      gen_vocab_pad, pipeline_layout, gpus_per_node, train_order = "tp-cp-ep-dp-pp";
  bool account_for_embedding = false, account_for_loss = false;
  std::string bulk = "ffn", gen_layout = "hf", fanout = "auto", bucket_bytes = "1Gi";
  std::string gen_precision = "auto", scales = "misc", gen_expert_placement = "linear";
  std::vector<std::string> exclude;
  bool force = false, summary = false;
};

// Adds an Error's problems to `problems`: a "header\n  - a\n  - b" message becomes "header: a",
// "header: b", so that the combined list stays flat.
void absorb(Problems& problems, const Error& e, const std::string& generic_header = "") {
  const std::string msg = e.what();
  const std::string sep = "\n  - ";
  size_t pos = msg.find(sep);
  if (pos == std::string::npos) {
    problems.add(msg);
    return;
  }
  std::string header = msg.substr(0, pos);
  if (!header.empty() && header.back() == ':') header.pop_back();
  const std::string prefix = header == generic_header ? "" : header + ": ";
  while (pos != std::string::npos) {
    const size_t start = pos + sep.size();
    pos = msg.find(sep, start);
    problems.add(prefix + msg.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
  }
}

std::optional<std::string> read_text(const std::string& path, const std::string& flag, Problems& problems) {
  try {
    return read_input_file(path, flag);
  } catch (const Error& e) {
    problems.add(e.what());
    return std::nullopt;
  }
}

// Runs `f`, turning a config Error into problems (prefixed with `flag` when its message lacks it).
template <class F>
void check(Problems& problems, F&& f, const std::string& flag = "") {
  try {
    f();
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Config) throw;
    if (flag.empty() || std::string(e.what()).rfind(flag, 0) == 0) {
      absorb(problems, e);
    } else {
      Problems own;
      absorb(own, e);
      for (const std::string& p : own.list()) problems.add(flag + ": " + p);
    }
  }
}

// Every file `plan` reads: its output may be none of them.
std::vector<std::string> plan_inputs(const PlanArgs& a) { return {a.model, a.system, a.rules, a.layer_map}; }

int run_plan(const PlanArgs& a) {
  Problems problems;
  PlanOptions options;

  // Parallelism: --system FILE, or the flags; never both.
  const bool any_flag = !a.train_gpus.empty() || !a.gen_gpus.empty() || !a.train.empty() || !a.gen.empty();
  std::optional<SystemConfig> sys;
  if (!a.system.empty()) {
    if (any_flag)
      problems.add(
          "--parallelism/--system cannot be combined with --train-gpus/--train/--gen-gpus/--gen (give one or the other)");
    check(problems, [&] { sys = load_system_json(a.system); });
  } else {
    SystemConfig s;
    if (a.train_gpus.empty()) problems.add("--train-gpus is required (or --parallelism FILE)");
    if (a.gen_gpus.empty()) problems.add("--gen-gpus is required (or --parallelism FILE)");
    if (!a.train_gpus.empty())
      check(problems, [&] {
        s.train.num_gpus = static_cast<int>(parse_integer(a.train_gpus, "--train-gpus", 1, INT32_MAX));
      });
    if (!a.gen_gpus.empty())
      check(problems, [&] {
        s.gen.num_gpus = static_cast<int>(parse_integer(a.gen_gpus, "--gen-gpus", 1, INT32_MAX));
      });
    parse_parallelism_spec(a.train, "--train", s.train, problems);
    parse_parallelism_spec(a.gen, "--gen", s.gen, problems);
    if (s.train.num_gpus > 0 && s.gen.num_gpus > 0) sys = s;
  }

  if (!a.first_stage_layers.empty())
    check(problems, [&] {
      options.first_stage_layers =
          static_cast<int>(parse_integer(a.first_stage_layers, "--first-stage-layers", 1, INT32_MAX));
    });
  if (!a.last_stage_layers.empty())
    check(problems, [&] {
      options.last_stage_layers =
          static_cast<int>(parse_integer(a.last_stage_layers, "--last-stage-layers", 1, INT32_MAX));
    });
  if (!a.layer_map.empty()) {
    if (!a.first_stage_layers.empty() || !a.last_stage_layers.empty())
      problems.add("--layer-map cannot be combined with --first-stage-layers/--last-stage-layers");
    // A broken map is reported once, here; the planner then plans with the default split.
    Problems map_problems;
    std::vector<int> map;
    if (const auto text = read_text(a.layer_map, "--layer-map", map_problems))
      map = parse_layer_map(*text, a.layer_map, map_problems);
    for (const std::string& p : map_problems.list()) problems.add(p);
    if (map_problems.empty()) options.layer_to_stage = std::move(map);
  }
  if (!a.mtp_layers.empty()) options.mtp_layers = parse_layer_list(a.mtp_layers, "--mtp-layers", problems);
  options.pipeline_layout = a.pipeline_layout;
  options.account_for_embedding = a.account_for_embedding;
  options.account_for_loss = a.account_for_loss;
  check(
      problems, [&] { options.train_order = parse_rank_order(a.train_order); }, "--train-order");
  options.exclude = a.exclude;
  check(
      problems, [&] { options.bulk = parse_bulk_mode(a.bulk); }, "--bulk");
  check(
      problems, [&] { options.gen_layout = parse_gen_layout(a.gen_layout); }, "--gen-layout");
  check(
      problems, [&] { options.fanout = parse_fanout_mode(a.fanout); }, "--fanout");
  check(problems, [&] { options.bucket_bytes = parse_size(a.bucket_bytes, "--bucket-bytes"); });
  check(
      problems, [&] { options.gen_precision = parse_gen_precision(a.gen_precision); }, "--gen-precision");
  check(
      problems, [&] { options.scales = parse_scales_path(a.scales); }, "--scales");
  check(
      problems, [&] { options.gen_expert_placement = parse_expert_placement(a.gen_expert_placement); },
      "--gen-expert-placement");
  if (!a.gpus_per_node.empty())
    check(problems, [&] {
      options.gpus_per_node = static_cast<int>(parse_integer(a.gpus_per_node, "--gpus-per-node", 1, kMaxRanksPerSide));
    });
  if (!a.head_dim.empty())
    check(problems,
          [&] { options.head_dim = static_cast<int>(parse_integer(a.head_dim, "--head-dim", 1, INT32_MAX)); });
  for (const auto& [flag, text, out] : {std::tuple<const char*, const std::string*, int*>{"--train-vocab-pad", &a.train_vocab_pad, &options.train_vocab_pad},
                                       {"--gen-vocab-pad", &a.gen_vocab_pad, &options.gen_vocab_pad}})
    if (!text->empty())
      check(problems, [&, flag = flag, text = text, out = out] {
        *out = static_cast<int>(parse_integer(*text, flag, 1, 1 << 20));
      });
  if (!a.linear_key_heads.empty())
    check(problems, [&] {
      options.linear_key_heads = static_cast<int>(parse_integer(a.linear_key_heads, "--linear-key-heads", 1, INT32_MAX));
    });
  if (!a.ssm_groups.empty())
    check(problems,
          [&] { options.ssm_groups = static_cast<int>(parse_integer(a.ssm_groups, "--ssm-groups", 1, INT32_MAX)); });
  if (!a.rules.empty()) {
    if (auto text = read_text(a.rules, "--rules", problems)) {
      options.rules_json = *text;
      if (options.rules_json.empty()) problems.add("--rules " + a.rules + ": the file is empty");
    }
  }

  // Output: format and overwrite policy, checked now so that no planning time is wasted.
  PlanFormat format = PlanFormat::Json;
  bool output_ok = true;
  if (!a.output.empty()) {
    format = plan_format_for_path(a.output);
    if (a.format == "json")
      format = PlanFormat::Json;
    else if (a.format == "cbor")
      format = PlanFormat::Cbor;
    else if (!a.format.empty())
      problems.add("--format: expected json or cbor, got '" + a.format + "'");
    if (const std::string bad = output_problem("-o", a.output, a.force, plan_inputs(a)); !bad.empty()) {
      problems.add(bad);
      output_ok = false;
    }
  } else if (!a.format.empty()) {
    problems.add("--format needs -o/--output");
  }

  // On a terminal, a status line while big inputs load and plan (erased before any output).
  const bool tty = isatty(STDERR_FILENO) == 1;
  auto status = [&](const std::string& text) {
    if (!tty) return;
    std::fprintf(stderr, "\r\033[K%s", text.c_str());
    std::fflush(stderr);
  };
  status("reshard: reading " + a.model + " ...");
  std::optional<ModelMeta> model;
  check(
      problems, [&] { model = load_model(a.model); }, "--model");
  if (model && output_ok && !a.output.empty())  // a safetensors index's shards are inputs too
    if (const std::string bad = output_problem("-o", a.output, a.force, model->shard_files); !bad.empty())
      problems.add(bad);
  if (model && sys)
    status("reshard: planning " + std::to_string(model->tensors.size()) + " tensors for " +
           std::to_string(sys->train.num_gpus) + " + " + std::to_string(sys->gen.num_gpus) + " ranks ...");

  // The planner checks the system config and the plan-level rules (experts vs ep, stages, regexes).
  // Run it even when other problems were found, so that the user sees every problem at once.
  std::optional<Plan> plan;
  const std::string planner_header = "invalid reshard configuration";
  if (model && sys) {
    try {
      plan = plan_reshard(*model, *sys, options);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Config) throw;
      absorb(problems, e, planner_header);
    }
  } else {
    // No model to plan: what the planner checks before it reads one.
    std::optional<SystemConfig> copy = sys;
    check_plan_inputs(copy ? &*copy : nullptr, options, problems);
  }
  status("");
  const size_t n = problems.list().size();
  problems.throw_if_any("invalid plan configuration (" + std::to_string(n) +
                        (n == 1 ? " problem):" : " problems):"));

  const bool summary = a.summary || a.output.empty();
  if (!a.output.empty()) {
    std::vector<std::string> inputs = plan_inputs(a);
    inputs.insert(inputs.end(), model->shard_files.begin(), model->shard_files.end());
    save_plan(*plan, a.output, format, a.force, inputs);
  }
  if (summary) std::fputs(format_summary(*plan, compute_stats(*plan)).c_str(), stdout);
  if (!a.output.empty()) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(a.output, ec);
    std::fprintf(stderr, "reshard: wrote %s (%s, %s, fingerprint %s)\n", a.output.c_str(),
                 format == PlanFormat::Cbor ? "cbor" : "json",
                 format_bytes(ec ? 0 : static_cast<int64_t>(size)).c_str(), plan->fingerprint.c_str());
  }
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<PlanArgs>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Plan a reshard: model metadata + train/gen parallelism -> plan file");
  cmd->add_option("--model", args->model, "Model metadata JSON, .safetensors or .safetensors.index.json")
      ->required();
  cmd->add_option("--parallelism,--system", args->system,
                  "Parallelism file: NCCL M2N reshard_model_bench system JSON (instead of the flags below)");
  cmd->add_option("--train-gpus", args->train_gpus, "Number of training GPUs");
  cmd->add_option("--train", args->train,
                  "Train parallelism, e.g. tp=1,pp=2,ep=8,etp=1,cp=1 (dp derived; etp defaults to tp as in "
                  "Megatron); vpp=N interleaves N virtual stages per pp rank");
  cmd->add_option("--gen-gpus", args->gen_gpus, "Number of generation GPUs");
  cmd->add_option("--gen", args->gen,
                  "Generation parallelism, e.g. tp=8,ep=1 (dp derived); with --gen-layout megatron also an "
                  "independent ep and etp, e.g. tp=4,ep=4,etp=1");
  cmd->add_option("--first-stage-layers", args->first_stage_layers,
                  "Decoder layers in the first train PP stage");
  cmd->add_option("--last-stage-layers", args->last_stage_layers,
                  "Decoder layers in the last train PP stage");
  cmd->add_option("--pipeline-layout", args->pipeline_layout,
                  "Megatron's pipeline_model_parallel_layout, e.g. \"Et*3|(tt|)*29,m|L\" (E embedding, t decoder, "
                  "m mtp, L loss; stages split by '|', flat stage i on pp rank i % pp)");
  cmd->add_flag("--account-for-embedding", args->account_for_embedding,
                "Megatron's account_for_embedding_in_pipeline_split: the embedding counts as a layer of the first "
                "stage");
  cmd->add_flag("--account-for-loss", args->account_for_loss,
                "Megatron's account_for_loss_in_pipeline_split: the loss counts as a layer of the last stage");
  cmd->add_option("--train-order", args->train_order,
                  "Megatron's rank order: tp-cp-ep-dp-pp (default) or tp-cp-ep-pp-dp (--use-tp-pp-dp-mapping)")
      ->capture_default_str();
  cmd->add_option("--gpus-per-node", args->gpus_per_node,
                  "Ranks per node (NVLink domain; rank r on node r / N): two-phase fan-outs then cross each node "
                  "once per byte and forward inside it. Recorded in the plan; default: unknown, node-blind");
  cmd->add_option("--layer-map", args->layer_map,
                  "JSON layer->train PP stage map: {\"<layer>\": stage} or [stage, ...]");
  cmd->add_option("--mtp-layers", args->mtp_layers,
                  "Comma-separated model.layers.N that are the MTP module, e.g. 61");
  cmd->add_option("--exclude", args->exclude, "Drop params whose name matches REGEX (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--bulk", args->bulk, "Which params take the bulk path: ffn (default) or all");
  cmd->add_option("--gen-layout", args->gen_layout,
                  "Generation storage: hf (default), vllm (fused) or megatron (fused fc1, per-expert tensors, "
                  "interleaved linear_qkv); see docs/layouts.md");
  cmd->add_option("--head-dim", args->head_dim,
                  "Attention head dim (heads = q rows / head dim) for vLLM's head checks and KV-head replication "
                  "and Megatron's linear_qkv query groups (default: the q_norm/k_norm size)");
  cmd->add_option("--ssm-groups", args->ssm_groups,
                  "Mamba2 n_groups (config.json) for --bulk all: the TP cut of mixer in_proj / conv1d per section");
  cmd->add_option("--linear-key-heads", args->linear_key_heads,
                  "Gated delta net key heads (config.json linear_num_key_heads) for --bulk all: Megatron's in_proj "
                  "groups and the engines' head checks");
  cmd->add_option("--train-vocab-pad", args->train_vocab_pad,
                  "Megatron's make_vocab_size_divisible_by on the train side (--bulk all): the vocab padded to a "
                  "multiple of N x train tp, the padding at the end (default: none, Megatron-Bridge's)");
  cmd->add_option("--gen-vocab-pad", args->gen_vocab_pad,
                  "The same for a --gen-layout megatron destination, with gen tp");
  cmd->add_option("--gen-expert-placement", args->gen_expert_placement,
                  "vLLM EP expert placement: linear (default; the first E % ep ranks hold one more) or round_robin "
                  "(expert e on rank e % ep; vLLM honours it for grouped-topk models)")
      ->capture_default_str();
  cmd->add_option("--fanout", args->fanout, "Fan-out to gen replicas: auto (default), direct or two-phase");
  cmd->add_option("--bucket-bytes", args->bucket_bytes, "Misc bucket size, e.g. 256Mi, 1Gi (default 1Gi)");
  cmd->add_option("--gen-precision", args->gen_precision,
                  "Generation precision: auto (as trained, default), bf16, fp8 (block-FP8 models) or mxfp8 "
                  "(BF16 models, quantized on receive); see docs/precision.md");
  cmd->add_option("--scales", args->scales,
                  "Block-FP8 weight_scale_inv tensors: misc (whole, default) or bulk (resharded by 128-block)");
  cmd->add_option("--rules", args->rules, "Custom name rules JSON (see docs/cli.md)");
  cmd->add_option("-o,--output", args->output, "Write the plan to this file");
  cmd->add_option("--format", args->format, "Plan file format: json or cbor (default: from the extension)");
  cmd->add_flag("--force", args->force, "Overwrite an existing output file");
  cmd->add_flag("--summary", args->summary, "Print the plan summary (implied without -o)");
  cmd->callback([&action, args] { action = [args] { return run_plan(*args); }; });
}

}  // namespace reshard::cli
