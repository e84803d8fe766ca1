// Which trainer a config belongs to: each component (trainer.hpp) answers for its own files, from
// their name and content (the helpers below); read_trainer_config reads one through its component.
#include <algorithm>
#include <filesystem>

#include "segadvise/trainers/kohya_gui.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer.hpp"

namespace segadvise {

std::string readers::json_config_trainer(const std::string& path) {
  const nlohmann::ordered_json j = read_json_file(path, "config");
  const std::string backends = backend_list_error(path, j);  // SimpleTuner's data-backend list
  if (!backends.empty()) throw InputError(backends);
  if (!j.is_object()) throw InputError(path + ": a JSON config must be an object");
  if (j.contains("model_family") || j.contains("--model_family")) return "simpletuner";
  if (j.contains("training_method") || j.contains("__version") || j.contains("base_model_name")) return "onetrainer";
  // the kohya_ss GUI's saved JSON, by keys no other trainer's config has (kohya_ss.json "detect"); its
  // model_type (flux | chroma) is not OneTrainer's
  for (const auto& k : kohya::gui_facts().at("detect").at("markers"))
    if (j.contains(k.get<std::string>())) return "kohya_ss";
  // OneTrainer's model_type is one of its ModelType names (FLUX_DEV_1, …); SimpleTuner's is lora or full
  // (a SimpleTuner config without model_family is still SimpleTuner's, whose reader names what is missing)
  const auto mt = j.find("model_type") != j.end() ? j.find("model_type") : j.find("--model_type");
  if (mt != j.end() && !(mt->is_string() && (*mt == "lora" || *mt == "full"))) return "onetrainer";
  return "simpletuner";  // its reader names what is missing
}

std::string readers::command_line_trainer(const std::string& path) {
  const std::string text = read_text_file(path, "config");
  for (const ShellCommand& c : read_shell_script(text, path).commands)
    for (const ShellWord& t : c.words) {
      if (t.text.rfind("musubi_tuner.", 0) == 0) return "musubi";  // python -m musubi_tuner.X (its package's module)
      const std::string name = script_name(t.text);
      if (name.size() < 4 || name.compare(name.size() - 3, 3, ".py") != 0) continue;
      // sd-scripts' training scripts (sd-scripts.json "scripts"): musubi's have other names, run from its
      // package (src/musubi_tuner/X.py) and take --dit where sd-scripts takes --pretrained_model_name_or_path
      if (trainer_facts("sd-scripts").raw.at("scripts").contains(name)) {
        const bool musubi = t.text.find("musubi_tuner") != std::string::npos ||
                            std::any_of(c.words.begin(), c.words.end(), [](const ShellWord& w) { return w.text == "--dit" || w.text.rfind("--dit=", 0) == 0; });
        return musubi ? "musubi" : "sd-scripts";
      }
      for (const auto& tf : trainer_facts("musubi").families)
        for (const auto& s : tf.scripts)
          if (s == name) return "musubi";
      for (const auto& n : trainer_facts("musubi").raw.at("not_modelled"))
        if (n.at("script") == name) return "musubi";
      if (name.find("_train_network.py") != std::string::npos) return "musubi";
      if (name.rfind("train_", 0) == 0) return "diffusers";
    }
  return "";
}

std::string detect_trainer(const std::string& path) {
  for (const Trainer* t : all_trainers())
    if (t->detects(path)) return t->id();
  throw InputError(path + ": not a file of a trainer segadvise reads (use --trainer to name it). Each trainer's files: "
                   "SimpleTuner a config.json with model_family (also saved as config.json.txt) or a config.env; "
                   "musubi-tuner a command line running *_train_network.py (or another of its scripts), or its TOML; "
                   "kohya sd-scripts a command line running train_network.py, sdxl_train.py, flux_train_network.py (or another of its training scripts), "
                   "or its --config_file TOML (pretrained_model_name_or_path); "
                   "diffusion-pipe its main TOML ([model] type, output_dir, dataset) or a `deepspeed train.py --deepspeed --config X.toml` script; "
                   "ai-toolkit a job YAML; OneTrainer a JSON saved from its UI (training_method, model_type); "
                   "the kohya_ss GUI a JSON saved from its LoRA, DreamBooth or Finetune tab (LoRA_type, max_resolution, the model checkboxes); "
                   "diffusers a command line running one of its train_*.py example scripts");
}

TrainerRead read_trainer_config(const std::string& path, const TrainerReadOptions& o) {
  return trainer(o.trainer.empty() ? detect_trainer(path) : o.trainer).read(path, o);
}

}  // namespace segadvise
