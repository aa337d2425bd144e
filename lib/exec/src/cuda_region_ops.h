// Device versions of region_ops.h: the same contract on device memory, byte for byte equal to the
// host versions. Only built when RESHARD_HAVE_CUDA. No CUDA includes here: `stream` is a
// cudaStream_t passed as void* (nullptr = the legacy default stream).
//
// Every call is asynchronous on `stream`: it validates the arguments, enqueues work and returns;
// pointers must stay valid until the stream reaches that work. Storage, tensor and buffer pointers
// are device pointers (or managed/mapped memory) on the current device. Invalid boxes and CUDA
// failures throw Error(Runtime) naming the call and cudaGetErrorString. Thread-safe per stream.
#pragma once
#include <cstdint>

#include "reshard/core/box.h"
#include "region_ops.h"

namespace reshard {

// Writes pattern_byte(seed, global_linear_index * elem_size + b) into every byte of the region.
void cuda_fill_pattern(void* storage, const RegionSpec& r, void* stream);
// Atomically adds the number of region bytes that differ from the pattern to *device_counter (a
// device pointer); the caller zeroes it first and copies back only the count.
void cuda_count_wrong(const void* storage, const RegionSpec& r, unsigned long long* device_counter,
                      void* stream);
// Copies box `extent` from (src, src_shape at src_offset) to (dst, dst_shape at dst_offset), both
// row-major tensors of elem_size-byte elements; the two boxes must not overlap. A box contiguous in
// both is one cudaMemcpyAsync (cudaMemcpyDefault, so any UVA pointers, peer or IPC-mapped included);
// otherwise a copy kernel over rows, with the widest vector (16..1 bytes) every row start allows.
void cuda_copy_box(const void* src, const Dims& src_shape, const Dims& src_offset, void* dst,
                   const Dims& dst_shape, const Dims& dst_offset, const Dims& extent, int elem_size,
                   void* stream);
// The box (offset, extent) of a row-major tensor of `shape` into/out of a dense buffer of
// extent.product() * elem_size bytes (cuda_copy_box special cases).
void cuda_pack(const void* tensor, const Dims& shape, const Dims& offset, const Dims& extent, int elem_size,
               void* out, void* stream);
void cuda_unpack(const void* in, void* tensor, const Dims& shape, const Dims& offset, const Dims& extent,
                 int elem_size, void* stream);
// Atomically adds to *device_counter the number of bytes that differ between the same box of two
// storages of `storage_shape` (Memory::count_different).
void cuda_count_different(const void* a, const void* b, const Dims& storage_shape, const Dims& offset,
                          const Dims& extent, int elem_size, unsigned long long* device_counter,
                          void* stream);

// Throws Error(Runtime) "<what> failed: <cudaGetErrorName>: <cudaGetErrorString>" unless err is 0
// (cudaSuccess). `err` is a cudaError_t as int, so callers without CUDA headers can use it too.
void cuda_check(int err, const char* what);

}  // namespace reshard
