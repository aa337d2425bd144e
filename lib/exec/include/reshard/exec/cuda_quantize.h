// Device MXFP8 quantizer: the rounding of reshard/core/mxfp8.h (the same
// header-only element code, so it agrees bit for bit with the CPU reference),
// over a dense BF16 buffer into a box of e4m3 values and E8M0 scales. Only
// built when RESHARD_HAVE_CUDA; no CUDA includes here (`stream` is a
// cudaStream_t).
//
// Asynchronous on `stream`; pointers are device pointers on the current device
// and must stay valid until the stream reaches the work. Bad shapes and CUDA
// failures throw Error(Runtime).
#pragma once
#include "reshard/core/box.h"

namespace reshard {

// bf16: dense row-major [extent]; values: e4m3 tensor of `shape`; scales: E8M0
// tensor of mxfp8_scale_shape(shape). The box (offset, extent) spans whole
// 32-element blocks of the last dim.
void cuda_quantize_mxfp8(const void *bf16, const Dims &extent, void *values,
                         void *scales, const Dims &shape, const Dims &offset,
                         void *stream);

} // namespace reshard
