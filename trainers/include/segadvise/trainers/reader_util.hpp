// Helpers shared by the trainer config readers (not a public interface).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "segadvise/io/shell_script.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/io/yaml.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::readers {

// The training command of a script, as its shell runs it (read_shell_script: bash, PowerShell or cmd,
// its variables and arrays expanded): the first command naming one of `facts`' training scripts, else
// the first naming a *.py, else the first with flags; `--key value` / `--key=value` / `--flag` after
// its script, up to the end of that command. Flags whose key type is bool take no value.
struct CommandLine {
  std::string script;  // file name of the *.py word ("" when none)
  int script_line = 0;
  std::map<std::string, std::string> values;  // key without dashes -> value ("true" for a flag)
  std::map<std::string, int> lines;           // key -> line
  // the shell's warnings (constructs not followed, variables never set), for the reader to pass on
  std::vector<std::string> warnings;
  // key -> variables its value expanded (or, gone, left it without one) that the script never sets
  std::map<std::string, std::vector<std::string>> unset;
  // the files the script writes before the training command (a heredoc), by path as written
  std::map<std::string, ShellWrittenFile> written_files;
};
CommandLine parse_command_line(const std::string& text, const std::string& path, const TrainerFacts& facts);

// A file a command-line flag names, as the trainer opens it: the text the script itself writes at that
// path before the command (a heredoc), preferred to any file on disk since the script writes it
// first (a warning says so where there is one), else the file `resolve` finds. InputError naming the line when the value
// expanded a variable the script never sets (the shell reads it as empty: the path is not the one
// meant).
struct FlagFile {
  std::string path;                   // the file on disk, or "<as written> (heredoc at SCRIPT:LINE)"
  const std::string* text = nullptr;  // the script's text (owned by the CommandLine), or null: read `path`
};
FlagFile flag_file(const CommandLine& cl, const std::string& key, const std::string& value, const std::string& config_path,
                   const std::function<std::string(const std::string&)>& resolve, TrainerRead& r);

// The file name of a script word, either separator (a Windows launch script's examples\train_x.py)
std::string script_name(const std::string& word);

// Whether `name` holds one of `parts` (a JSON list of strings: a facts file's name rules)
bool contains_any(const std::string& name, const nlohmann::json& parts);

// The family: --model when given, else `found` (InputError `why_not` when null).
const Family& choose_family(const TrainerReadOptions& o, const Family* found, const std::string& why_not);

// Maps a trainer's optimizer name onto segadvise's (adamw when unknown, with a warning).
std::string optimizer_for(const std::string& trainer_value, const std::map<std::string, std::string>& table,
                          std::vector<std::string>& warnings, const std::string& where);

// ai-toolkit's train.optimizer names (toolkit/optimizer.py, lower-cased as it matches them) onto
// segadvise's; the plans write back the first name of the user's optimizer
const std::vector<std::pair<std::string, std::string>>& ai_toolkit_optimizers();
// musubi-tuner's --optimizer_type values onto segadvise's, the same way (musubi.json "optimizers": its
// three lower-cased names, then the module.Class values it imports)
const std::vector<std::pair<std::string, std::string>>& musubi_optimizers();

// A diffusers script's trained model (diffusers.json full_finetune): a full fine-tune's float32 weights
// under autocast (TrainingSetup::weight_storage_bytes 4, so gradients and AdamW's moments too) unless
// --mixed_precision no already trains in float32; an EMA copy on the GPU exactly when `ema` (--use_ema,
// which only the full fine-tune scripts have).
void diffusers_full_finetune(const TrainerFacts& facts, TrainingSetup& s, bool ema);

// Bytes per OneTrainer adapter parameter (and gradient) in lora_weight_dtype `dtype` ("": its FLOAT_32
// default, TrainConfig.py:1236); InputError naming `where` for a dtype it does not have.
double onetrainer_adapter_bytes(const TrainerFacts& facts, const std::string& dtype, const std::string& where);

TrainerRead read_ai_toolkit(const std::string& path, const TrainerReadOptions& o);
TrainerRead read_onetrainer(const std::string& path, const TrainerReadOptions& o);
TrainerRead read_musubi(const std::string& path, const TrainerReadOptions& o);
TrainerRead read_diffusers(const std::string& path, const TrainerReadOptions& o);
// kohya-ss sd-scripts: a launch script, a --config_file TOML alone (sd_scripts/sd_scripts_reader.cpp)
TrainerRead read_sd_scripts(const std::string& path, const TrainerReadOptions& o);
// Whether a TOML is an sd-scripts run's --config_file (its pretrained_model_name_or_path, no musubi --dit)
bool sd_scripts_toml(const std::string& path);
TrainerRead read_diffusion_pipe(const std::string& path, const TrainerReadOptions& o);

// Detection (trainer.hpp's components): the trainer a JSON config belongs to (simpletuner,
// onetrainer or kohya_ss; InputError when it is not an object), and a command line's by its script ("" when none).
std::string json_config_trainer(const std::string& path);
// A TOML file as JSON (tables as objects), under musubi's TOML input rules (nesting, key counts);
// InputError naming the file, the line and the column (musubi_reader.cpp).
// `lines` (when given) receives each key's line by its dotted path ("model.type", "directory[0].path").
nlohmann::ordered_json toml_file_json(const std::string& path, const std::string& what,
                                      std::map<std::string, int>* lines = nullptr);
// A path a config names, as Python opens it: relative to the working directory (`cwd`, else the
// process's); then beside the file that names it, and a path from another machine (absolute, or a
// Windows path) by its file name beside that file: both said in `notes`, as `trainer` would not find
// them. InputError naming every path tried.
std::string resolve_near(const std::string& value, const std::string& config_path, const std::string& cwd,
                         const std::string& key, std::vector<std::string>& notes, const std::string& trainer = "musubi");
// The same for a TOML text (a file a launch script writes itself), `path` naming it
nlohmann::ordered_json toml_text_json(const std::string& text, const std::string& path, const std::string& what);
std::string command_line_trainer(const std::string& path);

// A key the trainer stops on by itself: the rejection "--KEY: WHY", and KEY among r.refused_keys.
void refuse_flag(TrainerRead& r, const std::string& key, const std::string& why);

// A run whose dataset file is not on this machine (a config shared without it) answers at an assumed
// shape rather than none: r.setup's width, height, frames and batch as the caller set them (the
// config's own keys where it has them, else `fam`'s example: example_shape). r.shape_source and
// r.setup.shape_assumed_from say it is assumed, and one warning names the file, what the trainer does
// without it, the shape with where each part comes from, and what gives the real one.
struct AssumedShape {
  std::string missing;     // "--dataset_config 'x' is not on this machine" (setup.shape_assumed_from)
  std::string tried;       // the paths tried, for the warning alone ("" when not listed)
  std::string trainer;     // what the trainer does without it ("" when it is not said)
  std::string size_from;   // "the model's usual size", "the config's resolution 512 (pixel)"
  std::string batch_from;  // "--train_batch_size", "sd-scripts' default"
  std::string hint;        // what gives the real shape
};
void assume_shape(const AssumedShape& a, TrainerRead& r);
// The family's example shape (families/data/<id>.json "example"): width and height, its frames for a
// video model (1 otherwise)
void example_shape(const Family& fam, TrainingSetup& s);

// Sets the setup's model and the family's geometry rules (frames), and starts the notes.
void start_setup(TrainerRead& r, const Family& fam, const std::string& trainer);

}  // namespace segadvise::readers
