// Device MXFP8 quantizer: the rounding of reshard/core/mxfp8.h, over a dense BF16 buffer into a box of
// e4m3 values and E8M0 scales, bit for bit equal to the CPU reference. Only built when
// RESHARD_HAVE_CUDA; no CUDA includes here (`stream` is a cudaStream_t).
//
// Asynchronous on `stream`; pointers are device pointers on the current device and must stay valid
// until the stream reaches the work. Any alignment works (16-byte BF16 and 8-byte values take the
// vector path, others a scalar one). Bad shapes and CUDA failures throw Error(Runtime).
#pragma once
#include "reshard/core/box.h"

namespace reshard {

// How the kernel turns a scaled finite element into e4m3. Both give the bytes of mxfp8.h (the GPU
// tests check each against it); they differ only in speed. kHardware is the sm_89+ cvt instruction
// (RNE, saturating; NaN/Inf never reach it); on older devices it falls back to kInteger, a
// branch-free float/integer rounding.
enum class Mxfp8Convert { kHardware, kInteger };

// bf16: dense row-major [extent]; values: e4m3 tensor of `shape`; scales: E8M0 tensor of
// mxfp8_scale_shape(shape). The box (offset, extent) spans whole 32-element blocks of the last dim.
void cuda_quantize_mxfp8(const void *bf16, const Dims &extent, void *values, void *scales,
                         const Dims &shape, const Dims &offset, void *stream,
                         Mxfp8Convert convert = Mxfp8Convert::kHardware);

}  // namespace reshard
