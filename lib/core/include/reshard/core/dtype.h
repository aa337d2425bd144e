// Element types, named as torch and safetensors name them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace reshard {

enum class DType : uint8_t {
  BF16, F16, F32, F64, F8_E4M3, F8_E5M2, F8_E8M0, I8, I16, I32, I64, U8, U16, U32, U64, Bool
};

// Accepts torch names (bfloat16, torch.bfloat16, float8_e4m3fn, float32, ...) and
// safetensors names (BF16, F8_E4M3, F32, ...). nullopt when unknown.
std::optional<DType> parse_dtype(std::string_view name);
// Canonical (torch-style) name, e.g. "bfloat16"; what plans store.
std::string_view dtype_name(DType t);
int dtype_size(DType t);

}  // namespace reshard
