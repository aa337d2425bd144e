// Checks on the JSON inputs read as a DOM (model metadata, safetensors headers and indices, system
// files, layer maps, rules): nesting depth, keys given twice. Private to lib/core.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace reshard {

// These inputs nest a few levels. nlohmann's parser is iterative, but dump() (our messages quote
// values) and our walkers recurse: a document 200000 arrays deep overflowed the stack. Plans have the
// same bound in their SAX pass (plan_sax.cpp).
inline constexpr int kMaxJsonDepth = 64;

// One SAX pass (iterative, no DOM): Error(Config) naming `origin` where a container opens deeper than
// kMaxJsonDepth. Malformed text passes quietly, for the parse that follows to name. (Not a parser
// callback: nlohmann's callback parser rescans the parent object at each object's end, quadratic in
// a model's tensor count.)
void check_json_depth(std::string_view text, const std::string& origin);

// A parser callback (for small documents: see above) that records in `twice` every key an object
// gives twice, where nlohmann silently keeps the last.
template <class J>
typename J::parser_callback_t duplicate_keys(std::vector<std::string>& twice) {
  auto open = std::make_shared<std::vector<std::set<std::string>>>();  // one set of keys per open object
  return [open, &twice](int /*depth*/, typename J::parse_event_t event, J& parsed) {
    if (event == J::parse_event_t::object_start) open->emplace_back();
    if (event == J::parse_event_t::object_end && !open->empty()) open->pop_back();
    if (event != J::parse_event_t::key || open->empty()) return true;
    const std::string key = parsed.template get<std::string>();
    if (!open->back().insert(key).second) twice.push_back(key);
    return true;
  };
}

}  // namespace reshard
