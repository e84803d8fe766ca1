#include "segadvise/trainers/trainer_writer.hpp"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <regex>

#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

using nlohmann::ordered_json;

namespace {

std::string scalar_text(const ordered_json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string escape_regex(const std::string& s) { return std::regex_replace(s, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)"); }

// musubi flags that are memory knobs (set or removed by the round trip), and the attention flags
bool is_command_line(const TrainerRead& r) {
  const std::string ext = readers::lower(std::filesystem::path(r.config_path).extension().string());
  return ext != ".toml" && ext != ".json" && ext != ".yaml" && ext != ".yml";
}

Rewritten rewrite_flags(const TrainerRead& r, const ordered_json& knobs) {
  Rewritten out;
  out.text = readers::read_text_file(r.config_path, "config");
  const bool toml = !is_command_line(r);
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    out.text = toml ? set_toml_key(out.text, it.key(), it.value()) : set_command_line_flag(out.text, it.key(), it.value());
  }
  if (toml) out.notes.push_back("comments and layout kept: only the memory keys' lines changed");
  else out.notes.push_back("only the memory flags changed; the rest of the command line is as written");
  return out;
}

YAML::Node to_yaml(const ordered_json& v) {
  if (v.is_boolean()) return YAML::Node(v.get<bool>());
  if (v.is_number_integer()) return YAML::Node(v.get<long>());
  if (v.is_number()) return YAML::Node(v.get<double>());
  return YAML::Node(scalar_text(v));
}

Rewritten rewrite_yaml(const TrainerRead& r, const ordered_json& knobs) {
  YAML::Node root = readers::load_yaml_file(r.config_path, "config");
  YAML::Node p = root["config"]["process"][0];
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    const std::string& k = it.key();
    const auto dot = k.find('.');
    if (dot == std::string::npos) continue;
    if (it.value().is_null()) p[k.substr(0, dot)].remove(k.substr(dot + 1));
    else p[k.substr(0, dot)][k.substr(dot + 1)] = to_yaml(it.value());
  }
  YAML::Emitter e;
  e << root;
  Rewritten out;
  out.text = std::string("---\n") + e.c_str() + "\n";
  out.notes.push_back("yaml-cpp does not keep comments: the written job has none of the original's comments (keys and values are kept)");
  return out;
}

Rewritten rewrite_json(const TrainerRead& r, const ordered_json& knobs) {
  ordered_json j = read_json_file(r.config_path, "OneTrainer config");
  Rewritten out;
  for (const auto& removed : trainer_facts("onetrainer").raw.at("removed_keys")) {
    const std::string k = removed.at("name").get<std::string>();
    if (j.contains(k)) {
      j.erase(k);
      out.notes.push_back("removed " + k + " (OneTrainer no longer reads it)");
    }
  }
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    const std::string& k = it.key();
    const auto dot = k.find('.');
    if (dot == std::string::npos) {
      if (k == "__version" && !j.contains(k)) out.notes.push_back("added \"__version\": 11 so that OneTrainer does not migrate the per-part keys away");
      j[k] = it.value();
    } else {
      j[k.substr(0, dot)][k.substr(dot + 1)] = it.value();
    }
  }
  out.text = j.dump(4) + "\n";
  return out;
}

}  // namespace

std::string set_command_line_flag(const std::string& text, const std::string& key, const ordered_json& value) {
  const bool off = value.is_null() || (value.is_boolean() && !value.get<bool>());
  const std::string repl = value.is_boolean() ? "--" + key : "--" + key + " " + scalar_text(value);
  // --key, --key=value or --key value (a value is anything not starting with --)
  const std::regex existing("(^|\\s)--" + escape_regex(key) + (value.is_boolean() ? std::string("(?=\\s|$)") : "(=\\S+|[ \\t]+(?!--)[^\\s\\\\]+)?(?=\\s|$)"));
  std::smatch m;
  if (std::regex_search(text, m, existing)) {
    const std::string lead = m[1].str();
    return m.prefix().str() + (off ? "" : lead + repl) + m.suffix().str();
  }
  if (off) return text;
  // absent: right after the training script (or at the end of the first command)
  const std::regex script("\\.py(?=\\s|$)");
  if (std::regex_search(text, m, script)) return m.prefix().str() + ".py " + repl + m.suffix().str();
  std::string t = text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t + " " + repl + "\n";
}

std::string set_toml_key(const std::string& text, const std::string& key, const ordered_json& value) {
  if (value.is_null()) {  // remove the key's line
    const std::regex whole("(^|\\n)[ \\t]*" + escape_regex(key) + "[ \\t]*=[^\\n]*(\\n|$)");
    std::smatch m;
    if (!std::regex_search(text, m, whole)) return text;
    return m.prefix().str() + m[1].str() + m.suffix().str();
  }
  const std::string rhs = value.is_string() ? "\"" + value.get<std::string>() + "\"" : value.dump();
  const std::regex line("(^|\\n)([ \\t]*" + escape_regex(key) + "[ \\t]*=[ \\t]*)([^#\\n]*?)([ \\t]*(#[^\\n]*)?)(?=\\n|$)");
  std::smatch m;
  if (std::regex_search(text, m, line)) return m.prefix().str() + m[1].str() + m[2].str() + rhs + m[4].str() + m.suffix().str();
  // absent: a top-level key, before the first [section] (sections are flattened, parser_common.py:795-805)
  const std::regex section("(^|\\n)\\[");
  if (std::regex_search(text, m, section)) return m.prefix().str() + m[1].str() + key + " = " + rhs + "\n" + text.substr(m.position(0) + m[1].length());
  return text + (text.empty() || text.back() == '\n' ? "" : "\n") + key + " = " + rhs + "\n";
}

Rewritten rewrite_trainer_config(const TrainerRead& r, const ordered_json& knobs) {
  if (r.trainer == "ai-toolkit") return rewrite_yaml(r, knobs);
  if (r.trainer == "onetrainer") return rewrite_json(r, knobs);
  return rewrite_flags(r, knobs);
}

}  // namespace segadvise
