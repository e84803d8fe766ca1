// Character classes and trimming shared by the shells' readers (shell_bash_lexer.cpp, shell_script.cpp,
// shell_powershell.cpp, shell_cmd.cpp). Internal to the io library.
#pragma once

#include <cctype>
#include <string>
#include <vector>

namespace segadvise::shell_detail {

// a variable name's first character, and the others (bash, PowerShell and cmd alike)
inline bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
inline bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
// a blank between words (a CRLF file's \r too)
inline bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

inline std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// a list's items joined by spaces (an array read as one string, as the shells join "${A[*]}", "$a")
inline std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t k = 0; k < v.size(); ++k) s += (k ? " " : "") + v[k];
  return s;
}

}  // namespace segadvise::shell_detail
