#include "segadvise/planner/trainer_plan_run.hpp"

namespace segadvise {

namespace {

// `p`'s lines again after its knobs changed
void reprint(TrainerAdvice& ta, const Trainer& t, const Family& fam, const TrainerPlan& p) {
  ta.config_text = t.config_text(fam, KnobCombo{p.label, p.knobs, p.schedule, p.setup});
}

// the keys of the user's file its run is predicted with (TrainerRead::run_keys: the parts' precisions,
// sampling) go into the plan's lines, so that the printed config runs the run predicted
void carry_run_keys(TrainerAdvice& ta, TrainerPlan& p, const Trainer& t, const TrainerRead& tr) {
  if (tr.run_keys.empty()) return;
  for (auto it = tr.run_keys.begin(); it != tr.run_keys.end(); ++it)
    if (!p.knobs.contains(it.key())) p.knobs[it.key()] = it.value();
  reprint(ta, t, *tr.family, p);
}

// a phase the trainer's own plan keys bring under the card (OneTrainer: sample_after_unit NEVER): the
// plan sets them, its lines and the file written back say so, and its run is predicted with them
bool take_phase_knobs(TrainerAdvice& ta, TrainerPlan& p, const Trainer& t, const TrainerRead& tr, RunSetup& run,
                      const RunPhases& phases) {
  const nlohmann::ordered_json extra = t.phase_knobs(phases.fixes);
  if (extra.empty()) return false;
  for (auto it = extra.begin(); it != extra.end(); ++it) {
    p.knobs[it.key()] = it.value();
    p.label += ", " + it.key() + " " + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
  }
  reprint(ta, t, *tr.family, p);
  for (const PhaseFix& f : phases.fixes)
    if (extra.contains(f.key))
      for (const TrainerPhaseKnob& k : run.other.phase_knobs)
        if (k.key == f.key && k.effect == "samples_off") {
          run.other.samples = false;
          run.other.sample_key = k.key;  // the key that turns it off names it, as read back from the file
        }
  return true;
}

}  // namespace

std::optional<RunPhases> own_plan_run(TrainerAdvice& ta, const TrainerRead& tr, const Context& ctx) {
  const int shown = ta.best >= 0 ? ta.best : ta.smallest;
  if (shown < 0) return std::nullopt;
  const Trainer& t = trainer(tr.trainer);
  TrainerPlan& p = ta.plans[shown];
  carry_run_keys(ta, p, t, tr);
  const Context pc = ctx.with_setup(p.setup);
  const Candidate step = evaluate(pc, p.schedule);
  RunSetup run = t.plan_run_setup(tr, p.setup, p.knobs);
  RunPhases phases = predict_run(pc, step, run);
  if (take_phase_knobs(ta, p, t, tr, run, phases)) phases = predict_run(pc, step, run);
  return phases;
}

}  // namespace segadvise
