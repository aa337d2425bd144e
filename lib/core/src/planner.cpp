// The planner. Steps: validate inputs -> group experts -> assign stages and rules -> layouts ->
// bulk transfers (source striping, fan-out) -> misc buckets -> communicator groups.
#include "reshard/core/planner.h"

#include <algorithm>
#include <map>
#include <set>

#include "reshard/core/dst_layout.h"
#include "reshard/core/grouping.h"
#include "reshard/core/hash.h"
#include "reshard/core/plan_check.h"
#include "reshard/core/rules.h"
#include "reshard/core/stages.h"
#include "reshard/core/user_regex.h"
#include "dst_layouts.h"
#include "megatron_qkv.h"
#include "names.h"
#include "planner_bulk.h"
#include "planner_precision.h"
#include "ssm.h"

namespace reshard {
namespace {

void hash_parallelism(Hasher& h, const Parallelism& p) {
  for (int v : {p.num_gpus, p.tp, p.pp, p.ep, p.etp, p.cp, p.dp}) h.add(v);
  if (p.vpp != 1) h.add("vpp").add(p.vpp);  // only when set: older plans keep their fingerprints
}

std::string fingerprint(const Plan& plan) {
  Hasher h;
  h.add(kPlanFormat).add(kPlanVersion).add(plan.model_digest);
  hash_parallelism(h, plan.system.train);
  hash_parallelism(h, plan.system.gen);
  const PlanOptions& o = plan.options;
  h.add(to_string(o.bulk)).add(to_string(o.gen_layout)).add(to_string(o.fanout)).add(o.bucket_bytes);
  for (const auto& e : o.exclude) h.add(e);
  h.add("mtp");
  for (int l : o.mtp_layers) h.add(l);
  h.add(o.first_stage_layers).add(o.last_stage_layers).add("map");
  for (int s : o.layer_to_stage) h.add(s);
  h.add(o.rules_json);
  if (o.head_dim != 0) h.add("head_dim").add(o.head_dim);
  if (o.gen_expert_placement != ExpertPlacement::Linear) h.add("expert_placement").add(to_string(o.gen_expert_placement));
  if (o.ssm_groups != 0) h.add("ssm_groups").add(o.ssm_groups);
  if (o.linear_key_heads != 0) h.add("linear_key_heads").add(o.linear_key_heads);
  if (o.train_vocab_pad != 0 || o.gen_vocab_pad != 0) h.add("vocab_pad").add(o.train_vocab_pad).add(o.gen_vocab_pad);
  if (!o.pipeline_layout.empty()) h.add("pipeline_layout").add(o.pipeline_layout);
  if (o.account_for_embedding || o.account_for_loss)
    h.add("account_for").add(o.account_for_embedding ? 1 : 0).add(o.account_for_loss ? 1 : 0);
  if (o.train_order != RankOrder::TpCpEpDpPp) h.add("train_order").add(to_string(o.train_order));
  if (o.gpus_per_node != 0) h.add("gpus_per_node").add(o.gpus_per_node);
  // Only when set, so that plans made before precision pairs keep their fingerprints.
  if (o.gen_precision != GenPrecision::Auto || o.scales != ScalesPath::Misc)
    h.add("precision").add(to_string(o.gen_precision)).add(to_string(o.scales));
  return h.hex();
}

// The train non-expert mesh and expert mesh in Megatron's RankGenerator order
// (megatron/core/parallel_state.py; the leftmost varies fastest): tp-cp-ep-dp-pp gives (tp, dp, pp)
// (CP folds into dp) and (etp, ep, edp, pp); tp-cp-ep-pp-dp gives (tp, cp, pp, dp) and
// (etp, ep, pp, edp). The gen mesh (tp, dp) or, with gen PP, (tp, pp, dp) in vLLM's order; for a
// destination with its own expert mesh (Megatron), the gen expert mesh (etp, ep, edp).
struct Meshes {
  Mesh train, train_expert, gen, gen_expert;
};

Meshes build_meshes(const SystemConfig& s, bool gen_expert_mesh, RankOrder order) {
  const Parallelism& t = s.train;
  const Parallelism& g = s.gen;
  Meshes m;
  if (order == RankOrder::TpCpEpPpDp) {
    std::vector<std::pair<std::string, int>> dims{{"tp", t.tp}};
    if (t.cp > 1) dims.push_back({"cp", t.cp});
    dims.push_back({"pp", t.pp});
    dims.push_back({"dp", t.num_gpus / (t.tp * t.cp * t.pp)});
    m.train = make_mesh(dims, 0);
    m.train_expert = make_mesh({{"etp", t.etp}, {"ep", t.ep}, {"pp", t.pp}, {"edp", t.edp()}}, 0);
  } else {
    m.train = make_mesh({{"tp", t.tp}, {"dp", t.num_gpus / (t.tp * t.pp)}, {"pp", t.pp}}, 0);
    m.train_expert = make_mesh({{"etp", t.etp}, {"ep", t.ep}, {"edp", t.edp()}, {"pp", t.pp}}, 0);
  }
  const int gen_dp = g.num_gpus / (g.tp * g.pp);
  if (g.pp > 1)
    m.gen = make_mesh({{"tp", g.tp}, {"pp", g.pp}, {"dp", gen_dp}}, t.num_gpus);
  else
    m.gen = make_mesh({{"tp", g.tp}, {"dp", gen_dp}}, t.num_gpus);
  if (gen_expert_mesh)
    m.gen_expert = make_mesh({{"etp", g.etp}, {"ep", g.ep}, {"edp", g.num_gpus / (g.etp * g.ep)}}, t.num_gpus);
  return m;
}

Layout make_layout(const Mesh& mesh, const std::map<std::string, Placement>& by_dim) {
  Layout l{mesh, {}};
  for (const std::string& d : mesh.dim_names) {
    auto it = by_dim.find(d);
    l.placements.push_back(it == by_dim.end() ? Placement{} : it->second);
  }
  return l;
}

struct Classified {
  LogicalParam param;
  ParamRule rule;
  int train_stage = 0, gen_stage = 0;
  bool dropped_mtp = false;
};

Plan plan(const ModelMeta& model, SystemConfig system, const PlanOptions& options, bool transfers);

constexpr int kEveryStage = -1;  // a param every gen PP stage holds (ParamPlan::gen_pp_stage)

}  // namespace

PlanInputs check_plan_inputs(SystemConfig* system, const PlanOptions& options, Problems& problems) {
  PlanInputs out;
  if (system != nullptr) validate_system(*system, problems, make_destination_layout(options.gen_layout)->expert_mesh());
  if (options.gen_vocab_pad > 0 && options.gen_layout != GenLayout::Megatron)
    problems.add("--gen-vocab-pad is Megatron's padding and needs --gen-layout megatron (vLLM pads to 64 itself)");
  if (options.head_dim < 0) problems.add("--head-dim must be positive, got " + std::to_string(options.head_dim));
  // Flags that would change nothing are refused, so that a typo'd intent is not silently ignored.
  if (system != nullptr && options.head_dim > 0 && options.gen_layout == GenLayout::Hf &&
      !(options.bulk == BulkMode::All && system->train.tp > 1))
    problems.add("--head-dim does nothing here: it shapes attention for --gen-layout vllm or megatron, or the train "
                 "side's linear_qkv with --bulk all and train tp > 1");
  if (system != nullptr && (options.first_stage_layers > 0 || options.last_stage_layers > 0) && system->train.pp <= 1)
    problems.add("--first-stage-layers/--last-stage-layers split the train pipeline and need train pp > 1 (got pp=" +
                 std::to_string(system->train.pp) + ")");
  if (options.bucket_bytes <= 0) problems.add("--bucket-bytes must be positive, got " + std::to_string(options.bucket_bytes));
  for (const std::string& e : options.exclude) {
    std::string error;
    UserRegex re = UserRegex::compile(e, error);
    if (re.valid())
      out.excludes.push_back(std::move(re));
    else
      problems.add("--exclude: bad regex '" + e + "': " + error);
  }
  if (!options.rules_json.empty()) out.custom = parse_rules(options.rules_json, "--rules", problems);
  return out;
}

Plan plan_reshard(const ModelMeta& model, SystemConfig system, const PlanOptions& options) {
  return plan(model, system, options, true);
}

Plan plan_layouts(const ModelMeta& model, SystemConfig system, const PlanOptions& options) {
  return plan(model, system, options, false);
}

namespace {

Plan plan(const ModelMeta& model, SystemConfig system, const PlanOptions& options, bool transfers) {
  Problems problems;
  const std::unique_ptr<DestinationLayout> dst_layout = make_destination_layout(options.gen_layout);
  const PlanInputs inputs = check_plan_inputs(&system, options, problems);
  const std::vector<UserRegex>& excludes = inputs.excludes;
  const std::vector<CustomRule>& custom = inputs.custom;

  std::vector<TensorMeta> kept;
  kept.reserve(model.tensors.size());
  size_t excluded = 0, unplannable = 0;
  for (const TensorMeta& t : model.tensors) {
    bool drop = false;
    for (const UserRegex& re : excludes) drop = drop || re.search(t.name);
    if (drop) {
      ++excluded;
      continue;
    }
    if (t.too_many_dims > 0) {
      ++unplannable;
      problems.add("tensor '" + t.name + "' has " + std::to_string(t.too_many_dims) + " dims; at most " +
                   std::to_string(kMaxDims) + " are supported (drop it with --exclude)");
    } else {
      kept.push_back(t);
    }
  }
  // Said only where --exclude emptied the model: tensors with too many dims are named above.
  if (kept.empty() && excluded > 0) problems.add("no parameters left after --exclude");
  else if (kept.empty() && unplannable == 0) problems.add("the model has no tensors to plan");
  std::vector<LogicalParam> logical = group_params(kept, problems);
  const GenPrecision gen_precision = check_precision_pair(logical, options, problems);
  // A Megatron destination receives logical BF16: e4m3 weights are dequantized on the source, whose
  // scales therefore stay there.
  const bool src_dequant = options.gen_layout == GenLayout::Megatron && drop_source_scales(logical);
  dst_layout->prepare(logical, system, options, problems);
  const std::vector<int> scale_owner =
      options.scales == ScalesPath::Bulk ? scale_owners(logical) : std::vector<int>(logical.size(), -1);

  // Decoder layers: every layers.N that is not an MTP layer.
  const std::vector<int>& mtp = options.mtp_layers;
  auto is_mtp_layer = [&](int l) { return std::find(mtp.begin(), mtp.end(), l) != mtp.end(); };
  int max_layer = -1;
  std::set<int> mtp_modules;  // "mtp.layers.K" of models that name their MTP module so
  for (const LogicalParam& p : logical) {
    if (names::pre_process_module(p.name)) continue;  // a vision tower's own "layers.N"
    const int l = layer_index(p.name);
    if (names::starts_with(p.name, "mtp.")) {
      if (l >= 0) mtp_modules.insert(l);
    } else if (l >= 0 && !is_mtp_layer(l)) {
      max_layer = std::max(max_layer, l);
    }
  }
  const int layers = max_layer + 1;
  for (int l : mtp) {
    bool found = false;
    for (const LogicalParam& p : logical) found = found || (!names::pre_process_module(p.name) && layer_index(p.name) == l);
    if (!found)
      problems.add("--mtp-layers " + std::to_string(l) + ": the model has no layers." + std::to_string(l) +
                   " (its decoder layers are 0.." + std::to_string(layers - 1) + ")");
  }
  const Parallelism& tp = system.train;
  const Parallelism& gp = system.gen;
  // megatron/core/parallel_state.py RankGenerator: with pp before dp, the expert and dense dp sizes
  // must agree ("When not using pp-last rank ordering, the data parallel size of the attention and
  // moe layers must be the same").
  if (options.train_order == RankOrder::TpCpEpPpDp && tp.pp > 1 && tp.etp > 0 && tp.ep > 0 && tp.tp > 0 &&
      static_cast<int64_t>(tp.etp) * tp.ep != static_cast<int64_t>(tp.tp) * tp.cp)
    problems.add("--train-order tp-cp-ep-pp-dp needs etp x ep = tp x cp (the expert and dense data parallel sizes "
                 "agree), got etp=" + std::to_string(tp.etp) + ", ep=" + std::to_string(tp.ep) + ", tp=" +
                 std::to_string(tp.tp) + ", cp=" + std::to_string(tp.cp) + " (megatron/core/parallel_state.py)");
  MegatronPipeline pipeline;
  pipeline.pp = tp.pp;
  pipeline.vpp = tp.vpp;
  pipeline.first = options.first_stage_layers;
  pipeline.last = options.last_stage_layers;
  pipeline.account_for_embedding = options.account_for_embedding;
  pipeline.account_for_loss = options.account_for_loss;
  pipeline.layout = options.pipeline_layout;
  pipeline.mtp_layers = static_cast<int>(mtp.empty() ? mtp_modules.size() : mtp.size());
  TrainStages train_stages;
  train_stages.output = train_stages.final_norm = train_stages.mtp = std::max(tp.pp, 1) - 1;
  std::vector<int>& train_stage_of = train_stages.layer;
  std::vector<int> gen_stage_of;
  if (!options.layer_to_stage.empty()) {
    if (!options.pipeline_layout.empty() || options.account_for_embedding || options.account_for_loss ||
        tp.vpp > 1)
      problems.add("--layer-map gives every layer's stage: it cannot be combined with --pipeline-layout, "
                   "--account-for-embedding/--account-for-loss or vpp");
    train_stage_of = options.layer_to_stage;
    if (static_cast<int>(train_stage_of.size()) != layers)
      problems.add("--layer-map covers " + std::to_string(train_stage_of.size()) + " layers, the model has " +
                   std::to_string(layers) + " decoder layers");
    GroupedProblems outside;  // one line per stage, however many layers name it
    for (size_t l = 0; l < train_stage_of.size(); ++l)
      if (train_stage_of[l] < 0 || train_stage_of[l] >= std::max(tp.pp, 1))
        outside.add("--layer-map: stage " + std::to_string(train_stage_of[l]) + " is outside pp=" +
                        std::to_string(tp.pp),
                    "layer " + std::to_string(l));
    outside.flush(problems);
  } else if (tp.pp > 0) {
    const size_t before = problems.list().size();
    train_stages = megatron_train_stages(layers, pipeline, problems);
    // DeepSeek's checkpoints hold the MTP module as one more "decoder layer" (model.layers.61 with
    // eh_proj, enorm, hnorm): where the split fails, say so and how to mark it. Megatron builds MTP
    // apart from the decoder's layers (megatron/core/transformer/multi_token_prediction.py,
    // MultiTokenPredictionBlock; get_mtp_num_layers_to_build: on the last pipeline stage only), so those
    // layers are not in the decoder split.
    if (problems.list().size() > before && mtp.empty() && mtp_modules.empty())
      for (const LogicalParam& p : logical)
        if (const int l = layer_index(p.name); l >= 0 && names::contains(p.name, ".eh_proj.")) {
          problems.add("model.layers." + std::to_string(l) + " has eh_proj, the multi-token-prediction module of "
                       "DeepSeek's checkpoints, and counts as a decoder layer here: pass --mtp-layers " +
                       std::to_string(l) + " (Megatron builds MTP apart) or --exclude '^model\\." + "layers\\." +
                       std::to_string(l) + "\\.'");
          break;
        }
  }
  if (gp.pp > 1 && layers < gp.pp)
    problems.add("gen: pp=" + std::to_string(gp.pp) + " exceeds the " + std::to_string(layers) + " decoder layers");
  if (gp.pp > 0) gen_stage_of = vllm_layer_stages(layers, gp.pp);

  // Mamba2 mixers under --bulk all: their sections need n_groups wherever a side cuts them.
  std::map<std::string, MambaShape> mamba;
  if (options.bulk == BulkMode::All) mamba = mamba_shapes(logical, problems);
  const int ssm_groups = options.ssm_groups;
  if (!mamba.empty() && ssm_groups == 0 && (tp.tp > 1 || gp.tp > 1))
    problems.add("--bulk all: Mamba2 in_proj / conv1d are cut per section and the B / C sections by group: pass "
                 "--ssm-groups N (config.json n_groups; the shapes give only n_groups x d_state = " +
                 std::to_string(mamba.begin()->second.groups_state) + ")");
  if (!mamba.empty() && ssm_groups > 0) {
    const MambaShape& m = mamba.begin()->second;
    if (m.groups_state % ssm_groups != 0)
      problems.add("--ssm-groups " + std::to_string(ssm_groups) + " does not divide n_groups x d_state = " +
                   std::to_string(m.groups_state));
    // megatron/core/ssm/mamba_mixer.py MambaMixer.__init__: assert ngroups % tp == 0, nheads % tp == 0.
    if (ssm_groups % tp.tp != 0 || m.heads % tp.tp != 0)
      problems.add("Megatron-Core refuses: MambaMixer needs n_groups " + std::to_string(ssm_groups) + " and heads " +
                   std::to_string(m.heads) + " divisible by train tp " + std::to_string(tp.tp) +
                   " (megatron/core/ssm/mamba_mixer.py MambaMixer.__init__)");
    if (options.gen_layout == GenLayout::Megatron && (ssm_groups % gp.tp != 0 || m.heads % gp.tp != 0))
      problems.add("Megatron-Core refuses: MambaMixer needs n_groups " + std::to_string(ssm_groups) + " and heads " +
                   std::to_string(m.heads) + " divisible by gen tp " + std::to_string(gp.tp) +
                   " (megatron/core/ssm/mamba_mixer.py MambaMixer.__init__)");
  }

  // Gated delta nets under --bulk all: Megatron's in_proj groups need the key heads.
  std::map<std::string, GdnShape> gdn;
  if (options.bulk == BulkMode::All) gdn = gdn_shapes(logical, problems);
  const int key_heads = options.linear_key_heads;
  if (!gdn.empty() && key_heads == 0 && (tp.tp > 1 || gp.tp > 1))
    problems.add("--bulk all: gated delta net in_proj tensors are cut by key head: pass --linear-key-heads N "
                 "(config.json linear_num_key_heads)");
  if (!gdn.empty() && key_heads > 0) {
    const GdnShape& g = gdn.begin()->second;
    if (g.key_dim % key_heads != 0 || g.value_heads % key_heads != 0)
      problems.add("--linear-key-heads " + std::to_string(key_heads) + " divides neither key_dim " +
                   std::to_string(g.key_dim) + " nor the " + std::to_string(g.value_heads) + " value heads");
    // megatron/core/transformer/transformer_config.py: linear_num_key_heads and linear_num_value_heads % (tp cp).
    for (const auto& [side, n] : {std::pair<const char*, int>{"train", tp.tp}, {"gen", gp.tp}}) {
      if (std::string(side) == "gen" && options.gen_layout != GenLayout::Megatron) continue;
      if (key_heads % n != 0 || g.value_heads % n != 0)
        problems.add(std::string("Megatron-Core refuses: GatedDeltaNet needs ") + std::to_string(key_heads) +
                     " key heads and " + std::to_string(g.value_heads) + " value heads divisible by " + side + " tp " +
                     std::to_string(n) + " (megatron/core/transformer/transformer_config.py)");
    }
  }

  // Megatron's linear_qkv on the train side (--bulk all): whole query groups per TP rank, or with
  // tp > groups each rank's contiguous chunk of the fused rows (megatron_qkv.h). Without a head dim
  // (no q_norm / --head-dim) the groups are unknown and assumed divisible by tp.
  std::map<std::string, QkvShape> train_qkv;
  if (options.bulk == BulkMode::All && tp.tp > 1) {
    std::string from;
    const int64_t head_dim = find_head_dim(logical, options, from);
    Problems qkv_problems;  // a Megatron destination reports the same shapes
    train_qkv = qkv_shapes(logical, head_dim, from, qkv_problems);
    if (options.gen_layout != GenLayout::Megatron)
      for (const std::string& p : qkv_problems.list()) problems.add(p);
    GroupedProblems refused;
    for (const auto& [prefix, shape] : train_qkv)
      if (const std::string why = qkv_tp_problem(shape, tp.tp, "train"); !why.empty()) refused.add(why, prefix);
    refused.flush(problems);
  }

  // Classify and check the expert counts against EP.
  std::vector<Classified> params;
  params.reserve(logical.size());
  for (LogicalParam& p : logical) {
    Classified c;
    const int l = layer_index(p.name);
    const bool mtp_param = p.name.rfind("mtp.", 0) == 0 || (l >= 0 && is_mtp_layer(l));
    c.rule = classify_param(p.name, p.shape.n, p.grouped_expert, options.bulk, custom);
    if (c.rule.path == Path::Bulk && !dst_layout->transform(p.name).empty())
      c.rule.path = Path::Misc;  // the receiver changes the values: whole tensors, not shards
    if (mtp_param) {
      c.rule = ParamRule{};
      c.rule.rule = "mtp";
    }
    if ((c.rule.rule == "gdn_in" || c.rule.rule == "gdn_conv") &&
        !gdn.count(p.name.substr(0, p.name.size() - names::gdn_part(p.name).size()))) {
      c.rule = ParamRule{};  // not a whole gated delta net: broadcast whole
      c.rule.rule = "gdn_param";
    }
    if ((c.rule.rule == "ssm_in" || c.rule.rule == "ssm_conv") &&
        !mamba.count(p.name.substr(0, p.name.size() - names::mamba_part(p.name).size()))) {
      c.rule = ParamRule{};  // not a whole Mamba2 mixer: no known sections, broadcast whole
      c.rule.rule = "ssm_param";
    }
    if (p.grouped_expert && c.rule.path == Path::Bulk) {
      const int64_t e = p.shape[0];
      if (tp.ep > 0 && e % tp.ep != 0)
        problems.add(p.name + ": " + std::to_string(e) + " experts are not divisible by train ep=" + std::to_string(tp.ep));
      // vLLM's expert map takes any count (determine_expert_map: the first E % ep ranks hold one more).
      if (gp.ep > 1 && e % gp.ep != 0 && options.gen_layout != GenLayout::Vllm)
        problems.add(p.name + ": " + std::to_string(e) + " experts are not divisible by gen ep=" + std::to_string(gp.ep));
    }
    for (int d : {c.rule.train_tp_dim, c.rule.gen_tp_dim})
      if (d >= p.shape.n) problems.add(p.name + ": shard dim " + std::to_string(d) + " is outside its shape " + p.shape.str());
    const int last_gen = std::max(gp.pp, 1) - 1;
    switch (names::module_kind(p.name, l, mtp_param)) {
      case names::Module::PreProcess:
        c.train_stage = train_stages.embedding;  // Megatron: the first stage only
        c.gen_stage = gp.pp > 1 ? kEveryStage : 0;  // vLLM: every stage
        break;
      case names::Module::Decoder:
        c.train_stage = l < static_cast<int>(train_stage_of.size()) ? train_stage_of[l] : 0;
        c.gen_stage = l < static_cast<int>(gen_stage_of.size()) ? gen_stage_of[l] : 0;
        break;
      case names::Module::Mtp:
        c.train_stage = train_stages.mtp;
        c.gen_stage = last_gen;
        break;
      case names::Module::Embedding: c.train_stage = train_stages.embedding; break;
      // lm_head on post_process's stage; the final norm beside the last decoder layer when MTP follows
      // (transformer_block.py has_final_layernorm_in_this_stage).
      case names::Module::Output:
        c.train_stage = train_stages.output;
        c.gen_stage = last_gen;
        break;
      case names::Module::FinalNorm:
        c.train_stage = train_stages.final_norm;
        c.gen_stage = last_gen;
        break;
    }
    c.param = std::move(p);
    params.push_back(std::move(c));
  }
  // --scales bulk: a scale follows its weight onto the bulk path with the weight's placements.
  for (size_t i = 0; i < params.size(); ++i) {
    const int w = scale_owner[i];
    if (w < 0 || params[w].rule.path != Path::Bulk) continue;
    params[i].rule = ParamRule{Path::Bulk, "fp8_scale", params[w].rule.expert, params[w].rule.train_tp_dim,
                               params[w].rule.gen_tp_dim};
  }
  problems.throw_if_any("invalid reshard configuration:");

  Plan plan;
  plan.generator = std::string("reshard ") + RESHARD_VERSION;
  plan.model_name = model.name;
  plan.model_digest = model_digest(model);
  plan.model_tensors = static_cast<int64_t>(model.tensors.size());
  plan.system = system;
  plan.options = options;
  plan.fingerprint = fingerprint(plan);

  const Meshes meshes = build_meshes(system, dst_layout->expert_mesh(), options.train_order);
  // Groups: 0 = misc (everyone), then one bulk group per train stage.
  {
    CommGroup misc{"misc", -1, {}};
    for (int r = 0; r < plan.world(); ++r) misc.ranks.push_back(r);
    plan.groups.push_back(std::move(misc));
    for (int s = 0; s < tp.pp; ++s) {
      CommGroup g{"bulk", s, {}};
      Mesh stage = meshes.train.slice("pp", s);
      g.ranks = stage.ranks;
      std::sort(g.ranks.begin(), g.ranks.end());
      for (int r = tp.num_gpus; r < plan.world(); ++r) g.ranks.push_back(r);
      plan.groups.push_back(std::move(g));
    }
  }

  // Layouts and storage names.
  for (Classified& c : params) {
    ParamPlan pp;
    pp.name = c.param.name;
    pp.members = c.param.members;
    pp.rule = c.rule.rule;
    pp.dtype = c.param.dtype;
    pp.shape = c.param.shape;
    pp.path = c.rule.path;
    pp.pp_stage = c.train_stage;
    pp.gen_pp_stage = c.gen_stage;
    if (pp.path == Path::Misc) {
      pp.dst_name = dst_layout->misc_name(pp.name);
      pp.dst_transform = dst_layout->transform(pp.name);
    }
    if (src_dequant && pp.dtype == DType::F8_E4M3) {
      pp.dtype = DType::BF16;
      pp.src_dequant = true;
    }
    if (pp.path == Path::Bulk) {
      const bool expert = c.rule.expert;
      Mesh src_mesh = (expert ? meshes.train_expert : meshes.train).slice("pp", c.train_stage);
      const bool gen_expert_mesh = expert && dst_layout->expert_mesh();
      const Mesh& gen_mesh = gen_expert_mesh ? meshes.gen_expert : meshes.gen;
      Mesh dst_mesh = c.gen_stage == kEveryStage ? gen_mesh : gen_mesh.slice("pp", c.gen_stage);
      std::map<std::string, Placement> src_p, dst_p;
      if (expert) {
        src_p["ep"] = Placement::shard(0);
        if (c.rule.train_tp_dim >= 0) src_p["etp"] = Placement::shard(c.rule.train_tp_dim);
        if (gen_expert_mesh) {  // Megatron on both sides: experts over ep, their projections over etp
          dst_p["ep"] = Placement::shard(0);
          if (c.rule.gen_tp_dim >= 0) dst_p["etp"] = Placement::shard(c.rule.gen_tp_dim);
        } else {
          dst_p["tp"] = gp.ep > 1 ? Placement::shard(0) : Placement::shard(c.rule.gen_tp_dim);
        }
      } else {
        if (c.rule.train_tp_dim >= 0) src_p["tp"] = Placement::shard(c.rule.train_tp_dim);
        if (c.rule.gen_tp_dim >= 0) dst_p["tp"] = Placement::shard(c.rule.gen_tp_dim);
      }
      if (c.rule.rule == "attn_qkv" && !train_qkv.empty()) {
        const names::QkvPart part = names::qkv_part(pp.name);
        auto s = part.at == std::string::npos ? train_qkv.end() : train_qkv.find(pp.name.substr(0, part.at));
        if (s != train_qkv.end()) src_p["tp"] = qkv_placement(s->second, part.which, tp.tp, false);
      }
      // Mamba2 in_proj / conv1d: per section on Megatron's side and on an engine destination.
      if (c.rule.rule == "ssm_in" || c.rule.rule == "ssm_conv") {
        const std::string part = names::mamba_part(pp.name);
        const MambaShape& m = mamba.at(pp.name.substr(0, pp.name.size() - part.size()));
        if (tp.tp > 1) src_p["tp"] = Placement::split(0, mamba_sections(m, part, false));
        if (gp.tp > 1 && dst_layout->sectioned_mixers())
          dst_p["tp"] = Placement::split(0, mamba_sections(m, part, ssm_groups == 1));
      }
      if (c.rule.rule == "gdn_in" || c.rule.rule == "gdn_conv") {
        const std::string part = names::gdn_part(pp.name);
        const GdnShape& g = gdn.at(pp.name.substr(0, pp.name.size() - part.size()));
        if (tp.tp > 1) src_p["tp"] = gdn_placement(g, key_heads, part, true);
        if (gp.tp > 1 && dst_layout->sectioned_mixers())
          dst_p["tp"] = gdn_placement(g, key_heads, part, options.gen_layout == GenLayout::Megatron);
      }
      // Megatron's padded vocab (vocab_utils.py calculate_padded_vocab_size; tensor_parallel/layers.py
      // VocabParallelEmbedding: rank r holds rows [r Vp / tp, (r + 1) Vp / tp), the padding at the end).
      if (c.rule.rule == "vocab" && pp.shape.n >= 1) {
        const auto padded = [&](int n, int side_tp) {
          const int64_t multiple = static_cast<int64_t>(n) * side_tp;
          return (pp.shape[0] + multiple - 1) / multiple * multiple;
        };
        if (options.train_vocab_pad > 0 && src_p.count("tp") && src_p["tp"].shard_dim == 0)
          src_p["tp"] = Placement::pad(0, padded(options.train_vocab_pad, tp.tp));
        if (options.gen_vocab_pad > 0 && dst_p.count("tp") && dst_p["tp"].shard_dim == 0)
          dst_p["tp"] = Placement::pad(0, padded(options.gen_vocab_pad, gp.tp));
      }
      dst_layout->place(pp.name, pp.shape, c.rule, dst_p);
      // A cut that shapes the local tensor even on one rank (vLLM pads the vocab at tp 1 too) keeps
      // its mesh dim, at size 1 (innermost: the ranks do not move).
      for (const auto& [dim, placement] : dst_p)
        if (!placement.plain() && dst_mesh.dim_index(dim) < 0) {
          dst_mesh.dim_names.push_back(dim);
          dst_mesh.dim_sizes.push_back(1);
        }
      for (const auto& [dim, placement] : src_p)
        if (!placement.plain() && src_mesh.dim_index(dim) < 0) {
          src_mesh.dim_names.push_back(dim);
          src_mesh.dim_sizes.push_back(1);
        }
      pp.src = make_layout(src_mesh, src_p);
      pp.dst = make_layout(dst_mesh, dst_p);
      pp.uneven = pp.src.uneven(pp.shape) || pp.dst.uneven(pp.shape);
      pp.group = 1 + c.train_stage;
      const StorageAssignment a = dst_layout->assign(pp.name, c.rule, pp.shape.n);
      pp.dst_storage = a.storage.empty() ? pp.name : a.storage;
      pp.dst_fuse_dim = a.storage.empty() ? -1 : a.fuse_dim;
      pp.dst_fuse_index = a.fuse_index;
      pp.dst_fuse_groups = pp.dst_fuse_dim >= 0 ? a.fuse_groups : 1;
      pp.dst_split_dim = a.split_dim;
    }
    plan.params.push_back(std::move(pp));
  }
  apply_precision(plan, gen_precision, scale_owner, problems);
  problems.throw_if_any("invalid reshard configuration:");
  finalize_fused_storages(plan);
  // The destination's pieces must fit the dst shards (Megatron: whole query groups on every rank).
  const DstMap dst_map(plan);
  for (const std::string& p : dst_map.problems())
    problems.add("--gen-layout " + std::string(to_string(options.gen_layout)) + ": " + p);
  problems.throw_if_any("invalid reshard configuration:");
  name_scale_storages(plan);
  if (!transfers) return plan;
  plan_bulk_transfers(plan);
  plan_misc_buckets(plan, meshes.train);
  return plan;
}

}  // namespace

}  // namespace reshard
