// A Jupyter notebook (.ipynb) as IPython runs its shell lines (shell_script.hpp): in each code cell, a
// `!command` line (with its `\` continuation lines) runs in bash, `%env NAME=value` sets a variable, a
// `%%bash` / `%%sh` cell is a bash script; IPython expands `$NAME` and `{NAME}` from the Python
// variables first, so a top-level `NAME = "value"` (a string or number literal) is read as the same
// assignment. Simplified, and said so in docs/check.md: other Python code is not run (what it sets is
// unknown: a `$NAME` it would feed is warned as never set), and `{expression}` beyond a name is kept.
#include <string>
#include <vector>

#include "segadvise/io/error.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/shell_script.hpp"
#include "shell_text.hpp"

namespace segadvise::shell_detail {

namespace {

// `NAME = "value"` / `NAME = 'value'` / `NAME = 123` as a bash assignment, else ""
std::string python_assignment(const std::string& line) {
  std::size_t k = 0;
  if (line.empty() || !name_start(line[0])) return "";
  while (k < line.size() && name_char(line[k])) ++k;
  const std::string name = line.substr(0, k);
  while (k < line.size() && blank(line[k])) ++k;
  if (k >= line.size() || line[k] != '=' || (k + 1 < line.size() && line[k + 1] == '=')) return "";
  const std::string v = trim(line.substr(k + 1));
  std::string value;
  if (v.size() >= 2 && (v[0] == '"' || v[0] == '\'') && v.find(v[0], 1) == v.size() - 1) {
    value = v.substr(1, v.size() - 2);
    if (value.find('\\') != std::string::npos) return "";  // an escape Python reads otherwise
  } else if (!v.empty() && v.find_first_not_of("0123456789.e-") == std::string::npos) {
    value = v;
  } else {
    return "";
  }
  std::string quoted = "'";
  for (char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return name + "=" + quoted + "'";
}

// IPython's {NAME} in a shell line: bash's ${NAME}
std::string braces(const std::string& line) {
  std::string out;
  for (std::size_t k = 0; k < line.size(); ++k) {
    const std::size_t e = line[k] == '{' && (k == 0 || line[k - 1] != '$') ? line.find('}', k) : std::string::npos;
    bool name = e != std::string::npos && e > k + 1 && name_start(line[k + 1]);
    for (std::size_t j = k + 1; name && j < e; ++j) name = name_char(line[j]);
    if (name) {
      out += "${" + line.substr(k + 1, e - k - 1) + "}";
      k = e;
    } else {
      out += line[k];
    }
  }
  return out;
}

// one code cell as the bash text IPython runs, line for line (other lines left empty, so lines keep
// their numbers within the cell)
std::string cell_script(const std::vector<std::string>& lines) {
  std::string out;
  const std::string first = lines.empty() ? "" : trim(lines[0]);
  const bool bash = first == "%%bash" || first == "%%sh" || first.rfind("%%script bash", 0) == 0 || first.rfind("%%script sh", 0) == 0;
  bool continued = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string l = lines[i];
    while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) l.pop_back();
    const std::string t = trim(l);
    if (bash) {
      out += (i == 0 ? "" : l) + "\n";
      continue;
    }
    if (continued) {
      out += braces(l);
    } else if (!t.empty() && t[0] == '!') {
      out += braces(t.substr(t.size() > 1 && t[1] == '!' ? 2 : 1));
    } else if (t.rfind("%env ", 0) == 0) {
      const std::string a = trim(t.substr(5));
      const std::size_t eq = a.find_first_of("= ");
      if (eq != std::string::npos) out += "export " + a.substr(0, eq) + "='" + trim(a.substr(eq + 1)) + "'";
    } else {
      out += python_assignment(l);
    }
    continued = (continued || (!t.empty() && t[0] == '!')) && !l.empty() && l.back() == '\\';
    out += "\n";
  }
  return out;
}

}  // namespace

void read_notebook(const std::string& text, const std::string& path, ShellScript& out) {
  const nlohmann::json nb = parse_json_text(text, path);
  if (!nb.is_object() || !nb.contains("cells") || !nb.at("cells").is_array())
    throw InputError(path + ": not a Jupyter notebook (no \"cells\" list)");
  std::vector<std::pair<std::string, std::string>> cells;  // label, bash text
  int n = 0;
  for (const auto& c : nb.at("cells")) {
    ++n;
    if (!c.is_object() || c.value("cell_type", "") != "code" || !c.contains("source")) continue;
    std::vector<std::string> lines;
    const auto& src = c.at("source");
    if (src.is_string()) {
      const std::string s = src.get<std::string>();
      for (std::size_t a = 0; a <= s.size();) {
        const std::size_t e = std::min(s.find('\n', a), s.size());
        lines.push_back(s.substr(a, e - a));
        a = e + 1;
      }
    } else if (src.is_array()) {
      for (const auto& l : src)
        if (l.is_string()) lines.push_back(l.get<std::string>());
    }
    cells.emplace_back(path + " cell " + std::to_string(n), cell_script(lines));
  }
  read_bash_cells(cells, out);
}

}  // namespace segadvise::shell_detail
