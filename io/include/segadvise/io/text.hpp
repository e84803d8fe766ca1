// Text inputs: a text file under the file rules, shell command lines as the shell splits them, and
// the integers and numbers written in them. Every failure is an InputError naming the input.
#pragma once

#include <string>
#include <vector>

namespace segadvise {

// The text of a config file or script: read_text_input's rules (a regular file within
// kMaxInputFileBytes, no NUL byte, well-formed UTF-8); `what` names it in messages.
std::string read_text_file(const std::string& path, const std::string& what);

// A shell script as the shell splits it: quotes, backslash escapes, `\`-newline continuations,
// comments, and the operators that end a command (`;`, `&&`, `||`, `|`, `&`, an unquoted newline),
// which come back as tokens with `ends_command` set. Each token keeps the 1-based line it starts on.
struct Token {
  std::string text;
  int line = 1;
  bool ends_command = false;
};
std::vector<Token> shell_tokens(const std::string& text, const std::string& path);

std::string lower(std::string s);
std::string file_name(const std::string& path);

// Integer value of a flag or key in [lo, hi] (never wrapped: 4294967297 is out of range, not 1);
// InputError naming the file, line and key otherwise.
int to_int(const std::string& value, const std::string& where, int lo, int hi);
// Whether `value` is an integer as Python's int() reads a flag (argparse type=int), range aside
bool is_int_text(const std::string& value);
// A finite number (parse_number_text: no NaN, infinity or hex float); InputError naming `where`.
double to_double(const std::string& value, const std::string& where);

}  // namespace segadvise
