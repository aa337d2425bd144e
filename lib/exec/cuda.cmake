# CUDA part of reshard::exec: device kernels for region ops. Included by lib/exec/CMakeLists.txt when
# RESHARD_HAVE_CUDA (the top level has already found CUDAToolkit and enabled the CUDA language).
# Host-side CUDA code lives in src/*.cpp guarded by RESHARD_HAVE_CUDA (cuda_memory, cuda_context,
# cuda_ipc_transport, nccl_transport), so only kernels (src/*.cu) are compiled here.
file(GLOB RESHARD_EXEC_KERNELS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/src/*.cu)
target_sources(reshard_exec PRIVATE ${RESHARD_EXEC_KERNELS})
target_link_libraries(reshard_exec PUBLIC CUDA::cudart)
target_compile_definitions(reshard_exec PUBLIC RESHARD_HAVE_CUDA=1)
if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set_target_properties(reshard_exec PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
else()
  set_target_properties(reshard_exec PROPERTIES CUDA_ARCHITECTURES 90)
endif()
# Kernels are C++17: the shared headers they include need no more, and CMake 3.25 cannot ask nvcc
# for C++20 (CUDA20 "not supported").
set_target_properties(reshard_exec PROPERTIES CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON)
# NCCL transport (src/nccl_transport.cpp, guarded by RESHARD_HAVE_NCCL): the top level found NCCL
# (cmake/FindNCCL.cmake) only when CUDA is on.
if(RESHARD_HAVE_NCCL)
  if(NOT TARGET NCCL::nccl)
    find_package(NCCL REQUIRED)
  endif()
  target_link_libraries(reshard_exec PUBLIC NCCL::nccl)
  target_compile_definitions(reshard_exec PUBLIC RESHARD_HAVE_NCCL=1)
endif()
