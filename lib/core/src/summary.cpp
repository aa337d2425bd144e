#include "reshard/core/summary.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include <map>
#include <set>

#include "names.h"
#include "reshard/core/after_loading.h"
#include "reshard/core/memory_estimate.h"
#include "reshard/core/rules.h"
#include "reshard/core/error.h"
#include "reshard/core/units.h"

namespace reshard {
namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxRanksInline = 64;  // longer rank lists are abbreviated in text
constexpr size_t kMaxMembersInline = 4;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string join(const std::vector<std::string>& xs, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? sep : "") + xs[i];
  return out;
}

std::string join_ints(const std::vector<int>& xs) {
  std::vector<std::string> s;
  for (int x : xs) s.push_back(std::to_string(x));
  return join(s, ",");
}

// "tp=1 pp=2 ep=8 etp=1 cp=1 dp=8 edp=1"; etp, cp and edp only with an expert mesh (train, Megatron gen).
std::string parallelism_text(const Parallelism& p, bool train) {
  std::string s = std::to_string(p.num_gpus) + " GPUs: tp=" + std::to_string(p.tp) +
                  " pp=" + std::to_string(p.pp) + " ep=" + std::to_string(p.ep);
  if (train) s += " etp=" + std::to_string(p.etp) + (p.etp_default ? " (Megatron's default: tp)" : "") + " cp=" + std::to_string(p.cp);
  s += " dp=" + std::to_string(p.dp);
  if (train && p.etp * p.ep * p.pp > 0) s += " edp=" + std::to_string(p.edp());
  if (p.vpp != 1) s += " vpp=" + std::to_string(p.vpp);
  return s;
}

Json parallelism_json(const Parallelism& p, bool train) {
  Json j;
  j["num_gpus"] = p.num_gpus;
  j["tp"] = p.tp;
  j["pp"] = p.pp;
  j["ep"] = p.ep;
  j["etp"] = p.etp;
  if (p.etp_default) j["etp_default"] = true;
  j["cp"] = p.cp;
  j["dp"] = p.dp;
  if (train && p.etp * p.ep * p.pp > 0) j["edp"] = p.edp();
  if (p.vpp != 1) j["vpp"] = p.vpp;
  return j;
}

std::string options_text(const PlanOptions& o) {
  std::string s = std::string("bulk=") + to_string(o.bulk) + " gen-layout=" + to_string(o.gen_layout) +
                  " fanout=" + to_string(o.fanout) + " bucket-bytes=" + format_bytes(o.bucket_bytes);
  if (!o.exclude.empty()) s += " exclude=" + join(o.exclude, ",");
  if (!o.mtp_layers.empty()) s += " mtp-layers=" + join_ints(o.mtp_layers);
  if (o.first_stage_layers) s += " first-stage-layers=" + std::to_string(o.first_stage_layers);
  if (o.last_stage_layers) s += " last-stage-layers=" + std::to_string(o.last_stage_layers);
  if (!o.layer_to_stage.empty()) s += " layer-map=(" + std::to_string(o.layer_to_stage.size()) + " layers)";
  if (!o.pipeline_layout.empty()) s += " pipeline-layout=" + o.pipeline_layout;
  if (o.account_for_embedding) s += " account-for-embedding";
  if (o.account_for_loss) s += " account-for-loss";
  s += std::string(" train-order=") + to_string(o.train_order);
  s += " gpus-per-node=" + (o.gpus_per_node ? std::to_string(o.gpus_per_node) : std::string("unknown (fan-out node-blind)"));
  if (!o.rules_json.empty()) s += " rules=(custom)";
  if (o.head_dim) s += " head-dim=" + std::to_string(o.head_dim);
  if (o.ssm_groups) s += " ssm-groups=" + std::to_string(o.ssm_groups);
  if (o.linear_key_heads) s += " linear-key-heads=" + std::to_string(o.linear_key_heads);
  if (o.train_vocab_pad) s += " train-vocab-pad=" + std::to_string(o.train_vocab_pad);
  if (o.gen_vocab_pad) s += " gen-vocab-pad=" + std::to_string(o.gen_vocab_pad);
  if (o.gen_expert_placement != ExpertPlacement::Linear)
    s += std::string(" gen-expert-placement=") + to_string(o.gen_expert_placement);
  return s;
}

Json options_json(const PlanOptions& o) {
  Json j;
  j["bulk"] = to_string(o.bulk);
  j["gen_layout"] = to_string(o.gen_layout);
  j["fanout"] = to_string(o.fanout);
  j["bucket_bytes"] = o.bucket_bytes;
  j["exclude"] = o.exclude;
  j["mtp_layers"] = o.mtp_layers;
  j["first_stage_layers"] = o.first_stage_layers;
  j["last_stage_layers"] = o.last_stage_layers;
  j["layer_to_stage"] = o.layer_to_stage;
  j["pipeline_layout"] = o.pipeline_layout;
  j["account_for_embedding"] = o.account_for_embedding;
  j["account_for_loss"] = o.account_for_loss;
  j["train_order"] = to_string(o.train_order);
  j["gpus_per_node"] = o.gpus_per_node;  // 0: unknown
  j["custom_rules"] = !o.rules_json.empty();
  return j;
}

// Per train PP stage: its decoder layers as ranges and the other modules it holds, e.g.
// "0: layers 0-7,16-23 +embeddings; 1: layers 8-15,24-31 +final norm +lm_head".
std::string train_stages_text(const Plan& plan) {
  std::map<int, std::set<int>> layers;
  std::map<int, std::set<std::string>> extras;
  for (const ParamPlan& p : plan.params) {
    const std::string& n = p.name;
    const int l = layer_index(n);
    const bool mtp = names::starts_with(n, "mtp.") ||
                     (l >= 0 && std::find(plan.options.mtp_layers.begin(), plan.options.mtp_layers.end(), l) !=
                                    plan.options.mtp_layers.end());
    const names::Module m = names::module_kind(n, l, mtp);
    if (m == names::Module::Decoder) layers[p.pp_stage].insert(l);
    else extras[p.pp_stage].insert(names::module_label(m));
  }
  std::string out;
  for (int s = 0; s < plan.system.train.pp; ++s) {
    out += (s ? "; " : "") + std::to_string(s) + ":";
    std::string ranges;
    const std::set<int>& ls = layers[s];
    for (auto it = ls.begin(); it != ls.end();) {
      const int lo = *it;
      int hi = lo;
      while (++it != ls.end() && *it == hi + 1) ++hi;
      ranges += (ranges.empty() ? "" : ",") + std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "");
    }
    if (!ranges.empty()) out += " layers " + ranges;
    for (const std::string& e : extras[s]) out += " +" + e;
  }
  return out;
}

std::string percent(double fraction) { return fmt("%.1f %%", fraction * 100); }

// Nested rank lists in mesh order: [[0, 1], [2, 3]].
void nested_ranks_text(const Mesh& m, size_t dim, size_t& pos, std::string& out) {
  if (dim == m.dim_sizes.size()) {
    out += std::to_string(m.ranks[pos++]);
    return;
  }
  out += "[";
  for (int i = 0; i < m.dim_sizes[dim]; ++i) {
    if (i) out += ", ";
    nested_ranks_text(m, dim + 1, pos, out);
  }
  out += "]";
}

Json nested_ranks_json(const Mesh& m, size_t dim, size_t& pos) {
  if (dim == m.dim_sizes.size()) return m.ranks[pos++];
  Json a = Json::array();
  for (int i = 0; i < m.dim_sizes[dim]; ++i) a.push_back(nested_ranks_json(m, dim + 1, pos));
  return a;
}

std::string mesh_text(const Mesh& m) {
  std::vector<std::string> dims;
  for (int d = 0; d < m.ndim(); ++d) dims.push_back(m.dim_names[d] + "=" + std::to_string(m.dim_sizes[d]));
  std::string s = dims.empty() ? "single rank" : join(dims, " x ");
  if (m.ranks.empty()) return s;
  if (m.ranks.size() <= kMaxRanksInline) {
    size_t pos = 0;
    std::string ranks;
    nested_ranks_text(m, 0, pos, ranks);
    return s + "  ranks " + ranks;
  }
  return s + "  ranks " + std::to_string(m.ranks.front()) + ", " + std::to_string(m.ranks[1]) + ", ... " +
         std::to_string(m.ranks.back()) + " (" + std::to_string(m.ranks.size()) + " ranks)";
}

std::string placements_text(const std::vector<Placement>& ps) {
  std::vector<std::string> s;
  for (const Placement& p : ps) s.push_back(p.str());
  return "[" + join(s, ", ") + "]";
}

Json layout_json(const Layout& l) {
  Json j;
  Json dims = Json::array();
  for (int d = 0; d < l.mesh.ndim(); ++d)
    dims.push_back(Json{{"name", l.mesh.dim_names[d]}, {"size", l.mesh.dim_sizes[d]}});
  j["mesh_dims"] = dims;
  size_t pos = 0;
  j["ranks"] = l.mesh.ranks.empty() ? Json::array() : nested_ranks_json(l.mesh, 0, pos);
  Json ps = Json::array();
  for (const Placement& p : l.placements) ps.push_back(p.str());
  j["placements"] = ps;
  return j;
}

Json dims_json(const Dims& d) { return d.to_vector(); }

const char* side(const Plan& plan, int rank) { return plan.is_gen(rank) ? "gen" : "train"; }

int64_t bulk_load(const RankStats& r) { return std::max(r.bulk_send_bytes, r.bulk_recv_bytes); }

}  // namespace

std::vector<int> busiest_ranks(const PlanStats& stats, size_t count) {
  std::vector<int> order(stats.ranks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  auto misc = [&](int r) { return stats.ranks[r].misc_send_bytes + stats.ranks[r].misc_recv_bytes; };
  const size_t n = std::min(count, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](int a, int b) {
                      const int64_t la = bulk_load(stats.ranks[a]), lb = bulk_load(stats.ranks[b]);
                      if (la != lb) return la > lb;
                      if (misc(a) != misc(b)) return misc(a) > misc(b);
                      return a < b;
                    });
  order.resize(n);
  return order;
}

std::string format_rank_table(const Plan& plan, const PlanStats& stats, const std::vector<int>& ranks) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%6s %-5s %11s %11s %11s %11s %8s %8s %8s %11s %11s\n", "rank", "side",
                "bulk sent", "bulk recv", "misc sent", "misc recv", "sends", "recvs", "buckets",
                "lower bound", "memory");
  out << line;
  for (int r : ranks) {
    const RankStats& s = stats.ranks.at(static_cast<size_t>(r));
    std::snprintf(line, sizeof line, "%6d %-5s %11s %11s %11s %11s %8lld %8lld %8lld %11s %11s\n", r,
                  side(plan, r), format_bytes(s.bulk_send_bytes).c_str(),
                  format_bytes(s.bulk_recv_bytes).c_str(), format_bytes(s.misc_send_bytes).c_str(),
                  format_bytes(s.misc_recv_bytes).c_str(), static_cast<long long>(s.bulk_send_msgs),
                  static_cast<long long>(s.bulk_recv_msgs), static_cast<long long>(s.misc_msgs),
                  format_bytes(s.lower_bound_bytes).c_str(), format_bytes(rank_memory(plan, r).total()).c_str());
    out << line;
  }
  return out.str();
}

std::string format_summary(const Plan& plan, const PlanStats& st) {
  std::ostringstream out;
  auto row = [&](const char* key, const std::string& value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%-12s ", key);
    out << buf << value << "\n";
  };
  row("model", plan.model_name + " (" + std::to_string(plan.model_tensors) + " tensors, digest " +
                   plan.model_digest + ")");
  row("fingerprint", plan.fingerprint);
  row("generator", plan.generator);
  row("train",
      parallelism_text(plan.system.train, true) + "  ranks 0.." + std::to_string(plan.train_world() - 1));
  // A Megatron destination has its own expert mesh: show etp and edp as for train.
  row("gen", parallelism_text(plan.system.gen, plan.options.gen_layout == GenLayout::Megatron) + "  ranks " + std::to_string(plan.train_world()) +
                 ".." + std::to_string(plan.world() - 1));
  row("options", options_text(plan.options));
  if (plan.system.train.pp > 1) row("train pp", train_stages_text(plan));
  row("params", std::to_string(st.bulk_params + st.misc_params) + ": " + std::to_string(st.bulk_params) +
                    " bulk (" + std::to_string(st.uneven_params) + " uneven), " +
                    std::to_string(st.misc_params) + " misc");
  row("bytes", format_bytes(st.total_bytes) + ": bulk " + format_bytes(st.bulk_bytes) + " (" +
                   percent(st.bulk_fraction) + "), misc " + format_bytes(st.misc_bytes));
  row("bulk", std::to_string(st.transfers) + " transfers, " + std::to_string(st.fanout_ops) +
                  " fan-out ops, " + std::to_string(plan.groups.size()) + " communicator groups");
  row("misc", std::to_string(st.buckets) + " buckets");
  // The whole refit first (misc is most of what a dense model's gen rank receives), bulk alone beside it.
  row("lower bound", format_bytes(st.refit_lower_bound_bytes) + " on the busiest rank, whole refit (" +
                         std::to_string(st.refit_lower_bound_bytes) + " B); bulk alone " +
                         format_bytes(st.lower_bound_bytes) + " (" + std::to_string(st.lower_bound_bytes) + " B)");
  row("busiest", "rank " + std::to_string(st.refit_busiest_rank) + " (" + side(plan, st.refit_busiest_rank) +
                     ") moves " + format_bytes(st.refit_busiest_bytes) + "; bulk alone rank " +
                     std::to_string(st.busiest_rank) + " (" + side(plan, st.busiest_rank) + ") " +
                     format_bytes(st.busiest_bytes) + " (" + std::to_string(st.busiest_bytes) + " B)");
  row("efficiency", fmt("%.3f", st.refit_efficiency) + " whole refit, " + fmt("%.3f", st.efficiency) +
                        " bulk alone (lower bound / busiest rank)");
  {
    const std::vector<RankMemory> mem = plan_memory(plan);
    size_t peak = 0;
    int64_t all = 0;
    for (size_t r = 0; r < mem.size(); ++r) {
      all += mem[r].total();
      if (mem[r].total() > mem[peak].total()) peak = r;
    }
    if (!mem.empty()) {
      const RankMemory& m = mem[peak];
      row("memory", format_bytes(m.total()) + " at most a rank (rank " + std::to_string(peak) + ", " +
                        side(plan, static_cast<int>(peak)) + ": storages " + format_bytes(m.storages) + ", staging " +
                        format_bytes(m.staging) + ", landings " + format_bytes(m.landings) + ", misc bucket " +
                        format_bytes(m.bucket) + "); all ranks " + format_bytes(all) +
                        ". Host memory with --transport mpi (every rank of a host together), GPU memory with "
                        "cuda-ipc / nccl; at run's default --staging-bytes " + size_text(BatchPolicy{}.staging_bytes));
    }
  }
  for (const std::string& note : after_loading_notes(plan)) row("after load", note);
  const size_t world = st.ranks.size();
  out << "\n";
  if (world <= kFullTableRanks) {
    out << "per rank:\n";
    std::vector<int> all(world);
    for (size_t i = 0; i < world; ++i) all[i] = static_cast<int>(i);
    out << format_rank_table(plan, st, all);
  } else {
    out << "busiest " << kTopRanks << " of " << world << " ranks (inspect --rank R for any rank):\n";
    out << format_rank_table(plan, st, busiest_ranks(st, kTopRanks));
  }
  return out.str();
}

std::string format_param(const Plan& plan, uint32_t index, size_t max_transfers) {
  const ParamPlan& p = plan.params.at(index);
  std::ostringstream out;
  auto row = [&](const char* key, const std::string& value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%-10s ", key);
    out << buf << value << "\n";
  };
  row("param", p.name + "  (#" + std::to_string(index) + ")");
  if (!(p.members.size() == 1 && p.members[0] == p.name) && !p.members.empty()) {
    std::vector<std::string> shown(
        p.members.begin(),
        p.members.begin() + static_cast<std::ptrdiff_t>(std::min(p.members.size(), kMaxMembersInline)));
    std::string s = std::to_string(p.members.size()) + ": " + join(shown, ", ");
    if (p.members.size() > kMaxMembersInline) s += ", ... " + p.members.back();
    row("members", s);
  }
  row("rule", p.rule + "  path " + to_string(p.path));
  row("tensor", std::string(dtype_name(p.dtype)) + " " + p.shape.str() + "  " + format_bytes(p.bytes()));
  // Precision on either side (docs/precision.md), only where it differs from the tensor's dtype.
  std::string precision;
  if (p.src_dequant) precision = "sources hold block-FP8 (e4m3 + float32 _scale_inv), dequantized before sending";
  if (p.mxfp8) {
    if (!precision.empty()) precision += "; ";
    const std::string scales = p.dst_split_dim >= 0 ? p.dst_storage + "<i>_scale" : p.scale_storage;
    precision += "lands as MXFP8 (e4m3 + E8M0 scales in " + scales + "), quantized on receive";
  }
  if (!precision.empty()) row("precision", precision);
  row("stage", "train pp " + std::to_string(p.pp_stage) + ", gen pp " +
                   (p.gen_pp_stage < 0 ? std::string("every stage") : std::to_string(p.gen_pp_stage)));
  if (p.path == Path::Misc) {
    if (p.bucket >= 0 && static_cast<size_t>(p.bucket) < plan.buckets.size()) {
      const MiscBucket& b = plan.buckets[static_cast<size_t>(p.bucket)];
      row("bucket", std::to_string(p.bucket) + " at byte " + std::to_string(p.bucket_offset) + " of " +
                        format_bytes(b.bytes) + ", root rank " + std::to_string(b.root) + ", group " +
                        std::to_string(b.group));
    }
    if (!p.dst_name.empty()) row("lands as", p.dst_name);
    if (p.dst_transform == "zero_centered")
      row("transform", "the destination keeps value - 1 (zero-centred RMSNorm weight; Megatron-Bridge "
                       "RMSNorm2ZeroCenteredRMSNormMapping): the bytes travel as the checkpoint holds them, the "
                       "receiver subtracts 1");
    return out.str();
  }
  row("src", mesh_text(p.src.mesh) + "  " + placements_text(p.src.placements));
  row("dst",
      mesh_text(p.dst.mesh) + "  " + placements_text(p.dst.placements) + (p.uneven ? "  (uneven)" : ""));
  std::string storage = p.dst_storage;
  if (p.dst_fuse_dim >= 0) {
    storage += "  (fused along dim " + std::to_string(p.dst_fuse_dim) + ", member " + std::to_string(p.dst_fuse_index);
    if (p.dst_fuse_groups > 1) storage += ", interleaved in " + std::to_string(p.dst_fuse_groups) + " groups";
    storage += ")";
  }
  if (p.dst_split_dim >= 0) {
    storage += "  (one tensor per local index along dim " + std::to_string(p.dst_split_dim) + ": ";
    storage += p.dst_storage + "0, ...)";
  }
  row("storage", storage);
  row("fanout", std::string(to_string(p.fanout)) + "  group " + std::to_string(p.group));
  const int64_t esize = dtype_size(p.dtype);
  out << "transfers  " << p.transfer_count << "\n";
  const uint64_t shown = std::min<uint64_t>(p.transfer_count, max_transfers);
  char line[512];
  for (uint64_t i = 0; i < shown; ++i) {
    const Transfer& t = plan.transfers.at(p.transfer_begin + i);
    // Per-index storages (Megatron experts): which local tensor, "<dst_storage><index>".
    const std::string in = p.dst_split_dim >= 0 ? " in #" + std::to_string(t.dst_storage) : "";
    std::snprintf(line, sizeof line, "  %5d -> %-5d box %s  src_local %s  dst_local %s%s  %s\n", t.src, t.dst,
                  t.box.str().c_str(), t.src_local.str().c_str(), t.dst_local.str().c_str(), in.c_str(),
                  format_bytes(t.box.elements() * esize).c_str());
    out << line;
  }
  if (p.transfer_count > shown) out << "  ... " << (p.transfer_count - shown) << " more\n";
  if (p.fanout_count > 0) {
    out << "fan-out    " << p.fanout_count << " broadcasts\n";
    const uint64_t fshown = std::min<uint64_t>(p.fanout_count, max_transfers);
    for (uint64_t i = 0; i < fshown; ++i) {
      const FanoutOp& f = plan.fanouts.at(p.fanout_begin + i);
      const std::string in = p.dst_split_dim >= 0 ? " in #" + std::to_string(f.dst_storage) : "";
      std::snprintf(line, sizeof line, "  root %5d group %-4d box %s  dst_local %s%s  %s\n", f.root, f.group,
                    f.box.str().c_str(), f.dst_local.str().c_str(), in.c_str(),
                    format_bytes(f.box.elements() * esize).c_str());
      out << line;
    }
    if (p.fanout_count > fshown) out << "  ... " << (p.fanout_count - fshown) << " more\n";
  }
  return out.str();
}

Json rank_json(const Plan& plan, const RankStats& r) {
  Json j;
  j["rank"] = r.rank;
  j["side"] = side(plan, r.rank);
  j["bulk_send_bytes"] = r.bulk_send_bytes;
  j["bulk_recv_bytes"] = r.bulk_recv_bytes;
  j["misc_send_bytes"] = r.misc_send_bytes;
  j["misc_recv_bytes"] = r.misc_recv_bytes;
  j["bulk_send_msgs"] = r.bulk_send_msgs;
  j["bulk_recv_msgs"] = r.bulk_recv_msgs;
  j["misc_msgs"] = r.misc_msgs;
  j["lower_bound_bytes"] = r.lower_bound_bytes;
  const RankMemory m = rank_memory(plan, r.rank);
  j["memory"] = Json{{"total", m.total()}, {"storages", m.storages}, {"staging", m.staging},
                     {"landings", m.landings}, {"bucket", m.bucket}};
  return j;
}

Json summary_json(const Plan& plan, const PlanStats& st, const std::vector<int>& ranks) {
  Json j;
  j["model"] =
      Json{{"name", plan.model_name}, {"digest", plan.model_digest}, {"tensors", plan.model_tensors}};
  j["fingerprint"] = plan.fingerprint;
  j["generator"] = plan.generator;
  j["train"] = parallelism_json(plan.system.train, true);
  j["gen"] = parallelism_json(plan.system.gen, plan.options.gen_layout == GenLayout::Megatron);
  j["options"] = options_json(plan.options);
  j["params"] = Json{{"total", st.bulk_params + st.misc_params},
                     {"bulk", st.bulk_params},
                     {"misc", st.misc_params},
                     {"uneven", st.uneven_params}};
  j["bytes"] = Json{{"total", st.total_bytes}, {"bulk", st.bulk_bytes}, {"misc", st.misc_bytes}};
  j["bulk_fraction"] = st.bulk_fraction;
  j["transfers"] = st.transfers;
  j["fanout_ops"] = st.fanout_ops;
  j["buckets"] = st.buckets;
  j["groups"] = plan.groups.size();
  j["lower_bound_bytes"] = st.lower_bound_bytes;
  j["busiest_rank"] = st.busiest_rank;
  j["busiest_bytes"] = st.busiest_bytes;
  j["efficiency"] = st.efficiency;  // bulk alone
  j["refit"] = Json{{"lower_bound_bytes", st.refit_lower_bound_bytes},
                    {"busiest_rank", st.refit_busiest_rank},
                    {"busiest_bytes", st.refit_busiest_bytes},
                    {"efficiency", st.refit_efficiency}};
  j["after_loading"] = after_loading_notes(plan);
  Json rows = Json::array();
  if (ranks.empty()) {
    for (const RankStats& r : st.ranks) rows.push_back(rank_json(plan, r));
  } else {
    for (int r : ranks) rows.push_back(rank_json(plan, st.ranks.at(static_cast<size_t>(r))));
  }
  j["ranks"] = rows;
  return j;
}

Json param_json(const Plan& plan, uint32_t index, size_t max_transfers) {
  const ParamPlan& p = plan.params.at(index);
  Json j;
  j["index"] = index;
  j["name"] = p.name;
  j["members"] = p.members;
  j["rule"] = p.rule;
  j["path"] = to_string(p.path);
  j["dtype"] = std::string(dtype_name(p.dtype));
  j["shape"] = dims_json(p.shape);
  j["bytes"] = p.bytes();
  j["pp_stage"] = p.pp_stage;
  j["gen_pp_stage"] = p.gen_pp_stage;
  if (p.src_dequant) j["src_dequant"] = true;
  if (p.mxfp8) j["mxfp8_scale_storage"] = p.scale_storage;
  if (p.path == Path::Misc) {
    j["bucket"] = p.bucket;
    j["bucket_offset"] = p.bucket_offset;
    if (p.bucket >= 0 && static_cast<size_t>(p.bucket) < plan.buckets.size())
      j["bucket_root"] = plan.buckets[static_cast<size_t>(p.bucket)].root;
    if (!p.dst_name.empty()) j["dst_name"] = p.dst_name;
    if (!p.dst_transform.empty()) j["dst_transform"] = p.dst_transform;
    return j;
  }
  j["src"] = layout_json(p.src);
  j["dst"] = layout_json(p.dst);
  j["dst_storage"] = p.dst_storage;
  j["dst_fuse_dim"] = p.dst_fuse_dim;
  j["dst_fuse_index"] = p.dst_fuse_index;
  if (p.dst_fuse_groups != 1) j["dst_fuse_groups"] = p.dst_fuse_groups;
  if (p.dst_split_dim >= 0) j["dst_split_dim"] = p.dst_split_dim;
  j["fanout"] = to_string(p.fanout);
  j["group"] = p.group;
  j["uneven"] = p.uneven;
  Json ts = Json::array();
  for (uint64_t i = 0; i < std::min<uint64_t>(p.transfer_count, max_transfers); ++i) {
    const Transfer& t = plan.transfers.at(p.transfer_begin + i);
    ts.push_back(Json{{"src", t.src},
                      {"dst", t.dst},
                      {"offset", dims_json(t.box.offset)},
                      {"extent", dims_json(t.box.extent)},
                      {"src_local", dims_json(t.src_local)},
                      {"dst_local", dims_json(t.dst_local)}});
    if (p.dst_split_dim >= 0) ts.back()["dst_storage"] = t.dst_storage;
  }
  j["transfer_count"] = p.transfer_count;
  j["transfers"] = ts;
  Json fs = Json::array();
  for (uint64_t i = 0; i < std::min<uint64_t>(p.fanout_count, max_transfers); ++i) {
    const FanoutOp& f = plan.fanouts.at(p.fanout_begin + i);
    fs.push_back(Json{{"root", f.root},
                      {"group", f.group},
                      {"offset", dims_json(f.box.offset)},
                      {"extent", dims_json(f.box.extent)},
                      {"dst_local", dims_json(f.dst_local)}});
    if (p.dst_split_dim >= 0) fs.back()["dst_storage"] = f.dst_storage;
  }
  j["fanout_count"] = p.fanout_count;
  j["fanouts"] = fs;
  return j;
}

uint32_t find_param(const Plan& plan, const std::string& name) {
  for (size_t i = 0; i < plan.params.size(); ++i)
    if (plan.params[i].name == name) return static_cast<uint32_t>(i);
  for (size_t i = 0; i < plan.params.size(); ++i)
    for (const std::string& m : plan.params[i].members)
      if (m == name) return static_cast<uint32_t>(i);
  std::vector<std::string> near;
  for (const ParamPlan& p : plan.params)
    if (p.name.find(name) != std::string::npos && near.size() < 5) near.push_back(p.name);
  std::string msg =
      "no param named '" + name + "' in the plan (" + std::to_string(plan.params.size()) + " params)";
  if (!near.empty()) msg += "; names containing it: " + join(near, ", ");
  throw config_error(msg);
}

}  // namespace reshard
