// What a GPU transport and its CudaMemory share (private to lib/exec; CUDA builds only): the device
// this rank runs on, the CUDA streams the executor's stream indices map to, and the registry of
// device allocations (so a transport can name a buffer as allocation + offset, e.g. for CUDA IPC).
#pragma once
#if RESHARD_HAVE_CUDA
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace reshard {

class Control;

struct CudaContext {
  struct Allocation {
    int64_t id = 0;  // unique per rank, never reused
    int64_t bytes = 0;
  };

  // Collective over the world: splits it by node (MPI_COMM_TYPE_SHARED) and selects device
  // local rank % device count, so one command runs on 1 or 8 GPUs and ranks may share a GPU.
  // Throws Error(Config) when no device is usable, naming `transport`.
  CudaContext(Control& control, const std::string& transport);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  void ensure_streams(int n);  // creates non-blocking streams up to n
  // Events without timing, from a pool the transports share (destroyed with the context).
  cudaEvent_t take_event();
  void give_event(cudaEvent_t e);
  cudaStream_t stream(int i) const;
  void sync_all() const;

  void add_allocation(void* base, int64_t bytes);
  void remove_allocation(void* base);
  // The allocation holding [p, p + bytes): its base and record. Throws Error(Runtime) when none does.
  std::pair<uintptr_t, Allocation> find(const void* p, int64_t bytes) const;

  std::string describe() const;  // "NVIDIA H200 (device 0 of 1, pci 0000:..., 4 ranks on this node)"

  int device = 0, device_count = 0;
  int local_rank = 0, local_size = 1;  // on this node
  std::string device_name, pci_bus_id, host;
  int runtime_version = 0, driver_version = 0;

 private:
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;  // free for reuse
  std::map<uintptr_t, Allocation> allocations_;
  int64_t next_id_ = 0;
};

}  // namespace reshard
#endif
