// Reading the other trainers' own configs the way each trainer does (musubi-tuner, ai-toolkit,
// OneTrainer, diffusers example scripts): which checkpointing it runs, which offload, which precision
// its quantizer really uses, which defaults apply. The facts come from trainers/data/*.json;
// docs/check.md lists, per trainer, what is read and what is assumed.
#pragma once

#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/families/phases.hpp"

namespace segadvise {

struct TrainerReadOptions {
  std::string trainer;  // forced by --trainer; "" detects it from the file
  std::string model;    // --model: overrides the family read from the file (needed where the file does not name it)
  std::string cwd;      // where relative paths inside the file are also tried; "" the process's
};

struct TrainerRead {
  std::string trainer;  // musubi | ai-toolkit | onetrainer | diffusers
  std::string config_path;
  std::vector<std::string> inputs;  // every file read (the config, a dataset TOML)
  const Family* family = nullptr;
  TrainingSetup setup;
  Schedule schedule;
  // Where the training shape comes from, in the trainer's own terms.
  std::string shape_source;
  // The trainer stops before training: the prediction is `supported: false` with these reasons.
  std::vector<std::string> rejections;
  // Keys the trainer ignores or changes, and assumptions.
  std::vector<std::string> warnings;
  // The run's other phases as this trainer runs them (run.other; Trainer::run_setup): filled by a
  // reader that reads the keys, else from trainers/data/<id>.json "phases" (trainer_run_from_data).
  RunSetup run;
};

struct TrainerFacts;
// The run's phases from the trainer's data file ("phases": each with the config key that decides it,
// looked up in the file the way its format nests keys, and the trainer's default): caching, loading,
// sampling and saving. InputError naming the data file for a malformed "phases".
TrainerRun trainer_run_from_data(const TrainerFacts& facts, const TrainerRead& r);

// simpletuner | musubi | ai-toolkit | onetrainer | diffusers, from the file name and content.
// Throws InputError naming the file when nothing matches.
std::string detect_trainer(const std::string& path);

// Reads a musubi / ai-toolkit / OneTrainer / diffusers config (not SimpleTuner: simpletuner_reader.hpp).
// Malformed files throw InputError naming the file, the line and the key.
TrainerRead read_trainer_config(const std::string& path, const TrainerReadOptions& o);

// The trainers this reads.
const std::vector<std::string>& readable_trainers();

}  // namespace segadvise
