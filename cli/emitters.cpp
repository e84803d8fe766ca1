// Emitters for trainers other than SimpleTuner. What each trainer can do about memory, per family, is
// data (trainers/*/*.json, with the trainers' file and line); the combinations, their config lines
// and what is left to set by hand come from the trainers library (trainer_plans.hpp). Here: the
// evaluation of each combination against the context, and what SimpleTuner's own plan would gain.
#include "emitters.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "segadvise/report/output.hpp"
#include "segadvise/trainers/trainer_plans.hpp"
#include "segadvise/report/json_io.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/trainers/trainer.hpp"

namespace segadvise::cli {

using nlohmann::ordered_json;

namespace {

std::string fmt(const char* f, double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

}  // namespace

TrainerAdvice advise_for_trainer(const Context& ctx, const std::string& trainer, const Candidate* simpletuner_best,
                                 const std::function<void(TrainerAdvice&)>& adjust) {
  check_emit_name(trainer);
  if (segadvise::trainer(trainer).plans_are_schedules())
    throw InputError("--emit " + trainer + ": the " + segadvise::trainer(trainer).name() + " keys are the recommendation itself");
  const auto predict = [&ctx](const TrainingSetup& setup, const Schedule& s) {
    // the trainer's own checkpointing has no family-specific interval semantics: realize only decides
    // which blocks are checkpointable
    const Candidate c = evaluate(ctx.with_setup(setup), s);
    return PlanPrediction{c.prediction, c.verdict()};
  };
  TrainerAdvice a = segadvise::trainer(trainer).plan(*ctx.family, ctx.setup, predict, gib_str(ctx.headroom_bytes));
  if (adjust) adjust(a);
  const std::string& name = a.trainer_name;

  // what SimpleTuner's own schedule space would gain
  if (simpletuner_best && a.family_supported) {
    const Prediction& st = simpletuner_best->prediction;
    std::string line = "SimpleTuner's plan " + simpletuner_best->schedule.name() + " (same precision and streaming as the config: " +
                       secs_str(st.step_time_s) + "/step, peak " + gib_str(st.peak_vram_bytes) + ")";
    if (a.best >= 0) {
      const Prediction& t = a.plans[a.best].prediction;
      const double gain = (t.step_time_s - st.step_time_s) / t.step_time_s;
      if (gain > 0.005)
        line += " is " + fmt("%.0f", gain * 100) + "% faster than " + name + "'s best (" + secs_str(t.step_time_s) + "/step)";
      else
        line += " gains nothing over " + name + "'s best (" + secs_str(t.step_time_s) + "/step)";
    } else {
      line += " fits where " + name + "'s knobs do not";
    }
    a.notes.push_back(line);
  }
  return a;
}

}  // namespace segadvise::cli
