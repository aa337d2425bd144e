#include "reshard/core/input_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "reshard/core/error.h"

namespace reshard {

void check_input_file(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw config_error("cannot open " + what + " " + path + ": " + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw config_error(what + " " + path + ": is a directory, not a file");
  if (!S_ISREG(st.st_mode)) throw config_error(what + " " + path + ": not a regular file (a device, fifo or socket)");
}

std::string read_input_file(const std::string& path, const std::string& what, int64_t max_bytes) {
  check_input_file(path, what);
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw config_error("cannot open " + what + " " + path + ": " + std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    out.append(buf, n);
    if (static_cast<int64_t>(out.size()) > max_bytes) {
      std::fclose(f);
      throw config_error(what + " " + path + ": larger than the " + std::to_string(max_bytes) +
                         "-byte limit for an input file");
    }
  }
  const bool failed = std::ferror(f) != 0;
  const int e = errno;
  std::fclose(f);
  if (failed) throw config_error("cannot read " + what + " " + path + ": " + std::strerror(e));
  return out;
}

}  // namespace reshard
