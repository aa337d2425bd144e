// Output files (plan -o, run --json): checked before the work, created exclusively, published without
// clobbering (docs/reliability.md).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace reshard {

// What stops `flag PATH` from being written ("" when nothing): an existing file without --force;
// anything but a regular file (directory, device, fifo, socket, symlink), even with --force; one of
// `inputs` (the same file under any name); a missing or unwritable directory.
std::string output_problem(const std::string& flag, const std::string& path, bool force,
                           const std::vector<std::string>& inputs);

// Writes `bytes` to a fresh temporary beside `path` (O_CREAT | O_EXCL | O_NOFOLLOW: a planted file or
// symlink is never opened) and publishes it: without `force` by link(), so a `path` that appeared
// meanwhile is kept and reported; with `force` by rename() after checking output_problem again. The
// temporary never outlives the call. Throws Error (Config for the checks, Runtime for I/O).
void write_output(const std::string& flag, const std::string& path, std::string_view bytes, bool force,
                  const std::vector<std::string>& inputs);

}  // namespace reshard
