// What a trainer refuses to start, judged on the setup alone: not its checkpointing schedule (the
// families' rules, realize()) nor its multi-GPU keys (multi_gpu_rules.hpp). The facts are data
// (trainers/simpletuner/simpletuner-setup.json, with the trainer's file). The SimpleTuner config reader
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

// The precision a flavour's checkpoint really trains at when the config leaves base_model_precision
// at no_change (trainers/simpletuner/simpletuner-setup.json flavour_precision).
struct FlavourPrecision {
  std::string model_family;           // SimpleTuner model_family
  std::vector<std::string> flavours;  // exact model_flavour values ("" : unset, the default flavour)
  std::string flavour_suffix;         // or: a flavour ending with this
  std::string precision;
  std::string unless;                 // a config key that keeps no_change when true ("" : none)
  std::string note;                   // for the setup's notes; {flavour} is the config's flavour
  bool matches(const std::string& family, const std::string& flavour) const;
};
const std::vector<FlavourPrecision>& flavour_precisions();

// A config value that trains a part of the model segadvise does not model (InputError naming the key).
struct NotModelled {
  std::string model_family, key, value, why;
};
const std::vector<NotModelled>& simpletuner_not_modelled();

}  // namespace segadvise
