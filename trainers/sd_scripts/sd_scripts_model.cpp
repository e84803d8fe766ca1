// Which model an sd-scripts run trains (sd_scripts_parts.hpp): the training script decides, with --v2
// (SD 2.x), --model_type (FLUX.1 or Chroma) and the SD3 checkpoint's keys; a --config_file TOML given
// alone names no script, so the scripts whose parsers take all its keys and the model file's name say
// it, a guess said as one. Facts: trainers/sd_scripts/sd-scripts.json.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>

#include "sd_scripts/sd_scripts_parts.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/limits.hpp"
#include "segadvise/io/text.hpp"

namespace segadvise::readers::sd_scripts_parts {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// a model file's name (either separator: a Windows path too, reader_util.hpp script_name) as the name
// rules match it: lower-cased, '-' as '_'
std::string base_name(const std::string& path) { return script_name(path); }
std::string normalized(const std::string& path) {
  std::string n = lower(script_name(path));
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

const Family* family_if_known(const std::string& id) {
  for (const Family& f : builtin_families())
    if (f.id == id) return &f;
  return nullptr;
}

// A safetensors file's header (the JSON of tensor names and shapes that follows its 8-byte length),
// "" when the file is not on this machine or is no safetensors file
std::string safetensors_header(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !fs::is_regular_file(path, ec)) return "";
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8] = {};
  if (!in.read(reinterpret_cast<char*>(len), 8)) return "";
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n < 2 || n > kMaxInputFileBytes) return "";
  std::string header(static_cast<std::size_t>(n), '\0');
  if (!in.read(&header[0], static_cast<std::streamsize>(n)) || header.front() != '{') return "";
  return header;
}

// SD3: the checkpoint's keys (library/sd3_utils.py:35-60), else its file name (a guess), else the
// branch the code takes without qk_norm
void sd3_model(const CommandLine& cl, const std::string& cwd, ModelRead& m) {
  const json& t = facts().raw.at("sd3_models");
  const std::string src = t.at("source").get<std::string>();
  const std::string file = cl.values.count("pretrained_model_name_or_path") ? cl.values.at("pretrained_model_name_or_path") : "";
  std::string on_disk = file;
  if (!file.empty() && !cwd.empty() && fs::path(file).is_relative()) on_disk = (fs::path(cwd) / file).string();
  const std::string header = safetensors_header(on_disk);
  if (!header.empty()) {
    const bool qk_norm = header.find(t.at("qk_norm_key").get<std::string>() + "\"") != std::string::npos;
    const bool attn2 = header.find(t.at("attn2_key").get<std::string>() + "\"") != std::string::npos;
    const std::string id = !qk_norm ? "sd3-medium" : attn2 ? "sd3.5-medium" : "sd3.5-large";
    m.family = &find_family(id);
    m.notes.push_back("the checkpoint '" + brief_text(base_name(file)) + "' has " + (qk_norm ? "" : "no ") + "qk_norm" +
                      (qk_norm ? std::string(attn2 ? " and" : " and no") + " x_block attn2 layers" : "") + ": " + m.family->name + " (" + src + ")");
    return;
  }
  const std::string name = normalized(file);
  for (const auto& e : t.at("names")) {
    bool hit = false;
    for (const auto& p : e.at("contains")) hit = hit || (!name.empty() && name.find(p.get<std::string>()) != std::string::npos);
    if (!hit) continue;
    m.family = &find_family(e.at("family").get<std::string>());
    m.guessed_from = "the checkpoint's file name '" + brief_text(base_name(file)) + "' (pretrained_model_name_or_path)";
    m.warnings.push_back("the SD3 checkpoint is not on this machine, so its keys (which decide the model, " + src + ") were not read: " +
                         m.family->name + " is guessed from " + m.guessed_from + " (" + t.at("names_source").get<std::string>() + "); --model names it");
    return;
  }
  m.family = &find_family(t.at("default").get<std::string>());
  m.guessed_from = "sd3_train_network.py's fallback (no checkpoint to read, no size in its name '" + brief_text(base_name(file)) + "')";
  m.warnings.push_back("the SD3 checkpoint's keys decide the model (" + src + "), and '" + brief_text(base_name(file)) +
                       "' is neither on this machine nor named by its size: " + m.family->name + " is assumed; --model names it");
}

// the family of a known script, by its flags
void by_script(const json& e, CommandLine& cl, const std::string& path, const std::string& cwd, ModelRead& m) {
  std::vector<std::string> fams;
  for (const auto& f : e.at("families")) fams.push_back(f.get<std::string>());
  const std::string& first = fams.front();
  if (first == "sd1x") {
    m.family = &find_family(flag(cl, "v2") ? "sd2x" : "sd1x");
    m.notes.push_back(std::string(flag(cl, "v2") ? "--v2" : "no --v2") + ": " + m.family->name + " (library/train_util.py:3643)");
  } else if (first == "flux1") {
    const std::string mt = cl.values.count("model_type") ? cl.values.at("model_type") : "flux";
    if (mt != "flux" && mt != "chroma")
      throw InputError(where(path, cl, "model_type") + ": invalid choice '" + brief_text(mt) +
                       "' (choose from 'flux', 'chroma'): argparse stops (library/flux_train_utils.py:684-690)");
    if (mt == "chroma" && std::find(fams.begin(), fams.end(), "chroma") == fams.end())
      throw InputError(where(path, cl, "model_type") + ": chroma: " + cl.script + " trains FLUX.1 only (flux_train.py:274 hard-codes flux)");
    m.family = &find_family(mt == "chroma" ? "chroma" : "flux1");
    m.notes.push_back("--model_type " + mt + ": " + m.family->name + " (library/flux_train_utils.py:684-690)");
  } else if (first.rfind("sd3", 0) == 0) {
    sd3_model(cl, cwd, m);
  } else {
    m.family = family_if_known(first);
    if (!m.family) m.why_not = cl.script + " trains " + first + ", which has no segadvise family (families/data has none)";
  }
}

}  // namespace

ModelRead model_of(CommandLine& cl, const std::string& path, const std::string& cwd) {
  ModelRead m;
  if (!cl.script.empty()) {
    const json* e = script_entry(cl.script);
    if (!e) {
      m.why_not = path + ": training script '" + brief_text(cl.script) + "' is not one of sd-scripts' training scripts segadvise knows";
      return m;
    }
    by_script(*e, cl, path, cwd, m);
    return m;
  }
  // A --config_file TOML alone: the scripts whose parsers define every key it sets that some script defines
  // (a network_module makes it a LoRA script's, network_train scripts only)
  const bool lora = cl.values.count("network_module") > 0;
  std::vector<std::string> candidates;
  for (const auto& [script, entry] : facts().raw.at("scripts").items()) {
    if (entry.at("lora").get<bool>() != lora) continue;
    bool all = true;
    for (const auto& kv : cl.values)
      if (facts().key(kv.first) && !script_defines(script, kv.first)) all = false;
    if (all) candidates.push_back(script);
  }
  const std::string file = cl.values.count("pretrained_model_name_or_path") ? cl.values.at("pretrained_model_name_or_path") : "";
  const std::string name = normalized(file);
  // the model file's name among the candidates' families (the names published checkpoints carry)
  const std::vector<std::pair<std::vector<const char*>, const char*>> names = {
      {{"sdxl", "sd_xl", "xl_base", "illustrious", "pony", "noobai"}, "sdxl_"},
      {{"chroma"}, "flux_train_network.py"},
      {{"flux"}, "flux_"},
      {{"sd3"}, "sd3_"},
      {{"lumina"}, "lumina_"},
      {{"anima"}, "anima_"},
      {{"hunyuan"}, "hunyuan_image_"},
      {{"v1_5", "v1.5", "sd15", "sd_1", "v2_1", "v2.1", "sd21", "512_base", "768_v"}, "train_"}};
  std::string chosen;
  std::string how;
  for (const auto& [words, prefix] : names) {
    bool hit = false;
    for (const char* w : words) hit = hit || (!name.empty() && name.find(w) != std::string::npos);
    if (!hit) continue;
    for (const auto& s : candidates)
      if (s.rfind(prefix, 0) == 0 && (std::string(prefix) != "train_" || s == "train_network.py" || s == "train_db.py" || s == "fine_tune.py")) {
        chosen = s;
        break;
      }
    if (std::string(prefix) == "train_" && chosen.empty())
      for (const auto& s : candidates)
        if (s == "fine_tune.py" || s == "train_db.py" || s == "train_network.py") chosen = s;
    if (!chosen.empty()) {
      how = "the model file name '" + brief_text(base_name(file)) + "' (pretrained_model_name_or_path)";
      if (std::string(words.front()) == "chroma") cl.values.emplace("model_type", "chroma");
      break;
    }
  }
  std::set<std::string> fams;
  for (const auto& s : candidates) fams.insert(script_entry(s)->at("families").at(0).get<std::string>());
  if (chosen.empty() && fams.size() == 1) {
    chosen = candidates.front();
    how = "its keys (only " + chosen + (candidates.size() > 1 ? " and its kin" : "") + " take all of them)";
  }
  if (chosen.empty()) {
    m.why_not = path + ": an sd-scripts --config_file names no training script, and neither its keys nor the model file '" +
                brief_text(base_name(file)) + "' say which model it trains";
    return m;
  }
  cl.script = chosen;
  by_script(*script_entry(chosen), cl, path, cwd, m);
  if (!m.family) return m;
  if (m.guessed_from.empty()) m.guessed_from = how;
  m.warnings.push_back("a --config_file TOML alone names no training script: read as " + chosen + " (" + m.family->name +
                       "), guessed from " + how + "; --model names the model");
  return m;
}

void set_swapped_blocks(TrainingSetup& s, const TrainerFamily& tf, const nlohmann::json& script_entry, int n) {
  s.blocks_to_swap = n;
  s.blocks_to_swap_per_list.clear();
  if (n > 0 && script_entry.value("block_swap", "") == "flux" && tf.double_blocks > 0) {
    s.blocks_to_swap_per_list = {n / 2, (n - n / 2) * 2};
    s.blocks_to_swap = n / 2 + (n - n / 2) * 2;
  }
}

}  // namespace segadvise::readers::sd_scripts_parts
