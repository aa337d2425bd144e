// CudaContext: device selection by local rank, streams, and the allocation registry.
#if RESHARD_HAVE_CUDA
#include "cuda_context.h"

#include <cstdio>

#include "cuda_check.h"
#include "reshard/core/error.h"
#include "reshard/exec/control.h"
#if RESHARD_HAVE_MPI
#include "mpi_check.h"
#endif

namespace reshard {

CudaContext::CudaContext(Control& control, const std::string& transport) {
#if !RESHARD_HAVE_MPI
  throw config_error("--transport " + transport + " needs MPI, which this build lacks");
#else
  // MPI first, on every rank, so a CUDA failure below never leaves other ranks in a collective.
  MPI_Comm world = *static_cast<MPI_Comm*>(control.native_comm());
  MPI_Comm node = MPI_COMM_NULL;
  RESHARD_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, control.rank(), MPI_INFO_NULL, &node));
  MPI_Comm_rank(node, &local_rank);
  MPI_Comm_size(node, &local_size);
  MPI_Comm_free(&node);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  host.assign(name, static_cast<size_t>(len));

  const cudaError_t count_err = cudaGetDeviceCount(&device_count);
  if (count_err != cudaSuccess || device_count == 0)
    throw config_error("--transport " + transport + " needs a CUDA device, but rank " + std::to_string(control.rank()) +
                       " on " + host + " sees none (cudaGetDeviceCount: " +
                       (count_err != cudaSuccess ? std::string(cudaGetErrorString(count_err)) : "0 devices") +
                       "); use --transport mpi on hosts without GPUs");
  device = local_rank % device_count;
  RESHARD_CUDA_CHECK(cudaSetDevice(device));
  RESHARD_CUDA_CHECK(cudaFree(nullptr));  // create the context now, not inside a timed region
  cudaDeviceProp prop{};
  RESHARD_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  device_name = prop.name;
  char bus[32] = {};
  RESHARD_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device));
  pci_bus_id = bus;
  RESHARD_CUDA_CHECK(cudaRuntimeGetVersion(&runtime_version));
  RESHARD_CUDA_CHECK(cudaDriverGetVersion(&driver_version));
#endif
}

CudaContext::~CudaContext() {
  for (cudaEvent_t e : events_) cudaEventDestroy(e);  // no throwing from a destructor
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
}

cudaEvent_t CudaContext::take_event() {
  if (!events_.empty()) {
    cudaEvent_t e = events_.back();
    events_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  RESHARD_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void CudaContext::give_event(cudaEvent_t e) {
  if (e != nullptr) events_.push_back(e);
}

void CudaContext::ensure_streams(int n) {
  RESHARD_CUDA_CHECK(cudaSetDevice(device));
  while (static_cast<int>(streams_.size()) < n) {
    cudaStream_t s = nullptr;
    RESHARD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    streams_.push_back(s);
  }
}

cudaStream_t CudaContext::stream(int i) const {
  if (i < 0 || i >= static_cast<int>(streams_.size()))
    throw runtime_error("CUDA stream " + std::to_string(i) + " outside the " + std::to_string(streams_.size()) +
                        " set up");
  return streams_[static_cast<size_t>(i)];
}

void CudaContext::sync_all() const {
  for (cudaStream_t s : streams_) RESHARD_CUDA_CHECK(cudaStreamSynchronize(s));
}

void CudaContext::add_allocation(void* base, int64_t bytes) {
  allocations_[reinterpret_cast<uintptr_t>(base)] = Allocation{next_id_++, bytes};
}

void CudaContext::remove_allocation(void* base) { allocations_.erase(reinterpret_cast<uintptr_t>(base)); }

std::pair<uintptr_t, CudaContext::Allocation> CudaContext::find(const void* p, int64_t bytes) const {
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto it = allocations_.upper_bound(at);
  if (it != allocations_.begin()) {
    --it;
    if (at + static_cast<uintptr_t>(bytes) <= it->first + static_cast<uintptr_t>(it->second.bytes)) return *it;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%p", p);
  throw runtime_error(std::string("device buffer ") + buf + " (+" + std::to_string(bytes) +
                      " bytes) is not inside an allocation of this rank's CudaMemory");
}

std::string CudaContext::describe() const {
  return device_name + " (device " + std::to_string(device) + " of " + std::to_string(device_count) + ", " +
         pci_bus_id + ", " + std::to_string(local_size) + " ranks on " + host + ")";
}

}  // namespace reshard
#endif
