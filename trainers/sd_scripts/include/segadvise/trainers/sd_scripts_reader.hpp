// kohya-ss sd-scripts' reader, offered to the components that launch its scripts (the kohya_ss GUI):
// an sd-scripts run given as flags, read the way the training script reads them. Facts:
// trainers/sd_scripts/sd-scripts.json.
#pragma once

#include <string>

#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::readers {

// An sd-scripts run given as flags rather than a launch script (the kohya_ss GUI's saved JSON as the
// command it launches): cl.script the training script's file name, cl.values/cl.lines its flags (a
// --config_file / --dataset_config among them is read as on a command line), `num_processes` accelerate's;
// `path` is the file named in messages.
TrainerRead read_sd_scripts_command(const CommandLine& cl, int num_processes, const std::string& path,
                                    const TrainerReadOptions& o);

}  // namespace segadvise::readers
