// A trainer's knob combinations (Trainer::knob_space: from its facts file, a knob the trainer lacks for
// the family is never offered), its plans predicted, and the one pick of the fastest fit.
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

// The registered trainers' ids (registry.cpp), in all_trainers()' order.
const std::vector<std::string>& emitter_names();
// The same as "simpletuner, musubi, …" (help texts and messages).
std::string emitter_list();
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

// "Fastest fit, else borderline", the one pick of advise, check and every trainer's plan: of `n`
// candidates sorted fastest first (`verdict(i)`), the first that fits; when none, the first borderline
// one `preferred` takes, else the first borderline one; -1 when none fits nor is borderline.
int fastest_fit(std::size_t n, const std::function<FitVerdict(std::size_t)>& verdict,
                const std::function<bool(std::size_t)>& preferred = {});
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

// ai-toolkit and OneTrainer bucket around edge x edge pixels: the edge (multiple of 64) whose square
// has the area of width x height; a square's own edge.
int square_edge_for_area(int width, int height);

}  // namespace segadvise
