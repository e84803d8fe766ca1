// The kohya_ss GUI's component (trainer.hpp): its saved JSON read as the sd-scripts run it launches
// (kohya_gui.hpp, then sd-scripts' reader), planned with sd-scripts' knobs, and written back as a GUI
// JSON: the plan's flags under the GUI's key names (kohya_ss.json), checked by translating the written
// JSON again; a flag the GUI has no key for in that tab goes into additional_parameters.
#include <algorithm>
#include <sstream>

#include "common/trainer_parts.hpp"
#include "segadvise/io/error.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/kohya_gui.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/sd_scripts_reader.hpp"

namespace segadvise {

using nlohmann::json;
using nlohmann::ordered_json;

namespace {

const Trainer& sd() { return trainer("sd-scripts"); }

// a flag's value as the translation gives it ("" : not passed)
std::string passed(const kohya::GuiRun& run, const std::string& flag) {
  const auto it = run.cl.values.find(flag);
  return it == run.cl.values.end() || it->second == "0" ? "" : it->second;
}

// a plan's value as the flag text sd-scripts would get ("" : the flag absent; a count of 0 is sd-scripts'
// default, as absent)
std::string wanted(const ordered_json& v) {
  if (v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0)) return "";
  if (v.is_boolean()) return "true";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// the GUI's form of a plan's value for its key: null (the flag removed) as the key's off value
ordered_json gui_value(const ordered_json& v, const ordered_json& old) {
  if (!v.is_null()) return v;
  if (old.is_number()) return 0;
  if (old.is_string()) return "";
  return false;
}

std::string dumped(const ordered_json& j, int indent) { return j.dump(indent) + "\n"; }

kohya::GuiRun translate(const ordered_json& j, const std::string& path) {
  return kohya::translate_gui_json(j, j.dump(2), path);
}

// additional_parameters without `flag` (and the words after it), then with `--flag value` where the
// plan sets it on
std::string set_additional(const std::string& text, const std::string& flag, const ordered_json& v) {
  std::string clean = text;
  clean.erase(std::remove(clean.begin(), clean.end(), '"'), clean.end());
  std::istringstream in(clean);
  std::string out, w;
  bool skipping = false;
  while (in >> w) {
    if (w.rfind("--", 0) == 0) {
      const std::string k = w.substr(2, w.find('=') == std::string::npos ? std::string::npos : w.find('=') - 2);
      skipping = k == flag;
    }
    if (!skipping) out += (out.empty() ? "" : " ") + w;
  }
  const std::string val = wanted(v);
  if (!val.empty()) out += (out.empty() ? "" : " ") + std::string("--") + flag + (v.is_boolean() ? "" : " " + val);
  return out;
}

// `gui` (a GUI JSON) with the plan's sd-scripts flags `knobs` set under the GUI's keys, checked by
// translating it again; a flag no key of the tab passes goes into additional_parameters
ordered_json set_knobs(ordered_json gui, const ordered_json& knobs, const std::string& path, std::vector<std::string>& notes) {
  const kohya::GuiRun before = translate(gui, path);
  const std::string extra = kohya::gui_facts().at("additional_parameters").at("key").get<std::string>();
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    const std::string& flag = it.key();
    const ordered_json& v = it.value();
    // the text-encoder caches: the model's own panel keys, the in-memory one with the disk one
    if (flag == "cache_text_encoder_outputs_to_disk" && wanted(v) == "true") {
      const std::string k = kohya::gui_key_for(before, "cache_text_encoder_outputs");
      if (!k.empty()) gui[k] = true;
    }
    // the LoRA tab trains the text encoder where text_encoder_lr is above 0 (lora_gui.py:909-923)
    if (flag == "network_train_unet_only") {
      if (v.is_null() || !gui.contains("text_encoder_lr")) continue;
      const double te = gui.at("text_encoder_lr").is_number() ? gui.at("text_encoder_lr").get<double>() : 0;
      if (v == true && te != 0) {
        gui["text_encoder_lr"] = 0;
        notes.push_back("text_encoder_lr set to 0: the text encoder is not trained (--network_train_unet_only)");
      } else if (v == false && te == 0) {
        const ordered_json rate = gui.contains("unet_lr") && gui.at("unet_lr").is_number() && gui.at("unet_lr").get<double>() > 0 ? gui.at("unet_lr") : ordered_json(0.0001);
        gui["text_encoder_lr"] = rate;
        notes.push_back("text_encoder_lr set to " + rate.dump() + " (the U-Net's): the plan trains the text encoder");
      }
      continue;
    }
    if (flag == "mixed_precision") {
      gui["mixed_precision"] = v.is_null() ? ordered_json("no") : v;
      continue;
    }
    // a flag its additional_parameters gives: taken out of them (the key below sets it)
    const auto fk = before.flag_key.find(flag);
    if (fk != before.flag_key.end() && fk->second == extra)
      gui[extra] = set_additional(gui.value(extra, std::string()), flag, ordered_json());
    const std::string key = kohya::gui_key_for(before, flag);
    if (!key.empty()) gui[key] = gui_value(v, gui.contains(key) ? gui.at(key) : ordered_json());
    // a flag the learning rates decide (DreamBooth SDXL's text encoders): off is every rate at 0
    if (key.empty() && wanted(v).empty())
      for (const auto& rate : kohya::gui_rate_keys_for(before, flag))
        if (gui.contains(rate) && gui.at(rate).is_number() && gui.at(rate).get<double>() > 0) {
          gui[rate] = 0;
          notes.push_back(rate + " set to 0: the GUI passes --" + flag + " while it is above 0");
        }
  }
  // what the GUI passes from the written JSON: a flag it does not pass as planned goes into additional_parameters
  kohya::GuiRun after = translate(gui, path);
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    const std::string& flag = it.key();
    if (passed(after, flag) == wanted(it.value())) continue;
    const std::string want = wanted(it.value());
    if (want.empty()) {
      notes.push_back("--" + flag + " stays on: the GUI passes it from a key this plan does not change (" + kohya::gui_key_for(after, flag) + ")");
      continue;
    }
    gui[extra] = set_additional(gui.value(extra, std::string()), flag, it.value());
    notes.push_back("--" + flag + " " + want + " in additional_parameters: the GUI's " + after.tab + " tab passes no key of its own for it with this model");
  }
  after = translate(gui, path);
  for (auto it = knobs.begin(); it != knobs.end(); ++it)
    if (passed(after, it.key()) != wanted(it.value()))
      notes.push_back("--" + it.key() + " is not written as planned: the GUI passes \"" + passed(after, it.key()) + "\"");
  return gui;
}

class KohyaSs final : public Trainer {
 public:
  std::string id() const override { return "kohya_ss"; }
  std::string name() const override { return gui_facts_key("name"); }
  bool detects(const std::string& path) const override {
    return plans::extension(path) == ".json" && readers::json_config_trainer(path) == "kohya_ss";
  }
  TrainerRead read(const std::string& path, const TrainerReadOptions& o) const override {
    const std::string text = read_input_file(path, "config");
    const ordered_json j = parse_ordered_json_text(text, path);
    const kohya::GuiRun g = kohya::translate_gui_json(j, text, path);
    TrainerReadOptions named = o;
    if (!o.model.empty()) {
      find_model(o.model);
      named.model = model_name(o.model);
    }
    // the TOML the GUI writes into output_dir (lora_gui.py:2579-2590), named as the GUI names it
    const std::string toml_name = "config_" + g.tab + "-<date>.toml";
    TrainerRead r = readers::read_sd_scripts_command(kohya::launch_command(g, toml_name), g.num_processes, path, named);
    // the GUI writes that TOML from the JSON at each launch: the JSON is what a rewrite changes
    r.inputs.erase(std::remove_if(r.inputs.begin(), r.inputs.end(), [&](const std::string& i) { return i.find(toml_name) == 0; }), r.inputs.end());
    r.config_file.clear();
    r.config_file_keys.clear();
    r.trainer = id();
    r.setup.trainer = "sd-scripts";  // sd-scripts runs it: its rules judge the setup
    r.config_path = path;
    r.raw = j;
    r.indent = indent_of(text);
    if (std::find(r.inputs.begin(), r.inputs.end(), path) == r.inputs.end()) r.inputs.insert(r.inputs.begin(), path);
    r.setup.notes.insert(r.setup.notes.begin(), "kohya_ss GUI " + g.tab + " tab" + (g.tab_guessed ? " (a guess)" : "") + ": " + g.tab_why +
                                                    "; runs " + g.cl.script + " with " + std::to_string(g.num_processes) + " process" +
                                                    (g.num_processes == 1 ? "" : "es"));
    for (const auto& n : g.notes) r.setup.notes.push_back(n);
    r.warnings.insert(r.warnings.begin(), g.warnings.begin(), g.warnings.end());
    for (const auto& x : g.refusals) r.rejections.push_back(x);
    // a key sd-scripts stops on is a flag here: the GUI key it came from is what a rewrite changes
    for (auto& k : r.refused_keys) {
      const auto it = g.flag_key.find(k);
      if (it != g.flag_key.end()) k = it->second;
    }
    return r;
  }
  RunSetup run_setup(const TrainerRead& r) const override { return sd().run_setup(r); }
  RunSetup plan_run_setup(const TrainerRead& r, const TrainingSetup& plan, const ordered_json& knobs) const override {
    return sd().plan_run_setup(r, plan, knobs);
  }
  std::vector<std::string> setup_rejections(const Family& fam, const TrainingSetup& setup) const override {
    return sd().setup_rejections(fam, setup);
  }
  std::vector<KnobCombo> knob_space(const Family& fam, const TrainingSetup& base, std::vector<std::string>& notes) const override {
    return sd().knob_space(fam, base, notes);
  }
  std::vector<KnobCombo> fallback_space(const Family& fam, const TrainingSetup& base, std::vector<std::string>& notes) const override {
    return sd().fallback_space(fam, base, notes);
  }
  // sd-scripts' plans, written as the GUI's JSON
  TrainerAdvice plan(const Family& fam, const TrainingSetup& setup, const PredictFn& predict, const std::string& headroom) const override {
    TrainerAdvice ta = sd().plan(fam, setup, predict, headroom);
    ta.trainer = id();
    ta.trainer_name = name();
    ta.config_format = "json";
    const int shown = ta.best >= 0 ? ta.best : ta.smallest;
    if (shown >= 0 && shown < static_cast<int>(ta.plans.size())) {
      KnobCombo c;
      c.knobs = ta.plans[shown].knobs;
      c.setup = ta.plans[shown].setup;
      c.schedule = ta.plans[shown].schedule;
      c.label = ta.plans[shown].label;
      ta.config_text = config_text(fam, c);
    }
    ta.manual = manual_steps(fam);
    return ta;
  }
  ordered_json phase_knobs(const std::vector<PhaseFix>& fixes) const override { return sd().phase_knobs(fixes); }
  ordered_json memory_knobs(const TrainerRead& r, const ordered_json& plan) const override { return sd().memory_knobs(r, plan); }

  // a GUI JSON for the plan: the tab and model checkbox of its script, LoRA_type, its shape and knobs
  std::string config_text(const Family& fam, const KnobCombo& c) const override {
    const std::string script = script_of(fam, c);
    ordered_json gui = ordered_json::object();
    std::string tab, checkbox;
    for (const auto& [name, t] : gui_facts_tabs())
      for (const auto& s : t.at("scripts"))
        if (tab.empty() && s.at(1) == script) {
          tab = name;
          checkbox = s.at(0).get<std::string>();
        }
    if (tab.empty())
      for (const auto& [name, t] : gui_facts_tabs())
        if (tab.empty() && t.at("default_script") == script) tab = name;
    if (tab.empty()) return "# the kohya_ss GUI has no tab running " + script + "\n";
    const json& emit = kohya::gui_facts().at("emit");
    if (tab == "lora") {
      const json& types = emit.at("lora_type_for_checkbox");
      gui["LoRA_type"] = types.contains(checkbox) ? types.at(checkbox) : emit.at("lora_type_default");
    }
    if (!checkbox.empty()) gui[checkbox] = true;
    if (c.knobs.contains("model_type")) gui["model_type"] = c.knobs.at("model_type");
    gui["pretrained_model_name_or_path"] = "/path/to/model.safetensors";
    gui["train_data_dir"] = "/path/to/images_parent (N_name folders)";
    gui["output_dir"] = "/path/to/output";
    gui["max_resolution"] = std::to_string(c.setup.width) + "," + std::to_string(c.setup.height);
    gui["train_batch_size"] = c.setup.batch;
    gui["xformers"] = c.knobs.contains("sdpa") ? "sdpa" : "none";
    if (tab == "lora") {
      gui["learning_rate"] = 0.0001;
      gui["unet_lr"] = 0.0001;
      gui["text_encoder_lr"] = 0;  // network_train_unet_only below sets it where the plan trains the text encoder
    }
    ordered_json knobs = c.knobs;
    for (const char* k : {"sdpa", "model_type", "v2"}) knobs.erase(k);
    if (c.knobs.contains("v2")) gui["v2"] = c.knobs.at("v2");
    std::vector<std::string> notes;  // the JSON itself shows them (additional_parameters): the GUI loads no comment
    return dumped(set_knobs(gui, knobs, "emitted kohya_ss GUI JSON", notes), 2);
  }
  std::vector<std::string> manual_steps(const Family& fam) const override {
    (void)fam;
    return {"load this JSON in the kohya_ss GUI's tab its keys name (Configuration file > Open)",
            "pretrained_model_name_or_path and the text-encoder / VAE paths in the model panel", "train_data_dir (its N_name folders) or dataset_config",
            "output_dir, output_name, learning rates and epochs"};
  }
  Rewritten rewrite(const TrainerRead& r, const ordered_json& knobs) const override {
    Rewritten out;
    if (!r.raw.is_object()) throw InputError(r.config_path + ": not a kohya_ss GUI JSON read by this component");
    ordered_json k = knobs;
    for (auto it = r.fixed_keys.begin(); it != r.fixed_keys.end(); ++it) k[it.key()] = it.value();
    ordered_json gui = set_knobs(r.raw, k, r.config_path, out.notes);
    // a GUI key sd-scripts stops on (r.refused_keys, as GUI keys) that the plan does not set: off
    for (const auto& key : r.refused_keys)
      if (gui.contains(key) && !k.contains(key)) {
        gui[key] = gui_value(ordered_json(), gui.at(key));
        out.notes.push_back(key + " turned off: sd-scripts stops on it");
      }
    out.text = dumped(gui, r.indent);
    return out;
  }

 private:
  static std::string gui_facts_key(const char* k) { return kohya::gui_facts().at(k).get<std::string>(); }
  static std::vector<std::pair<std::string, json>> gui_facts_tabs() {
    std::vector<std::pair<std::string, json>> out;
    for (const auto& [name, t] : kohya::gui_facts().at("tabs").items()) out.emplace_back(name, t);
    return out;
  }
  static int indent_of(const std::string& text) {
    const auto nl = text.find('\n');
    if (nl == std::string::npos) return 2;
    size_t n = 0;
    while (nl + 1 + n < text.size() && text[nl + 1 + n] == ' ') ++n;
    return n > 0 && n <= 8 ? static_cast<int>(n) : 2;
  }
  // the sd-scripts script a plan runs: its setup's, else sd-scripts' config text's first word ending in .py
  static std::string script_of(const Family& fam, const KnobCombo& c) {
    if (!c.setup.script.empty()) return c.setup.script;
    std::istringstream in(sd().config_text(fam, c));
    for (std::string w; in >> w;)
      if (w.size() > 3 && w.compare(w.size() - 3, 3, ".py") == 0) return w;
    return "";
  }
};

}  // namespace

const Trainer& kohya_ss_trainer() {
  static const KohyaSs t;
  return t;
}

}  // namespace segadvise
