#include "reshard/core/layer_map.h"

#include <climits>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <sstream>

#include "json_checks.h"
#include "reshard/core/units.h"

namespace reshard {

std::vector<int> parse_layer_map(std::string_view text, const std::string& path, Problems& problems) {
  const std::string where = "--layer-map " + path + ": ";
  nlohmann::json j;
  std::vector<std::string> twice;  // a layer given two stages: the model loader refuses the same
  try {
    check_json_depth(text, "--layer-map " + path);
    j = nlohmann::json::parse(text, duplicate_keys<nlohmann::json>(twice));
  } catch (const nlohmann::json::parse_error& e) {
    problems.add(where + "malformed JSON at byte " + std::to_string(e.byte));
    return {};
  } catch (const nlohmann::json::exception& e) {  // e.g. a number too large for a double
    problems.add(where + "malformed JSON: " + e.what());
    return {};
  }
  for (const std::string& k : twice) problems.add(where + "layer \"" + k + "\" is given twice");
  if (!twice.empty()) return {};
  std::vector<int> stages;
  auto stage_of = [&](const nlohmann::json& v, const std::string& at) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
      problems.add(where + at + ": stage must be a non-negative integer, got " + v.dump());
      return -1;
    }
    return static_cast<int>(v.get<int64_t>());
  };
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) stages.push_back(stage_of(j[i], "entry " + std::to_string(i)));
  } else if (j.is_object()) {
    stages.assign(j.size(), -1);
    std::vector<bool> seen(j.size(), false);
    for (const auto& item : j.items()) {
      int64_t layer = -1;
      try {
        layer = parse_integer(item.key(), "layer", 0, static_cast<int64_t>(j.size()) - 1);
      } catch (const Error&) {
        problems.add(where + "key '" + item.key() + "' is not a layer index in [0, " + std::to_string(j.size()) +
                     ") (the map must cover layers 0..N-1)");
        continue;
      }
      seen[static_cast<size_t>(layer)] = true;
      stages[static_cast<size_t>(layer)] = stage_of(item.value(), "layer " + item.key());
    }
    for (size_t l = 0; l < seen.size(); ++l)
      if (!seen[l]) problems.add(where + "layer " + std::to_string(l) + " is missing");
  } else {
    problems.add(where + "expected an object {\"<layer>\": stage} or a list of stages");
  }
  return stages;
}

std::vector<int> parse_layer_list(const std::string& list, const std::string& flag, Problems& problems) {
  std::vector<int> out;
  std::stringstream s(list);
  std::string item;
  size_t items = 0;
  while (std::getline(s, item, ',')) {
    ++items;
    try {
      out.push_back(static_cast<int>(parse_integer(item, flag, 0, INT32_MAX)));
    } catch (const Error& e) {
      if (e.code() != ErrorCode::Config) throw;
      problems.add(e.what());
    }
  }
  if (items == 0) problems.add(flag + ": '" + list + "' lists no layer");
  return out;
}

}  // namespace reshard
