// segadvise check CONFIG.json --gpu G: reads a SimpleTuner config and its data backends as the
// trainer does, predicts the run's peak VRAM and sec/step for the config's own checkpointing keys,
// and warns where the trainer ignores or rejects a key. --advise recommends from the config's setup;
// --emit simpletuner --output NEW.json writes the config back with only the checkpointing keys (and the
// phase advice's keys) changed. The verdict is the whole run's (families/phases.hpp: startup caching,
// model load, step, validation, save) unless --step-only.
// Flags and config -> request -> advisor (check_report, which advises once when asked) -> printer.
// Exit codes, the worst phase's (each phase's 90% range, the step's own for the step): 0 fits (every
// upper end plus headroom fits), 1 does not fit (even a lower end does not) or the trainer would not run
// it, 3 borderline, 2 bad input. With --advise: 0 when a schedule fits with confidence, 3 when only
// borderline ones remain, 1 when nothing fits; with --emit of another trainer, that trainer's plan's
// verdict (exit_code.hpp).
#include <iostream>

#include "commands.hpp"
#include "measured.hpp"
#include "check_options.hpp"
#include "emitters.hpp"
#include "segadvise/families/gpu_detect.hpp"
#include "phases_output.hpp"
#include "printer.hpp"
#include "runs.hpp"
#include "trainer_check.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/json_io.hpp"

namespace segadvise::cli {

int run_check(const CheckOptions& o, std::ostream& out) {
  check_emit_name(o.emit);
  const std::string config_trainer = o.trainer.empty() ? detect_trainer(o.config) : o.trainer;
  if (config_trainer != "simpletuner") return run_trainer_check(o, config_trainer, out);
  if (!o.output.empty() && o.emit != "simpletuner")
    throw InputError("--output '" + o.output + "': only with --emit simpletuner (it writes the config back)");
  const auto printer = make_printer(o.flags.format, out);
  const ConfigRead cr = read_simpletuner_config(o.config, o.read);
  CheckRequest req;
  SetupFlags flags = o.flags;  // --measured-from: the logged run used the config's own schedule
  if (!flags.measured_from.empty() && flags.measured_from_schedule.empty()) flags.measured_from_schedule = cr.schedule.name();
  // the datasets, where they are on this machine: every backend's buckets predicted, the run judged by the
  // bucket with the highest peak
  std::optional<DatasetView> dataset = read_datasets(cr.backends, o.dataset, o.read.cwd);
  if (!cr.backends.empty() && !o.dataset.empty() && !dataset)
    throw InputError("--dataset '" + o.dataset + "': backend '" + cr.backends.front().id + "' is a " +
                     cr.backends.front().dataset_type + " dataset; only image and video datasets are read");
  TrainingSetup setup = cr.setup;
  if (dataset) {
    predict_buckets(*dataset, make_request(*cr.family, setup, flags), cr.schedule);
    apply_largest_bucket(setup, *dataset);
  }
  req.run = make_request(*cr.family, setup, flags);
  if (dataset) predict_buckets(*dataset, req.run, cr.schedule);  // again, with the runs kept for this setup
  req.schedule = cr.schedule;
  req.rejections = cr.rejections;
  req.warnings = cr.warnings;
  req.advise = o.advise || !o.emit.empty();
  req.advice_options.keep_all = o.show_all;
  req.run_setup = cr.run;
  req.step_only = o.step_only;
  // --gpu auto: this machine runs it, so its memory is known
  if (o.flags.gpu == "auto") req.host_memory_bytes = detect_host_memory_bytes();
  print_remembered(out, req.run, o.flags.format);
  const CheckReport r = check_report(req);

  CheckView v;
  v.config = o.config;
  v.data_backend_path = cr.data_backend_path;
  for (const BackendShape& b : cr.backends)
    v.backends.push_back({b.id, b.dataset_type, b.width, b.height, b.frames, b.batch, b.note});
  v.report = &r;
  v.dataset = dataset ? &*dataset : nullptr;
  TrainerAdvice trainer;
  if (r.advice && !o.emit.empty() && o.emit != "simpletuner") {
    trainer = advise_for_trainer(r.context, o.emit, r.advice->recommended());
    v.trainer = &trainer;
  }
  v.emit_simpletuner = o.emit == "simpletuner";
  v.indent = cr.indent;
  if (v.emit_simpletuner && r.advice->recommended()) {
    // the recommended schedule, and the keys that bring the run's other phases under the card
    const RunPhases* run = r.advice->phases ? &*r.advice->phases : nullptr;
    v.updated = with_phase_fixes(with_schedule(cr.raw, r.advice->recommended()->schedule),
                                 run && !o.step_only ? run->fixes : std::vector<PhaseFix>{});
    v.output = o.output;
    if (!o.output.empty()) write_file_atomically(o.output, v.updated->dump(v.indent) + "\n");
  }
  printer->check(v);
  return exit_code(r, v.trainer ? std::optional<FitVerdict>(trainer.verdict) : std::nullopt);
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
