#include "reshard/core/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "reshard/core/error.h"

namespace reshard {
namespace {

namespace fs = std::filesystem;

std::string kind_of(const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "a directory";
  if (S_ISLNK(st.st_mode)) return "a symlink";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
  if (S_ISFIFO(st.st_mode)) return "a fifo";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  return "not a regular file";
}

bool same_file(const struct stat& a, const std::string& other) {
  struct stat b {};
  return ::stat(other.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string directory_of(const std::string& path) {
  const fs::path dir = fs::path(path).parent_path();
  return dir.empty() ? "." : dir.string();
}

}  // namespace

std::string output_problem(const std::string& flag, const std::string& path, bool force,
                           const std::vector<std::string>& inputs) {
  const std::string what = flag + " " + path;
  if (path.empty()) return flag + ": empty path";
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISREG(st.st_mode)) return what + ": " + kind_of(st) + "; refusing to replace it (name a regular file)";
    for (const std::string& in : inputs)
      if (!in.empty() && same_file(st, in)) return what + ": is the input " + in + "; refusing to overwrite it";
    if (!force) return what + ": the file exists; pass --force to overwrite";
  } else if (errno != ENOENT) {
    return what + ": " + std::strerror(errno);
  }
  const std::string dir = directory_of(path);
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0 || !S_ISDIR(ds.st_mode)) return what + ": directory " + dir + " does not exist";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return what + ": directory " + dir + " is not writable";
  return "";
}

void write_output(const std::string& flag, const std::string& path, std::string_view bytes, bool force,
                  const std::vector<std::string>& inputs) {
  if (const std::string bad = output_problem(flag, path, force, inputs); !bad.empty()) throw config_error(bad);
  static std::atomic<unsigned> counter{0};
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    const std::string tail = ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    // Beside the output; a name near NAME_MAX (255 bytes) gets a short one of its own instead.
    tmp = fs::path(path).filename().string().size() + tail.size() <= 255 ? path + tail
                                                                          : directory_of(path) + "/.reshard" + tail;
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) throw runtime_error("cannot create " + tmp + ": " + std::strerror(errno));
  }
  if (fd < 0) throw runtime_error("cannot create a temporary beside " + path + ": every name is taken");
  struct Cleanup {
    const std::string& name;
    bool keep = false;
    ~Cleanup() {
      if (!keep) ::unlink(name.c_str());
    }
  } cleanup{tmp};
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      throw runtime_error("cannot write " + tmp + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) throw runtime_error("cannot write " + tmp + ": " + std::strerror(errno));
  if (!force) {
    // link() never replaces: a file that appeared since the check (another writer) wins and is kept.
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      if (errno == EEXIST) throw config_error(flag + " " + path + ": the file exists; pass --force to overwrite");
      throw runtime_error("cannot publish " + path + ": " + std::strerror(errno));
    }
    return;  // the temporary is unlinked by cleanup
  }
  if (const std::string bad = output_problem(flag, path, true, inputs); !bad.empty()) throw config_error(bad);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw runtime_error("cannot rename " + tmp + " to " + path + ": " + std::strerror(errno));
  cleanup.keep = true;
}

}  // namespace reshard
