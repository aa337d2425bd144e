// Plan serialization: JSON or CBOR, versioned and deterministic (same plan -> same bytes).
// Reading is strict: a missing or mistyped key, a wrong format or a newer version is an
// Error(Config) naming the file and the key.
#pragma once
#include <string>
#include <vector>

#include "reshard/core/plan.h"

namespace reshard {

enum class PlanFormat { Json, Cbor };

// From the file extension: ".cbor" -> Cbor, anything else -> Json.
PlanFormat plan_format_for_path(const std::string& path);
std::vector<uint8_t> encode_plan(const Plan& plan, PlanFormat format);
Plan decode_plan(const std::vector<uint8_t>& bytes, const std::string& origin);  // sniffs JSON vs CBOR
// Writes through write_output (output_file.h): no partial file is ever visible, an existing file is
// replaced only with `force`, never a non-regular file or one of `inputs` (Error(Config)).
void save_plan(const Plan& plan, const std::string& path, PlanFormat format, bool force,
               const std::vector<std::string>& inputs = {});
Plan load_plan(const std::string& path);

}  // namespace reshard
