// OneTrainer JSON configs (check CONFIG.json with "model_type", "training_method", …): any text is
// read or is an InputError; an accepted config gives finite, non-negative predictions.
#include <cstdint>

#include "../predict_check.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  segadvise::fuzz::check_trainer_config("onetrainer.json", data, size);
  return 0;
}
