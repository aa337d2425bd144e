#include "cuda_ipc_settings.h"

#include <cerrno>
#include <cstdlib>

#include "reshard/core/error.h"

namespace reshard {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// A byte-count knob (digits only); `fallback` when unset.
int64_t env_bytes(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr) return fallback;
  const std::string s(v);
  errno = 0;
  const long long n = std::strtoll(s.c_str(), nullptr, 10);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || errno != 0)
    throw config_error(std::string(name) + "='" + s + "': expected a byte count (digits only)");
  return n;
}

}  // namespace

CudaIpcSettings CudaIpcSettings::resolve(const std::string& mode_flag, int64_t default_memcpy_min) {
  CudaIpcSettings s;
  const std::string from_env = env("RESHARD_CUDA_IPC_MODE");
  const std::string mode = !mode_flag.empty() ? mode_flag : from_env;
  if (!mode.empty() && mode != "push" && mode != "pull")
    s.mode_error = (mode_flag.empty() ? "RESHARD_CUDA_IPC_MODE='" : "--ipc-mode '") + mode +
                   "': expected push (the default) or pull";
  s.push = mode != "pull";
  s.boxes = env("RESHARD_CUDA_IPC_BOXES") != "0";
  s.batch = env("RESHARD_CUDA_IPC_BATCH") != "0";
  s.memcpy_min = env_bytes("RESHARD_CUDA_IPC_MEMCPY_MIN", default_memcpy_min);
  s.launch_bytes = env_bytes("RESHARD_CUDA_IPC_LAUNCH_BYTES", 0);
  s.trace = env("RESHARD_CUDA_IPC_TRACE");
  return s;
}

std::string CudaIpcSettings::describe() const {
  std::string out = push ? "push" : "pull";
  out += boxes ? ", box ops" : ", staged (BOXES=0)";
  out += batch ? ", batched copies" : ", one copy per overlap (BATCH=0)";
  if (launch_bytes > 0) out += ", early launch from " + std::to_string(launch_bytes) + " B";
  if (!trace.empty()) out += ", tracing to " + trace + ".<rank>.tsv";
  return out;
}

}  // namespace reshard
