// Plan -> JSON text or CBOR bytes, through one template so the two carry the same document.
// Layout of the JSON text: one group, param, bucket and rank-stats row per line; transfers compact.
// docs/plan-format.md documents every key.
#include <charconv>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "doc_writer.h"
#include "reshard/core/plan_io.h"
#include "reshard/core/stats.h"

namespace reshard {
namespace {

using detail::CborWriter;
using detail::JsonWriter;

// Stats ratios are rounded to 6 decimals so that the text does not depend on the last bits of a
// floating-point computation.
double round6(double x) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf - 1, x, std::chars_format::fixed, 6);
  if (r.ec != std::errc()) return x;
  *r.ptr = '\0';
  return std::strtod(buf, nullptr);
}

template <class W>
void write_dims(W& w, const Dims& d) {
  w.begin_array(static_cast<size_t>(d.n));
  for (int i = 0; i < d.n; ++i) w.integer(d[i]);
  w.end_array();
}

template <class W>
void write_ints(W& w, const std::vector<int>& xs) {
  w.begin_array(xs.size());
  for (int x : xs) w.integer(x);
  w.end_array();
}

template <class W>
void write_strings(W& w, const std::vector<std::string>& xs) {
  w.begin_array(xs.size());
  for (const auto& x : xs) w.str(x);
  w.end_array();
}

// Any JSON value (the parsed --rules file); nlohmann::json keeps object keys sorted.
template <class W>
void write_value(W& w, const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::object:
      w.begin_object(v.size());
      for (auto it = v.begin(); it != v.end(); ++it) {
        w.key(it.key());
        write_value(w, it.value());
      }
      w.end_object();
      break;
    case nlohmann::json::value_t::array:
      w.begin_array(v.size());
      for (const auto& x : v) write_value(w, x);
      w.end_array();
      break;
    case nlohmann::json::value_t::string:
      w.str(v.get_ref<const std::string&>());
      break;
    case nlohmann::json::value_t::boolean:
      w.boolean(v.get<bool>());
      break;
    case nlohmann::json::value_t::number_integer:
      w.integer(v.get<int64_t>());
      break;
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) {
        w.number(static_cast<double>(u));
      } else {
        w.integer(static_cast<int64_t>(u));
      }
      break;
    }
    case nlohmann::json::value_t::number_float:
      w.number(v.get<double>());
      break;
    default:
      w.null();
      break;
  }
}

// The mesh as nested rank lists, dims[0] outermost. A 0-d mesh (every dim of size 1 dropped) is a
// one-element list holding its only rank.
template <class W>
void write_mesh_level(W& w, const Mesh& m, int dim, size_t base, size_t stride) {
  const auto n = static_cast<size_t>(m.dim_sizes[static_cast<size_t>(dim)]);
  const size_t inner = n ? stride / n : 0;
  w.begin_array(n);
  for (size_t i = 0; i < n; ++i) {
    if (dim + 1 == m.ndim()) {
      w.integer(m.ranks[base + i]);
    } else {
      write_mesh_level(w, m, dim + 1, base + i * inner, inner);
    }
  }
  w.end_array();
}

template <class W>
void write_layout(W& w, const Layout& l) {
  w.begin_object(3);
  w.key("dims");
  write_strings(w, l.mesh.dim_names);
  w.key("mesh");
  if (l.mesh.ndim() == 0) {
    write_ints(w, l.mesh.ranks);
  } else {
    write_mesh_level(w, l.mesh, 0, 0, l.mesh.ranks.size());
  }
  w.key("placements");
  w.begin_array(l.placements.size());
  for (const auto& p : l.placements) w.str(p.str());
  w.end_array();
  w.end_object();
}

template <class W>
void write_parallelism(W& w, const Parallelism& p) {
  w.begin_object(7 + (p.etp_default ? 1 : 0) + (p.vpp != 1 ? 1 : 0));
  w.key("num_gpus"), w.integer(p.num_gpus);
  w.key("tp"), w.integer(p.tp);
  w.key("pp"), w.integer(p.pp);
  w.key("ep"), w.integer(p.ep);
  w.key("etp"), w.integer(p.etp);
  if (p.etp_default) w.key("etp_default"), w.boolean(true);  // written only when so: old plans unchanged
  w.key("cp"), w.integer(p.cp);
  w.key("dp"), w.integer(p.dp);
  if (p.vpp != 1) w.key("vpp"), w.integer(p.vpp);  // written only when set: old plans unchanged
  w.end_object();
}

template <class W>
void write_inputs(W& w, const Plan& plan, const nlohmann::json& rules) {
  const PlanOptions& o = plan.options;
  w.begin_object(4);
  w.key("model");
  w.begin_object(3);
  w.key("name"), w.str(plan.model_name);
  w.key("digest"), w.str(plan.model_digest);
  w.key("tensors"), w.integer(plan.model_tensors);
  w.end_object();
  w.key("train");
  write_parallelism(w, plan.system.train);
  w.key("gen");
  write_parallelism(w, plan.system.gen);
  w.line_break(2);
  w.key("options");
  const bool round_robin = o.gen_expert_placement != ExpertPlacement::Linear;
  w.begin_object(12 + (o.head_dim != 0 ? 1 : 0) + (round_robin ? 1 : 0) + (o.ssm_groups != 0 ? 1 : 0) +
                 (o.linear_key_heads != 0 ? 1 : 0) + (o.train_vocab_pad != 0 ? 1 : 0) + (o.gen_vocab_pad != 0 ? 1 : 0) +
                 (!o.pipeline_layout.empty() ? 1 : 0) + (o.account_for_embedding ? 1 : 0) +
                 (o.account_for_loss ? 1 : 0) + (o.train_order != RankOrder::TpCpEpDpPp ? 1 : 0) +
                 (o.gpus_per_node != 0 ? 1 : 0));
  w.key("bulk"), w.str(to_string(o.bulk));
  w.key("gen_layout"), w.str(to_string(o.gen_layout));
  w.key("fanout"), w.str(to_string(o.fanout));
  w.key("bucket_bytes"), w.integer(o.bucket_bytes);
  w.key("exclude");
  write_strings(w, o.exclude);
  w.key("mtp_layers");
  write_ints(w, o.mtp_layers);
  w.key("first_stage_layers"), w.integer(o.first_stage_layers);
  w.key("last_stage_layers"), w.integer(o.last_stage_layers);
  w.key("layer_to_stage");
  write_ints(w, o.layer_to_stage);
  w.key("rules");
  write_value(w, rules);
  w.key("gen_precision"), w.str(to_string(o.gen_precision));
  w.key("scales"), w.str(to_string(o.scales));
  if (o.head_dim != 0) w.key("head_dim"), w.integer(o.head_dim);  // written only when set: old plans unchanged
  if (round_robin) w.key("gen_expert_placement"), w.str(to_string(o.gen_expert_placement));
  if (o.ssm_groups != 0) w.key("ssm_groups"), w.integer(o.ssm_groups);
  if (o.linear_key_heads != 0) w.key("linear_key_heads"), w.integer(o.linear_key_heads);
  if (o.train_vocab_pad != 0) w.key("train_vocab_pad"), w.integer(o.train_vocab_pad);
  if (o.gen_vocab_pad != 0) w.key("gen_vocab_pad"), w.integer(o.gen_vocab_pad);
  if (!o.pipeline_layout.empty()) w.key("pipeline_layout"), w.str(o.pipeline_layout);
  if (o.account_for_embedding) w.key("account_for_embedding"), w.boolean(true);
  if (o.account_for_loss) w.key("account_for_loss"), w.boolean(true);
  if (o.train_order != RankOrder::TpCpEpDpPp) w.key("train_order"), w.str(to_string(o.train_order));
  if (o.gpus_per_node != 0) w.key("gpus_per_node"), w.integer(o.gpus_per_node);
  w.end_object();
  w.end_object();
}

bool members_are_just_name(const ParamPlan& p) { return p.members.size() == 1 && p.members[0] == p.name; }

template <class W>
void write_param(W& w, const Plan& plan, const ParamPlan& p) {
  const bool bulk = p.path == Path::Bulk;
  const bool members = !members_are_just_name(p);
  const bool mx = bulk && p.mxfp8;
  // Keys of the Megatron destination, written only when used so that hf/vllm plans are unchanged.
  const bool split = bulk && p.dst_split_dim >= 0, grouped = bulk && p.dst_fuse_groups != 1;
  w.begin_object((bulk ? 15 : 9) + (members ? 1 : 0) + (mx ? 2 : 0) + (p.src_dequant ? 1 : 0) +
                 (!bulk && !p.dst_name.empty() ? 1 : 0) + (!bulk && !p.dst_transform.empty() ? 1 : 0));
  w.key("name"), w.str(p.name);
  if (members) {
    w.key("members");
    write_strings(w, p.members);
  }
  w.key("rule"), w.str(p.rule);
  w.key("dtype"), w.str(dtype_name(p.dtype));
  w.key("shape");
  write_dims(w, p.shape);
  w.key("path"), w.str(to_string(p.path));
  w.key("pp_stage"), w.integer(p.pp_stage);
  w.key("gen_pp_stage"), w.integer(p.gen_pp_stage);
  if (p.src_dequant) w.key("src_dequant"), w.boolean(true);
  if (!bulk) {
    w.key("bucket"), w.integer(p.bucket);
    w.key("bucket_offset"), w.integer(p.bucket_offset);
    if (!p.dst_name.empty()) w.key("dst_name"), w.str(p.dst_name);  // written only when set
    if (!p.dst_transform.empty()) w.key("dst_transform"), w.str(p.dst_transform);
    w.end_object();
    return;
  }
  w.key("src");
  write_layout(w, p.src);
  w.key("dst");
  write_layout(w, p.dst);
  w.key("dst_storage");
  w.begin_object(3 + (grouped ? 1 : 0) + (split ? 1 : 0));
  w.key("name"), w.str(p.dst_storage);
  w.key("fuse_dim"), w.integer(p.dst_fuse_dim);
  w.key("index"), w.integer(p.dst_fuse_index);
  if (grouped) w.key("groups"), w.integer(p.dst_fuse_groups);
  if (split) w.key("split_dim"), w.integer(p.dst_split_dim);
  w.end_object();
  w.key("fanout"), w.str(to_string(p.fanout));
  w.key("group"), w.integer(p.group);
  w.key("uneven"), w.boolean(p.uneven);
  if (mx) {
    w.key("gen_precision"), w.str(to_string(GenPrecision::Mxfp8));
    w.key("scale_storage"), w.str(p.scale_storage);
  }
  w.key("transfers");
  w.begin_array(p.transfer_count);
  for (uint64_t i = p.transfer_begin; i < p.transfer_begin + p.transfer_count; ++i) {
    const Transfer& t = plan.transfers[i];
    w.begin_array(split ? 7 : 6);
    w.integer(t.src);
    w.integer(t.dst);
    write_dims(w, t.box.offset);
    write_dims(w, t.box.extent);
    write_dims(w, t.src_local);
    write_dims(w, t.dst_local);
    if (split) w.integer(t.dst_storage);
    w.end_array();
  }
  w.end_array();
  w.key("fanouts");
  w.begin_array(p.fanout_count);
  for (uint64_t i = p.fanout_begin; i < p.fanout_begin + p.fanout_count; ++i) {
    const FanoutOp& f = plan.fanouts[i];
    w.begin_array(split ? 6 : 5);
    w.integer(f.root);
    w.integer(f.group);
    write_dims(w, f.box.offset);
    write_dims(w, f.box.extent);
    write_dims(w, f.dst_local);
    if (split) w.integer(f.dst_storage);
    w.end_array();
  }
  w.end_array();
  w.end_object();
}

template <class W>
void write_stats(W& w, const PlanStats& s) {
  static const char* const kRankFields[] = {
      "rank",           "bulk_send_bytes", "bulk_recv_bytes", "misc_send_bytes",  "misc_recv_bytes",
      "bulk_send_msgs", "bulk_recv_msgs",  "misc_msgs",       "lower_bound_bytes"};
  w.begin_object(16);
  w.key("total_bytes"), w.integer(s.total_bytes);
  w.key("bulk_bytes"), w.integer(s.bulk_bytes);
  w.key("misc_bytes"), w.integer(s.misc_bytes);
  w.key("bulk_fraction"), w.number(round6(s.bulk_fraction));
  w.key("bulk_params"), w.integer(s.bulk_params);
  w.key("misc_params"), w.integer(s.misc_params);
  w.key("uneven_params"), w.integer(s.uneven_params);
  w.key("transfers"), w.integer(s.transfers);
  w.key("fanout_ops"), w.integer(s.fanout_ops);
  w.key("buckets"), w.integer(s.buckets);
  w.key("lower_bound_bytes"), w.integer(s.lower_bound_bytes);
  w.key("busiest_bytes"), w.integer(s.busiest_bytes);
  w.key("busiest_rank"), w.integer(s.busiest_rank);
  w.key("efficiency"), w.number(round6(s.efficiency));
  w.line_break(2);
  w.key("rank_fields");
  w.begin_array(std::size(kRankFields));
  for (const char* f : kRankFields) w.str(f);
  w.end_array();
  w.line_break(2);
  w.key("ranks");
  w.begin_array(s.ranks.size());
  for (const RankStats& r : s.ranks) {
    w.line_break(3);
    w.begin_array(std::size(kRankFields));
    w.integer(r.rank);
    w.integer(r.bulk_send_bytes);
    w.integer(r.bulk_recv_bytes);
    w.integer(r.misc_send_bytes);
    w.integer(r.misc_recv_bytes);
    w.integer(r.bulk_send_msgs);
    w.integer(r.bulk_recv_msgs);
    w.integer(r.misc_msgs);
    w.integer(r.lower_bound_bytes);
    w.end_array();
  }
  if (!s.ranks.empty()) w.line_break(2);
  w.end_array();
  w.end_object();
}

template <class W>
void write_plan(W& w, const Plan& plan, const nlohmann::json& rules, const PlanStats& stats) {
  w.begin_object(10);
  w.key("format"), w.str(kPlanFormat);
  w.key("version"), w.integer(kPlanVersion);
  w.key("generator"), w.str(plan.generator);
  w.key("fingerprint"), w.str(plan.fingerprint);
  w.line_break(1);
  w.key("inputs");
  write_inputs(w, plan, rules);
  w.line_break(1);
  w.key("world");
  w.begin_object(3);
  w.key("train"), w.integer(plan.train_world());
  w.key("gen"), w.integer(plan.gen_world());
  w.key("size"), w.integer(plan.world());
  w.end_object();

  w.line_break(1);
  w.key("groups");
  w.begin_array(plan.groups.size());
  for (const CommGroup& g : plan.groups) {
    w.line_break(2);
    w.begin_object(3);
    w.key("kind"), w.str(g.kind);
    w.key("pp_stage"), w.integer(g.pp_stage);
    w.key("ranks");
    write_ints(w, g.ranks);
    w.end_object();
  }
  if (!plan.groups.empty()) w.line_break(1);  // "[]" when empty
  w.end_array();

  w.line_break(1);
  w.key("params");
  w.begin_array(plan.params.size());
  for (const ParamPlan& p : plan.params) {
    w.line_break(2);
    write_param(w, plan, p);
  }
  if (!plan.params.empty()) w.line_break(1);  // "[]" when empty
  w.end_array();

  w.line_break(1);
  w.key("buckets");
  w.begin_array(plan.buckets.size());
  for (const MiscBucket& b : plan.buckets) {
    w.line_break(2);
    w.begin_object(5);
    w.key("root"), w.integer(b.root);
    w.key("group"), w.integer(b.group);
    w.key("pp_stage"), w.integer(b.pp_stage);
    w.key("bytes"), w.integer(b.bytes);
    w.key("params");
    w.begin_array(b.params.size());
    for (uint32_t i : b.params) w.integer(i);
    w.end_array();
    w.end_object();
  }
  if (!plan.buckets.empty()) w.line_break(1);  // "[]" when empty
  w.end_array();

  w.line_break(1);
  w.key("stats");
  write_stats(w, stats);
  w.line_break(0);
  w.end_object();
}

nlohmann::json parsed_rules(const Plan& plan) {
  if (plan.options.rules_json.empty()) return nullptr;
  try {
    return nlohmann::json::parse(plan.options.rules_json);
  } catch (const nlohmann::json::exception& e) {
    throw config_error(std::string("plan options: rules are not valid JSON: ") + e.what());
  }
}

// What the writers index without checking: a bad plan here is a planner bug, not bad input.
void check_consistent(const Plan& plan) {
  auto layout_ok = [](const Layout& l) {
    int64_t n = 1;
    for (int s : l.mesh.dim_sizes) n *= s;
    return l.mesh.dim_names.size() == l.mesh.dim_sizes.size() && n == l.mesh.size() &&
           l.placements.size() == l.mesh.dim_sizes.size();
  };
  for (const ParamPlan& p : plan.params) {
    if (p.path != Path::Bulk) continue;
    if (!layout_ok(p.src) || !layout_ok(p.dst)) {
      throw runtime_error("internal error: param " + p.name +
                          " has a mesh whose dims, ranks and placements disagree");
    }
    if (p.transfer_begin + p.transfer_count > plan.transfers.size() ||
        p.fanout_begin + p.fanout_count > plan.fanouts.size()) {
      throw runtime_error("internal error: param " + p.name +
                          " has a transfer or fan-out range past the end");
    }
  }
}

}  // namespace

std::vector<uint8_t> encode_plan(const Plan& plan, PlanFormat format) {
  check_consistent(plan);
  const nlohmann::json rules = parsed_rules(plan);
  const PlanStats stats = compute_stats(plan);
  std::vector<uint8_t> out;
  // Roughly what a transfer takes as JSON text; saves the reallocations of a growing buffer.
  out.reserve(4096 + plan.params.size() * 512 +
              plan.transfers.size() * (format == PlanFormat::Json ? 56 : 40));
  if (format == PlanFormat::Json) {
    JsonWriter w(out);
    write_plan(w, plan, rules, stats);
    out.push_back('\n');
  } else {
    CborWriter w(out);
    write_plan(w, plan, rules, stats);
  }
  return out;
}

}  // namespace reshard
