// The one list of trainers, above their components: adding a trainer is its folder (trainers/<trainer>/,
// its component's <trainer>_trainer()) and one line here.
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_plans.hpp"

#include "segadvise/io/json_input.hpp"

namespace segadvise {

// Each defined in its trainer's folder.
const Trainer& simpletuner_trainer();
const Trainer& musubi_trainer();
const Trainer& ai_toolkit_trainer();
const Trainer& onetrainer_trainer();
const Trainer& diffusers_trainer();
const Trainer& sd_scripts_trainer();
const Trainer& kohya_ss_trainer();
const Trainer& diffusion_pipe_trainer();

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string emitter_list() { return joined(emitter_names()); }

const std::vector<const Trainer*>& all_trainers() {
  // the order detect_trainer tries them in
  static const std::vector<const Trainer*> all = {
      &simpletuner_trainer(),
      &diffusion_pipe_trainer(),  // before musubi, which takes any other .toml
      &sd_scripts_trainer(),  // before musubi: its --config_file TOML is told apart by its keys
      &musubi_trainer(),
      &ai_toolkit_trainer(),
      &onetrainer_trainer(),
      &diffusers_trainer(),
      &kohya_ss_trainer(),  // its JSON told apart from SimpleTuner's and OneTrainer's by json_config_trainer
  };
  return all;
}

const Trainer& trainer(const std::string& id) {
  for (const Trainer* t : all_trainers())
    if (t->id() == id) return *t;
  throw InputError("--trainer: '" + id + "' is not one of " + emitter_list());
}

const std::vector<std::string>& emitter_names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> out;
    for (const Trainer* t : all_trainers()) out.push_back(t->id());
    return out;
  }();
  return n;
}

const TrainerFacts& trainer_facts(const std::string& id) {
  std::vector<std::string> known;
  for (const Trainer* t : all_trainers()) {
    if (t->id() == id && t->facts()) return *t->facts();
    if (t->facts()) known.push_back(t->id());
  }
  throw InputError("trainer '" + id + "' is not one of " + joined(known));
}

}  // namespace segadvise
