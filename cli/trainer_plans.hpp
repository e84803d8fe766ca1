// The knob combinations each other trainer has for a family (from families/data/trainer/*.json:
// a knob the trainer lacks for the family is never offered), the config text it reads, naming the
// setup it was planned for in the trainer's own place, and what the user must still set by hand.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/families/trainers.hpp"

namespace segadvise::cli {

struct KnobCombo {
  std::string label;
  nlohmann::ordered_json knobs;  // the trainer's own keys (dotted for nested formats)
  Schedule schedule;             // what it does to activations
  TrainingSetup setup;           // precision, streaming and shape as the trainer runs them
};

// `base` is the user's setup. `notes` receives precision mappings and shape changes.
std::vector<KnobCombo> trainer_combos(const TrainerFacts& facts, const Family& fam, const TrainingSetup& base,
                                      std::vector<std::string>& notes);

// The config lines for one combination: the knobs plus the shape (resolution, batch, frames) where
// this trainer reads it.
std::string trainer_config_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c);

// What the emitted lines leave for the user (model paths, data, output, learning rate …).
std::vector<std::string> trainer_manual_steps(const TrainerFacts& facts, const Family& fam);

struct TrainerAdvice;

// Predicts one combination (the setup it runs with, the schedule it runs).
using PredictFn = std::function<Prediction(const TrainingSetup&, const Schedule&)>;

// Every combination `trainer` has for the family, predicted; the fastest that fits (or the smallest),
// its config lines, the notes and what is left to set by hand. `headroom` names the headroom in the
// "nothing fits" note.
TrainerAdvice plan_for_trainer(const std::string& trainer, const Family& fam, const TrainingSetup& setup,
                               const PredictFn& predict, const std::string& headroom);

// ai-toolkit and OneTrainer bucket around edge x edge pixels: the edge (multiple of 64) whose square
// has the area of width x height.
int square_edge_for_area(int width, int height);

}  // namespace segadvise::cli
