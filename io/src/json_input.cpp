#include "segadvise/io/json_input.hpp"

#include <cerrno>
#include <cstdio>
#include <charconv>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace segadvise {

namespace {

std::string fmt_limit(double x) {
  if (std::fabs(x) < 1e15 && x == std::floor(x)) return std::to_string(static_cast<long long>(x));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// A position in the text, for messages: 1-based line and column (in bytes).
struct Cursor {
  int line = 1, column = 1;
  std::string at() const { return "line " + std::to_string(line) + ", column " + std::to_string(column); }
};

Cursor cursor_at(const std::string& text, std::size_t byte) {
  Cursor c;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++c.line;
      c.column = 1;
    } else {
      ++c.column;
    }
  }
  return c;
}

// `s` cut to `max` bytes (on a UTF-8 boundary) followed by "…"
std::string cut_text(const std::string& s, std::size_t max) {
  if (s.size() <= max) return s;
  std::size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return s.substr(0, cut) + "…";
}

bool number_char(char ch) { return (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E'; }

// One pass over the text before nlohmann sees it: nesting depth, key counts, numbers past double.
// Malformed JSON is left to the parser (which reports it with its position).
void check_structure(const std::string& text, const std::string& origin) {
  std::vector<std::size_t> keys_in;  // keys of each open object (0 for arrays, unused)
  std::size_t keys = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
      continue;
    }
    switch (ch) {
      case '"': in_string = true; break;
      case '{':
      case '[':
        keys_in.push_back(0);
        if (keys_in.size() > static_cast<std::size_t>(kMaxJsonDepth))
          throw InputError(origin + ": nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at " +
                           cursor_at(text, i).at());
        break;
      case '}':
      case ']':
        if (!keys_in.empty()) keys_in.pop_back();
        break;
      case ':':
        if (++keys > kMaxJsonKeys)
          throw InputError(origin + ": more than " + std::to_string(kMaxJsonKeys) + " keys (at " + cursor_at(text, i).at() + ")");
        if (!keys_in.empty() && ++keys_in.back() > kMaxKeysPerObject)
          throw InputError(origin + ": more than " + std::to_string(kMaxKeysPerObject) + " keys in one object (at " +
                           cursor_at(text, i).at() + ")");
        break;
      default:
        if ((ch >= '0' && ch <= '9') || ch == '-') {
          std::size_t end = i;
          while (end < text.size() && number_char(text[end])) ++end;
          const std::string token = text.substr(i, end - i);
          const double d = std::strtod(token.c_str(), nullptr);
          if (std::isinf(d))
            throw InputError(origin + ": number " + brief_text(token) + " at " + cursor_at(text, i).at() +
                             " is beyond the range of a double");
          i = end - 1;
        }
    }
  }
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column 2: " prefix
std::string parser_detail(const std::string& what) {
  std::string detail = what;
  const auto colon = detail.find(": ", detail.find("parse error"));
  if (colon != std::string::npos) detail = detail.substr(colon + 2);
  // nlohmann's own words are kept whole; only the token it echoes ("last read: '...'") can be long
  return cut_text(detail, 4 * kMaxEchoChars);
}

template <class J>
J parse_checked(const std::string& text, const std::string& origin) {
  check_structure(text, origin);
  try {
    return J::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // the byte where parsing stopped (1-based in nlohmann)
    const std::size_t at = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    throw InputError(origin + ": malformed JSON at " + cursor_at(text, at).at() + ": " + parser_detail(e.what()));
  } catch (const nlohmann::json::exception& e) {
    throw InputError(origin + ": malformed JSON: " + parser_detail(e.what()));
  }
}

}  // namespace

std::string brief_text(const std::string& s) { return cut_text(s, kMaxEchoChars); }

namespace {

// The offset of the first byte that does not start a well-formed UTF-8 character; npos when none
std::size_t first_invalid_utf8(const std::string& text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    // lead byte -> sequence length and the smallest code point it may encode (no overlong forms)
    std::size_t len = 0;
    unsigned long cp = 0, min = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; min = 0x10000; }
    bool ok = len > 0 && i + len <= n;
    for (std::size_t k = 1; ok && k < len; ++k) {
      ok = (p[i + k] & 0xC0) == 0x80;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (!ok) return i;
    i += len;
  }
  return std::string::npos;
}

}  // namespace

void require_utf8(const std::string& text, const std::string& where) {
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string::npos) throw InputError(where + ": invalid UTF-8 at byte " + std::to_string(bad));
}

void throw_range(const std::string& where, const std::string& value, double lo, double hi, bool integer) {
  throw InputError(where + ": " + brief_text(value) + " is not " + (integer ? "an integer" : "a finite number") +
                   " in [" + fmt_limit(lo) + ", " + fmt_limit(hi) + "]");
}

long long parse_integer_text(const std::string& text, const std::string& where, long long lo, long long hi) {
  long long v = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (!text.empty() && text[0] == '+') ++first;
  const auto [ptr, ec] = std::from_chars(first, last, v);
  if (text.empty() || ptr != last || (ec != std::errc() && ec != std::errc::result_out_of_range))
    throw InputError(where + ": expected an integer, got \"" + brief_text(text) + "\"");
  if (ec == std::errc::result_out_of_range || v < lo || v > hi)
    throw_range(where, "\"" + text + "\"", static_cast<double>(lo), static_cast<double>(hi), true);
  return v;
}

double parse_number_text(const std::string& text, const std::string& where, double lo, double hi) {
  // digits, sign, point and exponent only: strtod would also take "nan", "inf" and hex floats
  const bool plain = !text.empty() && std::all_of(text.begin(), text.end(), number_char);
  char* end = nullptr;
  errno = 0;
  const double d = plain ? std::strtod(text.c_str(), &end) : 0;
  if (!plain || end != text.c_str() + text.size())
    throw InputError(where + ": expected a number, got \"" + brief_text(text) + "\"");
  if (!std::isfinite(d) || !(d >= lo && d <= hi)) throw_range(where, "\"" + text + "\"", lo, hi, false);
  return d;
}

std::string read_input_file(const std::string& path, const std::string& what) {
  const std::string name = what + " '" + brief_text(path) + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(name + ": " + (errno == ENOENT ? "no such file" : "cannot be read"));
  if (!S_ISREG(st.st_mode))
    throw InputError(name + ": is not a regular file" + (S_ISDIR(st.st_mode) ? " (a directory)" : ""));
  if (static_cast<std::size_t>(st.st_size) > kMaxInputFileBytes)
    throw InputError(name + ": larger than the limit of " + std::to_string(kMaxInputFileBytes >> 20) + " MiB");
  // O_NONBLOCK: if the path was swapped for a FIFO since stat, open does not wait for a writer
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(name + ": cannot be read");
  struct stat fst {};
  if (::fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
    ::close(fd);
    throw InputError(name + ": is not a regular file");
  }
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      throw InputError(name + ": cannot be read");
    }
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxInputFileBytes) {
      ::close(fd);
      throw InputError(name + ": larger than the limit of " + std::to_string(kMaxInputFileBytes >> 20) + " MiB");
    }
  }
  ::close(fd);
  return text;
}

std::string read_text_input(const std::string& path, const std::string& what) {
  std::string text = read_input_file(path, what);
  const std::string name = what + " '" + brief_text(path) + "'";
  const std::size_t nul = text.find('\0');
  if (nul != std::string::npos)
    throw InputError(name + ": a NUL byte at " + cursor_at(text, nul).at() + " (not a text file)");
  const std::size_t bad = first_invalid_utf8(text);
  if (bad != std::string::npos) throw InputError(name + ": invalid UTF-8 at " + cursor_at(text, bad).at());
  return text;
}

nlohmann::json parse_json_text(const std::string& text, const std::string& origin) {
  return parse_checked<nlohmann::json>(text, origin);
}

nlohmann::ordered_json parse_ordered_json_text(const std::string& text, const std::string& origin) {
  return parse_checked<nlohmann::ordered_json>(text, origin);
}

nlohmann::json load_json_file(const std::string& path, const std::string& what) {
  return parse_json_text(read_input_file(path, what), what + " '" + brief_text(path) + "'");
}

nlohmann::ordered_json load_ordered_json_file(const std::string& path, const std::string& what) {
  return parse_ordered_json_text(read_input_file(path, what), what + " '" + brief_text(path) + "'");
}

}  // namespace segadvise
