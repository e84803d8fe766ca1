// The non-JSON trainer readers (check CONFIG): the first byte picks the format (y: an ai-toolkit
// YAML job, t: a musubi TOML config, anything else: a musubi or diffusers command line), the rest is
// the file's text. Any text is read or is an InputError; an accepted config gives finite,
// non-negative predictions.
#include <cstdint>
#include <string>

#include "../predict_check.hpp"
#include "segadvise/trainers/trainer_config.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const char* name = data[0] == 'y' ? "job.yaml" : data[0] == 't' ? "config.toml" : "train.sh";
  const std::string path = fuzz::write_scratch(name, data + 1, size - 1);
  try {
    TrainerReadOptions o;
    o.cwd = fuzz::scratch_dir();
    const TrainerRead r = read_trainer_config(path, o);
    if (!r.family) return 0;
    const BlockChain chain = analyze(*r.family, r.setup);
    fuzz::check_schedule(*r.family, chain, r.setup, r.schedule);
  } catch (const InputError&) {
  }
  return 0;
}
