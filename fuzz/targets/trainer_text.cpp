// The non-JSON trainer readers (check CONFIG): the first byte picks the format (y: an ai-toolkit
// YAML job, t: a musubi TOML config, p: a PowerShell and b: a cmd launch script, n: a notebook, anything
// else: a bash one, each a musubi or diffusers command line), the rest is the file's text. Any text
// is read or is an InputError; an accepted config gives finite, non-negative predictions.
#include <cstdint>

#include "../predict_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* name = data[0] == 'y'   ? "job.yaml"
                     : data[0] == 't' ? "config.toml"
                     : data[0] == 'p' ? "train.ps1"
                     : data[0] == 'b' ? "train.bat"
                     : data[0] == 'n' ? "train.ipynb"
                                      : "train.sh";
  segadvise::fuzz::check_trainer_config(name, data + 1, size - 1);
  return 0;
}
