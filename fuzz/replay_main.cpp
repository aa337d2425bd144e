// Replays fuzz inputs through a target without libFuzzer: usage: replay PATH... where each PATH is
// a file or a directory of files (dot-files skipped). A crash, sanitizer report or escaped
// exception fails the run; a missing directory counts as empty.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

void replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay %s (%zu bytes)\n", file.string().c_str(), bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace

int main(int argc, char** argv) {
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path path(argv[i]);
    std::vector<fs::path> files;
    if (fs::is_directory(path)) {
      for (const auto& e : fs::directory_iterator(path))
        if (e.is_regular_file() && e.path().filename().string().front() != '.') files.push_back(e.path());
      std::sort(files.begin(), files.end());
    } else if (fs::exists(path)) {
      files.push_back(path);
    }
    for (const fs::path& f : files) replay(f), ++count;
  }
  std::printf("replayed %zu inputs\n", count);
  return 0;
}
