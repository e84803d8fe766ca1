// One component per trainer (SimpleTuner, musubi-tuner, ai-toolkit, OneTrainer, the diffusers example
// scripts) behind one interface: whether a file is its config, reading it the way the trainer does
// (setup, schedule, rejections, warnings), the setups it stops on, its knobs for memory and its plan
// within them, the config lines it takes, and its own file written back with only the memory knobs
// changed. The facts are data beside each trainer (trainers/<folder>/<id>.json); the registry
// (trainers/registry.cpp) is trainer(id) and all_trainers().
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/trainer_config.hpp"
#include "segadvise/trainers/trainer_plans.hpp"
#include "segadvise/trainers/trainer_writer.hpp"

namespace segadvise {

class Trainer {
 public:
  virtual ~Trainer() = default;
  virtual std::string id() const = 0;    // simpletuner | diffusion-pipe | musubi | ai-toolkit | onetrainer | diffusers
  virtual std::string name() const = 0;  // SimpleTuner, musubi-tuner, …
  // Its knob and per-family facts (trainers/<folder>/<id>.json); nullptr for SimpleTuner, whose schedule
  // space is the advisor's and whose model names are the families' (trainers/simpletuner/simpletuner.json).
  virtual const TrainerFacts* facts() const { return nullptr; }

  // Whether `path` is this trainer's config, by its name and content (InputError for a file that
  // cannot be read or a JSON config that is not an object).
  virtual bool detects(const std::string& path) const = 0;
  // The config as the trainer reads it. InputError naming the file, line and key for bad input.
  virtual TrainerRead read(const std::string& path, const TrainerReadOptions& o) const = 0;
  // The whole run's phases as it runs them (what sits on the GPU while it caches, loads, trains,
  // samples and saves, by its own keys: trainers/phases.hpp TrainerRun). Default: what the reader
  // read (TrainerRead::run), else trainers/<folder>/<id>.json "phases" (trainer_run_from_data).
  virtual RunSetup run_setup(const TrainerRead& r) const;
  // The run of a plan for `r`'s file (its setup and knobs, as the file is written back): run_setup(r)
  // with the caching the plan's keys bring. Default: latents cached where the plan keeps no VAE beside
  // the denoiser (encoded in the step where it does), text too where it keeps nothing.
  virtual RunSetup plan_run_setup(const TrainerRead& r, const TrainingSetup& plan, const nlohmann::ordered_json& knobs) const;
  // What it stops on before training, judged on the setup alone (setup_rules.hpp).
  virtual std::vector<std::string> setup_rejections(const Family& fam, const TrainingSetup& setup) const;

  // Its knob combinations for the family (none where it does not train it); `notes` receives
  // precision mappings and shape changes.
  virtual std::vector<KnobCombo> knob_space(const Family& fam, const TrainingSetup& base,
                                            std::vector<std::string>& notes) const = 0;
  // Combinations searched only when none of knob_space's fits with confidence: a change the user did
  // not ask for but the trainer has (ai-toolkit: quantizing an unquantized base). Default: none.
  virtual std::vector<KnobCombo> fallback_space(const Family& fam, const TrainingSetup& base,
                                                std::vector<std::string>& notes) const {
    (void)fam, (void)base, (void)notes;
    return {};
  }
  // The config lines for one combination (emit).
  virtual std::string config_text(const Family& fam, const KnobCombo& c) const = 0;
  // What the emitted lines leave for the user to set by hand.
  virtual std::vector<std::string> manual_steps(const Family& fam) const = 0;
  // Every combination predicted; the fastest confident fit, else the fastest borderline one, its
  // lines and notes (plan_for_trainer).
  virtual TrainerAdvice plan(const Family& fam, const TrainingSetup& setup, const PredictFn& predict,
                             const std::string& headroom) const;
  // The keys of a plan's knobs to set in the user's own file `r` (null: remove the key or flag): the
  // memory knobs, not the shape or the flags a plan repeats for completeness. Default: all of them.
  virtual nlohmann::ordered_json memory_knobs(const TrainerRead& r, const nlohmann::ordered_json& plan) const {
    (void)r;
    return plan;
  }
  // `r`'s own file with only `knobs` changed (trainer_writer.hpp).
  virtual Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const = 0;
  // The keys a plan takes on from its run's phase advice (`fixes` of the plan's own run: a phase other
  // than the step over the card), as the plan's knobs; empty where the trainer's phase keys are not
  // its plan's keys. Default: none.
  virtual nlohmann::ordered_json phase_knobs(const std::vector<PhaseFix>& fixes) const {
    (void)fixes;
    return nlohmann::ordered_json::object();
  }
  // Whether its plans are the advisor's checkpointing schedules (SimpleTuner: the advice is the
  // advisor's recommendation, written back by its schedule's keys) rather than combinations of its own
  // knobs (knob_space, plan).
  virtual bool plans_are_schedules() const { return false; }
  // The keys of a schedule, for a trainer whose plans are schedules (null: the trainer's default).
  virtual nlohmann::ordered_json schedule_knobs(const Schedule& s) const {
    (void)s;
    return nlohmann::ordered_json::object();
  }
};

// A plan of `ta` (the trainer's own, for `tr`'s file) whose written file would not run it (a
// --config_file key it turns off that the command line cannot, keys_kept_on) is not the answer: the
// fastest other plan, confident before borderline, is, and a note says why. Unchanged where none runs.
void keep_plans_the_file_runs(TrainerAdvice& ta, const TrainerRead& tr, const Family& fam);

// The component of `id`; InputError naming the value and the known trainers.
const Trainer& trainer(const std::string& id);
// simpletuner, diffusion-pipe, musubi, ai-toolkit, onetrainer, diffusers: the order detect_trainer tries them in.
const std::vector<const Trainer*>& all_trainers();

}  // namespace segadvise
