// Replays fuzz inputs through a target's entry function without libFuzzer: every file named on the
// command line, and every file in a folder named there (names starting with '.' and README* skipped).
// A crash or failed invariant aborts, so ctest fails; a folder that does not exist holds no inputs,
// and a run that replays nothing at all fails (a test over an empty or mistyped folder proves nothing).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace fs = std::filesystem;

static void replay(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::fprintf(stderr, "replay %s (%zu bytes)\n", file.string().c_str(), bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

int main(int argc, char** argv) {
  int count = 0;
  for (int i = 1; i < argc; ++i) {
    const fs::path arg = argv[i];
    if (!fs::is_directory(arg)) {
      if (fs::is_regular_file(arg)) replay(arg), ++count;
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(arg)) {
      const std::string name = e.path().filename().string();
      if (e.is_regular_file() && name[0] != '.' && name.rfind("README", 0) != 0) files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) replay(f), ++count;
  }
  std::printf("%d inputs replayed without a finding\n", count);
  return count > 0 ? 0 : 1;
}
