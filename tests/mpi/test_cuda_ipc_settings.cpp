// cuda-ipc's settings (lib/exec/src/cuda_ipc_settings.h): flag over variable over default, echoed;
// bad values named by where they came from. Plain C++: runs without a GPU.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "cuda_ipc_settings.h"
#include "reshard/core/error.h"

namespace reshard {
namespace {

// Sets (or unsets) the RESHARD_CUDA_IPC_* variables for one test.
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* n : kNames) unsetenv(n);
    for (const auto& [n, v] : vars) setenv(n, v, 1);
  }
  ~Env() {
    for (const char* n : kNames) unsetenv(n);
  }

 private:
  static constexpr const char* kNames[] = {"RESHARD_CUDA_IPC_MODE", "RESHARD_CUDA_IPC_BOXES", "RESHARD_CUDA_IPC_BATCH",
                                           "RESHARD_CUDA_IPC_MEMCPY_MIN", "RESHARD_CUDA_IPC_LAUNCH_BYTES",
                                           "RESHARD_CUDA_IPC_TRACE"};
};

constexpr int64_t kNever = INT64_MAX;

TEST(CudaIpcSettings, DefaultsThenVariablesThenFlags) {
  {
    Env env({});
    const CudaIpcSettings s = CudaIpcSettings::resolve({}, kNever);
    EXPECT_TRUE(s.push && s.boxes && s.batch);
    EXPECT_EQ(s.memcpy_min, kNever);
    EXPECT_EQ(s.launch_bytes, 0);
    EXPECT_EQ(s.describe(), "push, box ops, batched copies");
  }
  {
    Env env({{"RESHARD_CUDA_IPC_MODE", "pull"}, {"RESHARD_CUDA_IPC_BOXES", "0"}, {"RESHARD_CUDA_IPC_MEMCPY_MIN", "4096"}});
    const CudaIpcSettings s = CudaIpcSettings::resolve({}, kNever);
    EXPECT_FALSE(s.push);
    EXPECT_FALSE(s.boxes);
    EXPECT_EQ(s.memcpy_min, 4096);
    EXPECT_EQ(s.describe(), "pull, staged (boxes off), batched copies, cudaMemcpyAsync from 4096 B");
    TransportOptions::CudaIpc flags;
    flags.mode = "push";
    flags.boxes = "on";
    flags.memcpy_min = "8Mi";
    const CudaIpcSettings f = CudaIpcSettings::resolve(flags, kNever);  // the flags win
    EXPECT_TRUE(f.push && f.boxes);
    EXPECT_EQ(f.memcpy_min, 8 << 20);
  }
}

TEST(CudaIpcSettings, BadValuesNameWhereTheyCameFrom) {
  {
    Env env({{"RESHARD_CUDA_IPC_BATCH", "maybe"}});
    try {
      CudaIpcSettings::resolve({}, kNever);
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Config);
      EXPECT_NE(std::string(e.what()).find("RESHARD_CUDA_IPC_BATCH='maybe': expected on or off"), std::string::npos)
          << e.what();
    }
  }
  Env env({});
  TransportOptions::CudaIpc flags;
  flags.mode = "sideways";  // kept, not thrown: the transport agrees with the other ranks first
  EXPECT_EQ(CudaIpcSettings::resolve(flags, kNever).mode_error, "--ipc-mode 'sideways': expected push (the default) or pull");
}

}  // namespace
}  // namespace reshard
