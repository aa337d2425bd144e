// JSON text or CBOR bytes -> Plan, strictly: every required key present and typed, every rank, group,
// bucket and param index in range, every box of the param's rank. Errors name the origin and the
// JSON path ("plan.json: params[3].transfers[7]: expected array of 6").
//
// One SAX pass (plan_sax.cpp) serves both formats. Transfers and fan-out ops (up to millions) go
// straight into the Plan's flat vectors; everything else, a few thousand small objects, goes into a
// DOM that the typed reading here walks.
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "reshard/core/error.h"
#include "reshard/core/plan_enums.h"
#include "plan_sax.h"
#include "reshard/core/plan_io.h"

namespace reshard {
namespace {

using json = nlohmann::json;

// Typed, path-naming access to the DOM.
class Reader {
 public:
  explicit Reader(const std::string& origin) : origin_(origin) {}

  [[noreturn]] void fail(const std::string& path, const std::string& message) const {
    throw config_error(origin_ + ": " + (path.empty() ? "" : path + ": ") + message);
  }

  const json& object(const json& v, const std::string& path) const {
    if (!v.is_object()) fail(path, std::string("expected object, got ") + v.type_name());
    return v;
  }
  const json& array(const json& v, const std::string& path) const {
    if (!v.is_array()) fail(path, std::string("expected array, got ") + v.type_name());
    return v;
  }
  const json& at(const json& obj, const std::string& path, const char* key) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(path, std::string("missing key '") + key + "'");
    return *it;
  }
  const json* find(const json& obj, const char* key) const {
    auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }

  int64_t int64(const json& v, const std::string& path) const {
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        fail(path, "integer out of range");
      }
      return static_cast<int64_t>(v.get<uint64_t>());
    }
    if (!v.is_number_integer()) fail(path, std::string("expected integer, got ") + v.type_name());
    return v.get<int64_t>();
  }
  int64_t int64(const json& v, const std::string& path, int64_t lo, int64_t hi) const {
    const int64_t x = int64(v, path);
    if (x < lo || x > hi) {
      fail(path, "value " + std::to_string(x) + " outside [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "]");
    }
    return x;
  }
  int int32(const json& v, const std::string& path, int64_t lo = std::numeric_limits<int32_t>::min(),
            int64_t hi = std::numeric_limits<int32_t>::max()) const {
    return static_cast<int>(int64(v, path, lo, hi));
  }
  std::string str(const json& v, const std::string& path) const {
    if (!v.is_string()) fail(path, std::string("expected string, got ") + v.type_name());
    return v.get<std::string>();
  }
  bool boolean(const json& v, const std::string& path) const {
    if (!v.is_boolean()) fail(path, std::string("expected boolean, got ") + v.type_name());
    return v.get<bool>();
  }

  // Key-based shorthands: obj[key] at path.key.
  int64_t int64_at(const json& obj, const std::string& path, const char* key) const {
    return int64(at(obj, path, key), key_path(path, key));
  }
  int int32_at(const json& obj, const std::string& path, const char* key,
               int64_t lo = std::numeric_limits<int32_t>::min(),
               int64_t hi = std::numeric_limits<int32_t>::max()) const {
    return int32(at(obj, path, key), key_path(path, key), lo, hi);
  }
  std::string str_at(const json& obj, const std::string& path, const char* key) const {
    return str(at(obj, path, key), key_path(path, key));
  }
  const json& object_at(const json& obj, const std::string& path, const char* key) const {
    return object(at(obj, path, key), key_path(path, key));
  }
  const json& array_at(const json& obj, const std::string& path, const char* key) const {
    return array(at(obj, path, key), key_path(path, key));
  }
  std::vector<int> ints_at(const json& obj, const std::string& path, const char* key, int64_t lo,
                           int64_t hi) const {
    const std::string p = key_path(path, key);
    const json& a = array_at(obj, path, key);
    std::vector<int> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) out.push_back(int32(a[i], index_path(p, i), lo, hi));
    return out;
  }
  std::vector<std::string> strings_at(const json& obj, const std::string& path, const char* key) const {
    const std::string p = key_path(path, key);
    const json& a = array_at(obj, path, key);
    std::vector<std::string> out;
    out.reserve(a.size());
    for (size_t i = 0; i < a.size(); ++i) out.push_back(str(a[i], index_path(p, i)));
    return out;
  }
  Dims dims_at(const json& obj, const std::string& path, const char* key) const {
    const std::string p = key_path(path, key);
    const json& a = array_at(obj, path, key);
    if (a.size() > static_cast<size_t>(kMaxDims)) {
      fail(p, "has " + std::to_string(a.size()) + " dims; at most " + std::to_string(kMaxDims) +
                  " are supported");
    }
    Dims d = Dims::zeros(static_cast<int>(a.size()));
    for (size_t i = 0; i < a.size(); ++i)
      d[static_cast<int>(i)] = int64(a[i], index_path(p, i), 0, INT64_MAX);
    return d;
  }

  // Parses with one of the enum parsers, re-throwing its message under `path`.
  template <class F>
  auto name_at(const json& obj, const std::string& path, const char* key, F parse) const {
    const std::string s = str_at(obj, path, key);
    try {
      return parse(s);
    } catch (const Error& e) {
      fail(key_path(path, key), e.what());
    }
  }

 private:
  const std::string& origin_;
};

Parallelism read_parallelism(const Reader& r, const json& obj, const std::string& path) {
  r.object(obj, path);
  Parallelism p;
  p.num_gpus = r.int32_at(obj, path, "num_gpus", 0);
  p.tp = r.int32_at(obj, path, "tp", 1);
  p.pp = r.int32_at(obj, path, "pp", 1);
  p.ep = r.int32_at(obj, path, "ep", 1);
  p.etp = r.int32_at(obj, path, "etp", 1);
  if (r.find(obj, "etp_default") != nullptr) p.etp_default = r.boolean(r.at(obj, path, "etp_default"), key_path(path, "etp_default"));
  p.cp = r.int32_at(obj, path, "cp", 1);
  p.dp = r.int32_at(obj, path, "dp", 0);
  if (r.find(obj, "vpp") != nullptr) p.vpp = r.int32_at(obj, path, "vpp", 1);
  return p;
}

void read_inputs(const Reader& r, const json& doc, Plan& plan) {
  const std::string path = "inputs";
  const json& in = r.object_at(doc, "", "inputs");
  const json& model = r.object_at(in, path, "model");
  plan.model_name = r.str_at(model, "inputs.model", "name");
  plan.model_digest = r.str_at(model, "inputs.model", "digest");
  plan.model_tensors = r.int64(r.at(model, "inputs.model", "tensors"), "inputs.model.tensors", 0, INT64_MAX);
  plan.system.train = read_parallelism(r, r.at(in, path, "train"), "inputs.train");
  plan.system.gen = read_parallelism(r, r.at(in, path, "gen"), "inputs.gen");

  const std::string op = "inputs.options";
  const json& o = r.object_at(in, path, "options");
  PlanOptions& opt = plan.options;
  opt.bulk = r.name_at(o, op, "bulk", parse_bulk_mode);
  opt.gen_layout = r.name_at(o, op, "gen_layout", parse_gen_layout);
  opt.fanout = r.name_at(o, op, "fanout", parse_fanout_mode);
  opt.bucket_bytes = r.int64(r.at(o, op, "bucket_bytes"), op + ".bucket_bytes", 1, INT64_MAX);
  opt.exclude = r.strings_at(o, op, "exclude");
  opt.mtp_layers = r.ints_at(o, op, "mtp_layers", 0, std::numeric_limits<int32_t>::max());
  opt.first_stage_layers = r.int32_at(o, op, "first_stage_layers", 0);
  opt.last_stage_layers = r.int32_at(o, op, "last_stage_layers", 0);
  opt.layer_to_stage = r.ints_at(o, op, "layer_to_stage", 0, std::numeric_limits<int32_t>::max());
  const json& rules = r.at(o, op, "rules");
  if (!rules.is_null()) {
    if (!rules.is_object() && !rules.is_array()) {
      r.fail(op + ".rules", std::string("expected object, array or null, got ") + rules.type_name());
    }
    opt.rules_json = rules.dump();
  }
  // Optional: plans written before precision pairs mean auto / misc.
  if (r.find(o, "gen_precision") != nullptr) opt.gen_precision = r.name_at(o, op, "gen_precision", parse_gen_precision);
  if (r.find(o, "scales") != nullptr) opt.scales = r.name_at(o, op, "scales", parse_scales_path);
  if (r.find(o, "head_dim") != nullptr) opt.head_dim = r.int32_at(o, op, "head_dim", 1);  // optional: 0 = infer
  if (r.find(o, "ssm_groups") != nullptr) opt.ssm_groups = r.int32_at(o, op, "ssm_groups", 1);  // optional: unknown
  if (r.find(o, "linear_key_heads") != nullptr) opt.linear_key_heads = r.int32_at(o, op, "linear_key_heads", 1);
  if (r.find(o, "train_vocab_pad") != nullptr) opt.train_vocab_pad = r.int32_at(o, op, "train_vocab_pad", 1);
  if (r.find(o, "gen_vocab_pad") != nullptr) opt.gen_vocab_pad = r.int32_at(o, op, "gen_vocab_pad", 1);
  if (r.find(o, "pipeline_layout") != nullptr) opt.pipeline_layout = r.str_at(o, op, "pipeline_layout");
  if (r.find(o, "account_for_embedding") != nullptr)
    opt.account_for_embedding = r.boolean(r.at(o, op, "account_for_embedding"), key_path(op, "account_for_embedding"));
  if (r.find(o, "account_for_loss") != nullptr)
    opt.account_for_loss = r.boolean(r.at(o, op, "account_for_loss"), key_path(op, "account_for_loss"));
  if (r.find(o, "train_order") != nullptr) opt.train_order = r.name_at(o, op, "train_order", parse_rank_order);
  if (r.find(o, "gpus_per_node") != nullptr) opt.gpus_per_node = r.int32_at(o, op, "gpus_per_node", 1);
  if (r.find(o, "gen_expert_placement") != nullptr)  // optional: linear
    opt.gen_expert_placement = r.name_at(o, op, "gen_expert_placement", parse_expert_placement);
}

// Nested rank lists -> row-major ranks and dim sizes; every list at one depth must have one length.
void read_mesh_level(const Reader& r, const json& v, const std::string& path, size_t depth, Mesh& m,
                     int world) {
  if (depth == m.dim_names.size()) {
    m.ranks.push_back(r.int32(v, path, 0, world - 1));
    return;
  }
  r.array(v, path);
  if (m.dim_sizes.size() == depth) {
    if (v.empty()) r.fail(path, "empty mesh dim");
    m.dim_sizes.push_back(static_cast<int>(v.size()));
  } else if (static_cast<size_t>(m.dim_sizes[depth]) != v.size()) {
    r.fail(path, "has " + std::to_string(v.size()) + " entries; mesh dim '" + m.dim_names[depth] + "' has " +
                     std::to_string(m.dim_sizes[depth]));
  }
  for (size_t i = 0; i < v.size(); ++i) read_mesh_level(r, v[i], index_path(path, i), depth + 1, m, world);
}

Layout read_layout(const Reader& r, const json& obj, const std::string& path, int ndim, int world) {
  r.object(obj, path);
  Layout l;
  l.mesh.dim_names = r.strings_at(obj, path, "dims");
  const std::string mp = key_path(path, "mesh");
  const json& mesh = r.array_at(obj, path, "mesh");
  if (l.mesh.dim_names.empty()) {  // 0-d: a one-element list
    if (mesh.size() != 1)
      r.fail(mp, "a mesh without dims is a list of one rank; got " + std::to_string(mesh.size()));
    l.mesh.ranks.push_back(r.int32(mesh[0], index_path(mp, 0), 0, world - 1));
  } else {
    read_mesh_level(r, mesh, mp, 0, l.mesh, world);
  }
  const std::string pp = key_path(path, "placements");
  const std::vector<std::string> placements = r.strings_at(obj, path, "placements");
  if (placements.size() != l.mesh.dim_names.size()) {
    r.fail(pp, "has " + std::to_string(placements.size()) + " entries for " +
                   std::to_string(l.mesh.dim_names.size()) + " mesh dims");
  }
  for (size_t i = 0; i < placements.size(); ++i) {
    Placement p;
    try {
      p = Placement::parse(placements[i]);
    } catch (const Error& e) {
      r.fail(index_path(pp, i), e.what());
    }
    if (p.shard_dim >= ndim) {
      r.fail(index_path(pp, i), placements[i] + " shards dim " + std::to_string(p.shard_dim) + " of a " +
                                    std::to_string(ndim) + "-d tensor");
    }
    l.placements.push_back(p);
  }
  return l;
}

// Each placement's cut must fit its dim (a nested cut sees the extent left by the ones before); the
// source side holds one box per rank (its local shard).
void check_cuts(const Reader& r, const std::string& path, const Layout& l, const Dims& shape, bool dst) {
  Dims extent = shape;
  for (size_t i = 0; i < l.placements.size() && i < l.mesh.dim_sizes.size(); ++i) {
    const Placement& p = l.placements[i];
    if (p.replicate() || p.shard_dim >= shape.n) continue;
    const std::string at = index_path(key_path(path, "placements"), i);
    if (!dst && p.cut == Placement::Cut::Cyclic)
      r.fail(at, p.str() + ": a source shard is not cyclic (Megatron's ranks hold contiguous experts)");
    const std::string bad = p.check(extent[p.shard_dim], l.mesh.dim_sizes[i]);
    if (!bad.empty()) r.fail(at, bad);
    Layout one{Mesh{{"x"}, {l.mesh.dim_sizes[i]}, std::vector<int>(static_cast<size_t>(l.mesh.dim_sizes[i]), 0)}, {p}};
    extent = one.local_shape(extent, 0);
  }
}

void check_box(const Reader& r, const std::string& path, const char* what, const Dims& d, const Dims& shape) {
  if (d.n != shape.n) {
    r.fail(path, std::string(what) + " " + d.str() + " has " + std::to_string(d.n) + " dims; the param has " +
                     std::to_string(shape.n));
  }
}

void check_region(const Reader& r, const std::string& path, const Box& box, const Dims& shape) {
  check_box(r, path, "offset", box.offset, shape);
  check_box(r, path, "extent", box.extent, shape);
  for (int i = 0; i < shape.n; ++i) {
    if (box.offset[i] < 0 || box.extent[i] < 0 || box.offset[i] + box.extent[i] > shape[i]) {
      r.fail(path, "box offset " + box.offset.str() + " extent " + box.extent.str() + " is outside shape " +
                       shape.str());
    }
  }
}

void check_rank(const Reader& r, const std::string& path, const char* what, int rank, int world) {
  if (rank < 0 || rank >= world) {
    r.fail(path, std::string(what) + " rank " + std::to_string(rank) + " outside [0, " +
                     std::to_string(world) + ")");
  }
}

void read_param(const Reader& r, const json& v, const std::string& path, size_t index, Plan& plan,
                const std::vector<Slice>& transfer_slices, const std::vector<Slice>& fanout_slices) {
  r.object(v, path);
  ParamPlan p;
  const int world = plan.world();
  p.name = r.str_at(v, path, "name");
  if (r.find(v, "members") != nullptr) {
    p.members = r.strings_at(v, path, "members");
  } else {
    p.members = {p.name};
  }
  p.rule = r.str_at(v, path, "rule");
  const std::string dtype = r.str_at(v, path, "dtype");
  const std::optional<DType> dt = parse_dtype(dtype);
  if (!dt) r.fail(key_path(path, "dtype"), "unknown dtype '" + dtype + "'");
  p.dtype = *dt;
  p.shape = r.dims_at(v, path, "shape");
  // Every size the executor and the checks derive (elements, bytes, offsets inside them) is an int64:
  // a shape whose bytes overflow would wrap to a small, self-consistent size (as model_io refuses).
  int64_t elements = 1, bytes = 0;
  for (int d = 0; d < p.shape.n; ++d)
    if (__builtin_mul_overflow(elements, p.shape[d], &elements))
      r.fail(key_path(path, "shape"), p.shape.str() + " has more elements than int64 holds");
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(dtype_size(p.dtype)), &bytes))
    r.fail(key_path(path, "shape"), p.shape.str() + " of " + dtype + " has more bytes than int64 holds");
  p.path = r.name_at(v, path, "path", parse_path);
  p.pp_stage = r.int32_at(v, path, "pp_stage", 0, std::max(plan.system.train.pp - 1, 0));
  if (r.find(v, "src_dequant") != nullptr) p.src_dequant = r.boolean(r.at(v, path, "src_dequant"), key_path(path, "src_dequant"));
  p.gen_pp_stage = r.int32_at(v, path, "gen_pp_stage", -1, std::max(plan.system.gen.pp - 1, 0));  // -1: every stage

  const bool has_transfers = index < transfer_slices.size() && transfer_slices[index].seen;
  const bool has_fanouts = index < fanout_slices.size() && fanout_slices[index].seen;
  if (p.path == Path::Misc) {
    if (has_transfers || has_fanouts)
      r.fail(path, "a misc param has transfers or fanouts; only bulk params do");
    p.bucket = r.int32_at(v, path, "bucket", 0, static_cast<int64_t>(plan.buckets.size()) - 1);
    p.bucket_offset = r.int64(r.at(v, path, "bucket_offset"), key_path(path, "bucket_offset"), 0,
                              plan.buckets[static_cast<size_t>(p.bucket)].bytes);
    if (r.find(v, "dst_name") != nullptr) p.dst_name = r.str_at(v, path, "dst_name");
    if (r.find(v, "dst_transform") != nullptr) {
      p.dst_transform = r.str_at(v, path, "dst_transform");
      if (p.dst_transform != "zero_centered")
        r.fail(key_path(path, "dst_transform"), "unknown transform '" + p.dst_transform + "' (known: zero_centered)");
    }
    plan.params.push_back(std::move(p));
    return;
  }

  p.src = read_layout(r, r.at(v, path, "src"), key_path(path, "src"), p.shape.n, world);
  p.dst = read_layout(r, r.at(v, path, "dst"), key_path(path, "dst"), p.shape.n, world);
  check_cuts(r, key_path(path, "src"), p.src, p.shape, false);
  check_cuts(r, key_path(path, "dst"), p.dst, p.shape, true);
  const std::string sp = key_path(path, "dst_storage");
  const json& storage = r.object_at(v, path, "dst_storage");
  p.dst_storage = r.str_at(storage, sp, "name");
  p.dst_fuse_dim = r.int32_at(storage, sp, "fuse_dim", -1, p.shape.n - 1);
  p.dst_fuse_index = r.int32_at(storage, sp, "index", 0);
  // Optional (Megatron destination): interleaved groups and per-index storages.
  if (r.find(storage, "groups") != nullptr) p.dst_fuse_groups = r.int32_at(storage, sp, "groups", 1);
  if (r.find(storage, "split_dim") != nullptr) p.dst_split_dim = r.int32_at(storage, sp, "split_dim", -1, p.shape.n - 1);
  if (p.dst_fuse_groups > 1 && p.dst_fuse_dim < 0) r.fail(key_path(sp, "groups"), "groups need a fuse_dim");
  p.fanout = r.name_at(v, path, "fanout", parse_fanout);
  const int groups = static_cast<int>(plan.groups.size());
  p.group = r.int32_at(v, path, "group", 0, groups - 1);
  p.uneven = r.boolean(r.at(v, path, "uneven"), key_path(path, "uneven"));
  if (r.find(v, "gen_precision") != nullptr) {  // optional: absent, the param lands as sent
    const GenPrecision g = r.name_at(v, path, "gen_precision", parse_gen_precision);
    if (g != GenPrecision::Mxfp8)
      r.fail(key_path(path, "gen_precision"), std::string("a param records only \"mxfp8\", got \"") + to_string(g) + "\"");
    if (p.dtype != DType::BF16 || p.shape.n < 1)
      r.fail(key_path(path, "gen_precision"), "mxfp8 needs a bfloat16 param of at least 1 dim");
    p.mxfp8 = true;
    p.scale_storage = r.str_at(v, path, "scale_storage");
  }

  if (!has_transfers) r.fail(path, "missing key 'transfers'");
  if (!has_fanouts) r.fail(path, "missing key 'fanouts'");
  const Slice& ts = transfer_slices[index];
  p.transfer_begin = ts.begin;
  p.transfer_count = ts.count;
  const std::string tp = key_path(path, "transfers");
  for (uint64_t i = 0; i < ts.count; ++i) {
    const Transfer& t = plan.transfers[ts.begin + i];
    if (t.src < 0 || t.src >= world || t.dst < 0 || t.dst >= world || t.box.offset.n != p.shape.n ||
        t.box.extent.n != p.shape.n || t.src_local.n != p.shape.n || t.dst_local.n != p.shape.n) {
      const std::string at = index_path(tp, i);  // the slow path builds the message
      check_rank(r, at, "src", t.src, world);
      check_rank(r, at, "dst", t.dst, world);
      check_region(r, at, t.box, p.shape);
      check_box(r, at, "src_local", t.src_local, p.shape);
      check_box(r, at, "dst_local", t.dst_local, p.shape);
    }
    if (t.dst_storage < 0 || (p.dst_split_dim < 0 && t.dst_storage != 0))
      r.fail(index_path(tp, i), "dst storage " + std::to_string(t.dst_storage) +
                                    (p.dst_split_dim < 0 ? " given, but the param has one storage" : " is negative"));
    for (int d = 0; d < p.shape.n; ++d) {
      if (t.box.offset[d] < 0 || t.box.extent[d] < 0 || t.box.offset[d] + t.box.extent[d] > p.shape[d] ||
          t.src_local[d] < 0 || t.dst_local[d] < 0) {
        const std::string at = index_path(tp, i);
        check_region(r, at, t.box, p.shape);
        r.fail(at, "negative local offset " + t.src_local.str() + " / " + t.dst_local.str());
      }
    }
  }
  const Slice& fs = fanout_slices[index];
  p.fanout_begin = fs.begin;
  p.fanout_count = fs.count;
  const std::string fp = key_path(path, "fanouts");
  for (uint64_t i = 0; i < fs.count; ++i) {
    const FanoutOp& f = plan.fanouts[fs.begin + i];
    const std::string at = index_path(fp, i);
    check_rank(r, at, "root", f.root, world);
    if (f.group < 0 || f.group >= groups) {
      r.fail(at, "group " + std::to_string(f.group) + " outside [0, " + std::to_string(groups) + ")");
    }
    check_region(r, at, f.box, p.shape);
    check_box(r, at, "dst_local", f.dst_local, p.shape);
    if (f.dst_storage < 0 || (p.dst_split_dim < 0 && f.dst_storage != 0))
      r.fail(at, "dst storage " + std::to_string(f.dst_storage) +
                     (p.dst_split_dim < 0 ? " given, but the param has one storage" : " is negative"));
  }
  plan.params.push_back(std::move(p));
}

void read_document(const Reader& r, const json& doc, Plan& plan, const std::vector<Slice>& transfer_slices,
                   const std::vector<Slice>& fanout_slices) {
  r.object(doc, "");
  const json* format = r.find(doc, "format");
  if (format == nullptr || !format->is_string() || format->get<std::string>() != kPlanFormat) {
    r.fail("", std::string("not a reshard plan (expected \"format\": \"") + kPlanFormat + "\")");
  }
  const int64_t version = r.int64_at(doc, "", "version");
  if (version > kPlanVersion) {
    r.fail("", "plan version " + std::to_string(version) + " is newer than this reshard supports (" +
                   std::to_string(kPlanVersion) + ")");
  }
  if (version < 1) r.fail("version", "unsupported plan version " + std::to_string(version));
  plan.generator = r.str_at(doc, "", "generator");
  plan.fingerprint = r.str_at(doc, "", "fingerprint");
  read_inputs(r, doc, plan);

  const json& world = r.object_at(doc, "", "world");
  const int64_t train = r.int64_at(world, "world", "train"), gen = r.int64_at(world, "world", "gen");
  const int64_t size = r.int64_at(world, "world", "size");
  if (train != plan.train_world() || gen != plan.gen_world() || size != plan.world()) {
    r.fail("world", "train " + std::to_string(train) + ", gen " + std::to_string(gen) + ", size " +
                        std::to_string(size) + " disagree with inputs (train.num_gpus " +
                        std::to_string(plan.train_world()) + ", gen.num_gpus " +
                        std::to_string(plan.gen_world()) + ")");
  }
  const int nworld = plan.world();

  const json& groups = r.array_at(doc, "", "groups");
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::string path = index_path("groups", i);
    const json& g = r.object(groups[i], path);
    CommGroup cg;
    cg.kind = r.str_at(g, path, "kind");
    if (cg.kind != "misc" && cg.kind != "bulk" && cg.kind != "fanout")  // docs/plan-format.md
      r.fail(key_path(path, "kind"), "unknown group kind '" + cg.kind + "' (known: misc, bulk, fanout)");
    cg.pp_stage = r.int32_at(g, path, "pp_stage", -1);
    cg.ranks = r.ints_at(g, path, "ranks", 0, nworld - 1);
    plan.groups.push_back(std::move(cg));
  }
  const int ngroups = static_cast<int>(plan.groups.size());

  // Buckets before params: a misc param names its bucket, a bucket its params.
  const json& buckets = r.array_at(doc, "", "buckets");
  const json& params = r.array_at(doc, "", "params");
  for (size_t i = 0; i < buckets.size(); ++i) {
    const std::string path = index_path("buckets", i);
    const json& b = r.object(buckets[i], path);
    MiscBucket mb;
    mb.root = r.int32_at(b, path, "root", 0, nworld - 1);
    mb.group = r.int32_at(b, path, "group", 0, ngroups - 1);
    mb.pp_stage = r.int32_at(b, path, "pp_stage", 0);
    mb.bytes = r.int64(r.at(b, path, "bytes"), key_path(path, "bytes"), 0, INT64_MAX);
    const std::string pp = key_path(path, "params");
    const json& ps = r.array_at(b, path, "params");
    mb.params.reserve(ps.size());
    for (size_t j = 0; j < ps.size(); ++j) {
      mb.params.push_back(static_cast<uint32_t>(
          r.int64(ps[j], index_path(pp, j), 0, static_cast<int64_t>(params.size()) - 1)));
    }
    plan.buckets.push_back(std::move(mb));
  }

  plan.params.reserve(params.size());
  int64_t total = 0;  // the plan's byte counts (stats, rows, totals) sum its params
  for (size_t i = 0; i < params.size(); ++i) {
    read_param(r, params[i], index_path("params", i), i, plan, transfer_slices, fanout_slices);
    if (__builtin_add_overflow(total, plan.params.back().bytes(), &total))
      r.fail(index_path("params", i), "the params' bytes up to here sum past what int64 holds");
  }
}

}  // namespace

Plan decode_plan(const std::vector<uint8_t>& bytes, const std::string& origin) {
  Plan plan;
  PlanEvents events = parse_plan_events(bytes, plan, origin);
  Reader reader(origin);
  try {
    read_document(reader, events.root, plan, events.transfer_slices, events.fanout_slices);
  } catch (const json::exception& e) {  // defensive: the typed reads above check before they convert
    throw config_error(origin + ": " + e.what());
  }
  return plan;
}

}  // namespace reshard
