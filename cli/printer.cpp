#include "printer.hpp"

#include <algorithm>

#include "advise_optimal.hpp"
#include "output.hpp"
#include "segadvise/costmodel/json_io.hpp"

namespace segadvise::cli {

namespace {

std::string yesno(bool b) { return b ? "yes" : "no"; }

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
    nlohmann::json pj = to_json(c.prediction);
    pj["pareto"] = c.pareto;
    cands.push_back({{"schedule", to_json(c.schedule)}, {"plan", describe(c.plan.plan, ctx.chain)}, {"prediction", pj}});
  }
  j["candidates"] = cands;
  if (const Candidate* c = r.recommended()) {
    j["recommendation"] = {{"schedule", to_json(c->schedule)},
                           {"prediction", to_json(c->prediction)},
                           {"config", simpletuner_keys(c->schedule)}};
  } else {
    j["recommendation"] = nullptr;
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
  return j;
}

// advise's schedules table: a long front is thinned to ~14 rows spread over its memory range
// (fastest, smallest and the recommendation always shown); --all prints every supported schedule.
void print_schedules(std::ostream& out, const AdviceReport& r, bool md) {
  const Advice& a = r.advice;
  Table t({"schedule", "peak", "s/step", "fits", "what runs"});
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
    for (bool s : shown) hidden += !s;
  }
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    const Candidate& c = a.candidates[i];
    if (!shown[i]) continue;
    std::string name = c.schedule.name();
    if (static_cast<int>(i) == a.recommended) name = "* " + name;
    t.add({name, gib_str(c.prediction.peak_vram_bytes), secs_str(c.prediction.step_time_s), yesno(c.prediction.fits),
           describe(c.plan.plan, r.context.chain)});
  }
  t.print(out, md);
  if (hidden) out << "(" << hidden << " more points on the front; --all lists every supported schedule)\n";
}

void print_recommendation(std::ostream& out, const AdviceReport& r, bool md) {
  if (const Candidate* c = r.recommended()) {
    out << (md ? "### Recommendation\n\n" : "Recommendation: ") << c->schedule.name() << " — "
        << secs_str(c->prediction.step_time_s) << "/step, peak " << gib_str(c->prediction.peak_vram_bytes) << " of "
        << gib_str(c->prediction.usable_vram_bytes) << " usable\n";
    if (md) out << "\n```json\n"; else out << "SimpleTuner config keys:\n";
    out << simpletuner_keys(c->schedule).dump(2) << "\n";
    if (md) out << "```\n";
    for (const auto& w : c->prediction.warnings) out << "warning: " << w << "\n";
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

nlohmann::json backends_json(const ConfigRead& cr) {
  nlohmann::json backends = nlohmann::json::array();
  for (const auto& b : cr.backends)
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
  print_prediction(out_, c.prediction, md_);
}

void TablePrinter::advice(const AdviceReport& r, const TrainerAdvice* trainer) {
  const Context& ctx = r.context;
  const Advice& a = r.advice;
  if (md_) out_ << "## segadvise: " << ctx.family->name << " on " << ctx.gpu.name << "\n\n";
  print_setup(out_, ctx, md_);
  out_ << (md_ ? "### Schedules\n\n" : "") << a.evaluated_count << " schedules evaluated, " << a.supported_count
       << " supported by the trainer for this family" << (r.keep_all ? "" : "; Pareto front (time vs memory):")
       << "\n\n";
  print_schedules(out_, r, md_);
  out_ << "\n";
  // the comparison with the optimal per-block plan first: the recommendation and its config keys
  // are what a user acts on, so they come last
  print_optimal(out_, r.optimal, a, md_);
  out_ << "\n";
  print_recommendation(out_, r, md_);
  if (trainer) print_trainer_advice(out_, *trainer, md_);
}

void TablePrinter::check(const CheckView& v) {
  const CheckReport& r = *v.report;
  const ConfigRead& cr = *v.read;
  const Candidate& c = r.candidate;
  if (md_) out_ << "## segadvise check: " << v.config << "\n\n";
  else out_ << "segadvise check: " << v.config << "\n  data backends " << cr.data_backend_path << "\n\n";
  if (md_) out_ << "Data backends: `" << cr.data_backend_path << "`\n\n";
  print_setup(out_, r.context, md_);
  out_ << (md_ ? "### Schedule in the config\n\n" : "Schedule in the config: ") << cr.schedule.name() << " ("
       << to_string(cr.schedule.backend) << ")" << (c.plan.supported ? " — " + c.plan.plan.description : std::string())
       << "\n\n";
  print_prediction(out_, c.prediction, md_);
  if (!r.warnings.empty()) out_ << (md_ ? "\n### Warnings\n\n" : "\n");
  for (const auto& w : r.warnings) out_ << (md_ ? "- " : "warning: ") << w << "\n";
  if (!r.advice) return;
  out_ << "\n" << (md_ ? "## Advice for this config\n\n" : "Advice for this config:\n");
  advice(*r.advice, v.trainer);
  if (!v.emit_simpletuner) return;
  if (!v.updated) {
    out_ << "\nNothing fits: no config written.\n";
    return;
  }
  const std::string best = r.advice->recommended()->schedule.name();
  if (!v.output.empty())
    out_ << "\nWrote " << v.output << " (" << best << "; only the checkpointing keys changed)\n";
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
                      {"prediction", to_json(c.prediction)}};
  if (c.prediction.supported) j["config"] = simpletuner_keys(c.schedule);
  out_ << j.dump(2) << "\n";
}

void JsonPrinter::advice(const AdviceReport& r, const TrainerAdvice* trainer) {
  out_ << advice_json(r, trainer).dump(2) << "\n";
}

void JsonPrinter::check(const CheckView& v) {
  const CheckReport& r = *v.report;
  const ConfigRead& cr = *v.read;
  const Candidate& c = r.candidate;
  nlohmann::json j;
  j["config"] = v.config;
  j["data_backend_config"] = cr.data_backend_path;
  j["backends"] = backends_json(cr);
  j["gpu"] = r.context.gpu.id;
  j["setup"] = setup_json(r.context);
  j["schedule"] = to_json(cr.schedule);
  j["plan"] = c.plan.supported ? nlohmann::json(c.plan.plan.description) : nlohmann::json(nullptr);
  j["prediction"] = to_json(c.prediction);
  j["warnings"] = r.warnings;
  if (r.advice) j["advice"] = advice_json(*r.advice, v.trainer);
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
