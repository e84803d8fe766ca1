// What a trainer refuses to start, judged on the setup alone: not its checkpointing schedule (the
// families' rules, realize()) nor its multi-GPU keys (multi_gpu_rules.hpp). The facts are data
// (trainers/data/simpletuner-setup.json, with the trainer's file). The SimpleTuner config reader
// records them as the config's rejections, and the advisor's Context applies them to every
// prediction of the setup, so predict, advise and check answer alike.
#pragma once

#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise {

// The reasons `setup.trainer` stops before training (empty: it starts): trainer(setup.trainer)'s
// rules. Only SimpleTuner's are data here; the other trainers' readers record their own stops.
std::vector<std::string> setup_rejections(const Family& fam, const TrainingSetup& setup);
// SimpleTuner's (its component's setup_rejections).
std::vector<std::string> simpletuner_setup_rejections(const Family& fam, const TrainingSetup& setup);

// The SimpleTuner config keys that lift the stop on a full fine-tune of a quantized base
// (TrainingSetup::quantized_full_allowed).
const std::vector<std::string>& quantized_full_override_keys();

}  // namespace segadvise
