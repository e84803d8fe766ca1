// A scratch directory per test process, removed at exit: input files written by the tests.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace segadvise::test {

struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& prefix)
      : dir(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
  std::string fifo(const std::string& name) const {
    const std::string p = (dir / name).string();
    ::unlink(p.c_str());
    ::mkfifo(p.c_str(), 0600);
    return p;
  }
};

}  // namespace segadvise::test
