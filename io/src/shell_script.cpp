// bash, as it runs a launch script (shell_script.hpp): the commands of shell_bash_lexer.cpp run in
// order, assignments (NAME=, export/local/declare/typeset/readonly, arrays, +=) kept for the commands
// after them, parameter expansion with bash's word splitting, heredocs that write files, and sourced
// scripts that are here. Simplified, and said so in docs/check.md: no pathname, brace or tilde
// expansion (globs stay as written), IFS is always space/tab/newline, and what a conditional or a loop
// holds is read once, in order, with a warning naming it.
#include "segadvise/io/shell_script.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "segadvise/io/error.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/limits.hpp"
#include "segadvise/io/text.hpp"
#include "shell_bash.hpp"
#include "shell_text.hpp"

namespace segadvise {

namespace shell_detail {

namespace {

namespace fs = std::filesystem;

struct Var {
  std::vector<std::string> items;  // a scalar is items[0]
};

// The fields a word expands to, as bash forms them: unquoted expansions split on blanks, quoted text
// (even empty) makes a field, "${A[@]}" one field per element
struct Fields {
  std::vector<std::string> out;
  std::string cur;
  bool have = false;
  std::size_t bytes = 0;
  std::string where;
  void check() const {
    if (bytes + cur.size() > kMaxShellValueBytes)
      throw InputError(where + ": the expansion grows past " + std::to_string(kMaxShellValueBytes >> 20) + " MiB: no launch script's word is that long");
  }
  void quoted(const std::string& s) {
    cur += s;
    have = true;
    check();
  }
  void literal(const std::string& s) {
    cur += s;
    have = have || !s.empty();
    check();
  }
  void split(const std::string& s) {
    for (char c : s) {
      if (c == ' ' || c == '\t' || c == '\n') {
        if (have) next();
      } else {
        cur += c;
        have = true;
      }
    }
    check();
  }
  void next() {
    bytes += cur.size();
    out.push_back(std::move(cur));
    cur.clear();
    have = false;
  }
  std::vector<std::string> done() {
    if (have) next();
    return std::move(out);
  }
};

class Bash {
 public:
  explicit Bash(ShellScript& out) : out_(out) {}

  void run(const std::string& text, const std::string& file, int depth) {
    file_ = file;
    depth_ = depth;
    std::vector<Heredoc> heredocs;
    // CRLF line ends (a script saved on Windows): read as LF, and said so; bash itself reads each \r as
    // part of its line (a `\` then no longer continues it), so the run would fail
    std::string lf = text;
    if (text.find("\r\n") != std::string::npos) {
      lf.erase(std::remove(lf.begin(), lf.end(), '\r'), lf.end());
      warn(1, "CRLF line ends: read as if LF; bash itself reads each \\r as part of its line and would not run this script as "
              "written (convert it with dos2unix)");
    }
    const std::vector<RawCommand> cmds = lex_bash(lf, file, heredocs, out_.warnings);
    for (std::size_t i = 0; i < cmds.size() && !stopped_; ++i) {
      if (cmds[i].function) {
        warn(cmds[i].line, "function '" + text_of(cmds[i].words[0]) + "' is not followed: its commands are read where it is defined, once");
        continue;
      }
      command(cmds[i], heredocs);
    }
  }

 private:
  ShellScript& out_;
  std::string file_;
  int depth_ = 0;
  std::map<std::string, Var> vars_;
  std::set<std::string> warned_;
  bool stopped_ = false;
  bool in_case_ = false;
  int conditional_ = 0;  // open if/while/until/for blocks

  std::string at(int line) const { return file_ + ":" + std::to_string(line); }
  void warn(int line, const std::string& what) { out_.warnings.push_back(at(line) + ": " + what); }
  void warn_once(const std::string& key, int line, const std::string& what) {
    if (warned_.insert(key).second) warn(line, what);
  }
  static std::string text_of(const RawWord& w) {
    std::string t;
    for (const Part& p : w.parts) t += p.kind == Part::Param ? "$" + p.text : p.text;
    return t;
  }
  // the word when it is one unquoted literal (a keyword, a builtin's name), else ""
  static std::string literal(const RawWord& w) {
    return !w.array && w.parts.size() == 1 && w.parts[0].kind == Part::Lit && !w.parts[0].quoted ? w.parts[0].text : "";
  }
  // NAME=..., NAME+=..., NAME=( ... ): the name's length (and whether +=), 0 when not an assignment
  static std::size_t assignment(const RawWord& w, bool& plus) {
    if (w.parts.empty() || w.parts[0].kind != Part::Lit || w.parts[0].quoted) return 0;
    const std::string& t = w.parts[0].text;
    std::size_t k = 0;
    if (t.empty() || !name_start(t[0])) return 0;
    while (k < t.size() && name_char(t[k])) ++k;
    plus = t.compare(k, 2, "+=") == 0;
    return (plus || (k < t.size() && t[k] == '=')) ? k : 0;
  }

  void assign(const RawWord& w, int line) {
    bool plus = false;
    const std::size_t n = assignment(w, plus);
    const std::string name = w.parts[0].text.substr(0, n);
    Var& v = vars_[name];
    std::size_t total = 0;
    if (w.array) {
      if (!plus) v.items.clear();
      for (const Word& item : w.items) {
        ShellWord info;
        for (std::string& f : expand(item, true, line, info, 0)) v.items.push_back(std::move(f));
      }
    } else {
      Word value = w.parts;
      value[0].text.erase(0, n + (plus ? 2 : 1));
      ShellWord info;
      const std::string s = scalar(value, line, info, 0);
      if (v.items.empty()) v.items.push_back("");
      v.items[0] = plus ? v.items[0] + s : s;
    }
    for (const std::string& s : v.items) total += s.size();
    if (total > kMaxShellValueBytes)
      throw InputError(at(line) + ": " + name + " grows past " + std::to_string(kMaxShellValueBytes >> 20) + " MiB: no launch script's variable is that long");
  }

  // an assignment's value: expanded, never split, arrays joined by spaces
  std::string scalar(const Word& w, int line, ShellWord& info, int depth) {
    return joined(expand(w, false, line, info, depth));
  }

  std::vector<std::string> expand(const Word& w, bool split, int line, ShellWord& info, int depth) {
    if (depth > kMaxShellNesting)
      throw InputError(at(line) + ": expansions nested deeper than " + std::to_string(kMaxShellNesting) + " levels");
    Fields f;
    f.where = at(line);
    for (const Part& p : w) {
      if (p.kind == Part::Lit) {
        if (p.quoted) f.quoted(p.text);
        else f.literal(p.text);
      } else if (p.kind == Part::Unsupported) {
        warn_once("u" + std::to_string(p.line) + p.text, p.line,
                  "'" + brief_text(p.text) + "' (a command substitution or an expansion form segadvise does not follow) "
                  "is kept as written, not run: what it feeds is not known");
        f.quoted(p.text);
      } else {
        param(p, f, split, info, depth);
      }
    }
    return f.done();
  }

  // the value of a parameter; false when the script never sets it
  bool lookup(const Part& p, std::vector<std::string>& vals) {
    const std::string& n = p.text;
    if (n == "0") {
      vals = {file_};
      return true;
    }
    if (n == "#" || n == "?") {
      vals = {"0"};
      return true;
    }
    if (n == "@" || n == "*" || std::isdigit(static_cast<unsigned char>(n[0]))) return false;
    const auto it = vars_.find(n);
    if (it == vars_.end()) return false;
    const auto& items = it->second.items;
    if (p.index == "@" || p.index == "*") {
      vals = items;
    } else {
      const std::size_t k = p.index.empty() ? 0 : static_cast<std::size_t>(std::stoul(p.index.substr(0, 9)));
      if (k >= items.size()) return false;
      vals = {items[k]};
    }
    return true;
  }

  void param(const Part& p, Fields& f, bool split, ShellWord& info, int depth) {
    std::vector<std::string> vals;
    const bool set = lookup(p, vals);
    bool empty = true;
    for (const auto& v : vals) empty = empty && v.empty();
    const std::string& op = p.op;
    auto operand = [&] {
      ShellWord inner;
      const Word w = lex_bash_word(p.arg, file_, p.line, p.quoted, false);
      std::vector<std::string> r = expand(w, split && !p.quoted, p.line, inner, depth + 1);
      info.unset.insert(info.unset.end(), inner.unset.begin(), inner.unset.end());
      return r;
    };
    auto put = [&](const std::vector<std::string>& v, bool each) {
      if (each && p.quoted && split) {  // "${A[@]}": one field per element
        for (std::size_t k = 0; k < v.size(); ++k) {
          if (k > 0) f.next();
          f.quoted(v[k]);
        }
        return;
      }
      if (p.quoted || !split) f.quoted(joined(v));
      else f.split(joined(v));
    };
    const bool each = p.index == "@" || p.text == "@";
    if (op == "#") {
      put({std::to_string(vals.empty() ? 0 : vals[0].size())}, false);
    } else if ((op == ":-" && (!set || empty)) || (op == "-" && !set)) {
      put(operand(), false);
    } else if ((op == ":=" && (!set || empty)) || (op == "=" && !set)) {
      const std::string s = joined(operand());
      vars_[p.text].items = {s};
      put({s}, false);
    } else if (op == ":+" || op == "+") {
      if (op == ":+" ? set && !empty : set) put(operand(), false);
    } else {
      if (!set) {
        const std::string name = p.text == "@" || p.text == "*" || std::isdigit(static_cast<unsigned char>(p.text[0]))
                                     ? "$" + p.text + " (an argument of the script)"
                                     : "$" + p.text;
        info.unset.push_back("$" + p.text);
        warn_once("unset " + p.text, p.line,
                  name + " is not set in the script: read as empty" +
                      (op == ":?" || op == "?" ? " (bash stops the script here unless it is set in the environment)"
                                               : " (bash expands an unset variable to nothing)"));
      }
      put(vals, each);
    }
  }

  // `cat > FILE <<EOF` / `cat <<EOF >> FILE` / `tee [-a] FILE <<EOF`: the text the script writes
  void heredoc_write(const RawCommand& c, const std::vector<Heredoc>& heredocs, const std::string& program) {
    const Heredoc* h = nullptr;
    for (const Redirect& r : c.redirects)
      if (r.heredoc >= 0) h = &heredocs[static_cast<std::size_t>(r.heredoc)];
    if (!h) return;
    if (h->delim.empty()) warn(c.line, "the here-document is ended by the end of the file, not its delimiter (bash warns and takes the rest)");
    ShellWord info;
    std::string body = h->body;
    if (!h->quoted) body = scalar(lex_bash_word(h->body, file_, h->line, true, true), h->line, info, 0);
    std::vector<std::pair<std::string, bool>> targets;  // path, appended
    for (const Redirect& r : c.redirects)
      if (r.op == ">" || r.op == ">>" || r.op == ">|") targets.emplace_back(scalar(r.target, c.line, info, 0), r.op == ">>");
    if (program == "tee") {
      bool append = false;
      for (std::size_t k = 1; k < c.words.size(); ++k) {
        const std::string a = scalar(c.words[k].parts, c.line, info, 0);
        if (a == "-a" || a == "--append") append = true;
        else if (!a.empty() && a[0] != '-') targets.emplace_back(a, append);
      }
    }
    for (const auto& [path, append] : targets) {
      ShellWrittenFile& w = out_.written_files[path];
      w.text = append ? w.text + body : body;
      w.line = c.line;
      w.before_command = out_.commands.size();
    }
  }

  void source(const RawCommand& c, std::size_t k) {
    if (k + 1 >= c.words.size()) return;
    ShellWord info;
    const std::string name = scalar(c.words[k + 1].parts, c.line, info, 0);
    fs::path p = name;
    std::error_code ec;
    if (p.is_relative() && fs::exists(fs::path(file_).parent_path() / p, ec)) p = fs::path(file_).parent_path() / p;
    if (name.empty() || !fs::is_regular_file(p, ec) || depth_ + 1 > kMaxShellNesting) {
      warn(c.line, "'source " + brief_text(name) + "' is not followed (" + (depth_ + 1 > kMaxShellNesting ? "nested too deep" : "the file is not here") +
                       "): the variables it sets are not known and read as unset");
      return;
    }
    const std::string saved = file_;
    const int saved_depth = depth_;
    run(read_text_file(p.string(), "sourced script"), p.string(), depth_ + 1);
    file_ = saved;
    depth_ = saved_depth;
  }

  void command(const RawCommand& c, const std::vector<Heredoc>& heredocs) {
    std::size_t k = 0;
    const std::size_t n = c.words.size();
    if (in_case_) {
      in_case_ = !(n > 0 && literal(c.words[0]) == "esac");
      return;
    }
    // keywords before the command: its commands are read once, in order, with a warning
    while (k < n) {
      const std::string kw = literal(c.words[k]);
      if (kw == "then" || kw == "else" || kw == "do" || kw == "{" || kw == "}" || kw == "!" || kw == "time") {
        ++k;
      } else if (kw == "fi" || kw == "done") {
        conditional_ = std::max(0, conditional_ - 1);
        ++k;
      } else if (kw == "if" || kw == "elif" || kw == "while" || kw == "until") {
        if (kw != "elif") ++conditional_;
        warn(c.line, "'" + kw + "' is not followed: the commands it holds are read as if they run, once, in order");
        ++k;
      } else if (kw == "for") {
        ++conditional_;
        for_loop(c, k);
        return;
      } else if (kw == "case") {
        warn(c.line, "'case' is not followed: the commands up to its 'esac' are not read");
        in_case_ = true;
        return;
      } else if (kw == "function") {
        warn(c.line, "function '" + (k + 1 < n ? text_of(c.words[k + 1]) : std::string()) +
                         "' is not followed: its commands are read where it is defined, once");
        return;
      } else {
        break;
      }
    }
    std::vector<const RawWord*> assigns;
    bool plus = false;
    while (k < n && assignment(c.words[k], plus)) assigns.push_back(&c.words[k++]);
    if (k == n) {  // only assignments: they stay for the commands after
      for (const RawWord* w : assigns) assign(*w, w->line);
      return;
    }
    // (NAME=value before a command is that command's environment only: not kept)
    std::string program = literal(c.words[k]);
    if (!program.empty() && program[0] == '!' && program.size() > 1) program.erase(0, 1);  // a notebook's !command
    if (program == "export" || program == "local" || program == "declare" || program == "typeset" || program == "readonly" ||
        program == "%env") {
      for (std::size_t j = k + 1; j < n; ++j)
        if (assignment(c.words[j], plus)) assign(c.words[j], c.words[j].line);
      return;
    }
    if (program == "unset") {
      for (std::size_t j = k + 1; j < n; ++j) vars_.erase(literal(c.words[j]));
      return;
    }
    if (program == "source" || program == ".") return source(c, k);
    if (program == "exit" && conditional_ == 0 && c.before != "&&" && c.before != "||") {
      stopped_ = true;
      return;
    }
    if (program == "eval") warn(c.line, "'eval' is not followed: the command it builds is not read");
    if (program == "cat" || program == "tee") heredoc_write(c, heredocs, program);
    ShellCommand cmd;
    for (std::size_t j = k; j < n; ++j) {
      ShellWord info;
      Word parts = c.words[j].parts;
      if (j == k && program != literal(c.words[j])) parts[0].text.erase(0, 1);
      const std::vector<std::string> fields = expand(parts, true, c.words[j].line, info, 0);
      if (fields.empty() && !info.unset.empty() && !cmd.words.empty()) cmd.words.back().unset_after = info.unset;
      for (const std::string& f : fields) cmd.words.push_back({f, c.words[j].line, info.unset, {}});
    }
    if (!cmd.words.empty()) out_.commands.push_back(std::move(cmd));
  }

  // for NAME in WORDS: the body is read once, NAME set to the first word (what bash runs first)
  void for_loop(const RawCommand& c, std::size_t k) {
    const std::string name = k + 1 < c.words.size() ? literal(c.words[k + 1]) : "";
    std::vector<std::string> items;
    if (k + 2 < c.words.size() && literal(c.words[k + 2]) == "in")
      for (std::size_t j = k + 3; j < c.words.size(); ++j) {
        ShellWord info;
        for (std::string& f : expand(c.words[j].parts, true, c.line, info, 0)) items.push_back(std::move(f));
      }
    if (!name.empty() && !items.empty()) {
      vars_[name].items = {items.front()};
      warn(c.line, "the 'for' loop is not followed: its commands are read once, with $" + name + " = '" + brief_text(items.front()) +
                       "' (its first of " + std::to_string(items.size()) + " items)");
    } else {
      warn(c.line, "the 'for' loop is not followed: its commands are read once" + (name.empty() ? std::string() : ", with $" + name + " unset"));
    }
  }
};

}  // namespace

void read_bash(const std::string& text, const std::string& path, ShellScript& out) { Bash(out).run(text, path, 0); }

void read_bash_cells(const std::vector<std::pair<std::string, std::string>>& cells, ShellScript& out) {
  Bash bash(out);
  for (const auto& [label, text] : cells) bash.run(text, label, 0);
}

}  // namespace shell_detail

namespace {

bool ends_with(const std::string& s, const std::string& t) { return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0; }

}  // namespace

// The extension decides; text without one (pasted, .txt) is PowerShell where a line ends in a
// backtick continuation, assigns `$name = ` or names `$env:`, and cmd where a line ends in a ^
// continuation or is `@echo off`, `rem ...`, `:: ...` or `set NAME=...`: constructs bash never runs
// that way (bash reads a trailing ` or ^ as a character, `$x = 1` as a command named by $x). The
// dialect with more such lines wins; none: bash.
ShellDialect shell_dialect(const std::string& path, const std::string& text) {
  const std::string ext = lower(std::filesystem::path(path).extension().string());
  if (ext == ".ps1" || ext == ".psm1") return ShellDialect::PowerShell;
  if (ext == ".bat" || ext == ".cmd") return ShellDialect::Cmd;
  if (ext == ".sh" || ext == ".bash" || ext == ".zsh") return ShellDialect::Bash;
  if (ext == ".ipynb") return ShellDialect::Notebook;
  int ps = 0, cmd = 0;
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t eol = text.find('\n', from);
    if (eol == std::string::npos) eol = text.size();
    const std::string l = shell_detail::trim(text.substr(from, eol - from));
    const std::string low = lower(l);
    from = eol + 1;
    if (l.size() > 1 && ends_with(l, "`") && shell_detail::blank(l[l.size() - 2])) ++ps;
    if (low.find("$env:") != std::string::npos) ++ps;
    if (l.size() > 1 && l[0] == '$' && shell_detail::name_start(l[1])) {
      std::size_t k = 1;
      while (k < l.size() && shell_detail::name_char(l[k])) ++k;
      while (k < l.size() && shell_detail::blank(l[k])) ++k;
      if (k < l.size() && l[k] == '=' && k > 1 && shell_detail::blank(l[k - 1])) ++ps;
    }
    if (l.size() > 1 && ends_with(l, "^") && shell_detail::blank(l[l.size() - 2])) ++cmd;
    if (low == "@echo off" || low.rfind("rem ", 0) == 0 || l.rfind("::", 0) == 0) ++cmd;
    if (low.rfind("set ", 0) == 0 && low.size() > 4 && (shell_detail::name_start(low[4]) || low[4] == '"') && low.find('=') != std::string::npos) ++cmd;
  }
  return ps > cmd ? ShellDialect::PowerShell : cmd > ps ? ShellDialect::Cmd : ShellDialect::Bash;
}


const char* dialect_name(ShellDialect d) {
  return d == ShellDialect::PowerShell ? "PowerShell" : d == ShellDialect::Cmd ? "cmd" : d == ShellDialect::Notebook ? "notebook" : "bash";
}

ShellScript read_shell_script(const std::string& text, const std::string& path) {
  ShellScript s;
  s.dialect = shell_dialect(path, text);
  if (s.dialect == ShellDialect::PowerShell) shell_detail::read_powershell(text, path, s);
  else if (s.dialect == ShellDialect::Cmd) shell_detail::read_cmd(text, path, s);
  else if (s.dialect == ShellDialect::Notebook) shell_detail::read_notebook(text, path, s);
  else shell_detail::read_bash(text, path, s);
  return s;
}

const ShellWrittenFile* written_file(const std::map<std::string, ShellWrittenFile>& files, const std::string& file) {
  auto it = files.find(file);
  if (it != files.end()) return &it->second;
  const std::string want = std::filesystem::path(file).lexically_normal().generic_string();
  for (const auto& [path, w] : files)
    if (std::filesystem::path(path).lexically_normal().generic_string() == want) return &w;
  return nullptr;
}

}  // namespace segadvise
