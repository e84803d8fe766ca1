// Reading the other trainers' own configs the way each trainer does (musubi-tuner, ai-toolkit,
// OneTrainer, diffusers example scripts): which checkpointing it runs, which offload, which precision
// its quantizer really uses, which defaults apply. The facts come from trainers/data/*.json;
// docs/check.md lists, per trainer, what is read and what is assumed.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
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

// A dataset another trainer's config names (dataset_buckets.hpp buckets it, where it is on this machine),
// with the rule that trainer sizes its samples by.
struct DatasetSpec {
  std::string id;    // how the config names it (e.g. --instance_data_dir)
  std::string dir;   // as written ("" : none)
  bool recursive = true;  // every directory below too, or the directory's own entries only
  int batch = 1;     // samples a step
  int repeats = 1;   // times each file is seen an epoch
  // "square": every image resized and cropped to edge x edge; "listed": the nearest of `listed`
  // (width, height) by aspect; "area": the trainer's aspect buckets hold about width x height pixels and
  // their ladder is not among the copied sources: every sample counted at width x height (`why` says so);
  // "not_modelled": the trainer computes its buckets in code segadvise does not have (no bucket is
  // formed; `why` says so)
  std::string rule = "square";
  int edge = 0;
  std::vector<std::pair<int, int>> listed;
  bool exif_transpose = false;  // the trainer applies a JPEG's EXIF orientation before sizing
  bool drop_last = false;       // a bucket with fewer samples than a batch never trains
  std::string why;
  // "musubi": every sample at width x height (its resolution), a video's clips by frame_extraction
  std::string dataset_type = "image";  // image | video
  int width = 0, height = 0;
  std::vector<int> target_frames;      // each already N*4+1
  std::string frame_extraction = "head";
  int frame_stride = 1, frame_sample = 1, max_frames = 129;
  // "area" and "musubi": a sample of fewer pixels than width x height is not upscaled: it counts at its
  // own area (the shape scaled by sqrt(its pixels / (width x height)), rounded, each side down to `align`)
  bool no_upscale = false;
  int align = 1;
  int frames = 1;  // "area" video datasets: every clip's frame count
  // "area": in place of `repeats`, samples an epoch = files x balancing, rounded to the nearest (> 0), or
  // a fixed `samples` shared by the buckets in proportion to their files (> 0)
  double balancing = 0;
  long long samples = 0;
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
  // The keys among them the trainer stops on by themselves (a flag the script does not have, one it
  // refuses for training): the file written back without them (rewrite_trainer_config).
  std::vector<std::string> refused_keys;
  // Keys whose value the trainer stops on, with the value they were predicted with instead (diffusers'
  // --resolution WxH: the square of its larger edge): the file written back sets them.
  nlohmann::ordered_json fixed_keys = nlohmann::ordered_json::object();
  // A command line's --config_file (musubi) and the keys it sets that the command line does not (the
  // command line wins, argparse defaults): the file written back overrides them on the command line.
  std::string config_file;
  std::map<std::string, std::string> config_file_keys;
  // Keys the trainer ignores or changes, and assumptions.
  std::vector<std::string> warnings;
  // The run's other phases as this trainer runs them (run.other; Trainer::run_setup): filled by a
  // reader that reads the keys, else from trainers/data/<id>.json "phases" (trainer_run_from_data).
  RunSetup run;
  // The datasets it trains on, where the config names their directories (DatasetSpec).
  std::vector<DatasetSpec> datasets;
  // The keys of the file its run's phases are predicted with that the trainer's plans do not set (a
  // part's stored precision, the text encoder's quantization, when it samples and saves), as written
  // and in the plans' key names: a plan printed for this file carries them, or the trainer would run
  // its defaults instead of the run predicted for the plan.
  nlohmann::ordered_json run_keys = nlohmann::ordered_json::object();
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

}  // namespace segadvise
