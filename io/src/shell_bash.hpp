// bash's reading of a script into commands, words and their parts, before any expansion
// (shell_bash_lexer.cpp); shell_script.cpp expands them as the script runs. Internal to the io library.
#pragma once

#include <string>
#include <vector>

#include "shell_text.hpp"

namespace segadvise::shell_detail {

// A piece of a word: literal text, or a parameter expansion, or a construct not followed (kept as written)
struct Part {
  enum Kind { Lit, Param, Unsupported } kind = Lit;
  bool quoted = false;
  std::string text;   // Lit: the text; Param: the name; Unsupported: the text as written
  std::string index;  // Param: "", "@", "*" or an element number
  std::string op;     // Param: "", ":-", "-", ":=", "=", ":+", "+", ":?", "?", "#" (length)
  std::string arg;    // Param: the operand as written
  int line = 1;
};
using Word = std::vector<Part>;

struct RawWord {
  Word parts;
  int line = 1;
  bool array = false;       // NAME=( ... ) or NAME+=( ... ): parts hold "NAME=" / "NAME+="
  std::vector<Word> items;  // the array's words
};
struct Heredoc {
  bool quoted = false, strip_tabs = false;
  std::string delim, body;
  int line = 1;
};
struct Redirect {
  std::string op;  // ">", ">>", "<", "<<", "<<<", ">&", "&>", ...
  Word target;
  int heredoc = -1;
};
struct RawCommand {
  std::vector<RawWord> words;
  std::vector<Redirect> redirects;
  bool function = false;  // `NAME ( )`: NAME is a function being defined; its body follows
  std::string before;  // the operator before it: "", ";", "\n", "&&", "||", "|", "&", "(", ")"
  int line = 1;
};

// The script's commands in order; `heredocs` receives the bodies the redirections name, `warnings`
// what bash runs otherwise than the layout suggests (a backslash and a space ending a line).
// InputError naming the file and line for an unterminated quote, array or substitution.
std::vector<RawCommand> lex_bash(const std::string& text, const std::string& path, std::vector<Heredoc>& heredocs,
                                 std::vector<std::string>& warnings);
// One word's parts from `text` (an expansion's operand, a heredoc's body), read as double-quoted
// content when `dquoted` (a heredoc's body: `heredoc`, where `"` is plain), else as an unquoted word
Word lex_bash_word(const std::string& text, const std::string& path, int line, bool dquoted, bool heredoc);


}  // namespace segadvise::shell_detail
