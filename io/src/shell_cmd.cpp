// cmd, as it runs a launch script (shell_script.hpp). Simplified, and said so in docs/check.md: %VAR%
// is expanded per physical line before the logical line (`^`-continued lines joined) is split, as
// cmd's first phase does; a program's arguments are split by the Microsoft C runtime's rules (what
// python.exe receives); if/for/goto and labels are read once, in order, and warned about.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>

#include "segadvise/io/json_input.hpp"
#include "shell_windows.hpp"

namespace segadvise::shell_detail {

namespace {

class Cmd {
 public:
  Cmd(const std::string& text, State& st) : s_(text), st_(st) {}

  void run() {
    std::size_t i = 0;
    int line = 1;
    while (i < s_.size()) {
      // a logical line: physical lines joined where one ends in an unescaped ^, each %-expanded (cmd's
      // first phase) with the line it came from kept for its words
      x_.clear();
      starts_.clear();
      bool first = true, comment = false;
      for (;;) {
        std::size_t eol = s_.find('\n', i);
        if (eol == std::string::npos) eol = s_.size();
        std::string phys = s_.substr(i, eol - i);
        if (!phys.empty() && phys.back() == '\r') phys.pop_back();
        i = std::min(eol + 1, s_.size() + 1);
        const int at = line++;
        if (first) comment = skipped(phys, at);
        first = false;
        std::size_t carets = 0;
        while (carets < phys.size() && phys[phys.size() - 1 - carets] == '^') ++carets;
        const bool more = carets % 2 == 1 && i <= s_.size();
        if (more) phys.pop_back();
        starts_.emplace_back(x_.size(), at);
        if (!comment) x_ += percent(phys, at, '%');
        if (x_.size() > kMaxShellValueBytes)
          throw InputError(st_.path + ":" + std::to_string(at) + ": the line grows past 1 MiB: no launch script's line is that long");
        if (!more) break;
      }
      if (!comment) logical();
    }
  }

 private:
  const std::string& s_;
  State& st_;
  bool delayed_ = false;
  std::string x_;                                // the logical line, expanded; \x01NAME\x02 marks an unset variable
  std::vector<std::pair<std::size_t, int>> starts_;  // offset in x_ -> the line it came from

  int line_at(std::size_t k) const {  // the last physical line starting at or before k
    const auto it = std::upper_bound(starts_.begin(), starts_.end(), std::make_pair(k, std::numeric_limits<int>::max()));
    return it == starts_.begin() ? starts_.front().second : std::prev(it)->second;
  }
  // a comment (REM, ::), a label or an empty line: nothing runs
  bool skipped(const std::string& phys, int line) {
    std::string l = trim(phys);
    while (!l.empty() && l[0] == '@') l = trim(l.substr(1));
    const std::string low = lower(l);
    if (l.empty() || l.rfind("::", 0) == 0 || low == "rem" || low.rfind("rem ", 0) == 0 || low.rfind("rem\t", 0) == 0) return true;
    if (low.rfind("setlocal", 0) == 0 && low.find("enabledelayedexpansion") != std::string::npos) delayed_ = true;
    if (l[0] == ':') {
      st_.warn(line, "label '" + l + "': goto and call :label are not followed; the lines are read once, in order");
      return true;
    }
    return false;
  }

  // %NAME%, %%, %0-%9, %*, %~dp0 (the script's folder), and !NAME! under enabledelayedexpansion; an
  // unset variable leaves \x01NAME\x02 for the words to carry
  std::string percent(const std::string& l, int line, char mark) {
    std::string out;
    auto unset = [&](const std::string& shown, const std::string& what) {
      st_.warn_once(lower(shown), line, shown + what + " is not set in the script: read as empty");
      out += "\x01" + shown + "\x02";
    };
    for (std::size_t k = 0; k < l.size(); ++k) {
      if (l[k] != mark) {
        out += l[k];
        continue;
      }
      if (mark == '%' && k + 1 < l.size() && l[k + 1] == '%') {
        out += '%';
        ++k;
      } else if (mark == '%' && l.compare(k, 5, "%~dp0") == 0) {
        const std::string dir = std::filesystem::path(st_.path).parent_path().string();
        out += dir.empty() ? "" : dir + "/";
        k += 4;
      } else if (mark == '%' && k + 1 < l.size() && (std::isdigit(static_cast<unsigned char>(l[k + 1])) || l[k + 1] == '*')) {
        unset(l.substr(k, 2), " (an argument of the script)");
        ++k;
      } else {
        const std::size_t e = l.find(mark, k + 1);
        const std::string name = e == std::string::npos ? "" : l.substr(k + 1, e - k - 1);
        if (name.empty() || name.find_first_of(" \t\"") != std::string::npos || name.find(':') != std::string::npos) {
          if (name.find(':') != std::string::npos)
            st_.warn_once(name, line, std::string(1, mark) + name + mark + " (a substring or replacement) is not followed: kept as written");
          out += l[k];
          continue;
        }
        const std::string shown = std::string(1, mark) + name + mark;
        const auto it = st_.vars.find(lower(name));
        if (it != st_.vars.end()) out += joined(it->second);
        else unset(shown, "");
        k = e;
      }
    }
    return out;
  }

  // the commands of the logical line: split at &, &&, ||, | outside quotes, ^ escapes and 2>&1
  void logical() {
    bool q = false;
    std::size_t from = 0;
    for (std::size_t k = 0; k <= x_.size(); ++k) {
      const char c = k < x_.size() ? x_[k] : '\0';
      if (c == '"') q = !q;
      if (!q && c == '^') {
        ++k;
        continue;
      }
      if (c == '\0' || (!q && (c == '&' || c == '|') && !(k > 0 && x_[k - 1] == '>'))) {
        command(from, k);
        if (c != '\0' && k + 1 < x_.size() && x_[k + 1] == c) ++k;
        from = k + 1;
      }
    }
  }

  void command(std::size_t b, std::size_t e) {
    while (b < e && (blank(x_[b]) || x_[b] == '@')) ++b;
    const std::string low = lower(x_.substr(b, std::min<std::size_t>(e - b, 8)));
    const int line = line_at(b);
    if (low.rfind("call ", 0) == 0) return command(b + 5, e);
    if (low.rfind("set ", 0) == 0 || low.rfind("set\t", 0) == 0) return set(trim(x_.substr(b + 4, e - b - 4)), line);
    for (const char* kw : {"if ", "for ", "goto ", "if/", "for/"})
      if (low.rfind(kw, 0) == 0) {
        st_.warn(line, "'" + trim(std::string(kw)) + "' is not followed: the commands it holds are read as if they run, once, in order");
        if (std::string(kw).rfind("goto", 0) == 0) return;
      }
    // the program's arguments as the Microsoft C runtime splits them: blanks separate, "..." groups
    // (quotes removed), \" is a quote, ^ escapes the next character outside quotes
    ShellCommand cmd;
    ShellWord w;
    std::vector<std::string> pending;  // unset variables of the word being read
    bool have = false, q = false;
    auto flush = [&] {
      if (have) {
        w.unset = pending;
        cmd.words.push_back(w);
      } else if (!pending.empty() && !cmd.words.empty()) {
        cmd.words.back().unset_after = pending;
      }
      w = ShellWord{};
      pending.clear();
      have = false;
    };
    for (std::size_t k = b; k < e; ++k) {
      const char ch = x_[k];
      if (!have && pending.empty()) w.line = line_at(k);
      if (ch == '\x01') {
        const std::size_t end = std::min(x_.find('\x02', k), e);
        pending.push_back(x_.substr(k + 1, end - k - 1));
        k = end;
      } else if (!q && ch == '^' && k + 1 < e) {
        w.text += x_[++k];
        have = true;
      } else if (ch == '\\' && k + 1 < e && x_[k + 1] == '"') {
        w.text += '"';
        have = true;
        ++k;
      } else if (ch == '"') {
        q = !q;
        have = true;
      } else if (!q && (ch == '>' || ch == '<')) {  // a redirection: its target is no argument
        flush();
        while (k + 1 < e && (x_[k + 1] == '>' || x_[k + 1] == '&')) ++k;
        while (k + 1 < e && blank(x_[k + 1])) ++k;
        while (k + 1 < e && !blank(x_[k + 1])) ++k;
      } else if (!q && blank(ch)) {
        flush();
      } else if (!q && (ch == '1' || ch == '2') && !have && k + 1 < e && x_[k + 1] == '>') {
        continue;  // 2> and 1>: the descriptor of a redirection
      } else {
        w.text += ch;
        have = true;
      }
    }
    flush();
    if (delayed_)
      for (ShellWord& sw : cmd.words) {
        const std::string t = percent(sw.text, sw.line, '!');
        sw.text.clear();
        for (std::size_t k = 0; k < t.size(); ++k) {  // an unset !NAME! is read as empty
          if (t[k] != '\x01') sw.text += t[k];
          else {
            const std::size_t end = t.find('\x02', k);
            sw.unset.push_back(t.substr(k + 1, end - k - 1));
            k = end;
          }
        }
      }
    if (!cmd.words.empty()) st_.out.commands.push_back(std::move(cmd));
  }

  // set NAME=value / set "NAME=value" (what the quotes hold); `set` and `set NAME` print variables
  void set(std::string a, int line) {
    const std::string low = lower(a);
    if (low.rfind("/a", 0) == 0 || low.rfind("/p", 0) == 0) {
      st_.warn(line, "'set " + a.substr(0, 2) + "' is not followed (arithmetic or a prompt): the variable it sets is not known");
      return;
    }
    if (!a.empty() && a[0] == '"') {
      const std::size_t e = a.rfind('"');
      a = e > 0 ? a.substr(1, e - 1) : a.substr(1);
    }
    const std::size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) return;
    std::string v;  // ^ escapes outside quotes; an unset variable's mark: empty
    for (std::size_t k = eq + 1; k < a.size(); ++k) {
      if (a[k] == '\x01') k = std::min(a.find('\x02', k), a.size());
      else v += a[k] == '^' && k + 1 < a.size() ? a[++k] : a[k];
    }
    st_.set(a.substr(0, eq), {v}, line);
  }
};

}  // namespace

void read_cmd(const std::string& text, const std::string& path, ShellScript& out) {
  State st{out, path, {}, {}};
  Cmd(text, st).run();
}

}  // namespace segadvise::shell_detail
