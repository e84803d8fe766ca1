// Trainer facts as data (families/data/trainer/*.json, compiled in): SimpleTuner's default
// flavours, model_family aliases, frame rates and optimizer aliases, and the other trainers the
// emitters write for. Each file names its source.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace segadvise {

struct OptimizerAlias {
  std::string as;   // the optimizer of the cost model's table sized alike
  std::string why;  // the state it keeps, for the note
};

struct SimpleTunerFacts {
  std::map<std::string, std::string> default_flavours;  // model_family -> DEFAULT_MODEL_FLAVOUR (§3.1)
  std::map<std::string, std::string> family_aliases;    // model_family alias -> registered family (§3.1)
  std::map<std::string, int> default_framerates;        // model_family -> framerate when unset (§1.5)
  std::map<std::string, OptimizerAlias> optimizer_aliases;  // §2.5
};

struct EmitterTrainer {
  std::string id, name;
  std::set<std::string> families;  // trainer_family values it trains (as far as known)
  std::string format;              // flags | yaml | json
};

struct EmitterFacts {
  std::vector<EmitterTrainer> trainers;
  std::map<std::string, std::string> denoiser_part;  // trainer_family -> unet | prior
  std::string denoiser_part_default;                 // transformer
};

const SimpleTunerFacts& simpletuner_facts();
const EmitterFacts& emitter_facts();

}  // namespace segadvise
