#include "segadvise/trainers/reader_util.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "segadvise/io/json_input.hpp"

namespace segadvise::readers {

namespace fs = std::filesystem;

bool contains_any(const std::string& name, const nlohmann::json& parts) {
  for (const auto& p : parts)
    if (name.find(p.get<std::string>()) != std::string::npos) return true;
  return false;
}

std::string script_name(const std::string& word) {
  const std::size_t sep = word.find_last_of("/\\");
  return sep == std::string::npos ? word : word.substr(sep + 1);
}

CommandLine parse_command_line(const std::string& text, const std::string& path, const TrainerFacts& facts) {
  const ShellScript sh = read_shell_script(text, path);
  auto is_script = [](const std::string& t) { return t.size() > 3 && t.compare(t.size() - 3, 3, ".py") == 0; };
  auto known = [&](const std::string& t) {
    const std::string name = script_name(t);
    for (const auto& tf : facts.families)
      if (std::find(tf.scripts.begin(), tf.scripts.end(), name) != tf.scripts.end()) return true;
    return false;
  };
  auto script_at = [&](const std::vector<ShellWord>& cmd, bool known_only) -> std::ptrdiff_t {
    for (std::size_t i = 0; i < cmd.size(); ++i)
      if (is_script(cmd[i].text) && (!known_only || known(cmd[i].text))) return static_cast<std::ptrdiff_t>(i);
    return -1;
  };
  // the training command: one naming a known script, else any *.py, else the first with flags
  const std::vector<ShellWord>* cmd = nullptr;
  std::ptrdiff_t script = -1;
  for (const bool known_only : {true, false}) {
    for (const auto& c : sh.commands) {
      script = script_at(c.words, known_only);
      if (script >= 0) {
        cmd = &c.words;
        break;
      }
    }
    if (cmd) break;
  }
  if (!cmd) {
    for (const auto& c : sh.commands)
      if (std::any_of(c.words.begin(), c.words.end(), [](const ShellWord& t) { return t.text.rfind("--", 0) == 0; })) {
        cmd = &c.words;
        break;
      }
  }
  CommandLine cl;
  cl.warnings = sh.warnings;
  if (!cmd) return cl;
  const std::vector<ShellWord>& toks = *cmd;
  // what the script writes before the command runs
  const auto at = static_cast<std::size_t>(std::find_if(sh.commands.begin(), sh.commands.end(), [&](const ShellCommand& c) { return &c.words == cmd; }) -
                                          sh.commands.begin());
  for (const auto& [file, w] : sh.written_files)
    if (w.before_command <= at) cl.written_files[file] = w;
  std::size_t i = 0;
  if (script >= 0) {
    cl.script = script_name(toks[static_cast<std::size_t>(script)].text);
    cl.script_line = toks[static_cast<std::size_t>(script)].line;
    i = static_cast<std::size_t>(script) + 1;
  }
  for (; i < toks.size(); ++i) {
    const std::string& t = toks[i].text;
    if (t.rfind("--", 0) != 0) continue;  // a stray positional: argparse would refuse it, not our concern
    std::string key = t.substr(2), value;
    const auto eq = key.find('=');
    const TrainerKey* k = nullptr;
    std::vector<std::string> unset = toks[i].unset;
    if (eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else {
      k = facts.key(key);
      const bool flag = (k && k->type == "bool") || i + 1 >= toks.size() || toks[i + 1].text.rfind("--", 0) == 0;
      if (flag) unset = toks[i].unset_after;  // `--key $UNSET --next`: the value is gone
      value = flag ? "true" : toks[++i].text;
      if (!flag) unset = toks[i].unset;
      // argparse's nargs="*": every word up to the next flag is the key's (sd-scripts' --network_args
      // "algo=lokr" "factor=6"), kept space-separated
      if (!flag && k && k->type == "words")
        while (i + 1 < toks.size() && toks[i + 1].text.rfind("--", 0) != 0) value += " " + toks[++i].text;
    }
    cl.values[key] = value;
    cl.lines[key] = toks[i].line;
    if (unset.empty()) cl.unset.erase(key);
    else cl.unset[key] = unset;
  }
  return cl;
}

FlagFile flag_file(const CommandLine& cl, const std::string& key, const std::string& value, const std::string& config_path,
                   const std::function<std::string(const std::string&)>& resolve, TrainerRead& r) {
  const auto line = cl.lines.count(key) ? ":" + std::to_string(cl.lines.at(key)) : std::string();
  if (cl.unset.count(key)) {
    std::string vars;
    for (const std::string& v : cl.unset.at(key)) vars += (vars.empty() ? "" : ", ") + v;
    throw InputError(config_path + line + ": --" + key + " '" + brief_text(value) + "': " + vars +
                     " is not set in the script, and the shell reads it as empty: this is not the file meant; set it in the script");
  }
  if (const ShellWrittenFile* w = written_file(cl.written_files, value)) {
    const std::string at = script_name(config_path) + ":" + std::to_string(w->line);
    // the label is the input's name in messages and in the check's "also read" line
    std::error_code ec;
    if (fs::exists(value, ec) || fs::exists(fs::path(config_path).parent_path() / value, ec))
      r.warnings.push_back("--" + key + " " + value + ": the script writes this file at line " + std::to_string(w->line) +
                           " (a heredoc) before the command runs: that text is read, not the file on this machine");
    return {value + " (heredoc at " + at + ")", &w->text};
  }
  return {resolve(value), nullptr};
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

void assume_shape(const AssumedShape& a, TrainerRead& r) {
  const TrainingSetup& s = r.setup;
  const std::string shape = std::to_string(s.width) + "x" + std::to_string(s.height) +
                            (s.frames > 1 ? "x" + std::to_string(s.frames) + " frames" : "");
  r.shape_source = "assumed: " + a.missing;
  r.setup.shape_assumed_from = a.missing;
  r.warnings.push_back(a.missing + (a.tried.empty() ? "" : "; tried: " + a.tried) + (a.trainer.empty() ? "" : "; " + a.trainer) +
                       ": the shape is assumed, " + shape + " (" +
                       a.size_from + "), batch " + std::to_string(s.batch) + " (" + a.batch_from + ")" +
                       (a.hint.empty() ? "" : "; " + a.hint));
}

void example_shape(const Family& fam, TrainingSetup& s) {
  s.width = fam.example.width;
  s.height = fam.example.height;
  s.frames = fam.modality == "video" ? fam.example.frames : 1;
}

void start_setup(TrainerRead& r, const Family& fam, const std::string& trainer) {
  r.family = &fam;
  r.setup = TrainingSetup{};
  r.setup.model_id = fam.id;
  r.setup.notes.push_back("read as " + trainer + " reads " + r.config_path);
}

}  // namespace segadvise::readers
