// Shared by the fuzz targets: a reshard::Error is the expected way to refuse bad input; any other
// exception escapes and aborts, which libFuzzer (and the replay driver) reports as a crash.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "reshard/core/error.h"

namespace reshard::fuzz {

template <class F>
int run(const uint8_t* data, size_t size, F&& body) {
  try {
    body(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const Error&) {
    // A clear refusal: what bad input must get.
  }
  return 0;
}

}  // namespace reshard::fuzz
