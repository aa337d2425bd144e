// Helpers shared by the GPU unit tests: CUDA error checks, a device buffer, and the reason to skip.
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace reshard::gpu_test {

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess) FAIL() << what << ": " << cudaGetErrorString(err);
}

// Why GPU tests cannot run here ("" when a CUDA device is present). Use in SetUp:
//   if (const std::string why = no_device_reason(); !why.empty()) GTEST_SKIP() << why;
inline std::string no_device_reason() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) return std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(err);
  if (count == 0) return "no CUDA device: cudaGetDeviceCount returned 0";
  return "";
}

// A device buffer `bytes` long that starts `misalign` bytes past a 256-byte aligned allocation.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(int64_t bytes, int misalign = 0) : bytes_(bytes), misalign_(misalign) {
    check(cudaMalloc(&base_, static_cast<size_t>(bytes + misalign + 1)), "cudaMalloc");
  }
  ~DeviceBuffer() { cudaFree(base_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  uint8_t* get() const { return static_cast<uint8_t*>(base_) + misalign_; }
  void upload(const std::vector<uint8_t>& host) {
    check(cudaMemcpy(get(), host.data(), host.size(), cudaMemcpyHostToDevice), "upload");
  }
  std::vector<uint8_t> download() const {
    std::vector<uint8_t> host(static_cast<size_t>(bytes_));
    check(cudaMemcpy(host.data(), get(), host.size(), cudaMemcpyDeviceToHost), "download");
    return host;
  }

 private:
  void* base_ = nullptr;
  int64_t bytes_;
  int misalign_;
};

}  // namespace reshard::gpu_test
