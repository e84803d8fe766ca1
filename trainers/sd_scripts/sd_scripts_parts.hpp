// The pieces of sd-scripts' reader (sd_scripts_reader.cpp): which script a run is, which model it
// trains (sd_scripts_model.cpp), and its dataset (sd_scripts_dataset.cpp). Facts:
// trainers/sd_scripts/sd-scripts.json. Not a public interface.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::readers::sd_scripts_parts {

const TrainerFacts& facts();
// Marks in TrainingSetup::notes where the dataset refuses a cache (the plans then leave it off)
extern const char* const kNoLatentCache;
extern const char* const kNoTextCache;
// sd-scripts.json "scripts" entry of a training script (nullptr: not one of its training scripts)
const nlohmann::json* script_entry(const std::string& script);
// whether `script`'s parser defines --key (sd-scripts.json argparse.scripts)
bool script_defines(const std::string& script, const std::string& key);
// a flag set (present and not "false"), and "<file>:<line>: <key>" for a message
bool flag(const CommandLine& cl, const std::string& k);
std::string where(const std::string& path, const CommandLine& cl, const std::string& k);

// The model a run trains: its script decides (--v2, --model_type, an SD3 checkpoint's keys); a TOML
// alone (no script) by the scripts whose parsers define all its keys, then the model file's name (a
// guess: guessed_from says from what; cl.script is set to the script assumed). `family` null: why_not.
struct ModelRead {
  const Family* family = nullptr;
  std::string why_not;
  std::string guessed_from;
  std::vector<std::string> notes, warnings;
};
ModelRead model_of(CommandLine& cl, const std::string& path, const std::string& cwd);

// The dataset: --dataset_config (config_util.py: subset -> dataset -> [general] -> command line ->
// default), else --train_data_dir's N_name folders with --resolution / --train_batch_size. Sets the
// shape, r.datasets, the bucket asserts as rejections. `named_in`: the file whose flag names the TOML.
void read_dataset(const CommandLine& cl, const std::string& named_in, const std::string& cwd, TrainerRead& r);

// The chain blocks a --blocks_to_swap N (at most the model's maximum) swaps, set on `s`: FLUX-style
// models (the script's "block_swap": "flux") the last N//2 double and the last 2(N - N//2) single blocks
// (library/flux_models.py:972-980), the others the last N.
void set_swapped_blocks(TrainingSetup& s, const TrainerFamily& tf, const nlohmann::json& script_entry, int n);

}  // namespace segadvise::readers::sd_scripts_parts
