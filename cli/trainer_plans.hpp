// The knob combinations each other trainer has for a family (from families/data/trainers/*.json:
// a knob the trainer lacks for the family is never offered), the config text it reads, naming the
// setup it was planned for in the trainer's own place, and what the user must still set by hand.
#pragma once

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

// ai-toolkit and OneTrainer bucket around edge x edge pixels: the edge (multiple of 64) whose square
// has the area of width x height.
int square_edge_for_area(int width, int height);

}  // namespace segadvise::cli
