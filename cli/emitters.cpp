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

// the table's "fits" column: the verdict advise gives a schedule
const char* fits_word(FitVerdict v) {
  switch (v) {
    case FitVerdict::Fits: return "yes";
    case FitVerdict::Borderline: return "borderline";
    case FitVerdict::DoesNotFit: return "no";
  }
  return "no";
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

nlohmann::json to_json(const TrainerAdvice& a) {
  nlohmann::json j;
  j["trainer"] = a.trainer;
  j["trainer_name"] = a.trainer_name;
  j["family_supported"] = a.family_supported;
  nlohmann::json plans = nlohmann::json::array();
  for (const auto& p : a.plans)
    plans.push_back({{"label", p.label},
                     {"knobs", nlohmann::json::parse(p.knobs.dump())},
                     {"schedule", p.schedule.name()},
                     {"peak_vram_gib", p.prediction.peak_vram_bytes / kGiB},
                     {"step_time_s", p.prediction.step_time_s},
                     {"fits", p.verdict == FitVerdict::Fits},
                     {"verdict", to_string(p.verdict)}});
  j["plans"] = plans;
  j["best"] = a.best >= 0 ? nlohmann::json(a.best) : nlohmann::json(nullptr);
  j["verdict"] = to_string(a.verdict);
  j["config_format"] = a.config_format;
  j["config"] = a.config_text;
  j["notes"] = a.notes;
  j["set_by_hand"] = a.manual;
  return j;
}

void print_trainer_advice(std::ostream& out, const TrainerAdvice& a, bool markdown) {
  out << (markdown ? "\n### " : "\n") << a.trainer_name << (markdown ? "\n\n" : ":\n");
  Table t({"plan", "peak", "s/step", "fits"});
  for (std::size_t i = 0; i < a.plans.size(); ++i) {
    const auto& p = a.plans[i];
    t.add({(static_cast<int>(i) == a.best ? "* " : "") + p.label, gib_str(p.prediction.peak_vram_bytes),
           secs_str(p.prediction.step_time_s), fits_word(p.verdict)});
  }
  t.print(out, markdown);
  out << "\n";
  if (!a.config_text.empty()) {
    if (markdown) out << "```" << (a.config_format == "flags" ? "" : a.config_format) << "\n";
    out << a.config_text;
    if (markdown) out << "```\n";
  }
  for (const auto& n : a.notes) out << "note: " << n << "\n";
  if (!a.manual.empty()) {
    out << (markdown ? "\nStill to set by hand:\n\n" : "still to set by hand:\n");
    for (const auto& m : a.manual) out << (markdown ? "- " : "  - ") << m << "\n";
  }
}

}  // namespace segadvise::cli
