#include "segadvise/trainers/reader_util.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "segadvise/costmodel/json_input.hpp"

namespace segadvise::readers {

namespace fs = std::filesystem;

std::string read_text_file(const std::string& path, const std::string& what) { return read_text_input(path, what); }

namespace {

constexpr std::size_t kMaxYamlNodes = 1000000;

struct PyYamlView {
  std::string name;  // what 'path'
  std::size_t nodes = 0;

  std::size_t keys = 0;

  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    const YAML::Mark m = n.Mark();
    throw InputError(name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1) + ": " + what);
  }
  // the JSON loader's key limits: kMaxJsonKeys in the document, kMaxKeysPerObject in one mapping
  void count_keys(const YAML::Node& map) {
    std::size_t here = 0;
    for (const auto& kv : map) {
      if (++keys > kMaxJsonKeys) fail(kv.first, "more than " + std::to_string(kMaxJsonKeys) + " keys");
      if (++here > kMaxKeysPerObject) fail(kv.first, "more than " + std::to_string(kMaxKeysPerObject) + " keys in one mapping");
    }
  }
  bool needs_rebuild(const YAML::Node& map) const {
    std::unordered_set<std::string> seen;
    for (const auto& kv : map) {
      if (!kv.first.IsScalar()) continue;
      const std::string& k = kv.first.Scalar();
      if (k == "<<" || !seen.insert(k).second) return true;
    }
    return false;
  }
  // `n` with every map resolved as PyYAML resolves it (the same node when nothing changes)
  YAML::Node resolve(const YAML::Node& n, int depth) {
    if (++nodes > kMaxYamlNodes)
      fail(n, "more than " + std::to_string(kMaxYamlNodes) + " nodes once aliases are expanded");
    if (depth > kMaxJsonDepth) fail(n, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    if (n.IsSequence()) {
      YAML::Node out = n;
      for (std::size_t i = 0; i < n.size(); ++i) {
        YAML::Node child = resolve(n[i], depth + 1);
        if (!child.is(n[i])) out[i] = child;
      }
      return out;
    }
    if (!n.IsMap()) return n;
    count_keys(n);
    if (!needs_rebuild(n)) {
      YAML::Node out = n;
      for (const auto& kv : n) {
        YAML::Node child = resolve(kv.second, depth + 1);
        if (!child.is(kv.second)) out[kv.first] = child;
      }
      return out;
    }
    YAML::Node out(YAML::NodeType::Map);
    auto put = [&](const YAML::Node& key, const YAML::Node& value) {
      if (key.IsScalar()) out[key.Scalar()] = value;
      else out.force_insert(key, value);
    };
    // merged maps first (a list's earlier maps win), then the explicit keys in order (the last wins)
    for (const auto& kv : n) {
      if (!kv.first.IsScalar() || kv.first.Scalar() != "<<") continue;
      std::vector<YAML::Node> maps;
      if (kv.second.IsMap()) maps.push_back(kv.second);
      else if (kv.second.IsSequence())
        for (const auto& m : kv.second) maps.push_back(m);
      for (const auto& m : maps)
        if (!m.IsMap()) fail(m, "a '<<' merge key takes a map or a list of maps");
      for (auto it = maps.rbegin(); it != maps.rend(); ++it) {
        const YAML::Node m = resolve(*it, depth + 1);
        for (const auto& mkv : m) put(mkv.first, mkv.second);
      }
    }
    for (const auto& kv : n) {
      if (kv.first.IsScalar() && kv.first.Scalar() == "<<") continue;
      put(kv.first, resolve(kv.second, depth + 1));
    }
    return out;
  }
};

}  // namespace

YAML::Node load_yaml_file(const std::string& path, const std::string& what) {
  const std::string text = read_text_file(path, what);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(path + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                     ": not valid YAML: " + e.msg);
  }
  PyYamlView view{what + " '" + brief_text(path) + "'"};
  return view.resolve(root, 0);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string file_name(const std::string& path) { return fs::path(path).filename().string(); }

std::vector<Token> shell_tokens(const std::string& text, const std::string& path) {
  std::vector<Token> out;
  std::string cur;
  bool in_token = false;
  int line = 1, start = 1;
  char quote = 0;
  int quote_line = 0;
  auto flush = [&] {
    if (in_token) out.push_back({cur, start});
    cur.clear();
    in_token = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == quote) quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < text.size() && (text[i + 1] == '"' || text[i + 1] == '\\')) cur += text[++i];
      else cur += c;
      if (c == '\n') ++line;
      continue;
    }
    if (c == '\\' && i + 1 < text.size()) {
      if (text[i + 1] == '\n') {  // continuation
        ++i;
        ++line;
        continue;
      }
      if (!in_token) start = line;
      in_token = true;
      cur += text[++i];
      continue;
    }
    if (c == '\'' || c == '"') {
      if (!in_token) start = line;
      in_token = true;
      quote = c;
      quote_line = line;
      continue;
    }
    if (c == '#' && !in_token) {  // comment to the end of the line
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '\n') {
      flush();
      out.push_back({"\n", line, true});
      ++line;
      continue;
    }
    if (c == ';' || c == '&' || c == '|') {  // `;`, `&`, `|`, `&&`, `||`
      flush();
      std::string op(1, c);
      if (c != ';' && i + 1 < text.size() && text[i + 1] == c) op += text[++i];
      out.push_back({op, line, true});
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      flush();
      continue;
    }
    if (!in_token) start = line;
    in_token = true;
    cur += c;
  }
  if (quote) throw InputError(path + ":" + std::to_string(quote_line) + ": unterminated " + std::string(1, quote) + " quote");
  flush();
  return out;
}

CommandLine parse_command_line(const std::string& text, const std::string& path, const TrainerFacts& facts) {
  // the commands, each a run of tokens between operators
  std::vector<std::vector<Token>> commands(1);
  for (Token& t : shell_tokens(text, path)) {
    if (t.ends_command) {
      if (!commands.back().empty()) commands.emplace_back();
    } else {
      commands.back().push_back(std::move(t));
    }
  }
  auto is_script = [](const std::string& t) { return t.size() > 3 && t.compare(t.size() - 3, 3, ".py") == 0; };
  auto known = [&](const std::string& t) {
    const std::string name = file_name(t);
    for (const auto& tf : facts.families)
      if (std::find(tf.scripts.begin(), tf.scripts.end(), name) != tf.scripts.end()) return true;
    return false;
  };
  auto script_at = [&](const std::vector<Token>& cmd, bool known_only) -> std::ptrdiff_t {
    for (std::size_t i = 0; i < cmd.size(); ++i)
      if (is_script(cmd[i].text) && (!known_only || known(cmd[i].text))) return static_cast<std::ptrdiff_t>(i);
    return -1;
  };
  // the training command: one naming a known script, else any *.py, else the first with flags
  const std::vector<Token>* cmd = nullptr;
  std::ptrdiff_t script = -1;
  for (const bool known_only : {true, false}) {
    for (const auto& c : commands) {
      script = script_at(c, known_only);
      if (script >= 0) {
        cmd = &c;
        break;
      }
    }
    if (cmd) break;
  }
  if (!cmd) {
    for (const auto& c : commands)
      if (std::any_of(c.begin(), c.end(), [](const Token& t) { return t.text.rfind("--", 0) == 0; })) {
        cmd = &c;
        break;
      }
  }
  CommandLine cl;
  if (!cmd) return cl;
  const std::vector<Token>& toks = *cmd;
  std::size_t i = 0;
  if (script >= 0) {
    cl.script = file_name(toks[static_cast<std::size_t>(script)].text);
    cl.script_line = toks[static_cast<std::size_t>(script)].line;
    i = static_cast<std::size_t>(script) + 1;
  }
  for (; i < toks.size(); ++i) {
    const std::string& t = toks[i].text;
    if (t.rfind("--", 0) != 0) continue;  // a stray positional: argparse would refuse it, not our concern
    std::string key = t.substr(2), value;
    const auto eq = key.find('=');
    const TrainerKey* k = nullptr;
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else {
      k = facts.key(key);
      const bool flag = (k && k->type == "bool") || i + 1 >= toks.size() || toks[i + 1].text.rfind("--", 0) == 0;
      value = flag ? "true" : toks[++i].text;
    }
    cl.values[key] = value;
    cl.lines[key] = toks[i].line;
  }
  return cl;
}

bool is_int_text(const std::string& value) {
  std::size_t i = value.size() > 1 && (value[0] == '+' || value[0] == '-') ? 1 : 0;
  if (i == value.size()) return false;
  for (; i < value.size(); ++i)
    if (value[i] < '0' || value[i] > '9') return false;
  return true;
}

int to_int(const std::string& value, const std::string& where, int lo, int hi) {
  if (!is_int_text(value)) throw InputError(where + ": '" + brief_text(value) + "' is not an integer");
  return static_cast<int>(parse_integer_text(value, where, lo, hi));
}

double to_double(const std::string& value, const std::string& where) {
  try {
    std::size_t used = 0;
    const double v = std::stod(value, &used);
    if (used == value.size()) return v;
  } catch (const std::exception&) {
  }
  throw InputError(where + ": '" + brief_text(value) + "' is not a number");
}

const Family& choose_family(const TrainerReadOptions& o, const Family* found, const std::string& why_not) {
  if (!o.model.empty()) return find_family(o.model);
  if (!found) throw InputError(why_not + "; pass --model (a family id, or your own model's JSON)");
  return *found;
}

std::string optimizer_for(const std::string& v, const std::map<std::string, std::string>& table,
                          std::vector<std::string>& warnings, const std::string& where) {
  auto it = table.find(v);
  if (it != table.end()) return it->second;
  warnings.push_back(where + ": optimizer '" + v + "' has no segadvise equivalent: predicted with adamw (8 bytes of state per parameter)");
  return "adamw";
}

void refuse_flag(TrainerRead& r, const std::string& key, const std::string& why) {
  r.rejections.push_back("--" + key + ": " + why);
  r.refused_keys.push_back(key);
}

void start_setup(TrainerRead& r, const Family& fam, const std::string& trainer) {
  r.family = &fam;
  r.setup = TrainingSetup{};
  r.setup.model_id = fam.id;
  r.setup.notes.push_back("read as " + trainer + " reads " + r.config_path);
}

}  // namespace segadvise::readers
