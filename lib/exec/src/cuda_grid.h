// Grid size for grid-stride kernels (private to lib/exec's .cu files): enough blocks of `threads` for
// `items` work items, capped at one resident wave of `kernel` on the current device.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_check.h"

namespace reshard {

template <class Kernel>
unsigned grid_for(Kernel kernel, int64_t items, int threads) {
  int device = 0, sms = 0, per_sm = 0;
  RESHARD_CUDA_CHECK(cudaGetDevice(&device));
  RESHARD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  RESHARD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0));
  const int64_t needed = (items + threads - 1) / threads, cap = int64_t{sms} * (per_sm > 0 ? per_sm : 1);
  return static_cast<unsigned>(needed < cap ? needed : cap);
}

}  // namespace reshard
