// PowerShell, as it runs a launch script (shell_script.hpp). Simplified, and said so in docs/check.md:
// assignments are read for strings, numbers, variables, `+` concatenation and arrays (`,` and @( )),
// anything else kept as written with a warning; if/foreach/function blocks are read once, in order,
// and warned about.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "segadvise/io/json_input.hpp"
#include "shell_windows.hpp"

namespace segadvise::shell_detail {

namespace {

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
      while (n > 0 && n < inner.size() && name_char(inner[n])) ++n;
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
      if (k >= s_.size() || !name_char(s_[k])) return false;
      while (k < s_.size() && name_char(s_[k])) ++k;
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
      while (k < s_.size() && name_char(s_[k])) ++k;
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
          if (kw.rfind(w, 0) == 0 && (kw.size() == std::string(w).size() || !name_char(kw[std::string(w).size()])))
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
    if ((peek() == '$' || peek() == '@') && name_start(peek(1))) {  // $args / @args alone: one argument per element
      std::size_t e = i_ + 1;
      while (e < s_.size() && name_char(s_[e])) ++e;
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

}  // namespace

void read_powershell(const std::string& text, const std::string& path, ShellScript& out) {
  State st{out, path, {}, {}};
  PowerShell(text, st).run();
}

}  // namespace segadvise::shell_detail
