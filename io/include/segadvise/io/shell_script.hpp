// A launch script as its shell runs it (bash, PowerShell or cmd): the commands it runs in order, each
// as the argument words the program receives, with the variables and arrays the script assigns before
// them expanded, and the files it writes itself (a heredoc). What is not followed (a loop, a command
// substitution, a function, a sourced file) is warned about with its line; nothing is guessed silently.
// Every loop is bounded by the text and the limits of limits.hpp. docs/check.md "Launch scripts".
#pragma once

#include <map>
#include <string>
#include <vector>

namespace segadvise {

enum class ShellDialect { Bash, PowerShell, Cmd, Notebook };

// The dialect a script is run in: by its extension (.ps1: PowerShell; .bat/.cmd: cmd; .sh/.bash:
// bash; .ipynb: a Jupyter notebook's shell lines, run by bash), else by content only a dialect writes (shell_dialect.cpp says which); bash otherwise.
ShellDialect shell_dialect(const std::string& path, const std::string& text);
const char* dialect_name(ShellDialect d);

// One argument word as the program receives it
struct ShellWord {
  std::string text;
  int line = 1;
  // variables the word expanded that the script never sets ("$DATA_DIR", "$1"; read as empty), and
  // those of an unquoted expansion right after it that left no word at all (`--x $UNSET --y`)
  std::vector<std::string> unset;
  std::vector<std::string> unset_after;
};
struct ShellCommand {
  std::vector<ShellWord> words;  // the program, then its arguments (assignments and redirections removed)
};
// A file the script writes before a later command reads it: `cat > FILE <<EOF` (tee FILE, >> appends)
struct ShellWrittenFile {
  std::string text;
  int line = 0;                    // the line of the command that writes it
  std::size_t before_command = 0;  // the commands (ShellScript::commands) run before: later ones read it
};
struct ShellScript {
  ShellDialect dialect = ShellDialect::Bash;
  std::vector<ShellCommand> commands;
  std::map<std::string, ShellWrittenFile> written_files;  // path as the script names it, expanded
  std::vector<std::string> warnings;                      // "FILE:LINE: ..."
};

// The script at `path` (named in messages) with text `text`. InputError naming file and line for what
// the shell itself refuses (an unterminated quote or heredoc) and for an expansion past the limits.
ShellScript read_shell_script(const std::string& text, const std::string& path);

// The file among `files` (ShellScript::written_files) at `file`, matched as written, then lexically
// normalized (./a.toml is a.toml); nullptr when the script writes none there
const ShellWrittenFile* written_file(const std::map<std::string, ShellWrittenFile>& files, const std::string& file);

namespace shell_detail {
// The dialects' readers (shell_script.cpp: bash; shell_powershell.cpp, shell_cmd.cpp), for
// read_shell_script to pick from
void read_bash(const std::string& text, const std::string& path, ShellScript& out);
void read_powershell(const std::string& text, const std::string& path, ShellScript& out);
void read_cmd(const std::string& text, const std::string& path, ShellScript& out);
void read_notebook(const std::string& text, const std::string& path, ShellScript& out);  // shell_notebook.cpp
// bash scripts run one after another with the same variables (a notebook's cells), each named by its label
void read_bash_cells(const std::vector<std::pair<std::string, std::string>>& cells, ShellScript& out);
}  // namespace shell_detail

}  // namespace segadvise
