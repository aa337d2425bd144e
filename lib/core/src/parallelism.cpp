#include "reshard/core/parallelism.h"

#include "json_checks.h"
#include "reshard/core/input_file.h"

#include <algorithm>
#include <cerrno>
#include <set>
#include <vector>
#include <charconv>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace reshard {
namespace {

using Json = nlohmann::ordered_json;

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The spec key / JSON key of every field, and where it lives in Parallelism.
struct Field {
  std::string_view spec_key, json_key;
  int Parallelism::*member;
};
constexpr Field kFields[] = {
    {"tp", "tp_size", &Parallelism::tp}, {"pp", "pp_size", &Parallelism::pp},
    {"ep", "ep_size", &Parallelism::ep}, {"etp", "etp_size", &Parallelism::etp},
    {"cp", "cp_size", &Parallelism::cp}, {"dp", "dp_size", &Parallelism::dp},
    {"vpp", "vpp_size", &Parallelism::vpp},
};

void parse_side(const Json& j, const std::string& side, Parallelism& p, Problems& problems) {
  if (!j.is_object()) {
    problems.add(side + ": expected an object, got " + std::string(j.type_name()));
    return;
  }
  auto read_positive = [&](const std::string& key, const Json& v, int& out) {
    if (!v.is_number_integer() || v.get<int64_t>() <= 0 || v.get<int64_t>() > INT32_MAX) {
      problems.add(side + "." + key + ": expected a positive integer, got " + v.dump());
      return;
    }
    out = static_cast<int>(v.get<int64_t>());
  };
  if (!j.contains("num_gpus")) problems.add(side + ": missing num_gpus");
  for (const auto& [key, value] : j.items()) {
    if (key == "num_gpus") {
      read_positive(key, value, p.num_gpus);
      continue;
    }
    const Field* f = nullptr;
    for (const Field& candidate : kFields)
      if (key == candidate.json_key) f = &candidate;
    // Strict: a misspelt size would otherwise silently default to 1.
    if (!f) {
      problems.add(side + ": unknown key '" + key +
                   "' (known: num_gpus tp_size pp_size ep_size etp_size cp_size dp_size vpp_size)");
      continue;
    }
    read_positive(key, value, p.*(f->member));
  }
}

// "train: num_gpus 12 is not divisible by tp*pp = 8 (tp=4, pp=2)" and friends.
void validate_side(Parallelism& p, const std::string& side, bool is_train, bool expert_mesh, Problems& problems) {
  if (p.etp == 0) {  // Megatron's default (ModelParallelConfig.__post_init__): expert TP = TP
    const bool megatron = is_train || expert_mesh;
    p.etp = megatron && p.tp > 0 ? p.tp : 1;
    p.etp_default = megatron;
  }
  bool sizes_ok = true;
  if (p.num_gpus <= 0) {
    problems.add(side + ": num_gpus must be positive, got " + std::to_string(p.num_gpus));
    sizes_ok = false;
  } else if (p.num_gpus > kMaxRanksPerSide) {
    problems.add(side + ": num_gpus " + std::to_string(p.num_gpus) + " exceeds the limit of " +
                 std::to_string(kMaxRanksPerSide) + " ranks per side (docs/reliability.md)");
    sizes_ok = false;
  }
  for (const Field& f : kFields) {
    if (f.spec_key == "dp") continue;
    if (p.*(f.member) <= 0) {
      problems.add(side + ": " + std::string(f.spec_key) + " must be positive, got " +
                   std::to_string(p.*(f.member)));
      sizes_ok = false;
    } else if (p.*(f.member) > kMaxRanksPerSide) {  // before anything sized by it is allocated
      problems.add(side + ": " + std::string(f.spec_key) + " " + std::to_string(p.*(f.member)) +
                   " exceeds the limit of " + std::to_string(kMaxRanksPerSide) + " (docs/reliability.md)");
      sizes_ok = false;
    }
  }
  if (sizes_ok && static_cast<int64_t>(p.pp) * p.vpp > kMaxRanksPerSide) {  // the planner's virtual stages
    problems.add(side + ": pp*vpp = " + std::to_string(static_cast<int64_t>(p.pp) * p.vpp) +
                 " virtual stages exceed the limit of " + std::to_string(kMaxRanksPerSide));
    sizes_ok = false;
  }
  if (!sizes_ok) return;
  const auto s = [](int v) { return std::to_string(v); };
  const int64_t tp_pp = static_cast<int64_t>(p.tp) * p.pp;
  if (p.num_gpus % tp_pp != 0) {
    problems.add(side + ": num_gpus " + s(p.num_gpus) + " is not divisible by tp*pp = " + std::to_string(tp_pp) +
                 " (tp=" + s(p.tp) + ", pp=" + s(p.pp) + ")");
  } else {
    const int derived = static_cast<int>(p.num_gpus / tp_pp);  // CP folds into dp
    if (derived % p.cp != 0)
      problems.add(side + ": dp " + s(derived) + " (num_gpus/(tp*pp)) is not divisible by cp = " + s(p.cp));
    // A given dp may count CP ranks (ours) or not (Megatron's data_parallel_size): accept both.
    if (p.dp != 0 && p.dp != derived && !(p.cp > 1 && static_cast<int64_t>(p.dp) * p.cp == derived)) {
      problems.add(side + ": dp " + s(p.dp) + " disagrees with num_gpus/(tp*pp) = " + s(derived) +
                   " (num_gpus=" + s(p.num_gpus) + ", tp=" + s(p.tp) + ", pp=" + s(p.pp) + ")");
    }
    p.dp = derived;
  }
  if (!is_train && p.vpp != 1)
    problems.add(side + ": vpp is Megatron's interleaved training schedule; the generation side has none (got vpp=" +
                 s(p.vpp) + ")");
  if (is_train || expert_mesh) {
    const int64_t etp_ep_pp = static_cast<int64_t>(p.etp) * p.ep * p.pp;
    if (p.num_gpus % etp_ep_pp != 0)
      problems.add(side + ": num_gpus " + s(p.num_gpus) + " is not divisible by etp*ep*pp = " +
                   std::to_string(etp_ep_pp) + " (etp=" + s(p.etp) + ", ep=" + s(p.ep) + ", pp=" + s(p.pp) + ")");
    if (!is_train && p.pp != 1)
      problems.add(side + ": pp must be 1 with --gen-layout megatron, got " + s(p.pp) +
                   " (generation PP is not supported for a Megatron destination)");
    if (!is_train && p.cp != 1) problems.add(side + ": cp must be 1 on the generation side, got " + s(p.cp));
  } else {
    if (p.ep != 1 && p.ep != p.tp)
      problems.add(side + ": ep " + s(p.ep) + " must be 1 or equal tp = " + s(p.tp) +
                   " (gen experts use the tp axis as ep; an independent gen ep needs --gen-layout megatron)");
    if (p.etp != 1)
      problems.add(side + ": etp must be 1 on the generation side, got " + s(p.etp) +
                   " (gen etp needs --gen-layout megatron)");
    if (p.cp != 1) problems.add(side + ": cp must be 1 on the generation side, got " + s(p.cp));
  }
}

}  // namespace

void parse_parallelism_spec(std::string_view spec, const std::string& side, Parallelism& p, Problems& problems) {
  size_t start = 0;
  std::vector<std::string> seen;  // a key given twice is a mistake, not "the last wins"
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    if (comma == std::string_view::npos) comma = spec.size();
    const std::string_view item = trim(spec.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) {
      if (!trim(spec).empty()) problems.add(side + ": empty item in '" + std::string(spec) + "'");
      continue;
    }
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      problems.add(side + ": '" + std::string(item) + "' is not key=value (in '" + std::string(spec) + "')");
      continue;
    }
    const std::string key(trim(item.substr(0, eq)));
    const std::string_view value = trim(item.substr(eq + 1));
    const Field* f = nullptr;
    for (const Field& candidate : kFields)
      if (key == candidate.spec_key) f = &candidate;
    if (!f) {
      problems.add(side + ": unknown key '" + key + "' in '" + std::string(item) + "' (known: tp pp ep etp cp dp vpp)");
      continue;
    }
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      problems.add(side + ": " + key + " is given twice in '" + std::string(spec) + "'");
      continue;
    }
    seen.push_back(key);
    int parsed = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (ec != std::errc() || end != value.data() + value.size() || parsed <= 0) {
      problems.add(side + ": " + key + "=" + std::string(value) + " is not a positive integer");
      continue;
    }
    p.*(f->member) = parsed;
  }
}

SystemConfig load_system_json(const std::string& path) {
  return parse_system_json(read_input_file(path, "--parallelism"), path);
}

SystemConfig parse_system_json(std::string_view text, const std::string& origin) {
  Json j;
  std::vector<std::string> twice;
  try {
    check_json_depth(text, origin);
    j = Json::parse(text.begin(), text.end(), duplicate_keys<Json>(twice));
  } catch (const Json::parse_error& e) {
    throw config_error(origin + ": malformed JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  } catch (const Json::exception& e) {  // e.g. a number too large for a double (out_of_range 406)
    throw config_error(origin + ": malformed JSON: " + e.what());
  }
  if (!twice.empty()) {
    Problems dup;
    for (const std::string& k : twice) dup.add("key \"" + k + "\" is given twice");
    dup.throw_if_any(origin + ": invalid system config");
  }
  if (!j.is_object()) throw config_error(origin + ": expected a JSON object with \"train\" and \"generation\"");
  SystemConfig sys;
  Problems problems;
  for (const auto& item : j.items())  // as inside each side: a misspelt key must not be dropped silently
    if (item.key() != "train" && item.key() != "generation" && item.key() != "gen")
      problems.add("unknown key \"" + item.key() + "\" (known: train, generation or its alias gen)");
  if (j.contains("train"))
    parse_side(j["train"], "train", sys.train, problems);
  else
    problems.add("missing \"train\"");
  // "gen" is accepted as a short alias of "generation".
  if (j.contains("generation") && j.contains("gen"))
    problems.add("both \"generation\" and \"gen\" given; use one");
  else if (j.contains("generation"))
    parse_side(j["generation"], "generation", sys.gen, problems);
  else if (j.contains("gen"))
    parse_side(j["gen"], "gen", sys.gen, problems);
  else
    problems.add("missing \"generation\"");
  problems.throw_if_any(origin + ": invalid system config");
  return sys;
}

void validate_system(SystemConfig& sys, Problems& problems, bool gen_expert_mesh) {
  validate_side(sys.train, "train", true, true, problems);
  validate_side(sys.gen, "gen", false, gen_expert_mesh, problems);
}

}  // namespace reshard
