// Compiled only in CUDA builds (cuda.cmake defines RESHARD_HAVE_CUDA); the src/*.cpp glob picks it up
// in every build, so without CUDA it is empty.
#if RESHARD_HAVE_CUDA
#include "cuda_check.h"

#include <string>

#include "reshard/core/error.h"

namespace reshard {

void cuda_check(int err, const char* what) {
  if (err == 0) return;
  const auto e = static_cast<cudaError_t>(err);
  throw runtime_error(std::string(what) + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

}  // namespace reshard
#endif
