// Checking CUDA runtime calls (private to lib/exec; CUDA builds only). Every call goes through
// RESHARD_CUDA_CHECK, which throws Error(Runtime) naming the call's text, where it was made and
// CUDA's own error name and string. The library never exits on a CUDA error.
#pragma once
#include <cuda_runtime_api.h>

#include "cuda_region_ops.h"

#define RESHARD_CUDA_STR2(x) #x
#define RESHARD_CUDA_STR(x) RESHARD_CUDA_STR2(x)
#define RESHARD_CUDA_CHECK(call) \
  ::reshard::cuda_check(static_cast<int>(call), #call " at " __FILE__ ":" RESHARD_CUDA_STR(__LINE__))
// After a <<<...>>> launch: launch errors (bad configuration, no device) surface here.
#define RESHARD_CUDA_CHECK_LAUNCH(kernel)                       \
  ::reshard::cuda_check(static_cast<int>(cudaGetLastError()), \
                        "launch of " #kernel " at " __FILE__ ":" RESHARD_CUDA_STR(__LINE__))
