#include "reshard/core/dtype.h"

#include <array>

namespace reshard {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view canonical;    // torch name without the "torch." prefix
  std::string_view safetensors;  // safetensors header name
  std::string_view alias;        // extra torch spelling ("" when none)
  int size;
};

constexpr std::array<DTypeInfo, 16> kTypes{{
    {DType::BF16, "bfloat16", "BF16", "", 2},
    {DType::F16, "float16", "F16", "half", 2},
    {DType::F32, "float32", "F32", "float", 4},
    {DType::F64, "float64", "F64", "double", 8},
    {DType::F8_E4M3, "float8_e4m3fn", "F8_E4M3", "", 1},
    {DType::F8_E5M2, "float8_e5m2", "F8_E5M2", "", 1},
    {DType::F8_E8M0, "float8_e8m0fnu", "F8_E8M0", "", 1},
    {DType::I8, "int8", "I8", "", 1},
    {DType::I16, "int16", "I16", "short", 2},
    {DType::I32, "int32", "I32", "int", 4},
    {DType::I64, "int64", "I64", "long", 8},
    {DType::U8, "uint8", "U8", "", 1},
    {DType::U16, "uint16", "U16", "", 2},
    {DType::U32, "uint32", "U32", "", 4},
    {DType::U64, "uint64", "U64", "", 8},
    {DType::Bool, "bool", "BOOL", "", 1},
}};

const DTypeInfo& info(DType t) {
  for (const DTypeInfo& i : kTypes)
    if (i.type == t) return i;
  return kTypes[0];  // unreachable: every enumerator is in the table
}

}  // namespace

std::optional<DType> parse_dtype(std::string_view name) {
  // Safetensors names are upper case and never carry the torch prefix.
  for (const DTypeInfo& i : kTypes)
    if (name == i.safetensors) return i.type;
  constexpr std::string_view kPrefix = "torch.";
  if (name.substr(0, kPrefix.size()) == kPrefix) name.remove_prefix(kPrefix.size());
  for (const DTypeInfo& i : kTypes)
    if (name == i.canonical || (!i.alias.empty() && name == i.alias)) return i.type;
  return std::nullopt;
}

std::string_view dtype_name(DType t) { return info(t).canonical; }

int dtype_size(DType t) { return info(t).size; }

}  // namespace reshard
