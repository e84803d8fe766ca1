// `segadvise check FILE` for musubi-tuner, ai-toolkit, OneTrainer and diffusers configs: read with the
// trainer's semantics (segadvise/trainers/), predicted, and with --advise --emit SAME_TRAINER --output NEW
// written back with only the memory knobs changed (trainer_writer).
#include "trainer_check.hpp"
#include "measured.hpp"

#include <sstream>

#include "commands.hpp"
#include "dataset_check.hpp"
#include "emitters.hpp"
#include "printer.hpp"
#include "runs.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/json_io.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_writer.hpp"

namespace segadvise::cli {

using nlohmann::ordered_json;

namespace {

// A plan whose written file would not run it (a --config_file key it turns off that the command line
// cannot, keys_kept_on) is not the answer: the fastest other plan, confident before borderline, is
void keep_plans_the_file_can_run(TrainerAdvice& ta, const TrainerRead& tr, const Family& fam) {
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

}  // namespace

int run_trainer_check(const CheckOptions& o, const std::string& trainer_id, std::ostream& out) {
  TrainerReadOptions ro;
  ro.trainer = trainer_id;
  ro.model = o.flags.model;
  ro.cwd = o.read.cwd;
  const TrainerRead tr = trainer(trainer_id).read(o.config, ro);
  if (!o.output.empty() && o.emit != tr.trainer)
    throw InputError("--output '" + o.output + "': only with --emit " + tr.trainer + " (it writes this " + tr.trainer + " config back)");
  const auto printer = make_printer(o.flags.format, out);
  SetupFlags flags = o.flags;
  flags.model.clear();  // the family is the one read (or --model, already applied by the reader)
  CheckRequest req;
  // its datasets, where they are on this machine (docs/datasets.md): judged by the bucket with the highest peak
  if (!o.dataset.empty() && tr.datasets.empty())
    throw InputError("--dataset '" + o.dataset + "': the config names no dataset directory to stand for (diffusers: --instance_data_dir or --train_data_dir; musubi: image_directory or video_directory; "
                     "ai-toolkit: datasets[].folder_path; OneTrainer: a concept's path)");
  std::optional<DatasetView> dataset = read_trainer_datasets(tr.datasets, o.dataset, o.read.cwd);
  TrainingSetup setup = tr.setup;
  if (dataset) {
    predict_buckets(*dataset, make_request(*tr.family, setup, flags), tr.schedule);
    apply_largest_bucket(setup, *dataset);
  }
  req.run = make_request(*tr.family, setup, flags);
  if (dataset) predict_buckets(*dataset, req.run, tr.schedule);
  req.schedule = tr.schedule;
  req.rejections = tr.rejections;
  req.warnings = tr.warnings;
  // the whole run as this trainer runs it (Trainer::run_setup: its caching, loading, sampling and
  // saving by its own keys); --step-only judges the step alone
  req.run_setup = trainer(trainer_id).run_setup(tr);
  req.step_only = o.step_only;
  req.advise = o.advise || !o.emit.empty();
  req.advice_options.keep_all = o.show_all;
  print_remembered(out, req.run, o.flags.format);
  const CheckReport r = check_report(req);

  CheckView v;
  v.config = o.config;
  v.config_trainer = tr.trainer;
  v.inputs = tr.inputs;
  v.shape_source = tr.shape_source;
  v.report = &r;
  v.dataset = dataset ? &*dataset : nullptr;
  // --advise alone also shows the plan within the config's own trainer: that plan is then the answer
  const std::string emit = o.emit.empty() ? tr.trainer : o.emit;
  TrainerAdvice ta;
  if (r.advice && emit != "simpletuner") {
    ta = advise_for_trainer(r.context, emit, r.advice->recommended(), [&](TrainerAdvice& a) {
      if (emit == tr.trainer) keep_plans_the_file_can_run(a, tr, *tr.family);
    });
    v.trainer = &ta;
    // the config's own trainer (or another one named by --emit): its plan is the advice, printed in
    // its own keys; the SimpleTuner schedules stay in the comparison note
    v.own_trainer_advice = true;
    const int shown = ta.best >= 0 ? ta.best : ta.smallest;
    // the whole run of that plan, for the config's own trainer (its run keys are the config's)
    if (shown >= 0 && !o.step_only && emit == tr.trainer && req.run_setup.other.trainer == emit) {
      // the keys of the user's file its run is predicted with (TrainerRead::run_keys: the parts'
      // precisions, sampling) go into the plan's lines, so that the printed config runs the run predicted below
      if (!tr.run_keys.empty()) {
        TrainerPlan& pm = ta.plans[shown];
        for (auto it = tr.run_keys.begin(); it != tr.run_keys.end(); ++it)
          if (!pm.knobs.contains(it.key())) pm.knobs[it.key()] = it.value();
        ta.config_text = trainer(emit).config_text(*tr.family, KnobCombo{pm.label, pm.knobs, pm.schedule, pm.setup});
      }
      const TrainerPlan& p = ta.plans[shown];
      const Context pc = r.context.with_setup(p.setup);
      const Candidate step = evaluate(pc, p.schedule);
      RunSetup run = trainer(emit).plan_run_setup(tr, p.setup, p.knobs);
      v.trainer_phases = predict_run(pc, step, run);
      // a phase the trainer's own plan keys bring under the card (OneTrainer: sample_after_unit NEVER):
      // the plan sets them, its lines and the file written back say so, and its run is predicted with them
      const nlohmann::ordered_json extra = trainer(emit).phase_knobs(v.trainer_phases->fixes);
      if (!extra.empty()) {
        TrainerPlan& pm = ta.plans[shown];
        for (auto it = extra.begin(); it != extra.end(); ++it) {
          pm.knobs[it.key()] = it.value();
          pm.label += ", " + it.key() + " " + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
        }
        ta.config_text = trainer(emit).config_text(*tr.family, KnobCombo{pm.label, pm.knobs, pm.schedule, pm.setup});
        for (const PhaseFix& f : v.trainer_phases->fixes)
          if (extra.contains(f.key))
            for (const TrainerPhaseKnob& k : run.other.phase_knobs)
              if (k.key == f.key && k.effect == "samples_off") run.other.samples = false;
        v.trainer_phases = predict_run(pc, step, run);
      }
    }
  }
  const int rc = exit_code(r, v.trainer ? std::optional<FitVerdict>(ta.verdict) : std::nullopt);
  if (r.advice && o.emit == tr.trainer && !o.output.empty()) {
    if (ta.best < 0) {
      v.nothing_to_write = true;
    } else {
      const TrainerPlan& best = ta.plans[ta.best];
      const Trainer& t = trainer(tr.trainer);
      const Rewritten w = t.rewrite(tr, t.memory_knobs(tr, best.knobs));
      write_file_atomically(o.output, w.text);
      v.rewritten = CheckView::Written{o.output, best.label, w.notes};
    }
  }
  printer->check(v);
  return rc;
}

}  // namespace segadvise::cli
