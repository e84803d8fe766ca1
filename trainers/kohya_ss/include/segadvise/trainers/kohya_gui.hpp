// A JSON config saved by the kohya_ss GUI (bmaltais/kohya_ss) as the run its train button launches:
// `accelerate launch <accelerate flags> <sd-scripts script> --config_file <toml> <additional_parameters>`.
// Which tab wrote it (LoRA, DreamBooth, Finetune) and so which script, the keys the GUI migrates as it
// loads, the keys it turns into sd-scripts flags (config_toml_data) and the ones it drops, the GUI's own
// refusals, and the keys it does not have. The facts are trainers/kohya_ss/kohya_ss.json, each with its
// kohya_gui file and line.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/trainers/reader_util.hpp"

namespace segadvise::kohya {

struct GuiRun {
  std::string tab;           // lora | dreambooth | finetune | textual_inversion
  bool tab_guessed = false;  // no key only that tab has: chosen by elimination (tab_why says so)
  std::string tab_why;
  bool script_in_sources = true;  // false: the tab's code is not among the copied sources (textual inversion)
  // the sd-scripts run: cl.script the training script's file name, cl.values its flags as the TOML and
  // the additional parameters give them (command line over TOML), cl.lines the JSON line of the key each
  // flag came from
  readers::CommandLine cl;
  int num_processes = 1;        // accelerate launch --num_processes
  bool num_processes_set = true;  // false: the JSON sets none above 0 (accelerate's own config decides)
  std::map<std::string, std::string> flag_key;  // flag -> the GUI key it came from (as loaded)
  // the --config_file TOML the GUI writes (config_toml_data after its filter), typed as it writes it;
  // cl.values holds these too, with additional_parameters' flags over them
  nlohmann::ordered_json toml = nlohmann::ordered_json::object();
  nlohmann::ordered_json gui;   // the JSON as the GUI loads it (migrated, missing keys at their defaults)
  std::vector<std::string> refusals;  // the GUI's own messages where its train button stops ("<msg>" (file:line))
  std::vector<std::string> warnings;  // unknown keys, guesses, what the GUI changes
  std::vector<std::string> notes;     // migrations, keys that do not reach sd-scripts
};

// The facts (kohya_ss.json), parsed once.
const nlohmann::json& gui_facts();

// `j` (the JSON text of `path`, `text` for line numbers) as the GUI launches it. InputError naming the
// file for a JSON that is not an object or holds no key of any GUI tab.
GuiRun translate_gui_json(const nlohmann::ordered_json& j, const std::string& text, const std::string& path);
// The file read and translated.
GuiRun translate_gui_file(const std::string& path);

// The run as sd-scripts gets it: `run.toml` as the --config_file TOML text (held in cl.written_files
// under `name`, read as sd-scripts reads that file: keys its parser lacks ignored) and on the command
// line only additional_parameters' flags and dataset_config.
readers::CommandLine launch_command(const GuiRun& run, const std::string& name);

// The GUI key that sets sd-scripts' `flag` in `run`'s tab with its checkboxes as they are (the key it
// came from where the file sets it); "" where that tab passes no such flag for this model.
std::string gui_key_for(const GuiRun& run, const std::string& flag);

// The keys whose values above 0 turn `flag` on in `run`'s tab (DreamBooth SDXL's train_text_encoder:
// learning_rate_te1 / learning_rate_te2); empty where no rate decides it.
std::vector<std::string> gui_rate_keys_for(const GuiRun& run, const std::string& flag);

// The line of each top-level key of a JSON object's text (1-based).
std::map<std::string, int> json_key_lines(const std::string& text);

}  // namespace segadvise::kohya
