// Model metadata readers: metadata JSON, safetensors headers, safetensors indices.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "reshard/core/error.h"
#include "reshard/core/model.h"
#include "json_checks.h"
#include "reshard/core/input_file.h"

namespace reshard {
namespace {

using Json = nlohmann::json;
namespace fs = std::filesystem;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "dir/Qwen3-4B.json" -> "Qwen3-4B"; strips the compound safetensors suffixes too.
std::string file_stem(const std::string& path) {
  std::string base = fs::path(path).filename().string();
  for (std::string_view suffix : {".safetensors.index.json", ".safetensors", ".json"}) {
    if (ends_with(base, suffix) && base.size() > suffix.size()) return base.substr(0, base.size() - suffix.size());
  }
  return base;
}

std::string read_text(const std::string& path) { return read_input_file(path, "model"); }

// Key order and duplicate keys, found by one SAX pass. nlohmann's DOM cannot give them cheaply:
// ordered_json looks keys up linearly and the callback parser is slower still, both quadratic on
// the 92k-tensor DeepSeek-V3 file; a plain json DOM (std::map) plus this pass stays linear.
class KeyScan {
 public:
  using J = nlohmann::json;
  KeyScan(std::string origin, std::string section, Problems& problems)
      : origin_(std::move(origin)), section_(std::move(section)), problems_(problems) {}

  std::vector<std::string> top_keys;      // keys of the top-level object, in file order
  std::vector<std::string> section_keys;  // keys of the top-level object's `section` member, in order

  bool null() { return true; }
  bool boolean(bool) { return true; }
  bool number_integer(J::number_integer_t) { return true; }
  bool number_unsigned(J::number_unsigned_t) { return true; }
  bool number_float(J::number_float_t, const J::string_t&) { return true; }
  bool string(J::string_t&) { return true; }
  bool binary(J::binary_t&) { return true; }
  bool start_object(std::size_t) {
    Kind kind = Kind::Other;
    if (frames_.empty())
      kind = Kind::Top;
    else if (frames_.back().kind == Kind::Top && !section_.empty() && frames_.back().last_key == section_)
      kind = Kind::Section;
    frames_.push_back({kind, {}, {}, {}});
    return true;
  }
  bool key(J::string_t& k) {
    Frame& f = frames_.back();
    bool fresh = true;
    if (f.kind == Kind::Other) {  // small objects ({"shape", "dtype"}): a linear check is cheapest
      fresh = std::find(f.small.begin(), f.small.end(), k) == f.small.end();
      if (fresh) f.small.push_back(k);
    } else {
      fresh = f.seen.insert(k).second;
      (f.kind == Kind::Top ? top_keys : section_keys).push_back(k);
    }
    if (!fresh) {
      const bool nested = f.kind == Kind::Other && frames_.size() >= 2;
      problems_.add("duplicate key '" + k + "'" +
                    (nested ? " in '" + frames_[frames_.size() - 2].last_key + "'" : std::string()));
    }
    f.last_key = k;
    return true;
  }
  bool end_object() {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) {
    frames_.push_back({Kind::Array, {}, {}, {}});
    return true;
  }
  bool end_array() {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    throw config_error(origin_ + ": malformed JSON at byte " + std::to_string(position) + ": " + e.what());
  }

 private:
  enum class Kind { Top, Section, Other, Array };
  struct Frame {
    Kind kind;
    std::string last_key;
    std::unordered_set<std::string> seen;
    std::vector<std::string> small;
  };
  std::string origin_, section_;
  Problems& problems_;
  std::vector<Frame> frames_;
};

struct ParsedJson {
  Json doc;
  std::vector<std::string> top_keys, section_keys;  // file order
};

// Parses JSON, recording the file order of the top-level keys and of the keys of `section` (a
// top-level member). Duplicate keys go into `problems`; malformed text throws naming the byte.
ParsedJson parse_json(std::string_view text, const std::string& origin, const std::string& section,
                      Problems& problems) {
  check_json_depth(text, origin);
  KeyScan scan(origin, section, problems);
  Json::sax_parse(text.begin(), text.end(), &scan);  // throws on malformed input
  ParsedJson out;
  out.doc = Json::parse(text.begin(), text.end());
  out.top_keys = std::move(scan.top_keys);
  out.section_keys = std::move(scan.section_keys);
  return out;
}

std::string type_name(const Json& j) { return j.type_name(); }

// Shape from a JSON array; every violation goes into `problems` prefixed with `where`.
// A shape of more than kMaxDims dims is no problem here: it sets `too_many` to its dim count, and the
// planner refuses the tensor only when --exclude keeps it.
std::optional<Dims> parse_shape(const Json& j, const std::string& where, Problems& problems, int& too_many) {
  if (!j.is_array()) {
    problems.add(where + ": shape must be an array, got " + type_name(j));
    return std::nullopt;
  }
  bool ok = true;
  std::vector<int64_t> dims;
  for (const Json& d : j) {
    if (d.is_number_unsigned() && d.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
      problems.add(where + ": dim " + d.dump() + " is too large");
      ok = false;
    } else if (!d.is_number_integer()) {
      problems.add(where + ": shape entries must be integers, got " + d.dump());
      ok = false;
    } else if (d.get<int64_t>() < 0) {
      problems.add(where + ": negative dim " + d.dump() + " in shape " + j.dump());
      ok = false;
    } else {
      dims.push_back(d.get<int64_t>());
    }
  }
  if (!ok) return std::nullopt;
  if (j.size() > static_cast<size_t>(kMaxDims)) {
    too_many = static_cast<int>(j.size());
    return Dims{};
  }
  int64_t product = 1;
  for (int64_t d : dims) {
    if (__builtin_mul_overflow(product, d, &product)) {
      problems.add(where + ": shape " + j.dump() + " has more elements than int64 holds");
      return std::nullopt;
    }
  }
  return Dims::from(dims);
}

// One {"shape", "dtype"} entry; nullopt (with problems added) when invalid.
std::optional<TensorMeta> parse_tensor(const std::string& name, const Json& j, Problems& problems) {
  const std::string where = "tensor '" + name + "'";
  if (!j.is_object()) {
    problems.add(where + ": expected an object with shape and dtype, got " + type_name(j));
    return std::nullopt;
  }
  std::optional<Dims> shape;
  std::optional<DType> dtype;
  int too_many = 0;
  if (!j.contains("shape")) {
    problems.add(where + ": missing shape");
  } else {
    shape = parse_shape(j["shape"], where, problems, too_many);
  }
  if (!j.contains("dtype")) {
    problems.add(where + ": missing dtype");
  } else if (!j["dtype"].is_string()) {
    problems.add(where + ": dtype must be a string, got " + j["dtype"].dump());
  } else {
    const auto& text = j["dtype"].get_ref<const std::string&>();
    dtype = parse_dtype(text);
    if (!dtype) problems.add(where + ": unknown dtype '" + text + "'");
  }
  if (!shape || !dtype) return std::nullopt;
  // Bytes must fit in int64 too: plans sum them.
  int64_t bytes = 0;
  if (__builtin_mul_overflow(shape->product(), static_cast<int64_t>(dtype_size(*dtype)), &bytes)) {
    problems.add(where + ": shape " + shape->str() + " has more bytes than int64 holds");
    return std::nullopt;
  }
  return TensorMeta{name, *shape, *dtype, too_many};
}

void check_unique_and_nonempty(const ModelMeta& m, Problems& problems) {
  if (m.tensors.empty()) problems.add("no tensors found");
  std::unordered_set<std::string_view> seen;
  for (const TensorMeta& t : m.tensors)
    if (!seen.insert(t.name).second) problems.add("duplicate tensor name '" + t.name + "'");
}

struct Located {
  TensorMeta meta;
  uint64_t begin = 0;
};

// The header length from a safetensors file's first 8 bytes (little-endian), checked against the
// file size before anything is allocated: a corrupt or non-safetensors file must not trigger a huge
// allocation.
uint64_t safetensors_header_length(const unsigned char* raw, uint64_t file_size, const std::string& path) {
  if (file_size < 8)
    throw config_error(path + ": " + std::to_string(file_size) +
                       " bytes is too short for a safetensors file (needs an 8-byte header length)");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | raw[i];
  if (header_len > file_size - 8)
    throw config_error(path + ": header length " + std::to_string(header_len) + " exceeds the file size " +
                       std::to_string(file_size) + " (not a safetensors file, or truncated)");
  return header_len;
}

// Tensors of one safetensors header, sorted by their data offset. File-level faults (malformed JSON,
// not an object) throw; per-tensor faults go into `problems`, each prefixed with `prefix` (the
// shard's name when reading an index). `data_size` is the size of the data section after the header.
std::vector<TensorMeta> header_tensors(std::string_view header, uint64_t data_size, const std::string& path,
                                       const std::string& prefix, Problems& problems) {
  Problems local;
  const Json j = parse_json(header, path, "", local).doc;
  if (!j.is_object()) throw config_error(path + ": header must be a JSON object, got " + type_name(j));
  std::vector<Located> found;
  for (const auto& [name, entry] : j.items()) {
    if (name == "__metadata__") continue;
    std::optional<TensorMeta> t = parse_tensor(name, entry, local);
    const std::string where = "tensor '" + name + "'";
    if (!entry.is_object()) continue;  // already reported
    const Json* offsets = entry.contains("data_offsets") ? &entry["data_offsets"] : nullptr;
    if (!offsets) {
      local.add(where + ": missing data_offsets");
      continue;
    }
    if (!offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned()) {
      local.add(where + ": data_offsets must be two non-negative integers, got " + offsets->dump());
      continue;
    }
    const auto begin = (*offsets)[0].get<uint64_t>(), end = (*offsets)[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      local.add(where + ": data_offsets " + offsets->dump() + " lie outside the " + std::to_string(data_size) +
                "-byte data section");
      continue;
    }
    if (!t) continue;
    if (end - begin != static_cast<uint64_t>(t->bytes())) {
      local.add(where + ": data_offsets " + offsets->dump() + " span " + std::to_string(end - begin) +
                " bytes but shape " + t->shape.str() + " of " + std::string(dtype_name(t->dtype)) + " needs " +
                std::to_string(t->bytes()));
      continue;
    }
    found.push_back({std::move(*t), begin});
  }
  for (const std::string& p : local.list()) problems.add(prefix + p);
  // Header key order is unspecified; data order is the file's real order.
  std::stable_sort(found.begin(), found.end(), [](const Located& a, const Located& b) { return a.begin < b.begin; });
  // Two tensors may not share bytes (the safetensors format lays them out one after another).
  for (size_t i = 1; i < found.size(); ++i) {
    const Located &a = found[i - 1], &b = found[i];
    const uint64_t a_end = a.begin + static_cast<uint64_t>(a.meta.bytes());
    if (b.meta.bytes() > 0 && a.meta.bytes() > 0 && b.begin < a_end)
      problems.add(prefix + "tensor '" + b.meta.name + "': data_offsets [" + std::to_string(b.begin) + ", " +
                   std::to_string(b.begin + static_cast<uint64_t>(b.meta.bytes())) + ") overlap tensor '" +
                   a.meta.name + "' [" + std::to_string(a.begin) + ", " + std::to_string(a_end) + ")");
  }
  std::vector<TensorMeta> out;
  out.reserve(found.size());
  for (Located& l : found) out.push_back(std::move(l.meta));
  return out;
}

// Reads only the 8-byte length and the header of the file at `path`, never tensor data.
std::vector<TensorMeta> safetensors_tensors(const std::string& path, const std::string& prefix,
                                            Problems& problems) {
  check_input_file(path, "model");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error("cannot open " + path + ": " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) throw config_error("cannot read " + path + ": not a regular file");
  const auto file_size = static_cast<uint64_t>(end);
  in.seekg(0);
  unsigned char raw[8] = {};
  in.read(reinterpret_cast<char*>(raw), file_size < 8 ? 0 : 8);
  const uint64_t header_len = safetensors_header_length(raw, file_size, path);
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  if (static_cast<uint64_t>(in.gcount()) != header_len)
    throw config_error(path + ": could not read the " + std::to_string(header_len) + "-byte header");
  return header_tensors(header, file_size - 8 - header_len, path, prefix, problems);
}

// Checks shared by a safetensors file and its in-memory form: names unique, at least one tensor.
ModelMeta finish_safetensors(std::vector<TensorMeta> tensors, const std::string& path, Problems& problems) {
  ModelMeta m;
  m.origin = path;
  m.name = file_stem(path);
  m.tensors = std::move(tensors);
  if (problems.empty()) check_unique_and_nonempty(m, problems);
  problems.throw_if_any(path + ": invalid safetensors header");
  return m;
}

}  // namespace

namespace {

// A safetensors file starts with its header's length (8 bytes, little-endian) and the header's '{';
// JSON text starts with '{' itself (or white space).
bool looks_like_safetensors(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char head[9] = {};
  if (!f.read(reinterpret_cast<char*>(head), sizeof head)) return false;
  return head[8] == '{' && head[0] != '{' && !std::isspace(head[0]);
}

// A safetensors index: a JSON object with a "weight_map" object (and no "params": model metadata).
bool looks_like_index(std::string_view text) {
  return text.find("\"weight_map\"") != std::string_view::npos && text.find("\"params\"") == std::string_view::npos;
}

}  // namespace

// By name first (the conventional suffixes), else by content: a renamed shard or index reads as what
// it holds.
ModelMeta load_model(const std::string& path) {
  if (ends_with(path, ".safetensors")) return read_safetensors(path);
  if (ends_with(path, ".safetensors.index.json")) return read_safetensors_index(path);
  if (looks_like_safetensors(path)) return read_safetensors(path);
  const std::string text = read_text(path);
  if (looks_like_index(text)) return read_safetensors_index(path);
  return parse_model_json(text, path);
}

ModelMeta parse_model_json(std::string_view text, const std::string& origin) {
  Problems problems;
  const ParsedJson parsed = parse_json(text, origin, "params", problems);
  const Json& j = parsed.doc;
  ModelMeta m;
  m.origin = origin;
  m.name = file_stem(origin);
  if (!j.is_object()) throw config_error(origin + ": model metadata must be a JSON object, got " + type_name(j));
  if (j.contains("format") && j["format"] == "reshard-plan")
    throw config_error(origin + " is a reshard plan" +
                       (j.contains("fingerprint") && j["fingerprint"].is_string()
                            ? " (fingerprint " + j["fingerprint"].get<std::string>() + ")"
                            : std::string()) +
                       ", not model metadata: give --model the model's tensor listing, and the plan to `reshard "
                       "inspect`, `verify` or `run --plan`");
  // Wrapped form {"model", "source", "params": {...}}; otherwise every key is a tensor.
  const bool wrapped = j.contains("params") && j["params"].is_object();
  const Json& params = wrapped ? j["params"] : j;
  if (wrapped && j.contains("model")) {
    if (j["model"].is_string())
      m.name = j["model"].get<std::string>();
    else
      problems.add("\"model\" must be a string, got " + j["model"].dump());
  }
  m.tensors.reserve(params.size());
  for (const std::string& name : wrapped ? parsed.section_keys : parsed.top_keys) {
    // A key the scan saw may be missing from the document when a duplicate "params" object
    // replaced an earlier one; the duplicate is already a reported problem.
    const auto it = params.find(name);
    if (it == params.end()) continue;
    if (std::optional<TensorMeta> t = parse_tensor(name, *it, problems)) m.tensors.push_back(std::move(*t));
  }
  if (params.empty()) problems.add("no tensors found");
  problems.throw_if_any(origin + ": invalid model metadata");
  return m;
}

ModelMeta read_safetensors(const std::string& path) {
  Problems problems;
  std::vector<TensorMeta> tensors = safetensors_tensors(path, "", problems);
  return finish_safetensors(std::move(tensors), path, problems);
}

ModelMeta parse_safetensors_header(std::string_view bytes, uint64_t file_size, const std::string& origin) {
  if (bytes.size() > file_size)
    throw config_error(origin + ": " + std::to_string(bytes.size()) + " bytes given for a " +
                       std::to_string(file_size) + "-byte file");
  if (bytes.size() < 8 && file_size >= 8)
    throw config_error(origin + ": could not read the 8-byte header length");
  const uint64_t header_len =
      safetensors_header_length(reinterpret_cast<const unsigned char*>(bytes.data()), file_size, origin);
  if (bytes.size() - 8 < header_len)
    throw config_error(origin + ": could not read the " + std::to_string(header_len) + "-byte header");
  Problems problems;
  std::vector<TensorMeta> tensors =
      header_tensors(bytes.substr(8, header_len), file_size - 8 - header_len, origin, "", problems);
  return finish_safetensors(std::move(tensors), origin, problems);
}

ModelMeta read_safetensors_index(const std::string& path) {
  Problems problems;
  const ParsedJson parsed = parse_json(read_text(path), path, "weight_map", problems);
  const Json& j = parsed.doc;
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    throw config_error(path + ": expected a JSON object with a \"weight_map\" object");
  const Json& map = j["weight_map"];
  const fs::path dir = fs::path(path).parent_path();

  // Shards in order of first mention; each header is read once.
  std::vector<std::string> shards;
  std::unordered_map<std::string, size_t> shard_index;
  // Names in file order, each once (a duplicate was already reported by the parse).
  std::vector<std::string> order;
  order.reserve(map.size());
  {
    std::unordered_set<std::string_view> listed;
    for (const std::string& name : parsed.section_keys)
      if (listed.insert(name).second) order.push_back(name);
  }
  for (const std::string& name : order) {
    const Json& shard = map.at(name);
    if (!shard.is_string()) {
      problems.add("weight_map['" + name + "'] must be a file name string, got " + shard.dump());
      continue;
    }
    const auto& file = shard.get_ref<const std::string&>();
    if (shard_index.emplace(file, shards.size()).second) shards.push_back(file);
  }
  std::vector<std::unordered_map<std::string, TensorMeta>> contents(shards.size());
  std::vector<bool> readable(shards.size(), false);
  for (size_t s = 0; s < shards.size(); ++s) {
    try {
      for (TensorMeta& t : safetensors_tensors((dir / shards[s]).string(), shards[s] + ": ", problems)) {
        std::string name = t.name;
        contents[s].emplace(std::move(name), std::move(t));
      }
      readable[s] = true;
    } catch (const Error& e) {
      problems.add(e.what());  // one unreadable shard should not hide problems in the others
    }
  }

  ModelMeta m;
  m.origin = path;
  m.name = file_stem(path);
  for (const std::string& s : shards) m.shard_files.push_back((dir / s).string());
  m.tensors.reserve(map.size());
  for (const std::string& name : order) {
    const Json& shard = map.at(name);
    if (!shard.is_string()) continue;
    const size_t s = shard_index.at(shard.get<std::string>());
    if (!readable[s]) continue;
    auto it = contents[s].find(name);
    if (it == contents[s].end()) {
      problems.add("tensor '" + name + "' is listed in weight_map under " + shards[s] + " but that shard lacks it");
      continue;
    }
    m.tensors.push_back(std::move(it->second));
    contents[s].erase(it);
  }
  // Whatever is left in a shard was never listed: the index and its shards disagree.
  for (size_t s = 0; s < shards.size(); ++s) {
    std::vector<std::string> extra;
    for (const auto& kv : contents[s]) extra.push_back(kv.first);
    std::sort(extra.begin(), extra.end());
    for (const std::string& name : extra)
      problems.add("tensor '" + name + "' is in shard " + shards[s] + " but not in weight_map");
  }
  if (map.empty()) problems.add("weight_map is empty: no tensors found");
  problems.throw_if_any(path + ": invalid safetensors index");
  return m;
}

}  // namespace reshard
