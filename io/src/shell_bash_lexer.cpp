// bash's lexical rules (shell_bash.hpp): quotes, escapes, comments, `\`-newline continuations, the
// operators that end a command, redirections (heredoc bodies read after their line), NAME=( ... )
// arrays, and the expansions a word holds: ${...} forms segadvise follows become Param parts, the rest
// ($(...), backticks, ${A%x}, ...) Unsupported parts kept as written. Every scan moves forward.
#include "shell_bash.hpp"

#include <algorithm>
#include <cctype>

#include "segadvise/io/error.hpp"
#include "segadvise/io/limits.hpp"
#include "segadvise/io/text.hpp"

namespace segadvise::shell_detail {

namespace {

bool meta(char c) { return c == '|' || c == '&' || c == ';' || c == '<' || c == '>' || c == '(' || c == ')' || c == '\n' || blank(c); }

class Lexer {
 public:
  Lexer(const std::string& s, const std::string& path, int line) : s_(s), path_(path), line_(line) {}

  // the whole script: its commands, each with its words and redirections
  std::vector<RawCommand> commands(std::vector<Heredoc>& heredocs) {
    std::vector<RawCommand> out(1);
    std::vector<int> pending;  // heredocs whose body starts after the current line
    auto end_command = [&](const std::string& op) {
      if (!out.back().words.empty() || !out.back().redirects.empty()) out.emplace_back();
      out.back().before = op;
      out.back().line = line_;
    };
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (blank(c)) {
        ++i_;
      } else if (c == '\\' && peek(1) == '\n') {
        i_ += 2;
        ++line_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == '\n') {
        ++i_;
        ++line_;
        for (int h : pending) read_heredoc_body(heredocs[static_cast<std::size_t>(h)]);
        pending.clear();
        end_command("\n");
      } else if (c == ';' || c == '|' || c == '&' || c == '(' || c == ')') {
        if (c == '&' && peek(1) == '>') {  // &> file
          i_ += peek(2) == '>' ? 3 : 2;
          out.back().redirects.push_back({"&>", target_word().parts, -1});
          continue;
        }
        if (c == '(' && out.back().words.size() == 1 && out.back().redirects.empty()) {  // NAME() { ...
          std::size_t k = i_ + 1;
          while (k < s_.size() && blank(s_[k])) ++k;
          if (k < s_.size() && s_[k] == ')') {
            out.back().function = true;
            i_ = k + 1;
            end_command("()");
            continue;
          }
        }
        std::string op(1, c);
        if ((c == ';' || c == '|' || c == '&') && peek(1) == c) op += c;
        i_ += op.size();
        end_command(op);
      } else if (c == '<' || c == '>' || (std::isdigit(static_cast<unsigned char>(c)) && fd_redirect())) {
        while (std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
        std::string op(1, s_[i_++]);
        if (i_ < s_.size() && (s_[i_] == '>' || s_[i_] == '<' || s_[i_] == '&' || s_[i_] == '|')) op += s_[i_++];
        if (op == "<<" && peek(0) == '<') op += s_[i_++];
        if (op == "<<" && peek(0) == '-') op += s_[i_++];
        Redirect r{op, {}, -1};
        if (op == "<<" || op == "<<-") {
          Heredoc h;
          h.strip_tabs = op == "<<-";
          h.line = line_;
          const RawWord d = target_word();
          for (const Part& p : d.parts) {
            h.delim += p.kind == Part::Lit ? p.text : "$" + p.text;
            h.quoted |= p.quoted;
          }
          r.heredoc = static_cast<int>(heredocs.size());
          heredocs.push_back(h);
          pending.push_back(r.heredoc);
        } else if (op.size() == 2 && op[1] == '&' && (std::isdigit(static_cast<unsigned char>(peek(0))) || peek(0) == '-')) {
          ++i_;  // 2>&1, >&-: a descriptor, no file
        } else {
          r.target = target_word().parts;
        }
        out.back().redirects.push_back(std::move(r));
      } else {
        out.back().words.push_back(word());
        if (out.back().words.size() == 1) out.back().line = out.back().words.front().line;
      }
    }
    if (!pending.empty()) read_heredoc_body(heredocs[static_cast<std::size_t>(pending.front())]);
    return out;
  }

  // a word's parts up to an unquoted blank or operator (double-quoted content when `dquoted`: the
  // operand of an expansion inside double quotes, or an unquoted heredoc's body)
  Word parts(bool dquoted, bool heredoc = false) {
    Word w;
    word_from_ = i_;
    if (dquoted) {
      dq_run(w, heredoc, false);
      return w;
    }
    while (i_ < s_.size()) {
      const char c = s_[i_];
      too_long();
      if (meta(c) && !operand_) break;
      if (c == '\\') {
        if (peek(1) == '\n') {
          ++line_;
        } else if (i_ + 1 < s_.size()) {
          std::size_t k = i_ + 1;
          while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t')) ++k;
          if (k > i_ + 1 && (k == s_.size() || s_[k] == '\n') && warnings_)
            warnings_->push_back(path_ + ":" + std::to_string(line_) + ": a backslash followed by a space is no line continuation: "
                                 "bash ends the command here (a continuation's backslash ends its line); the lines after it are separate commands");
          lit(w, std::string(1, peek(1)), true);
        }
        i_ += 2;
      } else if (c == '\'') {
        const std::size_t close = s_.find('\'', i_ + 1);
        if (close == std::string::npos) unterminated("'");
        const std::string body = s_.substr(i_ + 1, close - i_ - 1);
        lines(body);
        lit(w, body, true);
        i_ = close + 1;
      } else if (c == '$' && peek(1) == '\'') {
        ansi_c(w);
      } else if (c == '"') {
        const int at = line_;
        ++i_;
        Word q;
        dq_run(q, false, true);
        if (i_ >= s_.size()) {
          line_ = at;
          unterminated("\"");
        }
        ++i_;
        if (q.empty()) lit(w, "", true);  // "" is an empty word, not none
        for (Part& p : q) {
          if (p.kind == Part::Lit) lit(w, p.text, true);
          else w.push_back(std::move(p));
        }
      } else if (c == '$') {
        dollar(w, false);
      } else if (c == '`') {
        backtick(w, false);
      } else {
        lit(w, std::string(1, c), false);
        ++i_;
      }
    }
    return w;
  }


 private:
  const std::string& s_;
  const std::string& path_;
  int line_ = 1;
  std::size_t i_ = 0;

 public:
  bool operand_ = false;  // an expansion's operand: blanks and operators are plain characters

 private:

  std::size_t word_from_ = 0;  // where the word being read starts

 public:
  std::vector<std::string>* warnings_ = nullptr;  // what bash runs otherwise than the script's layout suggests

 private:

  // a word (or a heredoc's body) past kMaxShellValueBytes: no launch script writes one; refused before
  // its parts fill memory
  void too_long() const {
    if (i_ - word_from_ > kMaxShellValueBytes)
      throw InputError(path_ + ":" + std::to_string(line_) + ": a word or heredoc longer than " +
                       std::to_string(kMaxShellValueBytes >> 20) + " MiB: no launch script's is that long");
  }
  char peek(std::size_t k) const { return i_ + k < s_.size() ? s_[i_ + k] : '\0'; }
  void lines(const std::string& t) {
    for (char c : t) line_ += c == '\n';
  }
  [[noreturn]] void unterminated(const std::string& what) {
    throw InputError(path_ + ":" + std::to_string(line_) + ": unterminated " + what + " (bash stops: unexpected end of file)");
  }
  void lit(Word& w, const std::string& t, bool quoted) {
    if (!w.empty() && w.back().kind == Part::Lit && w.back().quoted == quoted) w.back().text += t;
    else w.push_back({Part::Lit, quoted, t, "", "", "", line_});
  }
  // double-quoted content: up to the closing `"` when `to_quote`, else to the end (a heredoc's body,
  // where `"` is plain and `\"` stays as written)
  void dq_run(Word& w, bool heredoc, bool to_quote) {
    while (i_ < s_.size() && !(to_quote && s_[i_] == '"')) {
      const char c = s_[i_];
      too_long();
      if (c == '\\' && (peek(1) == '$' || peek(1) == '`' || peek(1) == '\\' || peek(1) == '\n' || (!heredoc && peek(1) == '"'))) {
        if (peek(1) != '\n') lit(w, std::string(1, peek(1)), true);
        else ++line_;
        i_ += 2;
      } else if (c == '$') {
        dollar(w, true);
      } else if (c == '`') {
        backtick(w, true);
      } else {
        if (c == '\n') ++line_;
        lit(w, std::string(1, c), true);
        ++i_;
      }
    }
  }
  // from s_[i_] (an opening character) to the one closing it, nested and quoted text skipped; the
  // offset just past it
  std::size_t matching(char open, char close) {
    int depth = 0;
    for (std::size_t k = i_; k < s_.size(); ++k) {
      const char c = s_[k];
      if (c == '\\') ++k;
      else if (c == '\'' || c == '"') k = std::min(s_.find(c, k + 1), s_.size() - 1);
      else if (c == open) ++depth;
      else if (c == close && --depth == 0) return k + 1;
    }
    unterminated(std::string(1, open) + "...");
  }
  void unsupported(Word& w, std::size_t from, bool quoted) {
    const std::string t = s_.substr(from, i_ - from);
    w.push_back({Part::Unsupported, quoted, t, "", "", "", line_});
    lines(t);
  }
  void backtick(Word& w, bool quoted) {
    const std::size_t from = i_;
    std::size_t k = i_ + 1;
    while (k < s_.size() && s_[k] != '`') k += s_[k] == '\\' ? 2 : 1;
    if (k >= s_.size()) unterminated("`");
    i_ = k + 1;
    unsupported(w, from, quoted);
  }
  void ansi_c(Word& w) {  // $'...': \n \t \\ \' and \" decoded, other escapes kept
    std::string t;
    std::size_t k = i_ + 2;
    for (; k < s_.size() && s_[k] != '\''; ++k) {
      if (s_[k] == '\\' && k + 1 < s_.size()) {
        const char e = s_[++k];
        t += e == 'n' ? '\n' : e == 't' ? '\t' : (e == '\\' || e == '\'' || e == '"') ? e : '\\';
        if (e != 'n' && e != 't' && e != '\\' && e != '\'' && e != '"') t += e;
      } else {
        t += s_[k];
      }
    }
    if (k >= s_.size()) unterminated("$'");
    lines(s_.substr(i_, k - i_));
    lit(w, t, true);
    i_ = k + 1;
  }
  void dollar(Word& w, bool quoted) {
    const std::size_t from = i_;
    const char n = peek(1);
    if (n == '{') {
      ++i_;
      const std::size_t end = matching('{', '}');
      const std::string inner = s_.substr(i_ + 1, end - i_ - 2);
      i_ = end;
      Part p{Part::Param, quoted, "", "", "", "", line_};
      std::size_t k = 0;
      if (!inner.empty() && inner[0] == '#' && inner.size() > 1) {
        p.op = "#";
        k = 1;
      }
      const std::size_t name_from = k;
      if (k < inner.size() && name_start(inner[k]))
        while (k < inner.size() && name_char(inner[k])) ++k;
      else if (k < inner.size() && (std::isdigit(static_cast<unsigned char>(inner[k])) || inner[k] == '@' || inner[k] == '*'))
        ++k;
      p.text = inner.substr(name_from, k - name_from);
      if (k < inner.size() && inner[k] == '[') {
        const std::size_t close = inner.find(']', k);
        if (close != std::string::npos) {
          p.index = inner.substr(k + 1, close - k - 1);
          k = close + 1;
        }
      }
      bool ok = !p.text.empty() && (p.index.empty() || p.index == "@" || p.index == "*" || is_int_text(p.index));
      if (ok && k < inner.size() && p.op != "#") {
        for (const char* op : {":-", ":=", ":+", ":?", "-", "=", "+", "?"})
          if (inner.compare(k, std::string(op).size(), op) == 0) {
            p.op = op;
            p.arg = inner.substr(k + p.op.size());
            k = inner.size();
            break;
          }
      }
      if (!ok || k != inner.size()) return unsupported(w, from, quoted);  // ${A%x}, ${A/x/y}, ${!A}, ...
      lines(inner);
      w.push_back(std::move(p));
    } else if (n == '(') {
      ++i_;
      i_ = matching('(', ')');
      unsupported(w, from, quoted);
    } else if (name_start(n)) {
      ++i_;
      while (i_ < s_.size() && name_char(s_[i_])) ++i_;
      w.push_back({Part::Param, quoted, s_.substr(from + 1, i_ - from - 1), "", "", "", line_});
    } else if (std::isdigit(static_cast<unsigned char>(n)) || n == '@' || n == '*' || n == '#' || n == '?') {
      i_ += 2;
      w.push_back({Part::Param, quoted, std::string(1, n), "", "", "", line_});
    } else if (n == '$' || n == '!' || n == '-') {
      i_ += 2;
      unsupported(w, from, quoted);
    } else {
      lit(w, "$", quoted);
      ++i_;
    }
  }
  bool fd_redirect() const {
    std::size_t k = i_;
    while (k < s_.size() && std::isdigit(static_cast<unsigned char>(s_[k]))) ++k;
    return k < s_.size() && (s_[k] == '<' || s_[k] == '>') && (i_ == 0 || meta(s_[i_ - 1]));
  }
  RawWord target_word() {
    while (i_ < s_.size() && blank(s_[i_])) ++i_;
    RawWord w;
    w.line = line_;
    w.parts = parts(false);
    return w;
  }
  RawWord word() {
    RawWord w;
    w.line = line_;
    // NAME=( ... ) / NAME+=( ... ): an array, its words across lines, comments allowed
    std::size_t k = i_;
    if (name_start(s_[k])) {
      while (k < s_.size() && name_char(s_[k])) ++k;
      const bool plus = k < s_.size() && s_[k] == '+';
      if (s_.compare(k + plus, 2, "=(") == 0) {
        w.array = true;
        w.parts.push_back({Part::Lit, false, s_.substr(i_, k + plus + 1 - i_), "", "", "", line_});
        i_ = k + plus + 2;
        for (;;) {
          while (i_ < s_.size() && (blank(s_[i_]) || s_[i_] == '\n' || (s_[i_] == '\\' && peek(1) == '\n'))) {
            if (s_[i_] == '\\') ++i_;
            if (s_[i_++] == '\n') ++line_;
          }
          if (i_ >= s_.size()) unterminated("array (");
          if (s_[i_] == ')') {
            ++i_;
            break;
          }
          if (s_[i_] == '#') {
            while (i_ < s_.size() && s_[i_] != '\n') ++i_;
            continue;
          }
          const std::size_t at = i_;
          w.items.push_back(parts(false));
          if (i_ == at) ++i_;  // an operator inside the array: skipped
        }
        return w;
      }
    }
    w.parts = parts(false);
    return w;
  }
  void read_heredoc_body(Heredoc& h) {
    h.line = line_;
    while (i_ < s_.size()) {
      std::size_t eol = s_.find('\n', i_);
      if (eol == std::string::npos) eol = s_.size();
      std::string l = s_.substr(i_, eol - i_);
      if (h.strip_tabs) l.erase(0, l.find_first_not_of('\t') == std::string::npos ? l.size() : l.find_first_not_of('\t'));
      i_ = std::min(eol + 1, s_.size());
      ++line_;
      if (l == h.delim || (!l.empty() && l.back() == '\r' && l.substr(0, l.size() - 1) == h.delim)) return;
      h.body += l + "\n";
    }
    h.delim.clear();  // ended by the end of the file: bash warns and takes the rest (said by the evaluator)
  }
};


}  // namespace

std::vector<RawCommand> lex_bash(const std::string& text, const std::string& path, std::vector<Heredoc>& heredocs,
                                 std::vector<std::string>& warnings) {
  Lexer l(text, path, 1);
  l.warnings_ = &warnings;
  return l.commands(heredocs);
}

Word lex_bash_word(const std::string& text, const std::string& path, int line, bool dquoted, bool heredoc) {
  Lexer l(text, path, line);
  l.operand_ = true;
  return l.parts(dquoted, heredoc);
}

}  // namespace segadvise::shell_detail
