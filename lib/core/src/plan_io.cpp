// Plan files: format from the extension, atomic save (temporary name + rename), load with sniffing.
#include "reshard/core/plan_io.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "reshard/core/error.h"

namespace reshard {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Removes the temporary file unless the save went through.
class TempFile {
 public:
  explicit TempFile(std::string path) : path_(std::move(path)) {}
  ~TempFile() {
    if (!committed_) std::remove(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  void commit() { committed_ = true; }

 private:
  std::string path_;
  bool committed_ = false;
};

}  // namespace

PlanFormat plan_format_for_path(const std::string& path) {
  return lower(std::filesystem::path(path).extension().string()) == ".cbor" ? PlanFormat::Cbor
                                                                            : PlanFormat::Json;
}

void save_plan(const Plan& plan, const std::string& path, PlanFormat format, bool force) {
  std::error_code ec;
  if (!force && std::filesystem::exists(std::filesystem::symlink_status(path, ec))) {
    throw config_error(path + " exists; pass --force to overwrite");
  }
  // Encode before touching the file system: an encoding error leaves nothing behind.
  const std::vector<uint8_t> bytes = encode_plan(plan, format);

  TempFile tmp(path + ".tmp." + std::to_string(::getpid()));
  std::FILE* f = std::fopen(tmp.path().c_str(), "wb");
  if (f == nullptr) throw config_error("cannot write plan " + path + ": " + std::strerror(errno));
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), f);
  const int write_errno = errno;
  const bool closed = std::fclose(f) == 0;
  if (written != bytes.size() || !closed) {
    throw runtime_error("cannot write plan " + tmp.path() + ": " +
                        std::strerror(written != bytes.size() ? write_errno : errno));
  }
  if (std::rename(tmp.path().c_str(), path.c_str()) != 0) {
    throw runtime_error("cannot rename " + tmp.path() + " to " + path + ": " + std::strerror(errno));
  }
  tmp.commit();
}

Plan load_plan(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) throw config_error("cannot open plan " + path + ": " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  std::error_code ec;
  if (const auto size = std::filesystem::file_size(path, ec); !ec) bytes.reserve(size);
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.insert(bytes.end(), buf, buf + n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) throw runtime_error("cannot read plan " + path + ": " + std::strerror(errno));
  return decode_plan(bytes, path);
}

}  // namespace reshard
