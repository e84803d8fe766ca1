// The whole run of a trainer other than SimpleTuner (trainers/phases.hpp TrainerRun) from its data
// file's "phases": which key decides latent and text caching, sampling, loading and saving, looked up in
// the config itself the way its format nests keys (a JSON or YAML path, a command-line flag), with the
// trainer's default where the config says nothing.
#include <algorithm>
#include <cctype>

#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise {

namespace {

using nlohmann::json;

std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : path) {
    if (c == '.') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A key's value in the config: 1 true, 0 false, -1 absent. `present` counts any non-null value as
// true (a section that exists); otherwise a boolean, a flag without value, or "true"/"false" text.
struct Lookup {
  std::string format, path;
  json j;                      // json
  YAML::Node y;                // yaml
  readers::CommandLine flags;  // flags

  int value(const std::string& key, bool present) const {
    if (format == "flags") {
      const std::string k = key.rfind("--", 0) == 0 ? key.substr(2) : key;
      auto it = flags.values.find(k);
      if (it == flags.values.end()) return -1;
      return present ? 1 : (it->second == "false" || it->second == "False" || it->second == "0" ? 0 : 1);
    }
    if (format == "yaml") {
      // reset(), not operator=: assigning a YAML::Node writes into the node it refers to
      YAML::Node n;
      n.reset(y);
      for (const auto& part : split(key)) {
        if (!n || n.IsNull()) return -1;
        const YAML::Node& cur = n;
        if (cur.IsSequence() && all_digits(part)) {
          const std::size_t i = std::stoul(part);
          if (i >= cur.size()) return -1;
          n.reset(cur[i]);
        } else if (cur.IsMap()) {
          if (!cur[part]) return -1;
          n.reset(cur[part]);
        } else {
          return -1;
        }
      }
      if (!n || n.IsNull()) return -1;
      if (present) return 1;
      if (!n.IsScalar()) return 1;
      const std::string v = lower(n.Scalar());
      return v == "false" || v == "no" || v == "off" || v == "0" ? 0 : 1;
    }
    const json* n = &j;
    for (const auto& part : split(key)) {
      if (n->is_array() && all_digits(part)) {
        const std::size_t i = std::stoul(part);
        if (i >= n->size()) return -1;
        n = &(*n)[i];
      } else if (n->is_object() && n->contains(part)) {
        n = &(*n)[part];
      } else {
        return -1;
      }
    }
    if (n->is_null()) return -1;
    if (present || !n->is_boolean()) return 1;
    return n->get<bool>() ? 1 : 0;
  }

  // whether a JSON config sets `key` to `want` (a phase key already set as its fix sets it)
  bool json_equals(const std::string& key, const json& want) const {
    if (format != "json") return false;
    const json* n = &j;
    for (const auto& part : split(key)) {
      if (!n->is_object() || !n->contains(part)) return false;
      n = &(*n)[part];
    }
    return *n == want;
  }
};

Lookup lookup_for(const TrainerFacts& facts, const TrainerRead& r) {
  Lookup l;
  l.format = facts.config_format;
  l.path = r.config_path;
  if (l.format == "flags") {
    // a TOML config (musubi --config_file) has no flags to look up: the defaults stand
    const std::string name = lower(r.config_path);
    if (name.size() < 5 || name.compare(name.size() - 5, 5, ".toml") != 0)
      l.flags = readers::parse_command_line(read_text_file(r.config_path, facts.name + " command line"), r.config_path, facts);
  } else if (l.format == "yaml") {
    l.y = load_yaml_file(r.config_path, facts.name + " config");
  } else {
    l.j = json(read_json_file(r.config_path, facts.name + " config"));
  }
  return l;
}

// {"keys": [...], "default": bool, "present": bool, "negate": bool}: the first key the config sets decides
bool decide(const Lookup& l, const json& spec, const std::string& origin, const std::string& field, std::string& key_out) {
  if (spec.is_boolean()) return spec.get<bool>();
  if (!spec.is_object() || !spec.contains("default") || !spec.at("default").is_boolean())
    throw InputError(origin + ": phases." + field + " must be true/false or {\"keys\": [...], \"default\": true/false}");
  const bool present = spec.value("present", false), negate = spec.value("negate", false);
  bool v = spec.at("default").get<bool>();
  if (spec.contains("keys")) {
    for (const auto& k : spec.at("keys")) {
      const std::string key = k.get<std::string>();
      if (key_out.empty()) key_out = key;
      const int got = l.value(key, present);
      if (got < 0) continue;
      key_out = key;
      v = negate ? got == 0 : got == 1;
      break;
    }
  }
  return v;
}

}  // namespace

TrainerRun trainer_run_from_data(const TrainerFacts& facts, const TrainerRead& r) {
  TrainerRun o;
  o.trainer = facts.id;
  o.name = facts.name;
  if (!facts.raw.contains("phases")) throw InputError(facts.origin + ": no \"phases\" (what the trainer keeps on the GPU per phase)");
  const json& p = facts.raw.at("phases");
  const Lookup l = lookup_for(facts, r);
  o.latent_caching = decide(l, p.at("latent_caching"), facts.origin, "latent_caching", o.latent_caching_key);
  o.text_caching = decide(l, p.at("text_caching"), facts.origin, "text_caching", o.text_caching_key);
  o.samples = decide(l, p.at("samples"), facts.origin, "samples", o.sample_key);
  o.quantizes_on_gpu = p.value("quantizes_on_gpu", false);
  o.load_key = p.value("load_key", "");
  o.save_key = p.value("save_key", "");
  o.sample_keeps_gradients = p.value("sample_keeps_gradients", false);
  o.sample_loads_text_encoders = p.value("sample_loads_text_encoders", true);
  o.sample_cfg = p.value("sample_cfg", true);
  o.sample_moves_parts = p.value("sample_moves_parts", false);
  o.caching_batch = p.value("caching_batch_is_training_batch", true) ? std::max(1, r.setup.batch) : 1;
  // {"scripts": "...", "source": "..."}: caching is another process's (musubi)
  if (p.contains("caching_in_separate_processes"))
    o.caching_processes = p.at("caching_in_separate_processes").value("scripts", "separate caching scripts");
  o.sample_prompts_before_load = p.contains("sample_prompts_encoded_before_load");
  // {"keys": [...], "default": bool, "bytes": B}: the text encoders' bytes per parameter when the keys say so
  // (ai-toolkit's model.quantize_te, on with model.quantize)
  if (p.contains("text_encoders_quantized")) {
    std::string key;
    if (decide(l, p.at("text_encoders_quantized"), facts.origin, "text_encoders_quantized", key))
      o.text_encoder_bytes_per_param.assign(8, p.at("text_encoders_quantized").value("bytes", 1.0));
  }
  // "fixes": [{"phase": "validation", "key": K, "value": V (null: remove the flag), "effect": "samples_off"}]:
  // the trainer's own keys that lower a phase
  if (p.contains("fixes")) {
    const std::string where = facts.origin + ": phases.fixes";
    if (!p.at("fixes").is_array()) throw InputError(where + " must be a list");
    for (const auto& f : p.at("fixes")) {
      if (!f.is_object() || !f.contains("phase") || !f.contains("key") || !f.contains("value") || !f.contains("effect") ||
          !f.at("phase").is_string() || !f.at("key").is_string() || !f.at("effect").is_string())
        throw InputError(where + ": each entry needs \"phase\", \"key\", \"value\" and \"effect\"");
      TrainerPhaseKnob k;
      const std::string phase = f.at("phase").get<std::string>();
      if (phase == "startup_caching") k.phase = Phase::StartupCaching;
      else if (phase == "model_load") k.phase = Phase::ModelLoad;
      else if (phase == "validation") k.phase = Phase::Validation;
      else if (phase == "save") k.phase = Phase::Save;
      else throw InputError(where + ": phase '" + phase + "' (startup_caching, model_load, validation or save)");
      k.key = f.at("key").get<std::string>();
      k.value_json = f.at("value").dump();
      k.effect = f.at("effect").get<std::string>();
      if (k.effect != "samples_off") throw InputError(where + ": effect '" + k.effect + "' (known: samples_off)");
      o.phase_knobs.push_back(k);
      // the config already sets the key as the fix does (OneTrainer's sample_after_unit NEVER): no sampling
      if (k.effect == "samples_off" && !f.at("value").is_null() && l.json_equals(k.key, f.at("value"))) {
        o.samples = false;
        o.sample_key = k.key;
      }
    }
  }
  o.source = p.value("source", "");
  return o;
}

}  // namespace segadvise
