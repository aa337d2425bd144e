#include "cuda_ipc_settings.h"

#include <cerrno>
#include <cstdlib>

#include "reshard/core/error.h"
#include "reshard/core/units.h"

namespace reshard {
namespace {

// The flag's value when given, else the variable's; `from` names where it came from.
std::string pick(const std::string& flag, const char* flag_name, const char* var, std::string& from) {
  if (!flag.empty()) {
    from = std::string(flag_name) + " '" + flag + "'";
    return flag;
  }
  const char* v = std::getenv(var);
  from = std::string(var) + "='" + (v == nullptr ? "" : v) + "'";
  return v == nullptr ? std::string() : std::string(v);
}

// on/off (1/0 for the variables); `fallback` when unset.
bool on_off(const std::string& flag, const char* flag_name, const char* var, bool fallback) {
  std::string from;
  const std::string v = pick(flag, flag_name, var, from);
  if (v.empty()) return fallback;
  if (v == "on" || v == "1") return true;
  if (v == "off" || v == "0") return false;
  throw config_error(from + ": expected on or off (1 or 0)");
}

// A byte count (digits, or a size such as 8Mi for the flags); `fallback` when unset.
int64_t bytes(const std::string& flag, const char* flag_name, const char* var, int64_t fallback) {
  std::string from;
  const std::string v = pick(flag, flag_name, var, from);
  if (v.empty()) return fallback;
  if (!flag.empty()) return parse_size(v, flag_name);
  errno = 0;
  const long long n = std::strtoll(v.c_str(), nullptr, 10);
  if (v.find_first_not_of("0123456789") != std::string::npos || errno != 0)
    throw config_error(from + ": expected a byte count (digits only)");
  return n;
}

}  // namespace

CudaIpcSettings CudaIpcSettings::resolve(const TransportOptions::CudaIpc& flags, int64_t default_memcpy_min) {
  CudaIpcSettings s;
  std::string from;
  const std::string mode = pick(flags.mode, "--ipc-mode", "RESHARD_CUDA_IPC_MODE", from);
  if (!mode.empty() && mode != "push" && mode != "pull")
    s.mode_error = (flags.mode.empty() ? "RESHARD_CUDA_IPC_MODE='" : "--ipc-mode '") + mode +
                   "': expected push (the default) or pull";
  s.push = mode != "pull";
  s.boxes = on_off(flags.boxes, "--ipc-boxes", "RESHARD_CUDA_IPC_BOXES", true);
  s.batch = on_off(flags.batch, "--ipc-batch", "RESHARD_CUDA_IPC_BATCH", true);
  s.memcpy_min = bytes(flags.memcpy_min, "--ipc-memcpy-min", "RESHARD_CUDA_IPC_MEMCPY_MIN", default_memcpy_min);
  s.launch_bytes = bytes(flags.launch_bytes, "--ipc-launch-bytes", "RESHARD_CUDA_IPC_LAUNCH_BYTES", 0);
  s.trace = pick(flags.trace, "--ipc-trace", "RESHARD_CUDA_IPC_TRACE", from);
  return s;
}

std::string CudaIpcSettings::describe() const {
  std::string out = push ? "push" : "pull";
  out += boxes ? ", box ops" : ", staged (boxes off)";
  out += batch ? ", batched copies" : ", one copy per overlap (batch off)";
  if (memcpy_min >= 0 && memcpy_min < (int64_t{1} << 62)) out += ", cudaMemcpyAsync from " + std::to_string(memcpy_min) + " B";
  if (launch_bytes > 0) out += ", early launch from " + std::to_string(launch_bytes) + " B";
  if (!trace.empty()) out += ", tracing to " + trace + ".<rank>.tsv";
  return out;
}

}  // namespace reshard
