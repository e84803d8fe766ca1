#include "progress.hpp"

#include <unistd.h>

#include "segadvise/report/output.hpp"

namespace segadvise::cli {

bool Progress::stderr_is_terminal() { return isatty(STDERR_FILENO) == 1; }

void Progress::update(const std::string& line) {
  if (!terminal_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  const std::size_t width = columns(line);
  out_ << '\r' << line;
  if (width < shown_) out_ << std::string(shown_ - width, ' ') << '\r' << line;
  out_.flush();
  shown_ = width;
}

void Progress::finish() {
  if (!terminal_) return;
  const std::lock_guard<std::mutex> lock(mutex_);
  if (shown_ == 0) return;
  out_ << '\r' << std::string(shown_, ' ') << '\r';
  out_.flush();
  shown_ = 0;
}

}  // namespace segadvise::cli
