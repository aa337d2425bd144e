// Fuzz target: the model metadata JSON reader.
#include "fuzz_target.h"
#include "reshard/core/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return reshard::fuzz::run(data, size, [](std::string_view text) {
    const reshard::ModelMeta m = reshard::parse_model_json(text, "fuzz.json");
    for (const reshard::TensorMeta& t : m.tensors) (void)t.bytes();  // must not overflow (UBSan)
  });
}
