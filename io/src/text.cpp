#include "segadvise/io/text.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>

#include "segadvise/io/json_input.hpp"

namespace segadvise {

namespace fs = std::filesystem;

std::string read_text_file(const std::string& path, const std::string& what) { return read_text_input(path, what); }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string file_name(const std::string& path) { return fs::path(path).filename().string(); }

std::vector<Token> shell_tokens(const std::string& text, const std::string& path) {
  std::vector<Token> out;
  std::string cur;
  bool in_token = false;
  int line = 1, start = 1;
  char quote = 0;
  int quote_line = 0;
  auto flush = [&] {
    if (in_token) out.push_back({cur, start});
    cur.clear();
    in_token = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) cur += text[++i];
      else cur += c;
      if (c == '\n') ++line;
      continue;
    }
    if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == '\n') {  // continuation
        ++i;
        ++line;
        continue;
      }
      if (!in_token) start = line;
      in_token = true;
      cur += text[++i];
      continue;
    }
    if (c == '\'' || c == '"') {
      if (!in_token) start = line;
      in_token = true;
      quote = c;
      quote_line = line;
      continue;
    }
    if (c == '#' && !in_token) {  // comment to the end of the line
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '\n') {
      flush();
      out.push_back({"\n", line, true});
      ++line;
      continue;
    }
    if (c == ';' || c == '&' || c == '|') {  // `;`, `&`, `|`, `&&`, `||`
      flush();
      std::string op(1, c);
      if (c != ';' && i + 1 < text.size() && text[i + 1] == c) op += text[++i];
      out.push_back({op, line, true});
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      flush();
      continue;
    }
    if (!in_token) start = line;
    in_token = true;
    cur += c;
  }
  if (quote) throw InputError(path + ":" + std::to_string(quote_line) + ": unterminated " + std::string(1, quote) + " quote");
  flush();
  return out;
}

bool is_int_text(const std::string& value) {
  std::size_t i = value.size() > 1 && (value[0] == '+' || value[0] == '-') ? 1 : 0;
  if (i == value.size()) return false;
  for (; i < value.size(); ++i)
    if (value[i] < '0' || value[i] > '9') return false;
  return true;
}

int to_int(const std::string& value, const std::string& where, int lo, int hi) {
  if (!is_int_text(value)) throw InputError(where + ": '" + brief_text(value) + "' is not an integer");
  return static_cast<int>(parse_integer_text(value, where, lo, hi));
}

double to_double(const std::string& value, const std::string& where) {
  constexpr double kMax = std::numeric_limits<double>::max();
  try {
    return parse_number_text(value, where, -kMax, kMax);
  } catch (const InputError&) {
    throw InputError(where + ": '" + brief_text(value) + "' is not a number");
  }
}

}  // namespace segadvise
