// Config lines for other trainers: the best plan within each trainer's own memory knobs, and what
// SimpleTuner's interval/stride plan would gain over it. The knobs, and how sure we are of each, are
// documented in emitters.cpp and docs/check.md.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "common.hpp"

namespace segadvise::cli {

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
};

struct TrainerAdvice {
  std::string trainer;  // emitter name
  std::string trainer_name;
  bool family_supported = true;  // as far as known (see docs/check.md)
  std::vector<TrainerPlan> plans;  // every combination evaluated, fastest first
  int best = -1;                   // fastest that fits with headroom, -1 when none
  FitVerdict verdict = FitVerdict::DoesNotFit;  // of plans[best]: what the trainer's plan answers
  int smallest = -1;               // smallest peak (what to try when nothing fits)
  std::string config_format;       // flags | yaml | json
  std::string config_text;         // lines for plans[best] (or plans[smallest])
  std::vector<std::string> notes;  // precision mapping, uncertainty, what SimpleTuner would gain
  std::vector<std::string> manual;  // what the user must still set by hand (model paths, data, output …)
};

// The best plan within `trainer`'s knobs for the context's setup. `simpletuner_best` is advise's
// recommendation over SimpleTuner's whole schedule space (nullptr when nothing fits there).
TrainerAdvice advise_for_trainer(const Context& ctx, const std::string& trainer, const Candidate* simpletuner_best);

nlohmann::json to_json(const TrainerAdvice& a);
void print_trainer_advice(std::ostream& out, const TrainerAdvice& a, bool markdown);

}  // namespace segadvise::cli
