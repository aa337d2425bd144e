// Plan files: format from the extension, exclusive atomic save (output_file.h), load with sniffing.
#include "reshard/core/plan_io.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "reshard/core/error.h"
#include "reshard/core/input_file.h"
#include "reshard/core/output_file.h"

namespace reshard {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

}  // namespace

PlanFormat plan_format_for_path(const std::string& path) {
  return lower(std::filesystem::path(path).extension().string()) == ".cbor" ? PlanFormat::Cbor
                                                                            : PlanFormat::Json;
}

void save_plan(const Plan& plan, const std::string& path, PlanFormat format, bool force,
               const std::vector<std::string>& inputs) {
  if (const std::string bad = output_problem("-o", path, force, inputs); !bad.empty()) throw config_error(bad);
  // Encode before touching the file system: an encoding error leaves nothing behind.
  const std::vector<uint8_t> bytes = encode_plan(plan, format);
  write_output("-o", path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), force,
               inputs);
}

Plan load_plan(const std::string& path) {
  const std::string text = read_input_file(path, "plan");
  return decode_plan(std::vector<uint8_t>(text.begin(), text.end()), path);
}

}  // namespace reshard
