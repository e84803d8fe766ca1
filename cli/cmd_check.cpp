// segadvise check CONFIG.json --gpu G: reads a SimpleTuner config and its data backends as the
// trainer does, predicts the run's peak VRAM and sec/step for the config's own checkpointing keys,
// and warns where the trainer ignores or rejects a key. --advise recommends from the config's setup;
// --emit simpletuner --output NEW.json writes the config back with only the checkpointing keys changed.
// Flags and config -> request -> advisor (check_report, which advises once when asked) -> printer.
// Exit codes: 0 fits, 1 does not fit or the trainer would not run it, 2 bad input.
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "config_reader.hpp"
#include "emitters.hpp"
#include "printer.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/json_io.hpp"

namespace segadvise::cli {

namespace {

// the indentation of the user's file (spaces before the first indented key), to write it back alike
int file_indent(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos && first > 0 && line[first] == '"') return static_cast<int>(first);
  }
  return 4;
}

}  // namespace

int run_check(const CheckOptions& o, std::ostream& out) {
  check_emit_name(o.emit);
  if (!o.output.empty() && o.emit != "simpletuner")
    throw InputError("--output '" + o.output + "': only with --emit simpletuner (it writes the config back)");
  const auto printer = make_printer(o.flags.format, out);
  const ConfigRead cr = read_simpletuner_config(o.config, o.read);
  CheckRequest req;
  req.run = make_request(*cr.family, cr.setup, o.flags);
  req.schedule = cr.schedule;
  req.rejections = cr.rejections;
  req.warnings = cr.warnings;
  req.advise = o.advise || !o.emit.empty();
  req.advice_options.keep_all = o.show_all;
  const CheckReport r = check_report(req);

  CheckView v;
  v.config = o.config;
  v.read = &cr;
  v.report = &r;
  TrainerAdvice trainer;
  if (r.advice && !o.emit.empty() && o.emit != "simpletuner") {
    trainer = advise_for_trainer(r.context, o.emit, r.advice->recommended());
    v.trainer = &trainer;
  }
  v.emit_simpletuner = o.emit == "simpletuner";
  v.indent = file_indent(o.config);
  if (v.emit_simpletuner && r.advice->recommended()) {
    v.updated = with_schedule(cr.raw, r.advice->recommended()->schedule);
    v.output = o.output;
    if (!o.output.empty()) write_file_atomically(o.output, v.updated->dump(v.indent) + "\n");
  }
  printer->check(v);
  if (r.advice) return r.advice->recommended() ? kOk : kDoesNotFit;
  return r.fits() ? kOk : kDoesNotFit;
}

void setup_check(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "pre-flight check of a SimpleTuner config.json: will it fit, what will it cost");
  auto o = std::make_shared<CheckOptions>();
  auto aspect = std::make_shared<std::string>();
  cmd->add_option("config", o->config, "SimpleTuner config.json (keys with or without a leading --)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--gpu,-g", o->flags.gpu, "GPU: l40s, h100, … (segadvise list gpus)");
  add_vram_flag(cmd, o->flags);
  cmd->add_option("--data-backend", o->read.data_backend_override, "data-backend JSON to use instead of the config's data_backend_config");
  cmd->add_option("--aspect", *aspect, "aspect W:H of the source images/videos (default 1:1 for images, 16:9 for video)");
  add_output_flags(cmd, o->flags);
  cmd->add_flag("--advise", o->advise, "also recommend a schedule for this config's setup");
  cmd->add_flag("--all", o->show_all, "with --advise: list every supported schedule");
  cmd->add_option("--emit", o->emit, "with --advise: config for simpletuner, musubi, ai-toolkit, onetrainer, diffusers");
  cmd->add_option("--output,-o", o->output, "with --emit simpletuner: write the updated config here (atomically)");
  cmd->callback([o, aspect, &exit_code] {
    CheckOptions opts = *o;
    if (!aspect->empty()) opts.read.source_aspect = parse_aspect(*aspect);
    exit_code = run_check(opts, std::cout);
  });
}

}  // namespace segadvise::cli
