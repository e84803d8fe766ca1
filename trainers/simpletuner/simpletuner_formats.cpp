// SimpleTuner's config formats, each read into the keys its argument parser receives: a JSON config
// (config.json, or saved as config.json.txt), config.toml (toml_file.py), and config.env, both as the current env loader maps it
// (SimpleTuner bc8e6ab helpers/configuration/env_file.py) and as the legacy train.sh (SimpleTuner
// c1d20f5b, 2024-08-28) passed it to train.py. The facts: trainers/simpletuner/simpletuner-env.json.
#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "simpletuner/simpletuner_parts.hpp"

namespace segadvise::simpletuner {

namespace {

using nlohmann::json;

struct LegacyArg {
  std::string arg;
  int line = 0;
  bool after_extra_args = false;
};

struct EnvFacts {
  std::vector<std::pair<std::string, std::string>> env_to_args;  // in the map's order
  std::set<std::string> ignored_args;
  std::map<std::string, LegacyArg> legacy;
  std::map<std::string, std::pair<std::string, std::string>> legacy_defaults;  // key -> value, lines
  std::map<std::string, std::string> legacy_required;                          // variable -> lines
  std::vector<std::pair<std::string, std::string>> family_flags;               // in set_model_family's order
  std::string default_family;
  std::set<std::string> legacy_variables;
};

const EnvFacts& env_facts() {
  static const EnvFacts f = [] {
    std::string origin;
    const json j = trainer_data_file("simpletuner-env.json", &origin);
    const FieldReader r{j, origin, ""};
    r.str("source", "", true);
    EnvFacts e;
    const FieldReader m = r.sub("env_to_args", true);
    for (auto it = j["env_to_args"].begin(); it != j["env_to_args"].end(); ++it)
      e.env_to_args.emplace_back(it.key(), m.str(it.key(), "", true));
    for (const std::string& a : r.strings("ignored_args")) e.ignored_args.insert(a);
    const FieldReader l = r.sub("legacy_env_to_args", true);
    for (auto it = j["legacy_env_to_args"].begin(); it != j["legacy_env_to_args"].end(); ++it) {
      const FieldReader v = l.sub(it.key(), true);
      e.legacy[it.key()] = LegacyArg{v.str("arg", "", true), v.integer("line", 0, true, 1, 100000),
                                     v.boolean("after_extra_args", false)};
    }
    const FieldReader d = r.sub("legacy_defaults", true);
    for (auto it = j["legacy_defaults"].begin(); it != j["legacy_defaults"].end(); ++it) {
      const FieldReader v = d.sub(it.key(), true);
      e.legacy_defaults[it.key()] = {v.str("value", "", true), v.str("lines", "", true)};
    }
    const FieldReader q = r.sub("legacy_required", true);
    for (auto it = j["legacy_required"].begin(); it != j["legacy_required"].end(); ++it)
      e.legacy_required[it.key()] = q.str(it.key(), "", true);
    const json* flags = r.get("legacy_family_flags", true);
    for (const json& p : *flags) {
      if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string())
        r.fail("legacy_family_flags", "must be a list of [VARIABLE, model_family] pairs");
      e.family_flags.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
    }
    e.default_family = r.str("legacy_default_family", "", true);
    for (const std::string& v : r.strings("legacy_variables")) e.legacy_variables.insert(v);
    return e;
  }();
  return f;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool variable_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// $NAME and ${NAME} replaced by the values assigned above (bash, when train.sh sources the file);
// an unknown name is empty, as in a shell where it is unset
std::string expand(const std::string& v, const std::map<std::string, std::string>& vars) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '$' || i + 1 >= v.size()) {
      out += v[i];
      continue;
    }
    const bool braced = v[i + 1] == '{';
    std::size_t j = i + (braced ? 2 : 1), start = j;
    while (j < v.size() && (std::isalnum(static_cast<unsigned char>(v[j])) || v[j] == '_')) ++j;
    if (j == start || (braced && (j >= v.size() || v[j] != '}'))) {
      out += v[i];
      continue;
    }
    const auto it = vars.find(v.substr(start, j - start));
    if (it != vars.end()) out += it->second;
    i = braced ? j : j - 1;
  }
  return out;
}

struct EnvAssignments {
  std::map<std::string, std::string> vars;
  std::map<std::string, int> lines;
  std::vector<int> skipped;  // lines that assign nothing
};

// KEY=value, `export KEY=value` and KEY+=value lines, as the shell splits them (quotes, comments);
// `expand_vars`: $NAME of a variable assigned above is its value (bash sourcing the file)
EnvAssignments read_assignments(const std::string& path, bool expand_vars) {
  EnvAssignments a;
  std::vector<Token> cmd;
  auto flush = [&] {
    std::size_t i = !cmd.empty() && cmd[0].text == "export" ? 1 : 0;
    bool any = false;
    for (; i < cmd.size(); ++i) {
      const std::string& t = cmd[i].text;
      const auto eq = t.find('=');
      if (eq == std::string::npos || eq == 0) continue;
      const bool append = t[eq - 1] == '+';
      const std::string name = t.substr(0, append ? eq - 1 : eq);
      if (!variable_name(name)) continue;
      std::string value = t.substr(eq + 1);
      if (expand_vars) value = expand(value, a.vars);
      a.vars[name] = append && a.vars.count(name) ? a.vars[name] + " " + value : value;
      a.lines[name] = cmd[i].line;
      any = true;
    }
    if (!cmd.empty() && !any) a.skipped.push_back(cmd[0].line);
    cmd.clear();
  };
  for (Token& t : shell_tokens(read_text_file(path, "config"), path)) {
    if (t.ends_command) flush();
    else cmd.push_back(std::move(t));
  }
  flush();
  return a;
}

// flags after the mapped variables (TRAINER_EXTRA_ARGS): --key=value, --key value, --key (true)
void read_extra_args(const std::string& text, ordered_json& keys, const std::string& where,
                     std::vector<std::string>& warnings) {
  std::vector<std::string> words;
  std::string w;
  for (const char c : text + " ") {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!w.empty()) words.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  std::vector<std::string> stray;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (words[i].rfind("--", 0) != 0 || words[i].size() < 3) {
      stray.push_back(words[i]);
      continue;
    }
    const std::string flag = words[i].substr(2);
    const auto eq = flag.find('=');
    if (eq != std::string::npos) keys[flag.substr(0, eq)] = flag.substr(eq + 1);
    else if (i + 1 < words.size() && words[i + 1].rfind("--", 0) != 0) keys[flag] = words[++i];
    else keys[flag] = true;
  }
  if (!stray.empty())
    warnings.push_back(where + ": '" + brief_text(stray.front()) + "'" + (stray.size() > 1 ? " and others" : "") +
                       " not after a --flag: not read");
}

// a value as its flag: true -> the flag alone (a JSON true), anything else as text; an argument with
// its value (USE_BITFIT -> --layer_freeze_strategy=bitfit) only when true
void set_key(ordered_json& keys, const std::string& arg, const std::string& value) {
  const std::string name = arg.rfind("--", 0) == 0 ? arg.substr(2) : arg;
  const auto eq = name.find('=');
  const bool on = lower(value) == "true";
  if (eq != std::string::npos) {
    if (on) keys[name.substr(0, eq)] = name.substr(eq + 1);
  } else if (on) {
    keys[name] = true;
  } else {
    keys[name] = value;
  }
}

std::string list(const std::vector<std::string>& names) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < 12; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 12) out += " and " + std::to_string(names.size() - 12) + " more";
  return out;
}

// the current loader (env_file.py:240-280): each mapped variable as its flag ('true' the bare flag,
// 'false' nothing), then TRAINER_EXTRA_ARGS
void read_current_env(const std::string& path, const EnvAssignments& a, ConfigFile& f) {
  const EnvFacts& e = env_facts();
  std::set<std::string> mapped;
  std::vector<std::string> falses;
  for (const auto& [var, arg] : e.env_to_args) {
    mapped.insert(var);
    const auto it = a.vars.find(var);
    if (it == a.vars.end() || e.ignored_args.count(arg)) continue;
    if (lower(it->second) == "false") {
      falses.push_back(var);
      continue;
    }
    set_key(f.keys, arg, it->second);
  }
  if (!falses.empty())
    f.warnings.push_back(path + ": " + list(falses) + " =false: the env loader passes no flag for false "
                         "(env_file.py:261-263), so the trainer's default is used");
  if (a.vars.count("TRAINER_EXTRA_ARGS")) read_extra_args(a.vars.at("TRAINER_EXTRA_ARGS"), f.keys, path + ": TRAINER_EXTRA_ARGS", f.warnings);
  std::vector<std::string> legacy, unknown;
  for (const auto& entry : a.vars) {
    const std::string& var = entry.first;  // a named reference: a lambda may not capture a structured binding before C++20
    if (mapped.count(var) || var == "TRAINER_EXTRA_ARGS") continue;
    const bool flag = std::any_of(e.family_flags.begin(), e.family_flags.end(), [&](const auto& p) { return p.first == var; });
    (flag ? legacy : unknown).push_back(var);
  }
  if (!legacy.empty())
    f.warnings.push_back(path + ": " + list(legacy) + ": legacy train.sh variables the current env loader ignores "
                         "(not in env_file.py:3-135 env_to_args_map); the family is MODEL_FAMILY's");
  if (!unknown.empty())
    f.warnings.push_back(path + ": " + list(unknown) + ": not read by SimpleTuner's env loader (env_file.py:3-135 "
                         "maps only its own variables; TRAINER_EXTRA_ARGS carries any other flag)");
}

// the legacy train.sh (c1d20f5b): its variables as train.sh:390-405 passes them, TRAINER_EXTRA_ARGS
// on line 397 (the flags after it win), the family from its flags (trainer.py:229-266)
void read_legacy_env(const std::string& path, const EnvAssignments& a, ConfigFile& f) {
  const EnvFacts& e = env_facts();
  for (const auto& [key, d] : e.legacy_defaults) f.keys[key] = d.first;
  auto pass = [&](bool after) {
    for (const auto& [var, la] : e.legacy) {
      const auto it = a.vars.find(var);
      if (la.after_extra_args != after || it == a.vars.end() || it->second.empty()) continue;
      if (la.arg == "gradient_checkpointing") f.keys[la.arg] = lower(it->second) != "false";  // train.sh:330-333
      else if (la.arg == "use_ema") f.keys[la.arg] = lower(it->second) == "true";             // train.sh:259-266
      else f.keys[la.arg] = it->second;
    }
  };
  pass(false);
  if (a.vars.count("TRAINER_EXTRA_ARGS")) read_extra_args(a.vars.at("TRAINER_EXTRA_ARGS"), f.keys, path + ": TRAINER_EXTRA_ARGS", f.warnings);
  pass(true);
  for (const auto& [var, lines] : e.legacy_required)
    if (!a.vars.count(var) || a.vars.at(var).empty())
      f.rejections.push_back(var + " unset: the legacy train.sh exits (train.sh:" + lines + ")");
  // set_model_family (trainer.py:229-266): each flag set to true names the family, the last one wins
  std::string family, flag;
  for (const auto& [var, fam] : e.family_flags)
    if (a.vars.count(var) && a.vars.at(var) == "true") family = fam, flag = var;
  if (!family.empty() && !f.keys.contains("model_family") && !f.keys.contains("--model_family")) {
    f.keys["model_family"] = family;
    f.warnings.push_back(path + ": no MODEL_FAMILY: read as the legacy train.sh (SimpleTuner before 2024-08-28) reads "
                         "it, the family from " + flag + "=true (trainer.py:229-266" +
                         (flag == "STABLE_DIFFUSION_LEGACY" ? "; its 'legacy' family is SD 1.x/2.x, read as sd1x" : "") +
                         "); the current env loader ignores " + flag + " and stops without MODEL_FAMILY");
  } else if (family.empty() && !f.keys.contains("model_family") && !f.keys.contains("--model_family")) {
    f.default_family = e.default_family;
    f.warnings.push_back(path + ": no MODEL_FAMILY and no FLUX, STABLE_DIFFUSION_3, PIXART_SIGMA, STABLE_DIFFUSION_LEGACY, "
                         "KOLORS or SMOLDIT=true: the legacy train.sh trains " + e.default_family +
                         " (trainer.py:262-263); the current env loader stops without MODEL_FAMILY");
  }
  std::vector<std::string> unknown;
  for (const auto& [var, value] : a.vars)
    if (!e.legacy_variables.count(var) && !e.legacy.count(var)) unknown.push_back(var);
  if (!unknown.empty())
    f.warnings.push_back(path + ": " + list(unknown) + ": not read by the legacy train.sh (train.sh:1-405)");
}

// config.toml (toml_file.py:35-42 -> cli_utils.py mapping_to_cli_args): top-level keys as flags; a
// table is handed to no flag (cli_utils.py:259-261); a list repeats its flag per item (263-268), of which
// argparse keeps the last
void read_toml(const std::string& path, ConfigFile& f) {
  const ordered_json j = readers::toml_file_json(path, "config");
  std::vector<std::string> tables;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it->is_object()) tables.push_back(it.key());
    else if (it->is_array()) {
      if (!it->empty()) f.keys[it.key()] = it->back().is_string() ? it->back() : ordered_json(it->back().dump());
    } else {
      f.keys[it.key()] = *it;
    }
  }
  if (!tables.empty())
    f.warnings.push_back(path + ": [" + list(tables) + "]: a table is passed to no flag (cli_utils.py:259-261): not read");
}

}  // namespace

ConfigFormat config_format(const std::string& path) {
  const std::string name = lower(file_name(path));
  if (ends_with(name, ".env") || name.find("config.env") != std::string::npos) return ConfigFormat::Env;
  if (ends_with(name, ".json") || ends_with(name, ".json.txt")) return ConfigFormat::Json;
  if (ends_with(name, ".toml")) return ConfigFormat::Toml;
  if (ends_with(name, ".txt")) {  // a JSON config pasted into a text file
    std::string text;
    try {
      text = read_input_file(path, "config");
    } catch (const InputError&) {
      return ConfigFormat::None;
    }
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '{') return ConfigFormat::Json;
  }
  return ConfigFormat::None;
}

ConfigFile load_config_file(const std::string& path) {
  ConfigFile f;
  f.format = config_format(path);
  if (f.format == ConfigFormat::Toml) {
    read_toml(path, f);
    return f;
  }
  if (f.format != ConfigFormat::Env) {
    // JSON, under any name (config.json.txt is a JSON config saved with a .txt suffix)
    const std::string text = read_input_file(path, "config");
    f.keys = parse_ordered_json_text(text, "config '" + brief_text(path) + "'");
    f.indent = json_indent(text);
    if (!f.keys.is_object())
      throw InputError("config '" + path + "': expected a JSON object of trainer keys, got " + std::string(f.keys.type_name()));
    f.format = ConfigFormat::Json;
    return f;
  }
  f.keys = ordered_json::object();
  // the current loader reads MODEL_FAMILY (or --model_family among TRAINER_EXTRA_ARGS); a file naming
  // neither was written for the legacy train.sh, which sources it with bash ($NAME expanded)
  const EnvAssignments probe = read_assignments(path, false);
  const auto extra = probe.vars.find("TRAINER_EXTRA_ARGS");
  const bool current = probe.vars.count("MODEL_FAMILY") > 0 ||
                       (extra != probe.vars.end() && extra->second.find("--model_family") != std::string::npos);
  const EnvAssignments a = current ? probe : read_assignments(path, true);
  if (a.vars.empty()) throw InputError(path + ": no KEY=value line: not a SimpleTuner config.env");
  if (current) read_current_env(path, a, f);
  else read_legacy_env(path, a, f);
  if (!a.skipped.empty())
    f.warnings.push_back(path + ": line " + std::to_string(a.skipped.front()) +
                         (a.skipped.size() > 1 ? " and " + std::to_string(a.skipped.size() - 1) + " more" : "") +
                         ": not a KEY=value assignment: not read");
  return f;
}

}  // namespace segadvise::simpletuner
