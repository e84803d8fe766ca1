// Progress of long work (accuracy --leave-family-out, calibrate) on stderr: one line, overwritten in
// place with \r, only when stderr is a terminal; nothing at all in pipes, files and CI logs.
#pragma once

#include <cstddef>
#include <mutex>
#include <ostream>
#include <string>

namespace segadvise::cli {

class Progress {
 public:
  // `terminal`: whether `out` is a terminal (on_stderr() asks isatty of the process's stderr)
  Progress(std::ostream& out, bool terminal) : out_(out), terminal_(terminal) {}
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  ~Progress() { finish(); }

  // stderr, shown when it is a terminal
  static bool stderr_is_terminal();

  // replaces the line shown (callable from several threads)
  void update(const std::string& line);
  // clears the line, so what follows starts at the left margin
  void finish();

 private:
  std::ostream& out_;
  bool terminal_;
  std::size_t shown_ = 0;  // columns of the line on screen
  std::mutex mutex_;
};

}  // namespace segadvise::cli
