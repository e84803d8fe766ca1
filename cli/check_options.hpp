// `segadvise check`'s options (cmd_check.cpp registers the flags and runs it).
#pragma once

#include <ostream>
#include <string>

#include "common.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::cli {

// `segadvise check` itself.
struct CheckOptions {
  std::string config;
  SetupFlags flags;  // gpu, vram, headroom, format, calibration, profile
  TrainerReadOptions read;  // the flags the readers take (--data-backend, --aspect, --accelerate-config); trainer, model: from --trainer, --model
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
