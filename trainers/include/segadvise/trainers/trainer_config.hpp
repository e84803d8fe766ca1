// Reading the other trainers' own configs the way each trainer does (musubi-tuner, ai-toolkit,
// OneTrainer, diffusers example scripts): which checkpointing it runs, which offload, which precision
// its quantizer really uses, which defaults apply. The facts come from trainers/<folder>/<id>.json;
// docs/check.md lists, per trainer, what is read and what is assumed.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/phases.hpp"

namespace segadvise {

// How a config is read: one options type for every trainer (what a trainer does not use, it ignores).
struct TrainerReadOptions {
  std::string trainer;  // forced by --trainer; "" detects it from the file
  std::string model;    // --model: overrides the family read from the file (needed where the file does not name it)
  std::string cwd;      // where relative paths inside the file are also tried; "" the process's
  // SimpleTuner: --data-backend (a data-backend JSON instead of the config's data_backend_config), the
  // source media's W/H (0: 1:1 for images, 16:9 for video), --accelerate-config (a YAML; "" : the
  // config's accelerate_config key)
  std::string data_backend_override;
  double source_aspect = 0;
  std::string accelerate_config;
};

// The largest shape one data-backend entry yields (SimpleTuner §1.2, §1.3, §1.5).
struct BackendShape {
  std::string id;
  std::string dataset_type;  // image | video | audio | caption
  int width = 0, height = 0, frames = 1, batch = 1;
  std::string note;
  // the rules its dataset is bucketed by (dataset_buckets.hpp), as read
  struct Rules {
    std::string instance_data_dir;  // "" : none given
    double resolution = 0;          // as given (pixels, or megapixels for area)
    std::string resolution_type;
    int alignment = 64;
    bool crop = false;
    std::string crop_aspect = "square";
    std::vector<double> crop_aspect_buckets;
    double minimum_image_size = 0;  // 0 : none
    int repeats = 0;
    // video backends (§1.5): the family's frame rule, and video.min_frames / max_frames under it
    std::string frame_rule;  // "8k+1", "17k+5" or "" (unchanged)
    int min_frames = 0;      // 0 : num_frames
    int max_frames = 0;      // 0 : none
    std::string bucket_strategy = "aspect_ratio";
  } rules;
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

// A config as its trainer reads it: the one result of every trainer's reader (Trainer::read).
struct TrainerRead {
  std::string trainer;  // the registry id (trainer.hpp)
  std::string config_path;
  // A JSON config as written (key spelling and order kept) and its indentation, to write it back alike
  // (SimpleTuner); null for other formats.
  nlohmann::ordered_json raw;
  int indent = 4;
  // SimpleTuner: the data-backend file and its training backends, the one that sets the shape first
  std::string data_backend_path;
  std::vector<BackendShape> backends;
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
  // A command line's --config_file (musubi) and the keys it sets (where the command line sets one too, the
  // command line wins, argparse defaults): the file written back overrides them on the command line.
  std::string config_file;
  std::map<std::string, std::string> config_file_keys;
  // Keys the trainer ignores or changes, and assumptions.
  std::vector<std::string> warnings;
  // The run's other phases as this trainer runs them (run.other; Trainer::run_setup): filled by a
  // reader that reads the keys, else from trainers/<folder>/<id>.json "phases" (trainer_run_from_data).
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

// Reads a config of any trainer through its component (`o.trainer`, else detected): Trainer::read.
// Malformed files throw InputError naming the file, the line and the key.
TrainerRead read_trainer_config(const std::string& path, const TrainerReadOptions& o);

}  // namespace segadvise
