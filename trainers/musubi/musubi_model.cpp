// What a musubi-tuner run trains (musubi_parts.hpp): the model, the DiT's stored precision, the
// optimizer and the keys musubi does not have. Facts: trainers/musubi/musubi.json.
#include "musubi/musubi_parts.hpp"

#include <algorithm>
#include <cctype>

#include "segadvise/families/family.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"

namespace segadvise::readers::musubi_parts {

namespace {

using nlohmann::json;

const json& models(const TrainerFacts& facts) { return facts.raw.at("models"); }

// a path's file name (either separator: a Windows path from the author's machine too)
std::string base_name(const std::string& path) {
  const std::size_t slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// a DiT file's name as the name rules match it: lower-cased, '-' as '_'
std::string normalized(const std::string& path) {
  std::string n = lower(base_name(path));
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

// the script and --task decide (the family whose scripts hold the script, or whose tasks hold --task,
// the script's default --task where it has one)
const Family* by_script(const TrainerFacts& facts, const CommandLine& cl, std::string& why_not) {
  std::string task = cl.values.count("task") ? cl.values.at("task") : "";
  const auto& dt = facts.raw.at("default_task");
  if (task.empty() && cl.script == dt.at("script").get<std::string>()) task = dt.at("task").get<std::string>();  // argparse default
  for (const auto& tf : facts.families) {
    const bool script = !cl.script.empty() && std::find(tf.scripts.begin(), tf.scripts.end(), cl.script) != tf.scripts.end();
    const bool by_task = !task.empty() && std::find(tf.tasks.begin(), tf.tasks.end(), task) != tf.tasks.end();
    if (by_task || (script && tf.tasks.empty())) return &find_family(tf.family);
  }
  for (const auto& n : facts.raw.at("not_modelled"))
    if (n.at("script") == cl.script) why_not = cl.script + ": " + n.at("why").get<std::string>();
  if (why_not.empty() && !cl.script.empty())
    why_not = "training script '" + brief_text(cl.script) + "'" + (task.empty() ? "" : " --task " + brief_text(task)) + " is not one segadvise knows";
  return nullptr;
}

// --model_version where the script has one (musubi.json models.model_versions); false: it has none
bool by_version(const TrainerFacts& facts, const CommandLine& cl, const std::string& path, ModelRead& m) {
  for (const auto& v : models(facts).at("model_versions")) {
    const json& scripts = v.at("scripts");
    if (std::find(scripts.begin(), scripts.end(), cl.script) == scripts.end()) continue;
    const std::string key = v.at("key").get<std::string>(), src = v.at("source").get<std::string>();
    std::string value = v.at("default").get<std::string>(), given;
    if (cl.values.count(key)) {
      value = v.value("lower", false) ? lower(cl.values.at(key)) : cl.values.at(key);
      given = "--" + key;
    } else if (v.contains("flags")) {
      for (const auto& [f, version] : v.at("flags").items())
        if (flag(cl, f)) {
          value = version.get<std::string>();
          given = "--" + f;
          break;
        }
    }
    const json& values = v.at("values");
    if (!values.contains(value)) {
      std::string list;
      for (const auto& [k, _] : values.items()) list += (list.empty() ? "" : ", ") + k;
      throw InputError(where(path, cl, key) + ": '" + brief_text(value) + "' is not one of " + list + ": musubi stops (" + src + ")");
    }
    const std::string how = given.empty() ? "--" + key + " unset: " + cl.script + "'s default " + value : given + " " + value;
    if (values.at(value).is_null()) {
      m.why_not = cl.script + ", " + how + ": " + v.value("why_null", "no segadvise family") + " (" + src + ")";
      return true;
    }
    m.family = &find_family(values.at(value).get<std::string>());
    m.notes.push_back(how + ": " + m.family->name + " (" + src + ")");
    // a --text_encoder file whose name is the other size's Qwen3 (the caching and sampling load the version's)
    if (v.contains("text_encoder_names") && v.at("text_encoder_names").contains(m.family->id) && cl.values.count("text_encoder")) {
      const json& te = v.at("text_encoder_names").at(m.family->id);
      const std::string name = normalized(cl.values.at("text_encoder"));
      if (contains_any(name, te.at("other")) && !contains_any(name, te.at("says")))
        m.warnings.push_back("text_encoder '" + brief_text(base_name(cl.values.at("text_encoder"))) + "' is named as another Qwen3, but " + value +
                             " loads " + te.at("loads").get<std::string>() + " (" + src + "): its caching and sampling would not load it");
    }
    if (v.contains("notes") && v.at("notes").contains(value)) m.warnings.push_back(v.at("notes").at(value).get<std::string>());
    return true;
  }
  return false;
}

// the family the DiT file's name suggests (musubi.json models.dit_names), or null
const Family* by_dit_name(const TrainerFacts& facts, const CommandLine& cl) {
  if (!cl.values.count("dit")) return nullptr;
  const std::string name = normalized(cl.values.at("dit"));
  for (const auto& e : models(facts).at("dit_names").at("names")) {
    bool ok = contains_any(name, e.at("contains"));
    if (e.contains("requires"))
      for (const auto& r : e.at("requires")) ok = ok && name.find(r.get<std::string>()) != std::string::npos;
    if (ok) return &find_family(e.at("family").get<std::string>());
  }
  return nullptr;
}

}  // namespace

bool flag(const CommandLine& cl, const std::string& k) {
  auto it = cl.values.find(k);
  return it != cl.values.end() && it->second != "false";
}

std::string where(const std::string& path, const CommandLine& cl, const std::string& k) {
  auto it = cl.lines.find(k);
  return path + (it == cl.lines.end() ? "" : ":" + std::to_string(it->second)) + ": " + k;
}

std::string with_module_scripts(const std::string& text) {
  // `python -m musubi_tuner.krea2_train_network`: the module krea2_train_network.py's shim imports
  // (krea2_train_network.py:1); spaces and tabs only between, so every line keeps its number. A plain
  // scan (no std::regex: its recursion grows with the match, a long name must not exhaust the stack)
  static const std::string kPackage = "musubi_tuner.";
  std::string out;
  out.reserve(text.size() + 16);
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t m = text.find("-m", i);
    if (m == std::string::npos) break;
    std::size_t j = m + 2;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
    const bool flag_start = m == 0 || text[m - 1] == ' ' || text[m - 1] == '\t' || text[m - 1] == '\n';
    if (!flag_start || j == m + 2 || text.compare(j, kPackage.size(), kPackage) != 0) {
      out.append(text, i, m + 2 - i);
      i = m + 2;
      continue;
    }
    std::size_t k = j + kPackage.size();
    while (k < text.size() && (std::isalnum(static_cast<unsigned char>(text[k])) || text[k] == '_')) ++k;
    out.append(text, i, m - i);
    out += "musubi_tuner/" + text.substr(j + kPackage.size(), k - j - kPackage.size()) + ".py";
    i = k;
  }
  out.append(text, i, std::string::npos);
  return out;
}

ModelRead model_of(const TrainerFacts& facts, CommandLine& cl, const std::string& path) {
  ModelRead m;
  const bool named_by_script = !cl.script.empty();
  // a TOML alone: network_module names the script it belongs to
  if (!named_by_script && cl.values.count("network_module")) {
    const std::string& module = cl.values.at("network_module");
    const json& nm = models(facts).at("network_modules");
    std::string src;
    for (const auto& e : nm.at("modules"))
      if (e.at("module") == module.substr(module.rfind('.') + 1)) {
        cl.script = e.at("script").get<std::string>();
        src = e.at("source").get<std::string>();
      }
    if (!cl.script.empty())
      m.notes.push_back("the model is read from network_module '" + brief_text(module) + "', the LoRA module of " + cl.script + " (" + src +
                        "): musubi does not check the module against the script run (training/trainer_base.py:1534-1538)");
    else
      m.warnings.push_back("network_module '" + brief_text(module) +
                           "' does not name a model (LoHa and LoKr take the architecture from the DiT, networks/network_arch.py): "
                           "the model is looked for in the other keys");
  }
  const Family* by_name = by_dit_name(facts, cl);
  if (!by_version(facts, cl, path, m)) m.family = by_script(facts, cl, m.why_not);
  if (m.family || !m.why_not.empty() || named_by_script || !cl.script.empty()) {
    // the module and the DiT file disagree: the module's script runs, on a DiT it may not load
    if (!named_by_script && m.family && by_name && by_name != m.family)
      m.warnings.push_back("the DiT file '" + brief_text(base_name(cl.values.at("dit"))) + "' looks like " + by_name->name + ", but " +
                           cl.script + " (network_module) trains " + m.family->name + ": read as " + m.family->name);
    return m;
  }
  // nothing names it but the DiT file: its name, a guess
  if (by_name) {
    m.family = by_name;
    m.guessed_from = "the DiT file name '" + brief_text(base_name(cl.values.at("dit"))) + "' (dit)";
    m.warnings.push_back("no training script, network_module, --model_version or --task names the model: " + m.family->name +
                         " is guessed from " + m.guessed_from + " (" + models(facts).at("dit_names").at("source").get<std::string>() +
                         "); --model names it");
    // no network_module: a full fine-tune's keys make it the family's full fine-tune script
    for (const auto& f : facts.raw.at("families"))
      if (f.at("family") == m.family->id && f.contains("full_finetune_scripts") && !cl.values.count("network_module") &&
          (flag(cl, "full_bf16") || flag(cl, "fused_backward_pass")))
        cl.script = f.at("full_finetune_scripts").at(0).get<std::string>();
    if (!cl.script.empty())
      m.warnings.push_back("no network_module, and --full_bf16 or --fused_backward_pass: read as the full fine-tune " + cl.script);
    else if (!cl.values.count("network_module"))
      m.warnings.push_back("no network_module: a LoRA script stops without one (training/trainer_base.py:1538); predicted as a LoRA");
    return m;
  }
  m.why_not = "the musubi config names no training script, network_module, --task or DiT file segadvise knows, so the model is unknown";
  return m;
}

void read_checkpoint_precision(const TrainerFacts& facts, const CommandLine& cl, TrainerRead& r) {
  if (!cl.values.count("dit")) return;
  const json& fc = models(facts).at("fp8_checkpoints");
  const std::string file = base_name(cl.values.at("dit"));
  if (!contains_any(normalized(file), fc.at("name_contains"))) return;
  const std::string src = fc.at("source").get<std::string>();
  const json& kept = fc.at("kept_as_is");
  const std::string said = "the DiT file '" + brief_text(file) + "' is an fp8 checkpoint by its name";
  if (std::find(kept.begin(), kept.end(), r.family->id) != kept.end()) {
    r.setup.base_precision = "fp8wo-torchao";  // fp8 weights with their scales, dequantized per layer: weight-only fp8
    r.warnings.push_back(said + ": " + r.family->name + " loads it as it is, fp8 weights with their scales, whatever --fp8_base says (" +
                         src + ")");
  } else if (flag(cl, "fp8_base") && flag(cl, "fp8_scaled")) {
    refuse_flag(r, "fp8_scaled", said + ": --fp8_scaled quantizes each weight and stops on one already in fp8 (" + src + ")");
  } else if (flag(cl, "fp8_base")) {
    r.warnings.push_back(said + ": --fp8_base keeps its weights in float8_e4m3fn (" + src + ")");
  } else {
    r.warnings.push_back(said + ": without --fp8_base its weights are cast to bfloat16 and predicted so (" + src + ")");
  }
}

std::string optimizer_of(const TrainerFacts& facts, const CommandLine& cl, TrainerRead& r) {
  const json& t = facts.raw.at("optimizers");
  const std::string src = t.at("source").get<std::string>();
  const std::string type = cl.values.count("optimizer_type") ? cl.values.at("optimizer_type") : "";
  if (type.empty()) return "adamw";  // the help's default AdamW (parser_common.py:303-307)
  if (t.at("builtin").contains(lower(type))) return t.at("builtin").at(lower(type)).get<std::string>();
  for (const auto& c : t.at("classes"))
    if (c.at("class") == type) {
      r.setup.notes.push_back("--optimizer_type " + type + ": " + c.at("optimizer").get<std::string>() + " (" + c.at("source").get<std::string>() + ")");
      return c.at("optimizer").get<std::string>();
    }
  const std::string at = where(r.config_path, cl, "optimizer_type");
  const json& torch_optim = t.at("torch_optim_classes").at("names");
  if (type.find('.') == std::string::npos && std::find(torch_optim.begin(), torch_optim.end(), type) == torch_optim.end()) {
    // torch.optim's class of that name (case-sensitive): one torch has not is an AttributeError
    r.rejections.push_back(at + " '" + brief_text(type) + "': without a module path the class is looked up in torch.optim, "
                           "case-sensitively, and torch.optim has no such class: musubi stops (" + src + "; " +
                           t.at("torch_optim_classes").at("source").get<std::string>() + ")");
    return "adamw";
  }
  r.warnings.push_back(at + ": optimizer '" + brief_text(type) + "' has no segadvise equivalent: predicted with adamw (8 bytes of state per parameter)");
  return "adamw";
}

void warn_unknown_keys(const TrainerFacts& facts, const std::map<std::string, int>& keys, const std::string& file, TrainerRead& r) {
  const json& names = facts.raw.at("argparse_keys").at("names");
  std::string unknown;
  int n = 0;
  for (const auto& [k, line] : keys)
    if (!std::binary_search(names.begin(), names.end(), json(k)) && ++n <= 12)
      unknown += (unknown.empty() ? "" : ", ") + brief_text(k) + " (line " + std::to_string(line) + ")";
  if (n == 0) return;
  if (n > 12) unknown += " and " + std::to_string(n - 12) + " more";
  r.warnings.push_back(file + ": keys musubi-tuner's training scripts do not have, kept by argparse and never read: " + unknown +
                       " (" + facts.raw.at("argparse_keys").at("why").get<std::string>() + ")");
}

void refuse_unknown_flags(const TrainerFacts& facts, const CommandLine& cl, TrainerRead& r) {
  const json& names = facts.raw.at("argparse_keys").at("names");
  for (const auto& [k, line] : cl.lines)
    if (!std::binary_search(names.begin(), names.end(), json(k)))
      refuse_flag(r, k, "no musubi-tuner training script defines it: argparse stops with \"unrecognized arguments\" (" + brief_text(cl.script) + ", line " +
                            std::to_string(line) + ")");
}

}  // namespace segadvise::readers::musubi_parts
