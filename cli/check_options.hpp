// `segadvise check`'s options (cmd_check.cpp registers the flags; trainer_check.cpp runs the other
// trainers' files).
#pragma once

#include <ostream>
#include <string>

#include "common.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"

namespace segadvise::cli {

// `segadvise check` itself.
struct CheckOptions {
  std::string config;
  SetupFlags flags;  // gpu, vram, headroom, format, calibration, profile
  ReadOptions read;
  bool advise = false;
  bool show_all = false;
  bool step_only = false;  // --step-only: the verdict and exit code use the training step alone
  std::string emit;    // trainer for --emit
  std::string output;  // --output for --emit simpletuner (or the config's own trainer)
  std::string dataset;  // --dataset DIR: the dataset to bucket, instead of the backend's instance_data_dir
  std::string trainer;  // --trainer: simpletuner, musubi, ai-toolkit, onetrainer, diffusers ("" : detected)
};
int run_check(const CheckOptions& o, std::ostream& out);

}  // namespace segadvise::cli
