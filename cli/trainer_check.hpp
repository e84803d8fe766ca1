// `check` for the other trainers' configs (musubi-tuner, ai-toolkit, OneTrainer, diffusers).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "check_options.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::cli {

// Reads o.config as `trainer` ("" detects it), predicts it and, with --advise --emit SAME --output,
// writes it back with only the memory knobs changed (atomically). Returns the exit code.
int run_trainer_check(const CheckOptions& o, const std::string& trainer, std::ostream& out);

}  // namespace segadvise::cli
