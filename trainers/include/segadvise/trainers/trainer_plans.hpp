// The knob combinations each other trainer has for a family (from trainers/data/*.json:
// a knob the trainer lacks for the family is never offered), the config text it reads, naming the
// setup it was planned for in the trainer's own place, and what the user must still set by hand.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/facts.hpp"

namespace segadvise {

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

// simpletuner, musubi, ai-toolkit, onetrainer, diffusers
const std::vector<std::string>& emitter_names();
// Throws InputError naming --emit and the value, with the nearest names.
void check_emit_name(const std::string& name);

// One combination of a trainer's knobs, as the cost model sees it.
struct TrainerPlan {
  std::string label;            // "gradient checkpointing, 20 blocks swapped"
  nlohmann::ordered_json knobs;  // the trainer's own keys and values
  Schedule schedule;            // what it does to activations
  TrainingSetup setup;          // precision and weight streaming as the trainer runs them
  Prediction prediction;
  FitVerdict verdict = FitVerdict::DoesNotFit;  // its 90% peak range against the card, as advise judges
};

struct TrainerAdvice {
  std::string trainer;  // emitter name
  std::string trainer_name;
  bool family_supported = true;  // as far as known (see docs/check.md)
  std::vector<TrainerPlan> plans;  // every combination evaluated, fastest first
  // fastest whose verdict is "fits"; when none, the fastest "borderline" one; -1 when neither
  int best = -1;
  FitVerdict verdict = FitVerdict::DoesNotFit;  // plans[best]'s verdict (does-not-fit when best is -1)
  int smallest = -1;               // smallest peak (what to try when nothing fits)
  std::string config_format;       // flags | yaml | json
  std::string config_text;         // lines for plans[best] (or plans[smallest])
  std::vector<std::string> notes;  // precision mapping, uncertainty, what SimpleTuner would gain
  std::vector<std::string> manual;  // what the user must still set by hand (model paths, data, output …)
};

// The index of TrainerAdvice::best among `plans` (fastest first): the fastest that fits, else the
// fastest borderline one, counting only the plans `allowed` takes (all where empty); -1 when none.
int fastest_fit(const std::vector<TrainerPlan>& plans, const std::function<bool(const TrainerPlan&)>& allowed = {});

// One combination predicted, with the three-valued verdict advise gives a schedule.
struct PlanPrediction {
  Prediction prediction;
  FitVerdict verdict = FitVerdict::DoesNotFit;
};
// Predicts one combination (the setup it runs with, the schedule it runs).
using PredictFn = std::function<PlanPrediction(const TrainingSetup&, const Schedule&)>;

// Every combination `trainer` has for the family, predicted; the fastest that fits with confidence,
// else the fastest borderline one (or, when neither, the smallest), its config lines, the notes and
// what is left to set by hand. `headroom` names the headroom in the notes.
TrainerAdvice plan_for_trainer(const std::string& trainer, const Family& fam, const TrainingSetup& setup,
                               const PredictFn& predict, const std::string& headroom);

// ai-toolkit and OneTrainer bucket around edge x edge pixels: the edge (multiple of 64) whose square
// has the area of width x height; a square's own edge.
int square_edge_for_area(int width, int height);

}  // namespace segadvise
