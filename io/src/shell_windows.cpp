// PowerShell and cmd, as they run a launch script (shell_script.hpp), and how a script's dialect is
// told. Simplified, and said so in docs/check.md: PowerShell's assignments are read for strings,
// numbers, variables, `+` concatenation and arrays (`,` and @( )), anything else kept as written with
// a warning; cmd's %VAR% expansion is done per logical line (`^`-continued lines joined) before the
// line is split, as cmd's phase 1 does, and a program's arguments split by the Microsoft C runtime's
// rules (what python.exe receives). Blocks, loops and labels are read once, in order, and warned about.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>

#include "segadvise/io/error.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/limits.hpp"
#include "segadvise/io/shell_script.hpp"
#include "segadvise/io/text.hpp"

namespace segadvise {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// What PowerShell and cmd readers share: the variables (names case-insensitive in both), the warnings
struct State {
  ShellScript& out;
  std::string path;
  std::map<std::string, std::vector<std::string>> vars;  // lower-cased name -> value (an array: several)
  std::set<std::string> warned;
  void warn(int line, const std::string& what) { out.warnings.push_back(path + ":" + std::to_string(line) + ": " + what); }
  void warn_once(const std::string& key, int line, const std::string& what) {
    if (warned.insert(key).second) warn(line, what);
  }
  // the value of `name` as written (`shown`, for the warning); nullptr when never set
  const std::vector<std::string>* get(const std::string& name, const std::string& shown, int line, std::vector<std::string>& unset) {
    const auto it = vars.find(lower(name));
    if (it != vars.end()) return &it->second;
    unset.push_back(shown);
    warn_once(lower(shown), line, shown + " is not set in the script: read as empty");
    return nullptr;
  }
  void set(const std::string& name, std::vector<std::string> v, int line) {
    std::size_t total = 0;
    for (const auto& s : v) total += s.size();
    if (total > kMaxShellValueBytes)
      throw InputError(path + ":" + std::to_string(line) + ": " + name + " grows past " + std::to_string(kMaxShellValueBytes >> 20) +
                       " MiB: no launch script's variable is that long");
    vars[lower(name)] = std::move(v);
  }
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (std::size_t k = 0; k < v.size(); ++k) s += (k ? " " : "") + v[k];
  return s;
}

// ---------------------------------------------------------------- PowerShell

class PowerShell {
 public:
  PowerShell(const std::string& text, State& st) : s_(text), st_(st) {}

  void run() {
    while (i_ < s_.size()) statement();
  }

 private:
  const std::string& s_;
  State& st_;
  std::size_t i_ = 0;
  int line_ = 1;

  char peek(std::size_t k = 0) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  void check(const std::string& v) const {
    if (v.size() > kMaxShellValueBytes)
      throw InputError(st_.path + ":" + std::to_string(line_) + ": the expansion grows past 1 MiB: no launch script's word is that long");
  }
  // blanks, `-newline continuations and <# block comments #>; a newline too when `newlines`
  void skip(bool newlines) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (blank(c)) {
        ++i_;
      } else if (c == '`' && (peek(1) == '\n' || (peek(1) == '\r' && peek(2) == '\n'))) {
        i_ += peek(1) == '\r' ? 3 : 2;
        ++line_;
      } else if (c == '`' && blank(peek(1))) {
        std::size_t k = i_ + 1;
        while (k < s_.size() && blank(s_[k])) ++k;
        if (k < s_.size() && s_[k] == '\n')
          st_.warn(line_, "a backtick followed by a space is no line continuation: PowerShell ends the command here (a continuation's "
                          "backtick ends its line); the lines after it are separate commands");
        return;
      } else if (c == '<' && peek(1) == '#') {
        const std::size_t e = s_.find("#>", i_ + 2);
        const std::size_t end = e == std::string::npos ? s_.size() : e + 2;
        line_ += static_cast<int>(std::count(s_.begin() + static_cast<std::ptrdiff_t>(i_), s_.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
        i_ = end;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (newlines && c == '\n') {
        ++i_;
        ++line_;
      } else {
        return;
      }
    }
  }
  // $name, ${name}, $env:NAME, $($name): the value (unset: none, and said so); false when not a variable
  bool variable(std::vector<std::string>& vals, std::vector<std::string>& unset) {
    std::size_t k = i_ + 1;
    std::string name;
    if (peek(1) == '{') {
      const std::size_t e = s_.find('}', k);
      if (e == std::string::npos) return false;
      name = s_.substr(k + 1, e - k - 1);
      k = e + 1;
    } else if (peek(1) == '(') {  // $( ... ): a variable alone is read, anything else kept as written
      std::size_t depth = 0, e = i_ + 1;
      for (; e < s_.size(); ++e)
        if (s_[e] == '(') ++depth;
        else if (s_[e] == ')' && --depth == 0) break;
      if (e >= s_.size()) throw InputError(st_.path + ":" + std::to_string(line_) + ": unterminated $( (PowerShell stops: missing ')')");
      const std::string inner = trim(s_.substr(i_ + 2, e - i_ - 2));
      const std::size_t at = i_;
      i_ = e + 1;
      std::size_t n = inner.size() > 1 && inner[0] == '$' ? 1 : 0;
      if (n == 1 && inner.compare(1, 4, "env:") == 0) n = 5;
      while (n > 0 && n < inner.size() && ident_char(inner[n])) ++n;
      if (n > 1 && n == inner.size()) {
        const std::string nm = inner.substr(1);
        const auto* v = st_.get(nm, "$" + nm, line_, unset);
        vals = v ? *v : std::vector<std::string>{};
        return true;
      }
      vals = {s_.substr(at, i_ - at)};
      st_.warn_once("u" + vals[0], line_, "'" + brief_text(vals[0]) + "' (a subexpression segadvise does not run) is kept as written: what it feeds is not known");
      return true;
    } else {
      if (s_.compare(k, 4, "env:") == 0 || s_.compare(k, 4, "Env:") == 0 || s_.compare(k, 4, "ENV:") == 0) k += 4;
      if (k >= s_.size() || !ident_char(s_[k])) return false;
      while (k < s_.size() && ident_char(s_[k])) ++k;
      name = s_.substr(i_ + 1, k - i_ - 1);
    }
    i_ = k;
    const std::string n = lower(name);
    if (n == "true" || n == "false" || n == "null") {
      vals = n == "null" ? std::vector<std::string>{} : std::vector<std::string>{n == "true" ? "True" : "False"};
      return true;
    }
    if (n == "psscriptroot") {
      vals = {std::filesystem::path(st_.path).parent_path().string()};
      return true;
    }
    const auto* v = st_.get(name, "$" + name, line_, unset);
    vals = v ? *v : std::vector<std::string>{};
    return true;
  }
  // "..." (expanded: $variables, `escapes, "" for a quote) or '...' (literal, '' for a quote), at i_
  std::string string(std::vector<std::string>& unset) {
    const char q = s_[i_++];
    const int at = line_;
    std::string v;
    while (true) {
      if (i_ >= s_.size())
        throw InputError(st_.path + ":" + std::to_string(at) + ": unterminated " + std::string(1, q) + " string (PowerShell stops)");
      const char c = s_[i_];
      if (c == q && peek(1) == q) {
        v += q;
        i_ += 2;
      } else if (c == q) {
        ++i_;
        return v;
      } else if (q == '"' && c == '`' && i_ + 1 < s_.size()) {
        const char e = s_[i_ + 1];
        v += e == 'n' ? '\n' : e == 't' ? '\t' : e == '0' ? '\0' : e;
        i_ += 2;
      } else if (q == '"' && c == '$') {
        std::vector<std::string> vals;
        if (variable(vals, unset)) v += joined(vals);
        else v += s_[i_++];
      } else {
        if (c == '\n') ++line_;
        v += c;
        ++i_;
      }
      check(v);
    }
  }
  bool ends(char c) const { return c == '\n' || c == ';' || c == '|' || c == '\0'; }

  // an assignment's right side: operands joined by `+`, elements by `,`, @( ... ) arrays
  std::vector<std::string> expression(std::vector<std::string>& unset, bool in_array) {
    std::vector<std::string> items;
    std::string cur;
    bool have = false;
    for (;;) {
      skip(false);
      const char c = peek();
      if (in_array && (c == '\n' || c == ';')) {  // @( ... ): a new line or `;` ends an element
        if (have) items.push_back(cur);
        cur.clear();
        have = false;
        line_ += c == '\n';
        ++i_;
        continue;
      }
      if (in_array && c == ')') {
        ++i_;
        break;
      }
      if (ends(c) && !in_array) break;
      if (c == '"' || c == '\'') {
        cur += string(unset);
        have = true;
      } else if (c == '$') {
        std::vector<std::string> vals;
        if (!variable(vals, unset)) {
          ++i_;
          cur += '$';
        } else if (!have && vals.size() != 1 && (peek() == ',' || ends(peek()) || blank(peek()))) {
          items.insert(items.end(), vals.begin(), vals.end());  // an array variable's elements
          skip(false);
          if (peek() == ',') ++i_;
          continue;
        } else {
          cur += joined(vals);
        }
        have = true;
      } else if (c == '@' && peek(1) == '(') {
        i_ += 2;
        std::vector<std::string> inner = expression(unset, true);
        items.insert(items.end(), inner.begin(), inner.end());
        have = false;
      } else if (c == '+' || (c == ',' && have)) {
        ++i_;
        if (c == ',') {
          items.push_back(cur);
          cur.clear();
          have = false;
        }
        skip(true);
        continue;
      } else if (c == ',') {
        ++i_;
      } else if (c == '\0') {
        if (in_array) throw InputError(st_.path + ":" + std::to_string(line_) + ": unterminated @( (PowerShell stops: missing ')')");
        break;
      } else {
        const std::size_t from = i_;
        while (i_ < s_.size() && !blank(s_[i_]) && !ends(s_[i_]) && s_[i_] != ',' && s_[i_] != ')' && s_[i_] != '+') ++i_;
        const std::string t = s_.substr(from, std::max<std::size_t>(i_ - from, 1));
        if (i_ == from) ++i_;
        bool number = !t.empty();
        for (char d : t) number = number && (std::isdigit(static_cast<unsigned char>(d)) || d == '.' || d == 'e' || d == '-');
        if (!number)
          st_.warn_once("x" + std::to_string(line_), line_, "'" + brief_text(t) + "' in an assignment is not followed (a command or an "
                                                              "expression segadvise does not run): kept as written");
        cur += t;
        have = true;
      }
      check(cur);
    }
    if (have) items.push_back(cur);
    return items;
  }

  void statement() {
    skip(true);
    if (i_ >= s_.size()) return;
    const int line = line_;
    // $name = ..., $env:NAME = ..., $name += ...
    if (peek() == '$') {
      const std::size_t save = i_;
      std::size_t k = i_ + 1;
      if (s_.compare(k, 4, "env:") == 0 || s_.compare(k, 4, "Env:") == 0 || s_.compare(k, 4, "ENV:") == 0) k += 4;
      const std::size_t name_from = i_ + 1;
      while (k < s_.size() && ident_char(s_[k])) ++k;
      const std::string name = s_.substr(name_from, k - name_from);
      std::size_t e = k;
      while (e < s_.size() && blank(s_[e])) ++e;
      const bool plus = s_.compare(e, 2, "+=") == 0;
      if (!name.empty() && (plus || (e < s_.size() && s_[e] == '=' && (e + 1 >= s_.size() || s_[e + 1] != '=')))) {
        i_ = e + (plus ? 2 : 1);
        std::vector<std::string> unset;
        std::vector<std::string> v = expression(unset, false);
        if (plus) {
          const auto it = st_.vars.find(lower(name));
          if (it != st_.vars.end() && it->second.size() > 1) v.insert(v.begin(), it->second.begin(), it->second.end());
          else if (it != st_.vars.end() && !v.empty()) v[0] = (it->second.empty() ? "" : it->second[0]) + v[0];
        }
        st_.set(name, std::move(v), line);
        return;
      }
      i_ = save;
    }
    ShellCommand cmd;
    bool first = true;
    for (;;) {
      skip(false);
      const char c = peek();
      if (c == '\0' || c == '\n' || c == ';' || c == '|' || (c == '&' && peek(1) == '&')) {
        if (c != '\0') i_ += c == '&' ? 2 : 1;
        if (c == '\n') ++line_;
        break;
      }
      if (first && c == '&' ) {  // the call operator
        ++i_;
        continue;
      }
      if (c == '>' || ((c == '2' || c == '*') && peek(1) == '>')) {  // a redirection and its target
        std::size_t k = i_;
        while (k < s_.size() && (s_[k] == '>' || s_[k] == '2' || s_[k] == '*' || s_[k] == '&' || s_[k] == '1')) ++k;
        const bool to_stream = k >= i_ + 2 && s_[k - 1] == '1' && s_[k - 2] == '&';  // 2>&1
        i_ = k;
        if (!to_stream) {
          skip(false);
          ShellCommand sink;
          word(sink);
        }
        continue;
      }
      if (first) {
        const std::string kw = lower(s_.substr(i_, std::min<std::size_t>(9, s_.size() - i_)));
        for (const char* w : {"if", "foreach", "for", "while", "function", "switch", "param"})
          if (kw.rfind(w, 0) == 0 && (kw.size() == std::string(w).size() || !ident_char(kw[std::string(w).size()])))
            st_.warn(line_, "'" + std::string(w) + "' is not followed: the commands it holds are read as if they run, once, in order");
      }
      word(cmd);
      first = false;
    }
    if (!cmd.words.empty()) st_.out.commands.push_back(std::move(cmd));
  }

  // one argument (or, for a bare array variable or @splat, its elements) in command mode
  void word(ShellCommand& cmd) {
    const int line = line_;
    std::vector<std::string> unset;
    if ((peek() == '$' || peek() == '@') && ident_start(peek(1))) {  // $args / @args alone: one argument per element
      std::size_t e = i_ + 1;
      while (e < s_.size() && ident_char(s_[e])) ++e;
      const std::string name = s_.substr(i_ + 1, e - i_ - 1), n = lower(name);
      if ((e >= s_.size() || blank(s_[e]) || ends(s_[e]) || s_[e] == '`') && n != "true" && n != "false" && n != "null" && n != "psscriptroot") {
        const auto* v = st_.get(name, "$" + name, line, unset);
        i_ = e;
        if ((!v || v->empty()) && !cmd.words.empty()) cmd.words.back().unset_after = unset;  // $null passes no argument
        if (v)
          for (const auto& x : *v) cmd.words.push_back({x, line, unset, {}});
        return;
      }
    }
    if (peek() == '(') {  // ( expression ): not run
      std::size_t depth = 0, e = i_;
      for (; e < s_.size(); ++e)
        if (s_[e] == '(') ++depth;
        else if (s_[e] == ')' && --depth == 0) break;
      const std::string t = s_.substr(i_, std::min(e + 1, s_.size()) - i_);
      st_.warn_once("u" + t, line, "'" + brief_text(t) + "' (an expression segadvise does not run) is kept as written: what it feeds is not known");
      for (char ch : t) line_ += ch == '\n';
      i_ += t.size();
      cmd.words.push_back({t, line, unset, {}});
      return;
    }
    std::string t;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (blank(c) || ends(c) || (c == '&' && peek(1) == '&')) break;
      if (c == '`') {
        if (peek(1) == '\n' || (peek(1) == '\r' && peek(2) == '\n')) break;  // a continuation: skip() takes it
        if (i_ + 1 < s_.size()) t += s_[i_ + 1];
        i_ += 2;
      } else if (c == '"' || c == '\'') {
        t += string(unset);
      } else if (c == '$') {
        std::vector<std::string> vals;
        if (variable(vals, unset)) t += joined(vals);
        else t += s_[i_++];
      } else {
        t += c;
        ++i_;
      }
      check(t);
    }
    cmd.words.push_back({t, line, unset, {}});
  }
};

// ---------------------------------------------------------------- cmd

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

  int line_at(std::size_t k) const {
    int l = starts_.front().second;
    for (const auto& [off, line] : starts_)
      if (off <= k) l = line;
    return l;
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

bool ends_with(const std::string& s, const std::string& t) { return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0; }

}  // namespace

namespace shell_detail {

void read_powershell(const std::string& text, const std::string& path, ShellScript& out) {
  State st{out, path, {}, {}};
  PowerShell(text, st).run();
}

void read_cmd(const std::string& text, const std::string& path, ShellScript& out) {
  State st{out, path, {}, {}};
  Cmd(text, st).run();
}

}  // namespace shell_detail

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
  int ps = 0, cmd = 0;
  std::size_t from = 0;
  while (from < text.size()) {
    std::size_t eol = text.find('\n', from);
    if (eol == std::string::npos) eol = text.size();
    const std::string l = trim(text.substr(from, eol - from));
    const std::string low = lower(l);
    from = eol + 1;
    if (l.size() > 1 && ends_with(l, "`") && blank(l[l.size() - 2])) ++ps;
    if (low.find("$env:") != std::string::npos) ++ps;
    if (l.size() > 1 && l[0] == '$' && ident_start(l[1])) {
      std::size_t k = 1;
      while (k < l.size() && ident_char(l[k])) ++k;
      while (k < l.size() && blank(l[k])) ++k;
      if (k < l.size() && l[k] == '=' && k > 1 && blank(l[k - 1])) ++ps;
    }
    if (l.size() > 1 && ends_with(l, "^") && blank(l[l.size() - 2])) ++cmd;
    if (low == "@echo off" || low.rfind("rem ", 0) == 0 || l.rfind("::", 0) == 0) ++cmd;
    if (low.rfind("set ", 0) == 0 && low.size() > 4 && (ident_start(low[4]) || low[4] == '"') && low.find('=') != std::string::npos) ++cmd;
  }
  return ps > cmd ? ShellDialect::PowerShell : cmd > ps ? ShellDialect::Cmd : ShellDialect::Bash;
}

}  // namespace segadvise
