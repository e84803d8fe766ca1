// Shared by the fuzz targets: a per-process scratch folder for loaders that read files, the
// invariant check that turns a wrong answer into a finding, and the cached objects targets reuse.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <system_error>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace segadvise::fuzz {

// A finding: print what broke and abort (libFuzzer saves the input; the replay test fails).
[[noreturn]] inline void violated(const char* what) {
  std::fprintf(stderr, "fuzz invariant violated: %s\n", what);
  std::abort();
}

inline void require(bool ok, const char* what) {
  if (!ok) violated(what);
}

inline bool finite_non_negative(double x) { return std::isfinite(x) && x >= 0; }

// /tmp/segadvise-fuzz-PID, removed at exit (by the destructor of the static that holds its name).
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const auto p = std::filesystem::temp_directory_path() / ("segadvise-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    path = p.string();
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

// Writes bytes to scratch_dir()/name and returns the path.
inline std::string write_scratch(const std::string& name, const uint8_t* data, std::size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace segadvise::fuzz
