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
