// OneTrainer JSON configs (check CONFIG.json with "model_type", "training_method", …): any text is
// read or is an InputError; an accepted config gives finite, non-negative predictions.
#include <cstdint>
#include <string>

#include "../predict_check.hpp"
#include "segadvise/trainers/trainer_config.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("onetrainer.json", data, size);
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
