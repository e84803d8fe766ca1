#include "segadvise/report/printer.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "segadvise/report/format.hpp"
#include "segadvise/report/json_report.hpp"
#include "segadvise/report/multi_gpu_output.hpp"
#include "segadvise/report/optimal_output.hpp"
#include "segadvise/report/output.hpp"
#include "segadvise/report/phases_output.hpp"
#include "segadvise/report/json_io.hpp"
#include "segadvise/report/dataset_output.hpp"
#include "segadvise/report/measured_output.hpp"
#include "segadvise/report/memory_figures.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

namespace {

// advise's schedules table: a long front is thinned to ~14 rows spread over its memory range
// (fastest, smallest and the recommendation always shown); --all prints every supported schedule.
void print_schedules(std::ostream& out, const AdviceReport& r, const TextFormat& fmt) {
  const Advice& a = r.advice;
  Table t({"schedule", "peak reserved", "s/step", "fit", "what runs"});
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
  fmt.table(out, t);
  if (hidden) out << "(" << hidden << " more points on the front; --all lists every supported schedule)\n";
}

void print_recommendation(std::ostream& out, const AdviceReport& r, const TextFormat& fmt) {
  if (const Candidate* c = r.recommended()) {
    out << fmt.section(3, "Recommendation", "Recommendation: ") << c->schedule.name() << " — "
        << time_with_range(*c, "/step") << ", peak " << peak_with_range(*c) << " of "
        << gib_str(c->prediction.usable_vram_bytes) << " usable\n";
    const nlohmann::json keys = simpletuner_keys(*r.context.family, c->schedule, r.context.setup);
    out << fmt.either("SimpleTuner config keys (merge them into your config.json):\n", "\n")
        << fmt.code_block("json", keys.dump(2) + "\n");
    // which keys are the schedule's and which the setup's: a key at its default is written on purpose
    std::string setup_keys;
    for (auto it = keys.begin(); it != keys.end(); ++it)
      if (it.key().rfind("gradient_checkpointing", 0) != 0) setup_keys += (setup_keys.empty() ? "" : ", ") + it.key();
    out << "The gradient_checkpointing* keys are the schedule, each written even at its default so that merging over a "
           "config that sets another value runs this one";
    if (!setup_keys.empty())
      out << "; " << setup_keys << " are the setup it was predicted with (see Setup: assumed where you gave no flag), "
          << "so keep them or re-run with yours";
    out << ".\n";
    if (keys.contains("gradient_checkpointing_segment_stride") && c->schedule.stride <= 0)
      out << "gradient_checkpointing_segment_stride " << keys["gradient_checkpointing_segment_stride"].dump()
          << " equals the interval on purpose: on this family's segmented path SimpleTuner runs interval K as "
             "K-block segments started every K blocks, which is the plain interval.\n";
    if (r.context.setup.ramtorch)
      out << "ramtorch true streams every block's weights from host memory over PCIe (RamTorch "
          << r.context.setup.ramtorch_percent << "%): " << secs_str(c->prediction.time.transfer_s)
          << " of the predicted " << secs_str(c->prediction.step_time_s)
          << "/step are exposed transfers. It is the setup assumed, not a recommendation: `--ramtorch off` checks "
             "the same model without it.\n";
    for (const auto& k : keys_to_remove(*r.context.family, c->schedule, r.context.setup))
      out << "Also delete \"" << k << "\" from your config if it is there: these keys cannot unset it "
          << "(SimpleTuner skips a null), and on this family's per-block path any stride changes which blocks "
          << "the interval checkpoints.\n";
    for (const auto& w : c->prediction.warnings) out << "warning: " << w << "\n";
    return;
  }
  if (r.advice.borderline >= 0) {
    const Candidate& b = r.advice.candidates[r.advice.borderline];
    out << fmt.section(3, "No confident recommendation", "No confident recommendation: ") << settle_hint(b) << ".\n";
    if (!r.if_measured.empty()) {
      out << "If '" << b.schedule.name() << "' measures as predicted, the borderline ranges become:\n";
      for (const RangeIfMeasured& x : r.if_measured)
        out << fmt.item() << shrink_line(r.advice.candidates[x.candidate], x, b.schedule.name()) << "\n";
    }
    return;
  }
  if (!r.context.trainer_rejection.empty()) {  // no schedule runs: the trainer stops before training
    out << "Nothing runs: " << r.context.trainer_rejection << ".\n";
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

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
  return b;
}

std::string signed_pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.0f%%", 100 * x);
  return b;
}

std::string fixed(double x, int d = 2) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", d, x);
  return b;
}

std::string by_gpu(const std::map<std::string, double>& v) {
  std::string out;
  for (const auto& [g, e] : v) out += (out.empty() ? "" : " ") + g + " " + signed_pct(e);
  return out;
}

void print_ranges(std::ostream& out, const AccuracyReport& rep, const TextFormat& fmt) {
  const std::string title = "90% ranges (bands from the other families' residuals) and verdicts";
  out << "\n" << fmt.section(4, title, title + "\n\n");
  Table t({"family", "peak covered", "peak width", "s/step covered", "s/step width", "fits", "borderline",
           "does-not-fit", "unsafe fits"});
  auto row = [&](const std::string& name, const Metrics& m) {
    const RangeStats& r = m.ranges;
    auto share = [](int k, int n) { return n ? pct(double(k) / n) + " (" + std::to_string(k) + "/" + std::to_string(n) + ")" : "-"; };
    t.add({name, share(r.peak_covered, r.peak_n), r.peak_n ? pct(r.peak_width_median) : "-",
           share(r.time_covered, r.time_n), r.time_n ? pct(r.time_width_median) : "-", std::to_string(r.fits),
           share(r.borderline, r.verdicts()), std::to_string(r.does_not_fit), std::to_string(r.fits_oom)});
  };
  for (const auto& [k, m] : rep.per_family)
    if (m.has_ranges) row(k, m);
  row(fmt.either("OVERALL", "**overall**"), rep.overall);
  fmt.table(out, t);
  // one row per kind of run (or per band of the fixed share), then the overall row
  auto by_group = [&](const std::string& sub, const char* first, const std::map<std::string, RangeStats>& groups) {
    out << "\n" << fmt.section(5, sub, sub + "\n\n");
    Table k({first, "peak covered", "peak hi/lo", "s/step covered", "s/step hi/lo", "fits", "borderline",
             "unsafe fits"});
    auto share = [](int a, int n) { return n ? pct(double(a) / n) + " (" + std::to_string(a) + "/" + std::to_string(n) + ")" : "-"; };
    auto ratio = [](double x) { return x > 0 ? fixed(x, 2) : std::string("-"); };
    auto add = [&](const std::string& name, const RangeStats& r) {
      k.add({name, share(r.peak_covered, r.peak_n), ratio(r.peak_hi_lo_median), share(r.time_covered, r.time_n),
             ratio(r.time_hi_lo_median), std::to_string(r.fits), share(r.borderline, r.verdicts()),
             std::to_string(r.fits_oom)});
    };
    for (const auto& [name, r] : groups) add(name, r);
    add(fmt.either("OVERALL", "**overall**"), rep.overall.ranges);
    fmt.table(out, k);
  };
  if (!rep.ranges_by_stratum.empty())
    by_group("By kind of run (the strata of the score quantiles)", "kind of run", rep.ranges_by_stratum);
  if (!rep.ranges_by_fixed_share.empty())
    by_group("By the share of the peak no schedule changes (weights and training state)", "fixed share",
             rep.ranges_by_fixed_share);
  out << "Width: median (hi - lo) / prediction. Verdicts on runs that completed or ran out of memory; an unsafe "
         "fit is a \"fits\" verdict on a run that ran out of memory. Decision above picks the fastest \"fits\" "
         "(the fastest \"borderline\" where none fits), as advise does.\n";
}

void print_summary(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& summary, const TextFormat& fmt) {
  const std::string title = "With and without a measured run of each setup (anchor cells not scored)";
  out << "\n" << fmt.section(4, title, title + "\n\n");
  Table t({"measured", "peak med", "peak p90", "s/step med", "s/step p90", "decision", "unsafe (point)",
           "unsafe (fits)", "peak covered", "s/step covered", "peak width", "borderline"});
  for (const auto& [name, m] : summary) {
    const RangeStats& r = m.ranges;
    auto share = [](int k, int n) { return n ? pct(double(k) / n) : std::string("-"); };
    t.add({name, pct(m.peak_median), pct(m.peak_p90), pct(m.time_median), pct(m.time_p90), pct(m.decision()),
           std::to_string(m.confusion.fit_oom), std::to_string(r.fits_oom), share(r.peak_covered, r.peak_n),
           share(r.time_covered, r.time_n), pct(r.peak_width_median), share(r.borderline, r.verdicts())});
  }
  fmt.table(out, t);
}

// accuracy --by family: one row per family x precision x schedule, signed so a systematic error shows
void print_error_cells(std::ostream& out, const std::vector<ErrorCell>& cells, const TextFormat& fmt) {
  const std::string title = "Signed median error per family x precision x schedule (predicted / measured - 1; + over-predicts)";
  out << "\n" << fmt.section(4, title, title + "\n\n");
  Table t({"family", "precision", "schedule", "runs", "peak", "peak carried by", "s/step", "s/step by GPU",
           "s/step carried by"});
  for (const auto& c : cells)
    t.add({c.family, c.precision, c.schedule, std::to_string(c.n), signed_pct(c.peak_error),
           c.peak_carrier + " " + pct(c.peak_carrier_share), signed_pct(c.time_error), by_gpu(c.time_error_by_gpu),
           c.time_carrier + " " + pct(c.time_carrier_share)});
  fmt.table(out, t);
  out << "Carried by: the largest part of the prediction (median share); alone it would have to be off by "
         "error / share.\n";
}

}  // namespace

// ---- table and markdown ------------------------------------------------------------------------

TablePrinter::TablePrinter(std::ostream& out) : TextPrinter(out, table_format()) {}

MarkdownPrinter::MarkdownPrinter(std::ostream& out) : TextPrinter(out, markdown_format()) {}

void TextPrinter::prediction(const PredictionReport& r) {
  const Candidate& c = r.candidate;
  print_setup(out_, r.context, fmt_);
  const std::string title = "Schedule " + c.schedule.name();
  out_ << fmt_.section(3, title, title + ": ")
       << (c.plan.supported ? describe(c.plan.plan, r.context.chain) : std::string("—")) << "\n\n";
  print_measurements(out_, r.context.anchor, fmt_);
  print_verdict(out_, c, fmt_);
  print_prediction(out_, c.prediction, c.verdict(), fmt_);
}

void TextPrinter::advice(const AdviceReport& r, const TrainerAdvice* trainer) {
  const Context& ctx = r.context;
  const Advice& a = r.advice;
  out_ << fmt_.section(2, "segadvise: " + ctx.family->name + " on " + ctx.gpu.name, "");
  print_setup(out_, ctx, fmt_);
  print_measurements(out_, ctx.anchor, fmt_);
  out_ << fmt_.section(3, "Schedules", "") << a.evaluated_count << " schedules evaluated, " << a.supported_count
       << " supported by the trainer for this family" << (r.keep_all ? "" : "; Pareto front (time vs memory):")
       << "\n\n";
  print_schedules(out_, r, fmt_);
  out_ << "\n";
  // the comparison with the optimal per-block plan first: the recommendation and its config keys
  // are what a user acts on, so they come last
  print_optimal(out_, r.optimal, a, fmt_);
  out_ << "\n";
  // the recommended schedule's whole run, then the recommendation itself
  if (r.phases) {
    print_phases(out_, *r.phases, usable_vram_bytes(ctx.gpu, ctx.coef), ctx.headroom_bytes, fmt_);
    out_ << "\n";
  }
  print_recommendation(out_, r, fmt_);
  if (ctx.setup.multi_gpu.active()) print_multi_gpu_advice(out_, r, fmt_);
  // the trainer plans' own printer takes the markdown choice as a flag
  if (trainer) print_trainer_advice(out_, *trainer, &fmt_ == &markdown_format());
}

void TextPrinter::check(const CheckView& v) {
  const CheckReport& r = *v.report;
  const Candidate& c = r.candidate;
  if (!v.config_trainer.empty()) {
    out_ << fmt_.either("", "## ") << "segadvise check: " << v.config << " (" << v.config_trainer << ")\n";
    for (std::size_t i = 1; i < v.inputs.size(); ++i)
      out_ << fmt_.either("  also read ", "\nAlso read: ") << fmt_.code(v.inputs[i]) << "\n";
    out_ << fmt_.either("  training shape: ", "\nTraining shape: ") << v.shape_source << "\n\n";
  } else {
    const std::string title = "segadvise check: " + v.config;
    out_ << fmt_.section(2, title, title + "\n  data backends " + v.data_backend_path + "\n\n")
         << fmt_.either("", "Data backends: " + fmt_.code(v.data_backend_path) + "\n\n");
  }
  print_setup(out_, r.context, fmt_);
  out_ << fmt_.section(3, "Schedule in the config", "Schedule in the config: ") << c.schedule.name() << " ("
       << to_string(c.schedule.backend) << ")"
       << (c.plan.supported && !c.plan.plan.description.empty() ? " — " + c.plan.plan.description : std::string())
       << "\n\n";
  print_measurements(out_, r.context.anchor, fmt_);
  print_verdict(out_, c, fmt_);
  print_prediction(out_, c.prediction, c.verdict(), fmt_);
  if (v.dataset) print_buckets(out_, *v.dataset, r.context.gpu.id, fmt_);
  if (r.phases) {
    print_phases(out_, *r.phases, c.prediction.usable_vram_bytes, r.context.headroom_bytes, fmt_);
    const FitVerdict run = r.verdict();
    out_ << "\n"
         << fmt_.strong(std::string("Verdict") + (r.step_only ? " (training step only)" : " (whole run)") + ": " +
                        (run == FitVerdict::Fits ? "fits" : (run == FitVerdict::Borderline ? "borderline" : "does NOT fit")))
         << "\n";
  }
  if (const SysmemFallback fb = check_sysmem_fallback(r); fb.applies)
    out_ << "\n" << fmt_.strong("Windows: ") << sysmem_fallback_text(fb) << "\n";
  if (const std::string es = expandable_segments_text(expandable_segments_hint(r)); !es.empty())
    out_ << "\n" << fmt_.strong("Allocator: ") << es << "\n";
  if (!r.warnings.empty()) out_ << "\n" << fmt_.section(3, "Warnings", "");
  for (const auto& w : r.warnings) out_ << fmt_.item("warning: ") << w << "\n";
  if (!r.advice) return;
  out_ << "\n" << fmt_.section(2, "Advice for this config", "Advice for this config:\n");
  if (v.own_trainer_advice && v.trainer) {
    // another trainer's config: its own plan in its own keys (SimpleTuner's schedules and keys are
    // not this trainer's; what they would gain is the plan's closing note)
    print_setup(out_, r.advice->context, fmt_);
    print_measurements(out_, r.advice->context.anchor, fmt_);
    print_trainer_advice(out_, *v.trainer, &fmt_ == &markdown_format());
    if (v.trainer_phases) {
      const Context& ctx = r.advice->context;
      out_ << "\n" << v.trainer->trainer_name << "'s plan over the whole run:\n";
      print_phases(out_, *v.trainer_phases, usable_vram_bytes(ctx.gpu, ctx.coef), ctx.headroom_bytes, fmt_);
    }
  } else {
    advice(*r.advice, v.trainer);
  }
  if (v.nothing_to_write) out_ << "\nNothing within the trainer's knobs fits: no config written.\n";
  if (v.rewritten) {
    out_ << "\nWrote " << v.rewritten->path << " (" << v.rewritten->plan << "; only the memory knobs changed)\n";
    for (const auto& n : v.rewritten->notes) out_ << fmt_.item("note: ") << n << "\n";
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

void TextPrinter::calibration(const CalibrationView& v) {
  const FitResult& fr = *v.fit;
  out_ << "fitted " << fr.parameters.size() << " coefficients on " << fr.runs_used << " runs (" << fr.residuals
       << " residuals) in " << fr.iterations << " iterations, " << fixed(v.seconds, 1) << " s: " << fr.stop_reason
       << "\n";
  Table t({"coefficient", "value", "bounds", ""});
  for (const auto& p : fr.parameters)
    t.add({p.name, fixed(p.value, 4), "[" + fixed(p.lo, 2) + ", " + fixed(p.hi, 2) + "]", p.at_bound ? "at bound" : ""});
  for (const auto& [g, gc] : fr.coef.gpu) t.add({"gpu." + g + ".reserve_gib", fixed(gc.reserve_bytes / kGiB, 3), "envelope", ""});
  fmt_.table(out_, t);
  std::vector<std::string> at_bound;  // each stands in for a term the model lacks
  for (const auto& p : fr.parameters)
    if (p.at_bound) at_bound.push_back(p.name);
  if (!at_bound.empty()) {
    out_ << at_bound.size() << " coefficient(s) ended at a bound (each stands in for a term the model lacks):";
    for (const auto& n : at_bound) out_ << " " << n;
    out_ << "\n";
  }
  if (!v.output.empty()) out_ << "wrote " << v.output << "\n";
}

void TextPrinter::accuracy(const AccuracyView& v) {
  const AccuracyReport& rep = *v.report;
  const PreparedSet& set = *v.set;
  const std::string title = "Accuracy, " + rep.method + " (" + std::to_string(set.data.runs.size()) + " runs from " +
                            set.data.origin + ", headroom " + fixed(rep.headroom_gib, 1) + " GiB)";
  out_ << fmt_.section(3, title, title + "\n\n");
  Table t({"family", "runs", "fit/OOM", "unsafe", "peak med", "peak p90", "s/step med", "s/step p90", "support",
           "decision"});
  auto row = [&](const std::string& name, const Metrics& m) {
    auto share = [](int good, int n) { return n ? pct(double(good) / n) + " (" + std::to_string(good) + "/" + std::to_string(n) + ")" : "-"; };
    t.add({name, std::to_string(m.runs),
           share(m.confusion.fit_ok + m.confusion.nofit_oom, m.confusion.total()),
           std::to_string(m.confusion.fit_oom), m.peak_n ? pct(m.peak_median) : "-", m.peak_n ? pct(m.peak_p90) : "-",
           m.time_n ? pct(m.time_median) : "-", m.time_n ? pct(m.time_p90) : "-",
           share(m.support.both_supported + m.support.both_unsupported, m.support.total()),
           share(m.decision_good, m.decision_groups)});
  };
  for (const auto& [k, m] : rep.per_family) row(k, m);
  row(fmt_.either("OVERALL", "**overall**"), rep.overall);
  fmt_.table(out_, t);
  const Confusion& c = rep.overall.confusion;
  out_ << "\nFit/OOM confusion (predicted x measured):\n" << fmt_.gap();
  Table ct({"", "measured ran", "measured OOM"});
  ct.add({"predicted fits", std::to_string(c.fit_ok), std::to_string(c.fit_oom) + " (unsafe)"});
  ct.add({"predicted OOM", std::to_string(c.nofit_ok), std::to_string(c.nofit_oom)});
  fmt_.table(out_, ct);
  const SupportAgreement& s = rep.overall.support;
  out_ << "\nSupport (measured status vs the trainer semantics): " << s.both_supported << " both supported, "
       << s.both_unsupported << " both unsupported, " << s.data_unsupported_model_supported
       << " measured unsupported but modelled as supported, " << s.data_supported_model_unsupported
       << " ran but modelled as unsupported.\n";
  out_ << "Errors are absolute relative errors on runs that completed; decision: share of family x precision x GPU "
          "groups whose fastest schedule predicted to fit is within 5% of the measured fastest.\n";
  if (rep.overall.has_ranges) print_ranges(out_, rep, fmt_);
  print_summary(out_, *v.summary, fmt_);
  if (v.by_family) print_error_cells(out_, error_cells(set, rep), fmt_);
  if (v.runs) {
    out_ << "\n";
    Table rt({"run", "status", "measured", "predicted", "fits", "note"});
    for (const auto& p : rep.predictions) {
      const MeasuredRun& r = *p.prepared->run;
      std::string meas = r.status == "ok" ? fixed(r.sec_per_step) + " s " + fixed(r.peak_gib) + " GiB" : r.status;
      std::string pred = !p.modelled ? "not modelled" : !p.supported ? "unsupported" : fixed(p.step_s) + " s " + fixed(p.peak_gib) + " GiB";
      rt.add({r.id, r.status, meas, pred, p.supported ? (p.fits ? "yes" : "no") : "-", p.supported ? "" : p.reason.substr(0, 80)});
    }
    fmt_.table(out_, rt);
  }
}

void TextPrinter::catalog(Catalog what) {
  const auto join = [](const std::vector<std::string>& v) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
    return out;
  };
  switch (what) {
    case Catalog::Models: {
      Table t({"id", "model", "trainer family:flavours", "aliases", "interval", "conf."});
      for (const auto& f : builtin_families()) {
        std::string flavours;
        for (const auto& x : f.flavours) flavours += (flavours.empty() ? "" : "|") + x;
        t.add({f.id, f.name, f.trainer_family + (f.flavours.empty() ? "" : ":" + flavours), join(f.aliases),
               to_string(f.checkpointing.interval), f.confidence});
      }
      fmt_.table(out_, t);
      break;
    }
    case Catalog::Gpus: {
      // bf16 TFLOP/s of a card without bf16 (Turing, Volta) is its fp16 rate: marked "(fp16)"
      Table t({"id", "name", "memory", "bf16 TFLOP/s", "memory GB/s", "PCIe GB/s", "sm", "bf16", "flash-attn 2", "fp8"});
      const auto yes_no = [](bool b) { return std::string(b ? "yes" : "no"); };
      for (const auto& g : builtin_gpus())
        t.add({g.id, g.name, gib_str(g.total_bytes),
               std::to_string(static_cast<int>(g.bf16_flops_per_s / 1e12)) + (g.bf16_native ? "" : " (fp16)"),
               std::to_string(static_cast<int>(g.mem_bytes_per_s / 1e9)),
               std::to_string(static_cast<int>(g.pcie_bytes_per_s / 1e9)), g.sm > 0 ? std::to_string(g.sm) : g.arch,
               yes_no(g.bf16_native), yes_no(g.flash_attention_2), yes_no(g.fp8_tensor)});
      fmt_.table(out_, t);
      break;
    }
    case Catalog::Precisions:
      for (const auto& p : precision_names()) {
        const PrecisionInfo i = precision_info(p);
        out_ << p << "  (" << i.bytes_per_param << " B/param, " << i.backend << ")\n";
      }
      break;
    case Catalog::Optimizers:
      for (const auto& o : optimizer_names())
        out_ << o << "  (" << optimizer_info(o).state_bytes_per_param << " B state/param)\n";
      break;
  }
}

void TextPrinter::log_report(const LogReport& r) {
  const auto size = [](const std::optional<long long>& b) { return b ? bytes_str(static_cast<double>(*b)) : std::string("-"); };
  const auto count = [](std::size_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  out_ << fmt_.strong(r.path) << ": " << count(r.oom.size(), "out-of-memory message", "out-of-memory messages") << ", "
       << count(r.steps.size(), "progress reading", "progress readings") << ", "
       << count(r.memory.size(), "memory readout", "memory readouts") << "\n";
  if (!r.oom.empty()) {
    const std::string title = "Out of memory";
    out_ << "\n" << fmt_.section(4, title, title + "\n\n");
    Table t({"line", "phase", "gpu", "tried", "total", "free", "this process", "allocated", "reserved unalloc.",
             "reserved", "other processes"});
    for (const auto& m : r.oom) {
      std::string others;
      for (const auto& p : m.other_processes)
        others += (others.empty() ? "" : ", ") + std::to_string(p.pid) + ": " + bytes_str(static_cast<double>(p.bytes));
      t.add({std::to_string(m.line), m.phase, m.gpu_index ? std::to_string(*m.gpu_index) : "-",
             size(m.tried_to_allocate_bytes), size(m.total_capacity_bytes), size(m.free_bytes),
             size(m.process_in_use_bytes), size(m.allocated_by_pytorch_bytes), size(m.reserved_unallocated_bytes),
             size(m.reserved_total_bytes), others.empty() ? "-" : others});
    }
    fmt_.table(out_, t);
  }
  if (!r.steps.empty()) {
    const std::string title = "Progress (each bar's last update)";
    out_ << "\n" << fmt_.section(4, title, title + "\n\n");
    Table t({"line", "what", "s/step", "step", "bar"});
    for (const auto& s : r.steps) {
      char sec[32];
      std::snprintf(sec, sizeof sec, "%.3f", s.sec_per_step);
      const std::string step = s.step ? std::to_string(*s.step) + (s.total ? "/" + std::to_string(*s.total) : "") : "-";
      t.add({std::to_string(s.line), s.what, sec, step, s.label.empty() ? "-" : s.label});
    }
    fmt_.table(out_, t);
  }
  if (!r.memory.empty()) {
    const std::string title = "Memory";
    out_ << "\n" << fmt_.section(4, title, title + "\n\n");
    Table t({"line", "source", "gpu", "used", "total", "allocated", "max allocated", "reserved", "max reserved",
             "process"});
    for (const auto& m : r.memory) {
      const std::string process =
          m.process_used_bytes ? size(m.process_used_bytes) + (m.pid ? " (pid " + std::to_string(*m.pid) + ")" : "") : "-";
      t.add({std::to_string(m.line), m.source, m.gpu_index ? std::to_string(*m.gpu_index) : "-", size(m.used_bytes),
             size(m.total_bytes), size(m.allocated_bytes), size(m.max_allocated_bytes), size(m.reserved_bytes),
             size(m.max_reserved_bytes), process});
    }
    fmt_.table(out_, t);
    for (const auto& m : r.memory)
      if (!m.note.empty()) out_ << "line " << m.line << ": " << m.note << "\n";
  }
}

// ---- JSON --------------------------------------------------------------------------------------

void JsonPrinter::prediction(const PredictionReport& r) { out_ << prediction_report_json(r).dump(2) << "\n"; }

void JsonPrinter::advice(const AdviceReport& r, const TrainerAdvice* trainer) {
  out_ << advice_json(r, trainer).dump(2) << "\n";
}

void JsonPrinter::check(const CheckView& v) { out_ << check_report_json(v).dump(2) << "\n"; }

void JsonPrinter::calibration(const CalibrationView& v) { out_ << calibration_json(v).dump(2) << "\n"; }

void JsonPrinter::accuracy(const AccuracyView& v) { out_ << accuracy_json(v).dump(2) << "\n"; }

void JsonPrinter::catalog(Catalog what) { out_ << catalog_json(what).dump(2) << "\n"; }

void JsonPrinter::log_report(const LogReport& r) { out_ << log_report_json(r).dump(2) << "\n"; }

std::unique_ptr<Printer> make_printer(const std::string& format, std::ostream& out) {
  if (format == "table") return std::make_unique<TablePrinter>(out);
  if (format == "markdown") return std::make_unique<MarkdownPrinter>(out);
  if (format == "json") return std::make_unique<JsonPrinter>(out);
  throw InputError("--format: '" + format + "' is not one of table, json, markdown");
}

}  // namespace segadvise::cli
