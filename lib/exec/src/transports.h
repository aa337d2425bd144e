// Constructors of the transports compiled into this build (private to lib/exec); make_transport()
// in transport_factory.cpp picks one by name.
#pragma once
#include <memory>

#include "transport.h"

namespace reshard {

#if RESHARD_HAVE_MPI
std::unique_ptr<Transport> make_mpi_transport(Control& control, const TransportOptions& options);
#if RESHARD_HAVE_CUDA
std::unique_ptr<Transport> make_cuda_ipc_transport(Control& control, const TransportOptions& options);
#endif
#if RESHARD_HAVE_CUDA && RESHARD_HAVE_NCCL
std::unique_ptr<Transport> make_nccl_transport(Control& control, const TransportOptions& options);
#endif
#endif
#if RESHARD_HAVE_CUDA
std::unique_ptr<Memory> make_cuda_memory(std::shared_ptr<CudaContext> context);
#endif

}  // namespace reshard
