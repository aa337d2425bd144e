// Fuzz target: the safetensors header reader (8-byte length + JSON header), on the input as a whole
// file and, to exercise lengths that point past what was read, as the start of a larger file.
#include "fuzz_target.h"
#include "reshard/core/model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return reshard::fuzz::run(data, size, [](std::string_view bytes) {
    try {
      const reshard::ModelMeta m = reshard::parse_safetensors_header(bytes, bytes.size(), "fuzz.safetensors");
      for (const reshard::TensorMeta& t : m.tensors) (void)t.bytes();
    } catch (const reshard::Error&) {
    }
    reshard::parse_safetensors_header(bytes, bytes.size() + 4096, "fuzz.safetensors");
  });
}
