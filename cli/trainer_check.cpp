// `segadvise check FILE` for musubi-tuner, ai-toolkit, OneTrainer and diffusers configs: read with the
// trainer's semantics (trainer_readers/), predicted, and with --advise --emit SAME_TRAINER --output NEW
// written back with only the memory knobs changed (trainer_writer).
#include "trainer_check.hpp"

#include <sstream>

#include "commands.hpp"
#include "emitters.hpp"
#include "output.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/json_io.hpp"
#include "trainer_readers/trainer_writer.hpp"

namespace segadvise::cli {

using nlohmann::ordered_json;

namespace {

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

bool has_attention_flag(const TrainerRead& r) {
  for (const auto& x : r.rejections)
    if (x.find("no attention flag") != std::string::npos) return false;
  return true;
}

}  // namespace

ordered_json memory_knobs(const TrainerRead& r, const ordered_json& plan) {
  ordered_json k = ordered_json::object();
  auto take = [&](const std::string& key) { k[key] = plan.contains(key) ? plan.at(key) : ordered_json(nullptr); };
  if (r.trainer == "musubi") {
    for (const char* key : {"gradient_checkpointing", "gradient_checkpointing_cpu_offload", "blocks_to_swap", "fp8_base", "fp8_scaled"}) take(key);
    if (!has_attention_flag(r)) k["sdpa"] = true;
  } else if (r.trainer == "ai-toolkit") {
    for (const char* key : {"train.gradient_checkpointing", "train.dtype", "model.layer_offloading",
                            "model.layer_offloading_transformer_percent"}) take(key);
    if (plan.contains("model.qtype")) k["model.qtype"] = plan.at("model.qtype");
    if (!plan.contains("model.layer_offloading")) k["model.layer_offloading"] = false;
  } else if (r.trainer == "onetrainer") {
    k = plan;
  } else {
    take("gradient_checkpointing");
  }
  return k;
}

int run_trainer_check(const CheckOptions& o, const std::string& trainer, std::ostream& out) {
  TrainerReadOptions ro;
  ro.trainer = trainer;
  ro.model = o.flags.model;
  ro.cwd = o.read.cwd;
  const TrainerRead tr = read_trainer_config(o.config, ro);
  if (!o.output.empty() && o.emit != tr.trainer)
    throw InputError("--output '" + o.output + "': only with --emit " + tr.trainer + " (it writes this " + tr.trainer + " config back)");
  SetupFlags flags = o.flags;
  flags.model.clear();
  Context ctx = build_context(*tr.family, tr.setup, flags);

  Candidate c;
  std::vector<std::string> warnings = tr.warnings;
  for (const auto& w : ctx.warnings) warnings.push_back(w);
  if (!tr.rejections.empty()) {
    c.schedule = tr.schedule;
    c.plan.supported = false;
    c.plan.reason = join(tr.rejections, "; ");
    c.prediction = unsupported_prediction(c.plan.reason);
  } else {
    c = evaluate(ctx, tr.schedule);
  }
  for (const auto& w : c.plan.warnings) warnings.push_back(w);
  int rc = (c.prediction.supported && c.prediction.fits) ? kOk : kDoesNotFit;

  const bool json = o.flags.format == "json", md = o.flags.format == "markdown";
  nlohmann::json j;
  if (json) {
    j["config"] = o.config;
    j["trainer"] = tr.trainer;
    j["inputs"] = tr.inputs;
    j["shape"] = tr.shape_source;
    j["gpu"] = ctx.gpu.id;
    j["setup"] = setup_json(ctx);
    j["schedule"] = to_json(tr.schedule);
    j["prediction"] = to_json(c.prediction);
    j["warnings"] = warnings;
  } else {
    out << (md ? "## segadvise check: " : "segadvise check: ") << o.config << " (" << tr.trainer << ")\n";
    for (std::size_t i = 1; i < tr.inputs.size(); ++i) out << (md ? "\nalso read: `" : "  also read ") << tr.inputs[i] << (md ? "`" : "") << "\n";
    out << (md ? "\nTraining shape: " : "  training shape: ") << tr.shape_source << "\n\n";
    print_setup(out, ctx, md);
    out << (md ? "### Schedule in the config\n\n" : "Schedule in the config: ") << tr.schedule.name() << " ("
        << to_string(tr.schedule.backend) << ")\n\n";
    print_prediction(out, c.prediction, md);
    if (!warnings.empty()) out << (md ? "\n### Warnings\n\n" : "\n");
    for (const auto& w : warnings) out << (md ? "- " : "warning: ") << w << "\n";
  }
  if (o.advise || !o.emit.empty()) {
    // --advise alone also shows the plan within the config's own trainer
    const std::string emit = o.emit.empty() ? tr.trainer : o.emit == "simpletuner" ? "" : o.emit;
    std::ostringstream advice;
    rc = run_advise(ctx, flags, advice, o.show_all, emit);
    if (json) j["advice"] = nlohmann::json::parse(advice.str());
    else out << "\n" << (md ? "## Advice for this config\n\n" : "Advice for this config:\n") << advice.str();
    if (o.emit == tr.trainer && !o.output.empty()) {
      const TrainerAdvice a = advise_for_trainer(ctx, tr.trainer, nullptr);
      if (a.best < 0) {
        if (json) j["emitted"] = nullptr;
        else out << "\nNothing within " << a.trainer_name << "'s knobs fits: " << o.output << " not written.\n";
        rc = kDoesNotFit;
      } else {
        const Rewritten w = rewrite_trainer_config(tr, memory_knobs(tr, a.plans[a.best].knobs));
        write_file_atomically(o.output, w.text);
        if (json) j["emitted"] = {{"path", o.output}, {"plan", a.plans[a.best].label}, {"notes", w.notes}};
        else {
          out << "\nWrote " << o.output << " (" << a.plans[a.best].label << "; only the memory knobs changed)\n";
          for (const auto& n : w.notes) out << "note: " << n << "\n";
        }
      }
    }
  }
  if (json) out << j.dump(2) << "\n";
  return rc;
}

}  // namespace segadvise::cli
