#include "progress.hpp"

#include <unistd.h>

namespace segadvise::cli {

namespace {

// printed width of a UTF-8 line
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

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
