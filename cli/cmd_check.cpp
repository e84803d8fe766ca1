// segadvise check CONFIG.json --gpu G: reads a SimpleTuner config and its data backends as the
// trainer does, predicts the run's peak VRAM and sec/step for the config's own checkpointing keys,
// and warns where the trainer ignores or rejects a key. --advise recommends from the config's setup;
// --emit simpletuner --output NEW.json writes the config back with only the checkpointing keys changed.
// The verdict is the whole run's (families/phases.hpp: startup caching, model load, step, validation,
// save) unless --step-only. Exit codes: 0 fits, 1 does not fit or the trainer would not run it, 2 bad input.
#include <cmath>
#include <fstream>
#include <optional>
#include <iostream>
#include <regex>
#include <sstream>

#include "commands.hpp"
#include "config_reader.hpp"
#include "emitters.hpp"
#include "gpu_detect.hpp"
#include "output.hpp"
#include "phases_output.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/json_io.hpp"

namespace segadvise::cli {

namespace {

double parse_source_aspect(const std::string& s) {
  static const std::regex ratio("\\s*([0-9.]+)\\s*[:/]\\s*([0-9.]+)\\s*");
  static const std::regex number("\\s*([0-9]*\\.?[0-9]+)\\s*");
  std::smatch m;
  try {
    if (std::regex_match(s, m, ratio) && std::stod(m[2]) > 0 && std::stod(m[1]) > 0) return std::stod(m[1]) / std::stod(m[2]);
    if (std::regex_match(s, m, number) && std::stod(m[1]) > 0) return std::stod(m[1]);
  } catch (const std::exception&) {
  }
  throw InputError("--aspect: '" + s + "' is neither W:H (16:9) nor a positive number (1.78)");
}

// A knob the trainer ignores (not an error): the schedule the trainer really runs (§3.2, §4).
bool ignored_knob_schedule(const Family& fam, const Schedule& s, Schedule& as_run) {
  const CheckpointSemantics& cs = fam.checkpointing;
  const bool error = (s.checkpointing && s.interval > 1 && s.stride > 0 && s.stride < s.interval) ||
                     (s.offload_attention && !cs.attention_offload) ||
                     (s.checkpointing && is_ffn(s.backend) && !cs.ffn_backend);
  if (error) return false;
  as_run = s;
  if (cs.interval == "ignored") as_run.interval = as_run.stride = 0;
  if (!cs.stride || as_run.interval <= 1) as_run.stride = 0;
  if (!cs.backend_setter && is_unsloth(as_run.backend))
    as_run.backend = is_ffn(as_run.backend) ? Backend::TorchFfn : Backend::Torch;
  return as_run.name() != s.name() || as_run.backend != s.backend;
}

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

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

}  // namespace

int run_check(const CheckOptions& o, std::ostream& out) {
  check_format(o.flags.format);
  check_emit_name(o.emit);
  if (!o.output.empty() && o.emit != "simpletuner")
    throw InputError("--output '" + o.output + "': only with --emit simpletuner (it writes the config back)");
  const bool advise_too = o.advise || !o.emit.empty();
  ConfigRead cr = read_simpletuner_config(o.config, o.read);
  Context ctx = build_context(*cr.family, cr.setup, o.flags);

  Candidate c;
  std::vector<std::string> warnings = cr.warnings;
  for (const auto& w : ctx.warnings) warnings.push_back(w);
  if (!cr.rejections.empty()) {
    c.schedule = cr.schedule;
    c.plan.supported = false;
    c.plan.reason = join(cr.rejections, "; ");
    c.prediction = unsupported_prediction(c.plan.reason);
  } else {
    c = evaluate(ctx, cr.schedule);
    Schedule as_run;
    if (!c.prediction.supported && ignored_knob_schedule(*cr.family, cr.schedule, as_run)) {
      const Candidate r = evaluate(ctx, as_run);
      if (r.prediction.supported)
        warnings.push_back("the trainer runs this config as '" + as_run.name() + "' (" + to_string(as_run.backend) +
                           "): peak " + gib_str(r.prediction.peak_vram_bytes) + ", " + secs_str(r.prediction.step_time_s) +
                           "/step, " + (r.prediction.fits ? "fits" : "does not fit"));
    }
  }
  for (const auto& w : c.plan.warnings) warnings.push_back(w);
  // the whole run (startup caching, model load, step, validation, save): its peak is the verdict's
  // unless --step-only
  std::optional<RunPrediction> run;
  if (c.prediction.supported)
    run = predict_phases(*cr.family, ctx.setup, ctx.chain, c.prediction, cr.run,
                         c.prediction.usable_vram_bytes - ctx.headroom_bytes);
  const bool run_fits = run && run->peak_vram_bytes + ctx.headroom_bytes <= c.prediction.usable_vram_bytes;
  if (run) {
    for (const auto& w : run->warnings) warnings.push_back(w);
    // --gpu auto: this machine runs it, so its memory is known
    const double host_bytes = o.flags.gpu == "auto" ? detect_host_memory_bytes() : 0.0;
    if (host_bytes > 0 && run->host.peak_bytes > host_bytes)
      warnings.push_back("host memory: the run needs about " + gib_str(run->host.peak_bytes) + " (" + run->host.set_by +
                         "), this machine has " + gib_str(host_bytes));
  }
  const bool fits = o.step_only ? c.prediction.fits : run_fits;
  int rc = (c.prediction.supported && fits) ? kOk : kDoesNotFit;

  const bool json = o.flags.format == "json", md = o.flags.format == "markdown";
  nlohmann::json j;
  if (json) {
    j["config"] = o.config;
    j["data_backend_config"] = cr.data_backend_path;
    nlohmann::json backends = nlohmann::json::array();
    for (const auto& b : cr.backends)
      backends.push_back({{"id", b.id}, {"dataset_type", b.dataset_type}, {"width", b.width}, {"height", b.height},
                          {"frames", b.frames}, {"batch", b.batch}, {"note", b.note}});
    j["backends"] = backends;
    j["gpu"] = ctx.gpu.id;
    j["setup"] = setup_json(ctx);
    j["schedule"] = to_json(cr.schedule);
    j["plan"] = c.plan.supported ? nlohmann::json(c.plan.plan.description) : nlohmann::json(nullptr);
    j["prediction"] = to_json(c.prediction);
    if (run) {
      nlohmann::json& p = j["prediction"];
      p["step_peak_vram_gib"] = p["peak_vram_gib"];
      p["step_fits"] = c.prediction.fits;
      if (!o.step_only) {
        p["peak_vram_gib"] = run->peak_vram_bytes / kGiB;
        p["fits"] = run_fits;
      }
      p["peak_phase"] = o.step_only ? "training_step" : to_string(run->peak_phase);
      p["phases"] = nlohmann::json::parse(phases_json(*run).dump());
      j["phase_advice"] = phase_advice_json(*run);
      j["host_memory"] = host_memory_json(run->host);
    }
    j["warnings"] = warnings;
  } else {
    if (md) out << "## segadvise check: " << o.config << "\n\n";
    else out << "segadvise check: " << o.config << "\n  data backends " << cr.data_backend_path << "\n\n";
    if (md) out << "Data backends: `" << cr.data_backend_path << "`\n\n";
    print_setup(out, ctx, md);
    out << (md ? "### Schedule in the config\n\n" : "Schedule in the config: ") << cr.schedule.name() << " ("
        << to_string(cr.schedule.backend) << ")" << (c.plan.supported ? " — " + c.plan.plan.description : std::string())
        << "\n\n";
    print_prediction(out, c.prediction, md);
    if (run) {
      print_phases(out, *run, c.prediction.usable_vram_bytes, ctx.headroom_bytes, md);
      out << (md ? "\n**" : "\n") << "Verdict" << (o.step_only ? " (training step only)" : " (whole run)") << ": "
          << (fits ? "fits" : "does NOT fit") << (md ? "**\n" : "\n");
    }
    if (!warnings.empty()) out << (md ? "\n### Warnings\n\n" : "\n");
    for (const auto& w : warnings) out << (md ? "- " : "warning: ") << w << "\n";
  }

  if (advise_too) {
    std::ostringstream advice;
    rc = run_advise(ctx, o.flags, advice, o.show_all, o.emit == "simpletuner" ? "" : o.emit);
    if (json) j["advice"] = nlohmann::json::parse(advice.str());
    else out << "\n" << (md ? "## Advice for this config\n\n" : "Advice for this config:\n") << advice.str();
    if (o.emit == "simpletuner") {
      const Advice a = segadvise::advise(enumerate_schedules(schedule_space(ctx)),
                                         [&](const Schedule& s) { return evaluate(ctx, s); }, ctx.headroom_bytes);
      if (a.recommended < 0) {
        if (json) j["emitted"] = nullptr;
        else out << "\nNothing fits: no config written.\n";
      } else {
        const Schedule& best = a.candidates[a.recommended].schedule;
        const nlohmann::ordered_json updated =
            with_phase_fixes(with_schedule(cr.raw, best), run && !o.step_only ? run->fixes : std::vector<PhaseFix>{});
        if (!o.output.empty()) {
          write_file_atomically(o.output, updated.dump(file_indent(o.config)) + "\n");
          if (json) j["emitted"] = {{"path", o.output}, {"schedule", best.name()}};
          else out << "\nWrote " << o.output << " (" << best.name() << "; only the checkpointing and phase-advice keys changed)\n";
        } else if (json) {
          j["emitted"] = {{"path", nullptr}, {"schedule", best.name()}, {"config", nlohmann::json::parse(updated.dump())}};
        } else {
          out << "\nThe config with the recommended schedule (" << best.name() << "):\n" << updated.dump(file_indent(o.config)) << "\n";
        }
      }
    }
  }
  if (json) out << j.dump(2) << "\n";
  return rc;
}

void setup_check(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("check", "pre-flight check of a SimpleTuner config.json: will it fit, what will it cost");
  auto o = std::make_shared<CheckOptions>();
  auto aspect = std::make_shared<std::string>();
  cmd->add_option("config", o->config, "SimpleTuner config.json (keys with or without a leading --)")->required();
  cmd->add_option("--gpu,-g", o->flags.gpu, "GPU: l40s, h100, … (segadvise list gpus)");
  cmd->add_option("--vram-gib", o->flags.vram_gib, "memory of any other card, GiB (with --gpu: that card with this memory)");
  cmd->add_option("--data-backend", o->read.data_backend_override, "data-backend JSON to use instead of the config's data_backend_config");
  cmd->add_option("--aspect", *aspect, "aspect W:H of the source images/videos (default 1:1 for images, 16:9 for video)");
  add_output_flags(cmd, o->flags);
  cmd->add_flag("--advise", o->advise, "also recommend a schedule for this config's setup");
  cmd->add_flag("--step-only", o->step_only, "judge the training step alone (not startup caching, loading, validation, saving)");
  cmd->add_flag("--all", o->show_all, "with --advise: list every supported schedule");
  cmd->add_option("--emit", o->emit, "with --advise: config for simpletuner, musubi, ai-toolkit, onetrainer, diffusers");
  cmd->add_option("--output,-o", o->output, "with --emit simpletuner: write the updated config here (atomically)");
  cmd->callback([o, aspect, &exit_code] {
    CheckOptions opts = *o;
    if (!aspect->empty()) opts.read.source_aspect = parse_source_aspect(*aspect);
    exit_code = run_check(opts, std::cout);
  });
}

}  // namespace segadvise::cli
