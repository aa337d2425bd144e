// make_transport / make_memory_for: the transports and memories this build has, by name.
#include <string>

#include "reshard/core/error.h"
#include "transport.h"
#include "transports.h"

namespace reshard {

std::vector<std::string> available_transports() {
  std::vector<std::string> names;
#if RESHARD_HAVE_MPI
  names.push_back("mpi");
#if RESHARD_HAVE_CUDA
  names.push_back("cuda-ipc");
#endif
#if RESHARD_HAVE_CUDA && RESHARD_HAVE_NCCL
  names.push_back("nccl");
#endif
#endif
  return names;
}

std::unique_ptr<Transport> make_transport(const std::string& name, Control& control, const TransportOptions& options) {
#if RESHARD_HAVE_MPI
  if (name == "mpi") return make_mpi_transport(control, options);
#if RESHARD_HAVE_CUDA
  if (name == "cuda-ipc") return make_cuda_ipc_transport(control, options);
#endif
#if RESHARD_HAVE_CUDA && RESHARD_HAVE_NCCL
  if (name == "nccl") return make_nccl_transport(control, options);
#endif
#endif
  (void)control;
  (void)options;
  std::string built;
  for (const std::string& n : available_transports()) built += (built.empty() ? "" : ", ") + n;
  const bool known = name == "mpi" || name == "cuda-ipc" || name == "nccl";
  throw config_error((known ? "transport '" + name + "' was not built into this reshard"
                            : "unknown transport '" + name + "'") +
                     " (built: " + (built.empty() ? "none; MPI support was not built" : built) + ")");
}

std::unique_ptr<Memory> make_memory_for(const Transport& transport) {
  if (transport.memory_kind() == MemoryKind::Host) return make_host_memory();
#if RESHARD_HAVE_CUDA
  if (auto context = transport.cuda_context()) return make_cuda_memory(context);
#endif
  throw config_error("transport " + transport.name() + " needs device memory, which this build lacks");
}

}  // namespace reshard
