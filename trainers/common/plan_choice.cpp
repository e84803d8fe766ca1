// Which of a trainer's plans is the answer for a file of the user's (trainer.hpp keep_plans_the_file_runs).
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_writer.hpp"

namespace segadvise {

void keep_plans_the_file_runs(TrainerAdvice& ta, const TrainerRead& tr, const Family& fam) {
  if (ta.best < 0 || tr.config_file_keys.empty()) return;
  const Trainer& t = trainer(tr.trainer);
  const auto runs = [&](const TrainerPlan& p) { return keys_kept_on(tr, t.memory_knobs(tr, p.knobs)).empty(); };
  if (runs(ta.plans[ta.best])) return;
  const std::string was = ta.plans[ta.best].label;
  const int best = fastest_fit(ta.plans, runs);
  if (best < 0) return;  // none of them runs from the file: the note written with it says what to change
  ta.best = best;
  ta.verdict = ta.plans[best].verdict;
  const TrainerPlan& p = ta.plans[best];
  ta.config_text = t.config_text(fam, KnobCombo{p.label, p.knobs, p.schedule, p.setup});
  ta.notes.push_back("'" + was + "' would need " + file_name(tr.config_file) +
                     "'s store_true keys switched off, which a command-line flag cannot do: the plan is '" + p.label + "'");
}

}  // namespace segadvise
