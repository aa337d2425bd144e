// The event pass of decode_plan (plan_decode.cpp), private to lib/core: one SAX pass over JSON text
// or CBOR bytes. Transfers and fan-out ops (up to millions) go straight into the Plan's flat vectors;
// everything else, a few thousand small objects, into a DOM for the typed reading.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

inline std::string index_path(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }
inline std::string key_path(const std::string& path, const char* key) {
  return path.empty() ? std::string(key) : path + "." + key;
}

// Per-param slices of Plan::transfers / Plan::fanouts, as the SAX pass found them.
struct Slice {
  bool seen = false;
  uint64_t begin = 0, count = 0;
};

struct PlanEvents {
  nlohmann::json root;  // the document without its transfers / fanouts lists
  std::vector<Slice> transfer_slices, fanout_slices;  // by param index
};

// Appends the transfers and fan-outs to plan.transfers / plan.fanouts. Throws Error(Config) naming
// `origin` and the position or JSON path (empty input, malformed syntax, bad records, depth > 64).
PlanEvents parse_plan_events(const std::vector<uint8_t>& bytes, Plan& plan, const std::string& origin);

}  // namespace reshard
