// The round trip's shared part (trainer_writer.hpp): flags of a command line and keys of a TOML file
// set in place, the keys a rewrite sets. Each trainer's rewriter is its component's rewrite.
#include "segadvise/trainers/trainer_writer.hpp"

#include <filesystem>

#include "common/trainer_parts.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

void set_dotted_key(nlohmann::ordered_json& j, const std::string& key, const nlohmann::ordered_json& value) {
  nlohmann::ordered_json* at = &j;
  std::size_t from = 0;
  for (std::size_t d = key.find('.'); d != std::string::npos; from = d + 1, d = key.find('.', from)) {
    nlohmann::ordered_json& next = (*at)[key.substr(from, d - from)];
    if (!next.is_object()) next = nlohmann::ordered_json::object();
    at = &next;
  }
  (*at)[key.substr(from)] = value;
}

using nlohmann::ordered_json;

std::string plans::scalar_text(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

using plans::scalar_text;

namespace {

bool space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
bool blank(char c) { return c == ' ' || c == '\t'; }

// Where `--key` (with its value unless `flag`) stands in `text`: [begin, end) from the space before it
// (or the start) to the end of the value; found == false when absent. `--key=value`, `--key value`
// (a value not starting with `--` and without a backslash) or `--key` followed by a space or the end.
struct Span {
  bool found = false;
  std::size_t begin = 0, end = 0, lead = 0;  // lead: 1 when a space precedes the flag
};
// Whether offset `at` of a shell text lies in a comment: a `#` starting a word earlier on its line,
// outside quotes
bool in_shell_comment(const std::string& text, std::size_t at) {
  const std::size_t nl = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
  char quote = 0;
  for (std::size_t i = nl == std::string::npos ? 0 : nl + 1; i < at; ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#' && (i == 0 || space(text[i - 1]))) {
      return true;
    }
  }
  return false;
}

Span find_flag(const std::string& text, const std::string& key, bool flag) {
  const std::string dashed = "--" + key;
  const std::size_t n = text.size();
  for (std::size_t p = text.find(dashed); p != std::string::npos; p = text.find(dashed, p + 1)) {
    if (p > 0 && !space(text[p - 1])) continue;
    if (in_shell_comment(text, p)) continue;  // a flag named in a comment is not on the command
    const std::size_t q = p + dashed.size();
    std::size_t end = std::string::npos;
    if (!flag && q < n && text[q] == '=' && q + 1 < n && !space(text[q + 1])) {
      end = q + 1;
      while (end < n && !space(text[end])) ++end;
    } else if (!flag && q < n && blank(text[q])) {
      std::size_t r = q;
      while (r < n && blank(text[r])) ++r;
      std::size_t e = r;
      if (text.compare(r, 2, "--") != 0)
        while (e < n && !space(text[e]) && text[e] != '\\') ++e;
      if (e > r && (e == n || space(text[e]))) end = e;
    }
    if (end == std::string::npos && (q == n || space(text[q]))) end = q;
    if (end == std::string::npos) continue;
    Span s;
    s.found = true;
    s.lead = p > 0 ? 1 : 0;
    s.begin = p - s.lead;
    s.end = end;
    return s;
  }
  return {};
}

// The first line of `text` whose key is `key` (`[ \t]*key[ \t]*=`): its start and the offset just past
// the `=` and the blanks after it; npos when none
std::pair<std::size_t, std::size_t> find_toml_line(const std::string& text, const std::string& key) {
  for (std::size_t ls = 0; ls <= text.size();) {
    std::size_t i = ls;
    while (i < text.size() && blank(text[i])) ++i;
    if (text.compare(i, key.size(), key) == 0) {
      i += key.size();
      while (i < text.size() && blank(text[i])) ++i;
      if (i < text.size() && text[i] == '=') {
        ++i;
        while (i < text.size() && blank(text[i])) ++i;
        return {ls, i};
      }
    }
    const std::size_t nl = text.find('\n', ls);
    if (nl == std::string::npos) break;
    ls = nl + 1;
  }
  return {std::string::npos, std::string::npos};
}

// musubi flags that are memory knobs (set or removed by the round trip), and the attention flags
bool is_command_line(const TrainerRead& r) {
  const std::string ext = lower(std::filesystem::path(r.config_path).extension().string());
  return ext != ".toml" && ext != ".json" && ext != ".yaml" && ext != ".yml";
}

bool is_off(const ordered_json& v) { return v.is_null() || (v.is_boolean() && !v.get<bool>()); }

// How a plan's off value `v` for `key` reaches a command line whose --config_file sets the key (the
// command line wins): nothing to override, `--key 0` for a number (blocks_to_swap 0: no swap), or not
// at all for a store_true flag (a command-line flag cannot switch it off)
enum class FileOverride { None, Zero, Impossible };
FileOverride file_override(const TrainerRead& r, const std::string& key, const ordered_json& v) {
  if (!is_command_line(r) || !is_off(v)) return FileOverride::None;
  const auto in_file = r.config_file_keys.find(key);
  if (in_file == r.config_file_keys.end() || in_file->second == "false") return FileOverride::None;
  return is_int_text(in_file->second) ? FileOverride::Zero : FileOverride::Impossible;
}

}  // namespace

Rewritten plans::rewrite_flags(const TrainerRead& r, const ordered_json& knobs) {
  Rewritten out;
  out.text = read_text_file(r.config_path, "config");
  const bool toml = !is_command_line(r);
  // the training script of a launch script (the caching commands before it are left alone)
  const std::string script = toml ? "" : readers::parse_command_line(out.text, r.config_path, trainer_facts(r.trainer)).script;
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    ordered_json v = it.value();
    switch (file_override(r, it.key(), v)) {
      case FileOverride::Zero:
        v = 0;
        out.notes.push_back("--" + it.key() + " " + r.config_file_keys.at(it.key()) + " is set in " + file_name(r.config_file) +
                            ": overridden with --" + it.key() + " 0 on the command line");
        break;
      case FileOverride::Impossible:
        out.notes.push_back("set " + it.key() + " = false in " + file_name(r.config_file) +
                            " (the plan runs without it; a flag on the command line cannot switch it off)");
        continue;
      case FileOverride::None:
        break;
    }
    out.text = toml ? set_toml_key(out.text, it.key(), v) : set_command_line_flag(out.text, it.key(), v, script);
  }
  if (toml) out.notes.push_back("comments and layout kept: only the memory keys' lines changed");
  else out.notes.push_back("only the memory flags changed; the rest of the command line is as written");
  return out;
}

ordered_json plans::rewrite_knobs(const TrainerRead& r, const ordered_json& plan_knobs) {
  // the keys the trainer stops on by themselves go (a plan that sets one keeps its value)
  ordered_json knobs = plan_knobs;
  for (const std::string& k : r.refused_keys)
    if (!knobs.contains(k)) knobs[k] = nullptr;
  for (auto it = r.fixed_keys.begin(); it != r.fixed_keys.end(); ++it)
    if (!knobs.contains(it.key())) knobs[it.key()] = it.value();
  return knobs;
}

std::vector<std::string> keys_kept_on(const TrainerRead& r, const ordered_json& knobs) {
  std::vector<std::string> out;
  for (auto it = knobs.begin(); it != knobs.end(); ++it)
    if (file_override(r, it.key(), it.value()) == FileOverride::Impossible) out.push_back(it.key());
  return out;
}

std::string set_command_line_flag(const std::string& text, const std::string& key, const ordered_json& value, const std::string& script) {
  const bool off = is_off(value);
  const std::string repl = value.is_boolean() ? "--" + key : "--" + key + " " + scalar_text(value);
  // --key, --key=value or --key value (a value is anything not starting with --)
  const Span at = find_flag(text, key, value.is_boolean());
  if (at.found)
    return text.substr(0, at.begin) + (off ? "" : text.substr(at.begin, at.lead) + repl) + text.substr(at.end);
  if (off) return text;
  // absent: right after the training script (or at the end of the first command), never in a comment
  for (std::size_t r = text.find(".py"); r != std::string::npos; r = text.find(".py", r + 1)) {
    const std::size_t from = text.find_last_of(" \t\n\"'/\\", r);
    const std::string name = text.substr(from == std::string::npos ? 0 : from + 1, r + 3 - (from == std::string::npos ? 0 : from + 1));
    if ((r + 3 == text.size() || space(text[r + 3])) && !in_shell_comment(text, r) && (script.empty() || name == script))
      return text.substr(0, r) + ".py " + repl + text.substr(r + 3);
  }
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t + " " + repl + "\n";
}

namespace {

// `key` in `text` (a whole file, or one table's lines): changed in place, removed (null) or added: at
// the top level before the first [section] (`top`), else after the table's last line
std::string set_toml_key_in(const std::string& text, const std::string& key, const ordered_json& value, bool top) {
  const auto [line_start, value_start] = find_toml_line(text, key);
  const std::size_t line_end = line_start == std::string::npos ? line_start : std::min(text.find('\n', line_start), text.size());
  if (value.is_null()) {  // remove the key's line
    if (line_start == std::string::npos) return text;
    return text.substr(0, line_start) + text.substr(std::min(line_end + 1, text.size()));
  }
  const std::string rhs = value.is_string() ? "\"" + value.get<std::string>() + "\"" : value.dump();
  if (line_start != std::string::npos) {
    // the value ends before the blanks ahead of a `#` comment, or before the line's trailing blanks
    const std::size_t hash = text.find('#', value_start);
    std::size_t e = hash != std::string::npos && hash < line_end ? hash : line_end;
    while (e > value_start && blank(text[e - 1])) --e;
    return text.substr(0, value_start) + rhs + text.substr(e);
  }
  // absent: a top-level key, before the first [section] (sections are flattened, parser_common.py:795-805)
  for (std::size_t ls = 0; top && ls < text.size();) {
    if (text[ls] == '[') return text.substr(0, ls) + key + " = " + rhs + "\n" + text.substr(ls);
    const std::size_t nl = text.find('\n', ls);
    if (nl == std::string::npos) break;
    ls = nl + 1;
  }
  return text + (text.empty() || text.back() == '\n' ? "" : "\n") + key + " = " + rhs + "\n";
}

// the line of the table header `[name]` (blanks around allowed), npos when none
std::size_t table_header(const std::string& text, const std::string& name) {
  for (std::size_t ls = 0; ls < text.size();) {
    std::size_t i = ls;
    while (i < text.size() && blank(text[i])) ++i;
    if (text.compare(i, name.size() + 2, "[" + name + "]") == 0) return ls;
    const std::size_t nl = text.find('\n', ls);
    if (nl == std::string::npos) break;
    ls = nl + 1;
  }
  return std::string::npos;
}

}  // namespace

std::string set_toml_key(const std::string& text, const std::string& key, const ordered_json& value) {
  const std::size_t dot = key.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == key.size()) return set_toml_key_in(text, key, value, true);
  // `table.key`: the key among the lines of [table], up to the next header
  const std::string name = key.substr(0, dot), inner = key.substr(dot + 1);
  const std::size_t header = table_header(text, name);
  if (header == std::string::npos) {
    if (value.is_null()) return text;
    return text + (text.empty() || text.back() == '\n' ? "" : "\n") + "\n[" + name + "]\n" + set_toml_key_in("", inner, value, false);
  }
  const std::size_t body = std::min(text.size(), text.find('\n', header) == std::string::npos ? text.size() : text.find('\n', header) + 1);
  std::size_t end = text.size();
  for (std::size_t ls = body; ls < text.size();) {
    std::size_t i = ls;
    while (i < text.size() && blank(text[i])) ++i;
    if (i < text.size() && text[i] == '[') {
      end = ls;
      break;
    }
    const std::size_t nl = text.find('\n', ls);
    if (nl == std::string::npos) break;
    ls = nl + 1;
  }
  std::string lines = text.substr(body, end - body);
  // the blank lines before the next header stay where they are
  std::size_t keep = lines.size();
  while (keep > 0 && (lines[keep - 1] == '\n' || blank(lines[keep - 1]))) --keep;
  const std::string tail = lines.substr(keep);
  lines = set_toml_key_in(lines.substr(0, keep), inner, value, false);
  if (!lines.empty() && lines.back() == '\n' && !tail.empty() && tail.front() == '\n') lines.pop_back();
  return text.substr(0, body) + lines + tail + text.substr(end);
}

}  // namespace segadvise
