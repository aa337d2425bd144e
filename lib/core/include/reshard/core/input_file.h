// Input files (model metadata, system, rules, layer maps, plans): a regular file of bounded size or a
// clear config error (docs/reliability.md "Limits").
#pragma once
#include <cstdint>
#include <string>

namespace reshard {

// The largest metadata, system, rules or plan file read (DeepSeek-V3's metadata is 4.6 MB, its
// 512-rank plan ~60 MB as CBOR).
inline constexpr int64_t kMaxInputBytes = int64_t{1} << 30;

// The whole of `path`; Error(Config) naming `what` and the path when it is missing, a directory, a
// device, fifo or socket, or larger than `max_bytes` (read at most max_bytes + 1 bytes, so a file that
// grows meanwhile is caught too).
std::string read_input_file(const std::string& path, const std::string& what, int64_t max_bytes = kMaxInputBytes);

// Error(Config) unless `path` names a regular file (opened for a partial read, e.g. a safetensors header).
void check_input_file(const std::string& path, const std::string& what);

}  // namespace reshard
