#include "printer.hpp"

#include <algorithm>

#include "advise_optimal.hpp"
#include "measured.hpp"
#include "multi_gpu_output.hpp"
#include "output.hpp"
#include "phases_output.hpp"
#include "segadvise/costmodel/json_io.hpp"

namespace segadvise::cli {

namespace {

// a prediction's JSON with its 90% ranges and three-valued verdict
nlohmann::json prediction_json(const Candidate& c) {
  nlohmann::json j = to_json(c.prediction);
  add_range_json(j, c);
  return j;
}

nlohmann::json advice_json(const AdviceReport& r, const TrainerAdvice* trainer) {
  const Context& ctx = r.context;
  const Advice& a = r.advice;
  nlohmann::json j;
  j["model"] = ctx.family->id;
  j["gpu"] = ctx.gpu.id;
  j["usable_vram_gib"] = usable_vram_bytes(ctx.gpu, ctx.coef) / kGiB;
  j["headroom_gib"] = ctx.headroom_bytes / kGiB;
  j["setup"] = setup_json(ctx);
  j["schedules_evaluated"] = a.evaluated_count;
  j["schedules_unsupported"] = a.unsupported_count;
  j["schedules_supported"] = a.supported_count;
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : a.candidates) {
    if (!r.keep_all && !c.pareto && &c - &a.candidates[0] != a.recommended) continue;
    nlohmann::json pj = prediction_json(c);
    pj["pareto"] = c.pareto;
    // built in place and moved: an initializer list copies every value (Stable Cascade C prints 228
    // candidates; the copies were a tenth of its JSON output's cost)
    nlohmann::json cj = nlohmann::json::object();
    cj["schedule"] = to_json(c.schedule);
    cj["plan"] = describe(c.plan.plan, ctx.chain);
    cj["prediction"] = std::move(pj);
    cands.push_back(std::move(cj));
  }
  j["candidates"] = std::move(cands);
  j["measurements"] = measurements_json(ctx.anchor);
  if (const Candidate* c = r.recommended()) {
    j["recommendation"] = {{"schedule", to_json(c->schedule)},
                           {"prediction", prediction_json(*c)},
                           {"config", simpletuner_keys(c->schedule)},
                           {"config_remove", keys_to_remove(c->schedule)}};
    if (r.phases) {  // the recommended schedule's whole run (the recommendation itself is the step's)
      const double budget = usable_vram_bytes(ctx.gpu, ctx.coef) - ctx.headroom_bytes;
      j["recommendation"]["phases"] = nlohmann::json::parse(phases_json(*r.phases, budget).dump());
      j["recommendation"]["run_fit"] = to_string(worst(c->verdict(), r.phases->verdict(budget)));
      j["recommendation"]["run_peak_vram_gib"] = r.phases->peak_vram_bytes / kGiB;
      j["recommendation"]["run_peak_phase"] = to_string(r.phases->peak_phase);
      j["recommendation"]["run_fits"] =
          r.phases->peak_vram_bytes + ctx.headroom_bytes <= usable_vram_bytes(ctx.gpu, ctx.coef);
      j["recommendation"]["phase_advice"] = phase_advice_json(*r.phases);
    }
  } else {
    j["recommendation"] = nullptr;
    if (a.borderline >= 0) {
      const Candidate& b = a.candidates[a.borderline];
      j["borderline"] = {{"schedule", to_json(b.schedule)}, {"prediction", prediction_json(b)},
                         {"config", simpletuner_keys(b.schedule)}, {"config_remove", keys_to_remove(b.schedule)},
                         {"settle", settle_hint(b)}};
    }
    j["shortfall_gib"] = a.shortfall_bytes / kGiB;
    nlohmann::json alts = nlohmann::json::array();
    for (const auto& alt : r.alternatives)
      alts.push_back({{"change", alt.change},
                      {"schedule", to_json(alt.schedule)},
                      {"peak_vram_gib", alt.prediction.peak_vram_bytes / kGiB},
                      {"step_time_s", alt.prediction.step_time_s}});
    j["what_would_fit"] = alts;
  }
  j["optimal"] = optimal_json(r.optimal);
  if (trainer) j["emit"] = to_json(*trainer);
  if (ctx.setup.multi_gpu.active()) j["multi_gpu"] = multi_gpu_advice_json(r);
  return j;
}

// advise's schedules table: a long front is thinned to ~14 rows spread over its memory range
// (fastest, smallest and the recommendation always shown); --all prints every supported schedule.
void print_schedules(std::ostream& out, const AdviceReport& r, bool md) {
  const Advice& a = r.advice;
  Table t({"schedule", "peak", "s/step", "fit", "what runs"});
  const std::size_t kRows = 14;
  std::vector<bool> shown(a.candidates.size(), true);
  std::size_t hidden = 0;
  if (!r.keep_all && a.candidates.size() > kRows) {
    std::vector<std::size_t> by_peak(a.candidates.size());
    for (std::size_t i = 0; i < by_peak.size(); ++i) by_peak[i] = i;
    std::sort(by_peak.begin(), by_peak.end(), [&](std::size_t x, std::size_t y) {
      return a.candidates[x].prediction.peak_vram_bytes < a.candidates[y].prediction.peak_vram_bytes;
    });
    std::fill(shown.begin(), shown.end(), false);
    for (std::size_t k = 0; k < kRows; ++k) shown[by_peak[k * (by_peak.size() - 1) / (kRows - 1)]] = true;
    if (a.recommended >= 0) shown[a.recommended] = true;
    if (a.borderline >= 0) shown[a.borderline] = true;
    for (bool s : shown) hidden += !s;
  }
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    const Candidate& c = a.candidates[i];
    if (!shown[i]) continue;
    std::string name = c.schedule.name();
    if (static_cast<int>(i) == a.recommended) name = "* " + name;
    if (static_cast<int>(i) == a.borderline) name = "? " + name;
    t.add({name, peak_with_range(c), time_with_range(c), verdict_text(c), describe(c.plan.plan, r.context.chain)});
  }
  t.print(out, md);
  if (hidden) out << "(" << hidden << " more points on the front; --all lists every supported schedule)\n";
}

void print_recommendation(std::ostream& out, const AdviceReport& r, bool md) {
  if (const Candidate* c = r.recommended()) {
    out << (md ? "### Recommendation\n\n" : "Recommendation: ") << c->schedule.name() << " — "
        << time_with_range(*c, "/step") << ", peak " << peak_with_range(*c) << " of "
        << gib_str(c->prediction.usable_vram_bytes) << " usable\n";
    if (md) out << "\n```json\n"; else out << "SimpleTuner config keys:\n";
    out << simpletuner_keys(c->schedule).dump(2) << "\n";
    if (md) out << "```\n";
    for (const auto& k : keys_to_remove(c->schedule))
      out << "and remove " << k << " from the config if it sets one (it would stay in force)\n";
    for (const auto& w : c->prediction.warnings) out << "warning: " << w << "\n";
    return;
  }
  if (r.advice.borderline >= 0) {
    out << (md ? "### No confident recommendation\n\n" : "No confident recommendation: ")
        << settle_hint(r.advice.candidates[r.advice.borderline]) << ".\n";
    return;
  }
  out << "Nothing fits: the smallest schedule needs " << gib_str(r.advice.shortfall_bytes)
      << " more than the card has (usable minus headroom).\n";
  if (r.alternatives.empty()) {
    out << "No single change tried (batch, resolution, frames, quantized base, RamTorch) makes it fit.\n";
    return;
  }
  out << "What would fit:\n";
  for (const auto& alt : r.alternatives)
    out << "  - " << alt.change << ": " << alt.schedule.name() << ", " << secs_str(alt.prediction.step_time_s)
        << "/step, peak " << gib_str(alt.prediction.peak_vram_bytes) << "\n";
}

nlohmann::json backends_json(const std::vector<BackendView>& views) {
  nlohmann::json backends = nlohmann::json::array();
  for (const auto& b : views)
    backends.push_back({{"id", b.id}, {"dataset_type", b.dataset_type}, {"width", b.width}, {"height", b.height},
                        {"frames", b.frames}, {"batch", b.batch}, {"note", b.note}});
  return backends;
}

}  // namespace

// ---- table and markdown ------------------------------------------------------------------------

void TablePrinter::prediction(const PredictionReport& r) {
  const Candidate& c = r.candidate;
  print_setup(out_, r.context, md_);
  out_ << (md_ ? "### " : "") << "Schedule " << c.schedule.name() << (md_ ? "\n\n" : ": ")
       << (c.plan.supported ? describe(c.plan.plan, r.context.chain) : std::string("—")) << "\n\n";
  print_measurements(out_, r.context.anchor, md_);
  print_verdict(out_, c, md_);
  print_prediction(out_, c.prediction, c.verdict(), md_);
}

void TablePrinter::advice(const AdviceReport& r, const TrainerAdvice* trainer) {
  const Context& ctx = r.context;
  const Advice& a = r.advice;
  if (md_) out_ << "## segadvise: " << ctx.family->name << " on " << ctx.gpu.name << "\n\n";
  print_setup(out_, ctx, md_);
  print_measurements(out_, ctx.anchor, md_);
  out_ << (md_ ? "### Schedules\n\n" : "") << a.evaluated_count << " schedules evaluated, " << a.supported_count
       << " supported by the trainer for this family" << (r.keep_all ? "" : "; Pareto front (time vs memory):")
       << "\n\n";
  print_schedules(out_, r, md_);
  out_ << "\n";
  // the comparison with the optimal per-block plan first: the recommendation and its config keys
  // are what a user acts on, so they come last
  print_optimal(out_, r.optimal, a, md_);
  out_ << "\n";
  // the recommended schedule's whole run, then the recommendation itself
  if (r.phases) {
    print_phases(out_, *r.phases, usable_vram_bytes(ctx.gpu, ctx.coef), ctx.headroom_bytes, md_);
    out_ << "\n";
  }
  print_recommendation(out_, r, md_);
  if (ctx.setup.multi_gpu.active()) print_multi_gpu_advice(out_, r, md_);
  if (trainer) print_trainer_advice(out_, *trainer, md_);
}

void TablePrinter::check(const CheckView& v) {
  const CheckReport& r = *v.report;
  const Candidate& c = r.candidate;
  if (!v.config_trainer.empty()) {
    out_ << (md_ ? "## segadvise check: " : "segadvise check: ") << v.config << " (" << v.config_trainer << ")\n";
    for (std::size_t i = 1; i < v.inputs.size(); ++i) out_ << (md_ ? "\nAlso read: `" : "  also read ") << v.inputs[i] << (md_ ? "`" : "") << "\n";
    out_ << (md_ ? "\nTraining shape: " : "  training shape: ") << v.shape_source << "\n\n";
  } else {
    if (md_) out_ << "## segadvise check: " << v.config << "\n\n";
    else out_ << "segadvise check: " << v.config << "\n  data backends " << v.data_backend_path << "\n\n";
    if (md_) out_ << "Data backends: `" << v.data_backend_path << "`\n\n";
  }
  print_setup(out_, r.context, md_);
  out_ << (md_ ? "### Schedule in the config\n\n" : "Schedule in the config: ") << c.schedule.name() << " ("
       << to_string(c.schedule.backend) << ")" << (c.plan.supported ? " — " + c.plan.plan.description : std::string())
       << "\n\n";
  print_measurements(out_, r.context.anchor, md_);
  print_verdict(out_, c, md_);
  print_prediction(out_, c.prediction, c.verdict(), md_);
  if (r.phases) {
    print_phases(out_, *r.phases, c.prediction.usable_vram_bytes, r.context.headroom_bytes, md_);
    out_ << (md_ ? "\n**" : "\n") << "Verdict" << (r.step_only ? " (training step only)" : " (whole run)") << ": "
         << (r.verdict() == FitVerdict::Fits ? "fits" : (r.verdict() == FitVerdict::Borderline ? "borderline" : "does NOT fit"))
         << (md_ ? "**\n" : "\n");
  }
  if (!r.warnings.empty()) out_ << (md_ ? "\n### Warnings\n\n" : "\n");
  for (const auto& w : r.warnings) out_ << (md_ ? "- " : "warning: ") << w << "\n";
  if (!r.advice) return;
  out_ << "\n" << (md_ ? "## Advice for this config\n\n" : "Advice for this config:\n");
  advice(*r.advice, v.trainer);
  if (v.nothing_to_write) out_ << "\nNothing within the trainer's knobs fits: no config written.\n";
  if (v.rewritten) {
    out_ << "\nWrote " << v.rewritten->path << " (" << v.rewritten->plan << "; only the memory knobs changed)\n";
    for (const auto& n : v.rewritten->notes) out_ << (md_ ? "- " : "note: ") << n << "\n";
  }
  if (!v.emit_simpletuner) return;
  if (!v.updated) {
    out_ << "\nNothing fits: no config written.\n";
    return;
  }
  const std::string best = r.advice->recommended()->schedule.name();
  if (!v.output.empty())
    out_ << "\nWrote " << v.output << " (" << best << "; only the checkpointing and phase-advice keys changed)\n";
  else
    out_ << "\nThe config with the recommended schedule (" << best << "):\n" << v.updated->dump(v.indent) << "\n";
}

// ---- JSON --------------------------------------------------------------------------------------

void JsonPrinter::prediction(const PredictionReport& r) {
  const Context& ctx = r.context;
  const Candidate& c = r.candidate;
  nlohmann::json j = {{"setup", setup_json(ctx)},
                      {"gpu", ctx.gpu.id},
                      {"schedule", to_json(c.schedule)},
                      {"plan", c.plan.supported ? nlohmann::json(describe(c.plan.plan, ctx.chain)) : nlohmann::json(nullptr)},
                      {"prediction", prediction_json(c)},
                      {"measurements", measurements_json(ctx.anchor)}};
  if (c.prediction.supported) {
    j["config"] = simpletuner_keys(c.schedule);
    j["config_remove"] = keys_to_remove(c.schedule);
  }
  out_ << j.dump(2) << "\n";
}

void JsonPrinter::advice(const AdviceReport& r, const TrainerAdvice* trainer) {
  out_ << advice_json(r, trainer).dump(2) << "\n";
}

void JsonPrinter::check(const CheckView& v) {
  const CheckReport& r = *v.report;
  const Candidate& c = r.candidate;
  nlohmann::json j;
  j["config"] = v.config;
  if (!v.config_trainer.empty()) {
    j["trainer"] = v.config_trainer;
    j["inputs"] = v.inputs;
    j["shape"] = v.shape_source;
  } else {
    j["data_backend_config"] = v.data_backend_path;
    j["backends"] = backends_json(v.backends);
  }
  j["gpu"] = r.context.gpu.id;
  j["setup"] = setup_json(r.context);
  j["schedule"] = to_json(c.schedule);
  j["plan"] = c.plan.supported ? nlohmann::json(c.plan.plan.description) : nlohmann::json(nullptr);
  j["prediction"] = prediction_json(c);
  j["measurements"] = measurements_json(r.context.anchor);
  if (r.phases) {
    add_phases_json(j["prediction"], *r.phases, c.prediction.usable_vram_bytes, r.context.headroom_bytes, r.step_only,
                    r.verdict());
    j["phase_advice"] = phase_advice_json(*r.phases);
    j["host_memory"] = host_memory_json(r.phases->host);
  }
  j["warnings"] = r.warnings;
  if (r.advice) j["advice"] = advice_json(*r.advice, v.trainer);
  if (v.nothing_to_write) j["emitted"] = nullptr;
  if (v.rewritten) j["emitted"] = {{"path", v.rewritten->path}, {"plan", v.rewritten->plan}, {"notes", v.rewritten->notes}};
  if (v.emit_simpletuner) {
    if (!v.updated) {
      j["emitted"] = nullptr;
    } else {
      const std::string best = r.advice->recommended()->schedule.name();
      if (!v.output.empty())
        j["emitted"] = {{"path", v.output}, {"schedule", best}};
      else
        j["emitted"] = {{"path", nullptr}, {"schedule", best}, {"config", nlohmann::json::parse(v.updated->dump())}};
    }
  }
  out_ << j.dump(2) << "\n";
}

std::unique_ptr<Printer> make_printer(const std::string& format, std::ostream& out) {
  if (format == "table") return std::make_unique<TablePrinter>(out);
  if (format == "markdown") return std::make_unique<MarkdownPrinter>(out);
  if (format == "json") return std::make_unique<JsonPrinter>(out);
  throw InputError("--format: '" + format + "' is not one of table, json, markdown");
}

}  // namespace segadvise::cli
