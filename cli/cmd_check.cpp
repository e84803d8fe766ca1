// segadvise check CONFIG.json --gpu G: reads a SimpleTuner config and its data backends as the
// trainer does, predicts the run's peak VRAM and sec/step for the config's own checkpointing keys,
// and warns where the trainer ignores or rejects a key. --advise recommends from the config's setup;
// --emit simpletuner --output NEW.json writes the config back with only the checkpointing keys (and the
// phase advice's keys) changed. The verdict is the whole run's (trainers/phases.hpp: startup caching,
// model load, step, validation, save) unless --step-only.
// Flags and config -> request -> advisor (check_report, which advises once when asked) -> printer.
// Exit codes, the worst phase's (each phase's 90% range, the step's own for the step): 0 fits (every
// upper end plus headroom fits), 1 does not fit (even a lower end does not) or the trainer would not run
// it, 3 borderline, 2 bad input. With --advise: 0 when a schedule fits with confidence, 3 when only
// borderline ones remain, 1 when nothing fits; with --emit of another trainer, that trainer's plan's
// verdict (exit_code.hpp).
#include <algorithm>
#include <cctype>
#include <iostream>

#include "commands.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/planner/measurements.hpp"
#include "segadvise/report/measured_output.hpp"
#include "check_options.hpp"
#include "emitters.hpp"
#include "segadvise/families/gpu_detect.hpp"
#include "segadvise/report/phases_output.hpp"
#include "segadvise/planner/dataset_check.hpp"
#include "segadvise/report/dataset_output.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "runs.hpp"
#include "segadvise/planner/trainer_plan_run.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/report/json_io.hpp"

namespace segadvise::cli {

namespace {

// What the config shows of the environment it runs in. The system: a .bat/.cmd/.ps1 launch script is
// Windows's; a config naming drive-letter paths (C:\ or C:/) was written there (a guess, said as one).
// The allocator: a launch script or config that sets PYTORCH_CUDA_ALLOC_CONF (or PYTORCH_ALLOC_CONF)
// with expandable_segments:True.
void environment_from_config(TrainingSetup& s, const std::string& path, bool os_given) {
  std::string ext = path.size() > 4 ? path.substr(path.size() - 4) : "";
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (!os_given && s.host_os.empty() && (ext == ".bat" || ext == ".cmd" || ext == ".ps1")) {
    s.host_os = "windows";
    s.host_os_from = "the launch script is a Windows script (" + ext + ")";
  }
  std::string text;
  try {
    text = read_text_file(path, "config");
  } catch (const InputError&) {
    return;  // read once already by its reader; not a text file to look into
  }
  if (!s.expandable_segments) {
    std::string lower = text;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const std::size_t at = lower.find("expandable_segments:true");
    if (at != std::string::npos && lower.rfind("alloc_conf", at) != std::string::npos) {
      s.expandable_segments = true;
      s.expandable_segments_from = "the config sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
    }
  }
  if (os_given || !s.host_os.empty()) return;
  for (std::size_t i = 1; i + 2 < text.size(); ++i) {
    const char before = text[i - 1], c = text[i];
    if (!std::isalpha(static_cast<unsigned char>(c)) || text[i + 1] != ':' || (text[i + 2] != '\\' && text[i + 2] != '/')) continue;
    if (before != '"' && before != '\'' && before != '=' && before != ' ') continue;
    if (i + 3 < text.size() && text[i + 2] == '/' && text[i + 3] == '/') continue;  // a URL's scheme, not a drive
    s.host_os = "windows";
    const std::string word = text.substr(i, 40);
    s.host_os_from = "a guess: the config names a Windows drive path (" + word.substr(0, word.find_first_of("\"',\n")) + ")";
    return;
  }
}

// The request of a config as read (its dataset's largest bucket where the dataset is on this machine).
CheckRequest check_request(const CheckOptions& o, const TrainerRead& tr, const std::optional<DatasetView>& dataset_in,
                           std::optional<DatasetView>& dataset) {
  SetupFlags flags = o.flags;
  flags.model.clear();  // the family is the one read (or --model, already applied by the reader)
  // --measured-from: the logged run used the config's own schedule
  if (!flags.measured_from.empty() && flags.measured_from_schedule.empty()) flags.measured_from_schedule = tr.schedule.name();
  dataset = dataset_in;
  TrainingSetup setup = tr.setup;
  environment_from_config(setup, tr.config_path, !flags.host_os.empty());
  if (dataset) {
    predict_buckets(*dataset, make_request(*tr.family, setup, flags), tr.schedule);
    apply_largest_bucket(setup, *dataset);
  }
  CheckRequest req;
  req.run = make_request(*tr.family, setup, flags);
  if (dataset) predict_buckets(*dataset, req.run, tr.schedule);  // again, with the runs kept for this setup
  req.schedule = tr.schedule;
  req.rejections = tr.rejections;
  req.warnings = tr.warnings;
  // the whole run as its trainer runs it (Trainer::run_setup: caching, loading, sampling and saving by its
  // own keys); --step-only judges the step alone
  req.run_setup = trainer(tr.trainer).run_setup(tr);
  req.step_only = o.step_only;
  req.advise = o.advise || !o.emit.empty();
  req.advice_options.keep_all = o.show_all;
  // --gpu auto: this machine runs it, so its memory is known
  if (o.flags.gpu == "auto") req.host_memory_bytes = detect_host_memory_bytes();
  return req;
}

// What the check read: a config of data backends (SimpleTuner's) shows them, any other its trainer,
// every file read and where its shape comes from.
void describe_config(CheckView& v, const TrainerRead& tr) {
  if (!tr.backends.empty()) {
    v.data_backend_path = tr.data_backend_path;
    for (const BackendShape& b : tr.backends)
      v.backends.push_back({b.id, b.dataset_type, b.width, b.height, b.frames, b.batch, b.note});
    return;
  }
  v.config_trainer = tr.trainer;
  v.inputs = tr.inputs;
  v.shape_source = tr.shape_source;
}

// The plans of the trainer whose keys are printed (--emit, else the config's own where its plans are its
// own knobs): the best within its knobs, re-picked where the user's file could not run it, with the whole
// run of the config's own trainer's plan.
void plan_in_trainer(CheckView& v, TrainerAdvice& ta, const CheckOptions& o, const TrainerRead& tr, const CheckRequest& req,
                     const CheckReport& r) {
  const bool own_plans = !trainer(tr.trainer).plans_are_schedules();
  const std::string emit = o.emit.empty() && own_plans ? tr.trainer : o.emit;
  if (!r.advice || emit.empty() || trainer(emit).plans_are_schedules()) return;
  ta = advise_for_trainer(r.context, emit, r.advice->recommended(), [&](TrainerAdvice& a) {
    if (emit == tr.trainer) keep_plans_the_file_runs(a, tr, *tr.family);
  });
  v.trainer = &ta;
  // the config's own trainer's plans are the advice, printed in its own keys; the SimpleTuner schedules
  // stay in the comparison note
  v.own_trainer_advice = own_plans;
  if (!o.step_only && emit == tr.trainer && req.run_setup.other.trainer == emit) v.trainer_phases = own_plan_run(ta, tr, r.context);
}

// --emit of the config's own trainer: the user's file back with only the memory knobs changed, written
// to --output (atomically) or, for a trainer whose plans are schedules, printed.
void write_back(CheckView& v, const CheckOptions& o, const TrainerRead& tr, const CheckReport& r, const TrainerAdvice& ta) {
  if (!r.advice || o.emit != tr.trainer) return;
  const Trainer& t = trainer(tr.trainer);
  if (t.plans_are_schedules()) {
    v.emit_simpletuner = true;
    v.indent = tr.indent;
    v.output = o.output;
    const Candidate* best = r.advice->recommended();
    if (!best) return;
    // the recommended schedule, and the keys that bring the run's other phases under the card
    const RunPhases* run = r.advice->phases ? &*r.advice->phases : nullptr;
    nlohmann::ordered_json knobs = t.schedule_knobs(best->schedule);
    knobs.update(t.phase_knobs(run && !o.step_only ? run->fixes : std::vector<PhaseFix>{}));
    const Rewritten w = t.rewrite(tr, knobs);
    v.updated = nlohmann::ordered_json::parse(w.text);
    if (!o.output.empty()) write_file_atomically(o.output, w.text);
    return;
  }
  if (o.output.empty()) return;
  if (ta.best < 0) {
    v.nothing_to_write = true;
    return;
  }
  const TrainerPlan& best = ta.plans[ta.best];
  const Rewritten w = t.rewrite(tr, t.memory_knobs(tr, best.knobs));
  write_file_atomically(o.output, w.text);
  v.rewritten = CheckView::Written{o.output, best.label, w.notes};
}

}  // namespace

int run_check(const CheckOptions& o, std::ostream& out) {
  check_emit_name(o.emit);
  TrainerReadOptions ro = o.read;
  ro.trainer = o.trainer;
  ro.model = o.flags.model;
  const TrainerRead tr = read_trainer_config(o.config, ro);
  if (!o.output.empty() && o.emit != tr.trainer)
    throw InputError("--output '" + o.output + "': only with --emit " + tr.trainer + " (it writes this " + tr.trainer + " config back)");
  if (!o.output.empty()) {  // never over a file the check reads: the config, its data backend or dataset TOML, a log …
    std::vector<std::string> inputs = tr.inputs;
    for (const std::string& f : input_files(o.flags)) inputs.push_back(f);
    for (const std::string* f : {&o.read.data_backend_override, &o.read.accelerate_config})
      if (!f->empty()) inputs.push_back(*f);
    check_output_is_not_input(o.output, inputs, "--output");
  }
  const auto printer = make_printer(o.flags.format, out);
  std::optional<DatasetView> dataset;
  const CheckRequest req = check_request(o, tr, read_config_datasets(tr, o.dataset, o.read.cwd), dataset);
  print_remembered(out, req.run, o.flags.format);
  const CheckReport r = check_report(req);

  CheckView v;
  v.config = o.config;
  describe_config(v, tr);
  v.report = &r;
  v.dataset = dataset ? &*dataset : nullptr;
  TrainerAdvice ta;
  plan_in_trainer(v, ta, o, tr, req, r);
  const int rc = exit_code(r, v.trainer ? std::optional<FitVerdict>(ta.verdict) : std::nullopt);
  write_back(v, o, tr, r, ta);
  printer->check(v);
  return rc;
}

void setup_check(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "pre-flight check of a trainer config (SimpleTuner, musubi-tuner, ai-toolkit, OneTrainer, diffusers): will it fit, what will it cost");
  auto o = std::make_shared<CheckOptions>();
  auto aspect = std::make_shared<std::string>();
  cmd->add_option("config", o->config, "SimpleTuner config.json, ai-toolkit job YAML, OneTrainer JSON, musubi TOML or command line, diffusers command line")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--trainer", o->trainer, "the config's trainer (default: detected): " + emitter_list());
  cmd->add_option("--model,-m", o->flags.model, "family, where the config does not name it (musubi TOML, a dataset TOML) or to override it");
  cmd->add_option("--gpu,-g", o->flags.gpu, "GPU: l40s, h100, … (segadvise list gpus)");
  add_vram_flag(cmd, o->flags);
  cmd->add_option("--data-backend", o->read.data_backend_override, "data-backend JSON to use instead of the config's data_backend_config");
  cmd->add_option("--dataset", o->dataset, "the dataset's directory, when it is not the data backend's instance_data_dir on this machine");
  cmd->add_option("--aspect", *aspect, "aspect W:H of the source images/videos (default 1:1 for images, 16:9 for video)");
  add_output_flags(cmd, o->flags);
  add_measured_flags(cmd, o->flags);
  add_multi_gpu_flags(cmd, o->flags);
  cmd->add_option("--accelerate-config", o->read.accelerate_config, "accelerate config YAML (num_processes, num_machines, distributed_type, fsdp/deepspeed)")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--advise", o->advise, "also recommend a schedule for this config's setup");
  cmd->add_flag("--step-only", o->step_only, "judge the training step alone (not startup caching, loading, validation, saving)");
  cmd->add_flag("--all", o->show_all, "with --advise: list every supported schedule");
  cmd->add_option("--emit", o->emit, "with --advise: config for " + emitter_list());
  cmd->add_option("--output,-o", o->output, "with --emit of the config's own trainer: write the updated config here (atomically)")
      ->check(kNonEmpty);
  cmd->callback([o, aspect, &exit_code] {
    CheckOptions opts = *o;
    if (!aspect->empty()) opts.read.source_aspect = parse_aspect(*aspect);
    exit_code = run_check(opts, std::cout);
  });
}

}  // namespace segadvise::cli
