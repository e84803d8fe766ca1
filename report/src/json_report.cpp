#include "segadvise/report/json_report.hpp"

#include "segadvise/report/multi_gpu_output.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/report/json_io.hpp"
#include "segadvise/report/dataset_output.hpp"
#include "segadvise/report/measured_output.hpp"
#include "segadvise/report/memory_figures.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "segadvise/planner/plan_json.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/planner/distributed_advice.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"

namespace segadvise::cli {

namespace {

double gib(double bytes) { return bytes / kGiB; }

// a prediction's JSON with its 90% ranges and three-valued verdict
nlohmann::json prediction_json(const Candidate& c) {
  nlohmann::json j = to_json(c.prediction);
  add_range_json(j, c);
  if (c.prediction.supported) {
    const Range r = c.ranged ? c.peak_range_bytes : Range{c.prediction.peak_vram_bytes, c.prediction.peak_vram_bytes};
    add_peak_figures_json(j, "", peak_figures(c.prediction, c.prediction.peak_vram_bytes, r), !c.measured);
  }
  return j;
}

nlohmann::json backends_json(const std::vector<BackendView>& views) {
  nlohmann::json backends = nlohmann::json::array();
  for (const auto& b : views)
    backends.push_back({{"id", b.id}, {"dataset_type", b.dataset_type}, {"width", b.width}, {"height", b.height},
                        {"frames", b.frames}, {"batch", b.batch}, {"note", b.note}});
  return backends;
}

nlohmann::json ranges_json(const RangeStats& r) {
  auto share = [](int k, int n) { return n ? double(k) / n : 0.0; };
  return {{"peak_coverage", share(r.peak_covered, r.peak_n)}, {"peak_n", r.peak_n},
          {"peak_width_median", r.peak_width_median},         {"time_coverage", share(r.time_covered, r.time_n)},
          {"time_n", r.time_n},                               {"time_width_median", r.time_width_median},
          {"peak_hi_lo_median", r.peak_hi_lo_median},         {"time_hi_lo_median", r.time_hi_lo_median},
          {"verdicts", {{"fits", r.fits}, {"borderline", r.borderline}, {"does_not_fit", r.does_not_fit}}},
          {"borderline_share", share(r.borderline, r.verdicts())}, {"fits_that_ran_out_of_memory", r.fits_oom}};
}

nlohmann::json metrics_json(const Metrics& m) {
  const Confusion& c = m.confusion;
  const SupportAgreement& s = m.support;
  return {{"runs", m.runs},
          {"fit_oom_agreement", c.agreement()},
          {"confusion",
           {{"predicted_fit_ran", c.fit_ok},
            {"predicted_fit_oom", c.fit_oom},
            {"predicted_oom_ran", c.nofit_ok},
            {"predicted_oom_oom", c.nofit_oom}}},
          {"unsafe_fits", c.fit_oom},
          {"peak_vram_error", {{"n", m.peak_n}, {"median", m.peak_median}, {"p90", m.peak_p90}}},
          {"sec_per_step_error", {{"n", m.time_n}, {"median", m.time_median}, {"p90", m.time_p90}}},
          {"support",
           {{"agreement", s.agreement()},
            {"both_supported", s.both_supported},
            {"both_unsupported", s.both_unsupported},
            {"measured_unsupported_predicted_supported", s.data_unsupported_model_supported},
            {"measured_supported_predicted_unsupported", s.data_supported_model_unsupported}}},
          {"decision", {{"groups", m.decision_groups}, {"good", m.decision_good}, {"share", m.decision()}}},
          {"ranges", m.has_ranges ? ranges_json(m.ranges) : nlohmann::json(nullptr)}};
}

nlohmann::json error_cells_json(const std::vector<ErrorCell>& cells) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : cells)
    a.push_back({{"family", c.family}, {"precision", c.precision}, {"schedule", c.schedule}, {"runs", c.n},
                 {"peak_signed_median", c.peak_error}, {"peak_carrier", c.peak_carrier},
                 {"peak_carrier_share", c.peak_carrier_share}, {"sec_per_step_signed_median", c.time_error},
                 {"sec_per_step_signed_median_by_gpu", c.time_error_by_gpu}, {"time_carrier", c.time_carrier},
                 {"time_carrier_share", c.time_carrier_share}});
  return a;
}

}  // namespace

nlohmann::json advice_json(const AdviceReport& r, const TrainerAdvice* trainer) {
  const Context& ctx = r.context;
  const Advice& a = r.advice;
  nlohmann::json j;
  j["model"] = ctx.family->id;
  j["gpu"] = ctx.gpu.id;
  j["usable_vram_gib"] = usable_vram_bytes(ctx.gpu, ctx.coef) / kGiB;
  j["usable_vram_quantity"] = "for the reserved peak (card_memory)";
  j["headroom_gib"] = ctx.headroom_bytes / kGiB;
  j["card_memory"] = card_memory_json(card_overhead(ctx.gpu, ctx.coef), ctx.headroom_bytes, headroom_reason(ctx));
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
                           {"config", simpletuner_keys(*ctx.family, c->schedule, ctx.setup)},
                           {"config_remove", keys_to_remove(*ctx.family, c->schedule, ctx.setup)}};
    if (r.phases) {  // the recommended schedule's whole run (the recommendation itself is the step's)
      const double budget = usable_vram_bytes(ctx.gpu, ctx.coef) - ctx.headroom_bytes;
      j["recommendation"]["phases"] = nlohmann::json::parse(phases_json(*r.phases, budget).dump());
      j["recommendation"]["run_fit"] = to_string(worst(c->verdict(), r.phases->verdict(budget)));
      j["recommendation"]["run_peak_vram_gib"] = r.phases->peak_vram_bytes / kGiB;
      j["recommendation"]["run_peak_phase"] = to_string(r.phases->peak_phase);
      j["recommendation"]["run_fits"] = worst(c->verdict(), r.phases->verdict(budget)) == FitVerdict::Fits;
      j["recommendation"]["phase_advice"] = phase_advice_json(*r.phases);
    }
  } else {
    j["recommendation"] = nullptr;
    if (a.borderline >= 0) {
      const Candidate& b = a.candidates[a.borderline];
      j["borderline"] = {{"schedule", to_json(b.schedule)}, {"prediction", prediction_json(b)},
                         {"config", simpletuner_keys(*ctx.family, b.schedule, ctx.setup)},
                         {"config_remove", keys_to_remove(*ctx.family, b.schedule, ctx.setup)},
                         {"settle", settle_hint(b)}};
      nlohmann::json shrink = nlohmann::json::array();
      for (const RangeIfMeasured& x : r.if_measured)
        shrink.push_back({{"schedule", a.candidates[x.candidate].schedule.name()},
                          {"peak_vram_gib_range", {x.peak_now_bytes.lo / kGiB, x.peak_now_bytes.hi / kGiB}},
                          {"peak_vram_gib_range_if_measured", {x.peak_after_bytes.lo / kGiB, x.peak_after_bytes.hi / kGiB}},
                          {"step_time_s_range", {x.time_now_s.lo, x.time_now_s.hi}},
                          {"step_time_s_range_if_measured", {x.time_after_s.lo, x.time_after_s.hi}},
                          {"peak_width_ratio", x.peak_width_ratio},
                          {"time_width_ratio", x.time_width_ratio},
                          {"fit_if_measured", to_string(x.verdict_after)}});
      j["borderline"]["ranges_if_measured"] = shrink;
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

nlohmann::json setup_json(const Context& ctx) {
  nlohmann::json j = to_json(ctx.setup);
  j["model_name"] = ctx.family->name;
  j["trainer_family"] = ctx.family->trainer_family;
  // a guessed family (TrainingSetup::family_guessed_from) or an assumed shape (shape_assumed_from) is never
  // "high": the guess is the weak link
  j["confidence"] = !ctx.setup.family_guessed_from.empty() ? nlohmann::json("guessed")
                    : !ctx.setup.shape_assumed_from.empty() ? nlohmann::json("assumed shape")
                                                            : nlohmann::json(ctx.family->confidence);
  j["image_tokens"] = ctx.chain.tokens_image;
  j["text_tokens"] = ctx.chain.tokens_text;
  j["blocks"] = ctx.chain.blocks.size();
  j["block_costs"] = ctx.chain.source;
  j["gpu"] = ctx.gpu.name;
  j["calibration"] = ctx.coef.source;
  return j;
}

void add_range_json(nlohmann::json& j, const Candidate& c) {
  if (!c.prediction.supported) {
    j["fit"] = nullptr;
    j["peak_vram_gib_range"] = nullptr;
    j["step_time_s_range"] = nullptr;
    return;
  }
  j["fit"] = to_string(c.verdict());
  // "fits" is the verdict's "fits" (the 90% range's upper end plus headroom fits), as everywhere the
  // tool says fits; "point_fits" is the point prediction's own comparison, for diagnosis
  j["point_fits"] = c.prediction.fits;
  j["fits"] = c.verdict() == FitVerdict::Fits;
  if (c.ranged) {
    j["peak_vram_gib_range"] = {c.peak_range_bytes.lo / kGiB, c.peak_range_bytes.hi / kGiB};
    j["step_time_s_range"] = {c.step_range_s.lo, c.step_range_s.hi};
  } else {
    j["peak_vram_gib_range"] = {c.prediction.peak_vram_bytes / kGiB, c.prediction.peak_vram_bytes / kGiB};
    j["step_time_s_range"] = {c.prediction.step_time_s, c.prediction.step_time_s};
  }
  j["measured"] = c.measured;
}

nlohmann::json measurements_json(const Anchor& a) {
  nlohmann::json used = nlohmann::json::array();
  for (const AnchorPoint& p : a.points) {
    nlohmann::json m = {{"text", p.measured.text}, {"schedule", p.measured.schedule.name()}};
    if (!p.measured.source.empty()) m["source"] = p.measured.source;
    if (p.measured.oom) {
      m["measured"] = "oom";
      m["oom_need_gib"] = p.measured.oom_need_bytes > 0 ? nlohmann::json(p.measured.oom_need_bytes / kGiB) : nlohmann::json();
      m["oom_elsewhere"] = p.measured.oom_elsewhere;
    }
    else m["measured"] = {{"sec_per_step", p.measured.step_time_s}, {"peak_vram_gib", p.measured.peak_vram_bytes / kGiB}};
    m["model"] = {{"sec_per_step", p.predicted.step_time_s}, {"peak_vram_gib", p.predicted.peak_vram_bytes / kGiB},
                  {"usable_vram_gib", p.predicted.usable_vram_bytes / kGiB}};
    used.push_back(m);
  }
  return {{"used", used},
          {"peak_anchored", a.peak_anchored},
          {"time_anchored", a.time_anchored},
          {"raised_by_oom", a.raised_by_oom},
          {"scales",
           {{"fixed_memory", a.fixed_scale},
            {"activations", a.activation_scale},
            {"compute", a.compute_scale},
            {"recompute", a.recompute_scale},
            {"host_overhead", a.host_scale},
            {"transfers", a.transfer_scale}}}};
}

// plan_to_json without the description (advise's JSON gives it beside the plan, as "description")
nlohmann::json plan_segments_json(Plan plan) {
  plan.description.clear();
  return plan_to_json(plan);
}

nlohmann::json optimal_json(const OptimalView& v) {
  nlohmann::json j;
  if (!v.optimal.found) {
    j["plan"] = nullptr;
    j["reason"] = v.optimal.reason;
    return j;
  }
  j["plan"] = plan_segments_json(v.optimal.plan);
  j["description"] = v.optimal.plan.description;
  j["prediction"] = to_json(v.optimal.prediction);
  j["exact"] = v.optimal.exact;
  if (v.uniform >= 0) {
    j["gain_s"] = v.gain_s;
    j["gain_percent"] = 100 * v.gain_fraction;
  } else {
    j["gain_s"] = nullptr;  // no trainer schedule fits: the optimal plan is the only one
  }
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : v.insight)
    rows.push_back({{"decision", r.what}, {"gpu_gib_saved", r.gpu_bytes_saved / kGiB}, {"ms_added", r.seconds_added * 1e3}});
  j["memory_insight"] = rows;
  if (!v.front.points.empty()) {
    nlohmann::json pts = nlohmann::json::array();
    for (std::size_t i = 0; i < v.front.points.size(); ++i) {
      const auto& p = v.front.points[i];
      pts.push_back({{"peak_vram_gib", p.peak_vram_bytes / kGiB},
                     {"step_time_s", p.step_time_s},
                     {"knee", static_cast<int>(i) == v.front.knee},
                     {"description", p.plan.description}});
    }
    j["pareto_front"] = pts;
  }
  return j;
}

nlohmann::ordered_json phases_json(const RunPhases& run, double budget_bytes) {
  using oj = nlohmann::ordered_json;
  oj j = oj::object();
  for (const auto& p : run.phases) {
    oj resident = oj::array();  // in the order they add up
    for (const auto& r : p.resident) resident.push_back({{"what", r.what}, {"gib", gib(r.bytes)}});
    j[to_string(p.phase)] = {{"peak_vram_gib", p.runs ? oj(gib(p.peak_vram_bytes)) : oj(nullptr)},
                             {"peak_vram_gib_range", p.runs ? oj({gib(p.peak_lo_bytes), gib(p.peak_hi_bytes)}) : oj(nullptr)},
                             {"fit", p.runs ? oj(to_string(p.verdict(budget_bytes))) : oj(nullptr)},
                             {"runs", p.runs},
                             {"resident", resident},
                             {"set_by", p.set_by}};
  }
  return j;
}

nlohmann::json phase_advice_json(const RunPhases& run) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : run.fixes)
  {
    // key null: the trainer has no key for the phase (note says so); value null: remove the flag
    nlohmann::json e = {{"phase", to_string(f.phase)}, {"key", f.key.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.key)},
                        {"value", nlohmann::json::parse(f.value_json)},
                        {"peak_after_gib", gib(f.peak_after_bytes)},
                        {"peak_after_gib_range", {gib(f.peak_after_lo_bytes), gib(f.peak_after_hi_bytes)}},
                        {"fits_after", f.fits_after}, {"fit_after", to_string(f.fit_after)}};
    if (!f.note.empty()) e["note"] = f.note;
    a.push_back(e);
  }
  return a;
}

nlohmann::json host_memory_json(const HostMemory& host) {
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& r : host.parts) parts[r.what] = gib(r.bytes);
  return {{"peak_gib", gib(host.peak_bytes)}, {"set_by", host.set_by}, {"parts", parts}};
}

void add_phases_json(nlohmann::json& p, const RunPhases& run, const Prediction& step, double usable_bytes,
                     double headroom_bytes, bool step_only, FitVerdict run_verdict) {
  p["step_peak_vram_gib"] = p["peak_vram_gib"];
  p["step_peak_vram_gib_range"] = p["peak_vram_gib_range"];
  for (const char* k : {"peak_vram_quantity", "peak_reserved_gib", "peak_reserved_gib_range", "peak_allocated_gib",
                        "peak_allocated_gib_range", "peak_nvidia_smi_gib", "peak_nvidia_smi_gib_range",
                        "peak_vram_gib_range_covers", "peak_vram_gib_range_parts"})
    if (p.contains(k)) p[std::string("step_") + k] = p[k];
  p["step_fits"] = p["fits"];
  p["step_fit"] = p["fit"];
  if (!step_only) {
    p["peak_vram_gib"] = gib(run.peak_vram_bytes);
    p["peak_vram_gib_range"] = {gib(run.peak_lo_bytes), gib(run.peak_hi_bytes)};
    add_peak_figures_json(p, "", peak_figures(step, run.peak_vram_bytes, Range{run.peak_lo_bytes, run.peak_hi_bytes}),
                          p.value("measured", false) == false);
    p["point_fits"] = p.value("point_fits", false) && run.peak_vram_bytes + headroom_bytes <= usable_bytes;
    p["fits"] = run_verdict == FitVerdict::Fits;
    p["fit"] = to_string(run_verdict);
  }
  p["peak_phase"] = step_only ? "training_step" : to_string(run.peak_phase);
  p["phases"] = nlohmann::json::parse(phases_json(run, usable_bytes - headroom_bytes).dump());
}

nlohmann::json multi_gpu_advice_json(const AdviceReport& r) {
  const MultiGpuSetup& m = r.context.setup.multi_gpu;
  nlohmann::json j;
  j["simpletuner"] = nlohmann::json::parse(multi_gpu_simpletuner_keys(m, r.context.setup).dump());
  j["accelerate_config_yaml"] = accelerate_yaml(m, r.context.setup.mixed_precision);
  j["deepspeed_config"] = nlohmann::json::parse(deepspeed_config(m, r.context.setup.batch).dump());
  if (!r.distributed) return j;
  nlohmann::json opts = nlohmann::json::array();
  for (const DistributedOption& o : r.distributed->options) {
    nlohmann::json x = {{"setup", option_name(o.multi_gpu)}, {"strategy", to_string(o.multi_gpu.strategy)},
                        {"context_parallel", o.multi_gpu.context_parallel}, {"runs", o.runs}, {"fits", o.fits},
                        {"reason", o.reason}};
    if (o.samples_per_s > 0) {
      x["schedule"] = o.candidate.schedule.name();
      x["peak_vram_gib"] = o.candidate.prediction.peak_vram_bytes / kGiB;
      x["step_time_s"] = o.candidate.prediction.step_time_s;
      x["communication_s"] = o.candidate.prediction.time.communication_s;
      x["samples_per_s"] = o.samples_per_s;
    }
    opts.push_back(x);
  }
  j["options"] = opts;
  j["best"] = r.distributed->best;
  return j;
}

nlohmann::json prediction_report_json(const PredictionReport& r) {
  const Context& ctx = r.context;
  const Candidate& c = r.candidate;
  nlohmann::json j = {{"setup", setup_json(ctx)},
                      {"gpu", ctx.gpu.id},
                      {"schedule", to_json(c.schedule)},
                      {"plan", c.plan.supported ? nlohmann::json(describe(c.plan.plan, ctx.chain)) : nlohmann::json(nullptr)},
                      {"prediction", prediction_json(c)},
                      {"measurements", measurements_json(ctx.anchor)}};
  if (c.prediction.supported) {
    j["config"] = simpletuner_keys(*ctx.family, c.schedule, ctx.setup);
    j["config_remove"] = keys_to_remove(*ctx.family, c.schedule, ctx.setup);
  }
  return j;
}

nlohmann::json check_report_json(const CheckView& v) {
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
  if (v.dataset) add_buckets_json(j, *v.dataset);
  if (r.phases) {
    add_phases_json(j["prediction"], *r.phases, c.prediction, c.prediction.usable_vram_bytes, r.context.headroom_bytes, r.step_only,
                    r.verdict());
    j["phase_advice"] = phase_advice_json(*r.phases);
    j["host_memory"] = host_memory_json(r.phases->host);
  }
  j["card_memory"] = card_memory_json(card_overhead(r.context.gpu, r.context.coef), r.context.headroom_bytes,
                                      headroom_reason(r.context));
  j["host_os"] = r.context.setup.host_os.empty() ? "linux" : r.context.setup.host_os;
  if (!r.context.setup.host_os_from.empty()) j["host_os_from"] = r.context.setup.host_os_from;
  j["windows_sysmem_fallback"] = sysmem_fallback_json(check_sysmem_fallback(r));
  j["expandable_segments"] = expandable_segments_json(expandable_segments_hint(r));
  j["warnings"] = r.warnings;
  // the same with each one's kind, and the trainer's refusals (kinds: planner/diagnostic.hpp)
  nlohmann::json diagnostics = nlohmann::json::array();
  for (const Diagnostic& d : r.diagnostics) diagnostics.push_back({{"kind", to_string(d.kind)}, {"text", d.text}});
  j["diagnostics"] = std::move(diagnostics);
  if (r.advice) j["advice"] = advice_json(*r.advice, v.trainer);
  if (r.advice && v.own_trainer_advice) {
    // another trainer's config: no SimpleTuner key in its advice (the schedules stay as a comparison;
    // the trainer's own plan is "emit", with its whole run)
    nlohmann::json& a = j["advice"];
    for (const char* k : {"recommendation", "borderline"})
      if (a.contains(k) && a[k].is_object())
        for (const char* f : {"config", "config_remove", "phase_advice", "phases"}) a[k].erase(f);
    a["schedules_are"] = "SimpleTuner's schedule space, for comparison: " + v.trainer->trainer_name + " runs the plans in emit";
    if (v.trainer_phases && a.contains("emit")) {
      const Context& ctx = r.advice->context;
      const double budget = usable_vram_bytes(ctx.gpu, ctx.coef) - ctx.headroom_bytes;
      a["emit"]["phases"] = nlohmann::json::parse(phases_json(*v.trainer_phases, budget).dump());
      a["emit"]["phase_advice"] = phase_advice_json(*v.trainer_phases);
    }
  }
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
  return j;
}


nlohmann::json accuracy_json(const AccuracyView& v) {
  const AccuracyReport& rep = *v.report;
  const PreparedSet& set = *v.set;
  nlohmann::json j = {{"method", rep.method}, {"headroom_gib", rep.headroom_gib}, {"cases", set.data.origin},
                      {"overall", metrics_json(rep.overall)}};
  nlohmann::json fams = nlohmann::json::object();
  for (const auto& [k, m] : rep.per_family) fams[k] = metrics_json(m);
  j["per_family"] = fams;
  const auto by_group = [](const std::map<std::string, RangeStats>& groups) {
    nlohmann::json g = nlohmann::json::object();
    for (const auto& [k, r] : groups) g[k] = ranges_json(r);
    return g;
  };
  j["ranges_by_kind_of_run"] = by_group(rep.ranges_by_stratum);
  j["ranges_by_fixed_share"] = by_group(rep.ranges_by_fixed_share);
  nlohmann::json dec = nlohmann::json::array();
  for (const auto& d : rep.decisions)
    dec.push_back({{"group", d.key}, {"chosen", d.chosen}, {"measured_fastest", d.measured_best}, {"good", d.good}, {"why", d.why}});
  j["decisions"] = dec;
  nlohmann::json sum = nlohmann::json::array();
  for (const auto& [name, m] : *v.summary) sum.push_back({{"measured", name}, {"overall", metrics_json(m)}});
  j["anchoring_summary"] = sum;
  if (v.by_family) j["by_family"] = error_cells_json(error_cells(set, rep));
  if (v.runs) {
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& p : rep.predictions) {
      nlohmann::json r = to_json(*p.prepared->run);
      r["predicted"] = {{"modelled", p.modelled}, {"supported", p.supported}, {"reason", p.reason},
                        {"fits", p.fits},         {"peak_gib", p.peak_gib},   {"usable_gib", p.usable_gib},
                        {"sec_per_step", p.step_s}, {"static_gib", p.static_gib},
                        {"activation_gib", p.activation_gib}};
      if (p.supported && p.modelled) {
        const PeakParts pp = peak_parts(p.full);
        const TimeParts tp = time_parts(p.full);
        r["predicted"]["model_parts"] = {{"fixed_gib", pp.fixed_bytes / kGiB}, {"activation_gib", pp.activation_bytes / kGiB},
                                         {"exact_gib", pp.exact_bytes / kGiB},
                                         {"compute_s", tp.compute_s}, {"host_s", tp.host_s}, {"transfer_s", tp.transfer_s},
                                         {"usable_gib", p.full.usable_vram_bytes / kGiB}};
      }
      if (p.has_range)
        r["predicted"].update({{"peak_gib_range", {p.peak_lo_gib, p.peak_hi_gib}},
                               {"sec_per_step_range", {p.step_lo_s, p.step_hi_s}},
                               {"fit", to_string(p.verdict)}, {"anchored", p.anchored},
                               {"anchor_cell", p.measured_anchor}});
      runs.push_back(r);
    }
    j["runs"] = runs;
  }
  return j;
}

nlohmann::json catalog_json(Catalog what) {
  nlohmann::json j = nlohmann::json::array();
  switch (what) {
    case Catalog::Models:
      for (const auto& f : builtin_families())
        j.push_back({{"id", f.id}, {"name", f.name}, {"trainer_family", f.trainer_family}, {"flavours", f.flavours},
                     {"aliases", f.aliases}, {"interval", to_string(f.checkpointing.interval)}, {"confidence", f.confidence}});
      break;
    case Catalog::Gpus:
      for (const auto& g : builtin_gpus())
        j.push_back({{"id", g.id}, {"name", g.name}, {"total_gib", g.total_bytes / kGiB},
                     {"bf16_tflops", g.bf16_flops_per_s / 1e12}, {"mem_gbps", g.mem_bytes_per_s / 1e9},
                     {"pcie_gbps", g.pcie_bytes_per_s / 1e9}, {"arch", g.arch}, {"sm", g.sm},
                     {"bf16_native", g.bf16_native}, {"flash_attention_2", g.flash_attention_2},
                     {"fp8_tensor", g.fp8_tensor}, {"display", g.display}});
      break;
    case Catalog::Precisions:
      for (const auto& p : precision_names()) {
        const PrecisionInfo i = precision_info(p);
        j.push_back({{"name", p}, {"bytes_per_param", i.bytes_per_param}, {"backend", i.backend}});
      }
      break;
    case Catalog::Optimizers:
      for (const auto& o : optimizer_names())
        j.push_back({{"name", o}, {"state_bytes_per_param", optimizer_info(o).state_bytes_per_param}});
      break;
  }
  return j;
}

nlohmann::json fit_json(const FitResult& fr) {
  std::vector<std::string> at_bound;  // each stands in for a term the model lacks
  for (const auto& p : fr.parameters)
    if (p.at_bound) at_bound.push_back(p.name);
  return {{"method", "bounded Levenberg-Marquardt, soft-L1 on log ratios, OOM hinge constraints"},
          {"runs", fr.runs_used}, {"residuals", fr.residuals}, {"iterations", fr.iterations},
          {"cost", fr.cost}, {"stop", fr.stop_reason}, {"at_bound", at_bound}};
}

nlohmann::json coefficients_file_json(const FitResult& fr) {
  nlohmann::json j = to_json(fr.coef);
  j["fit"] = fit_json(fr);
  return j;
}

nlohmann::json calibration_json(const CalibrationView& v) {
  nlohmann::json params = nlohmann::json::array();
  for (const auto& p : v.fit->parameters)
    params.push_back({{"name", p.name}, {"value", p.value}, {"lo", p.lo}, {"hi", p.hi}, {"at_bound", p.at_bound}});
  return {{"output", v.output}, {"parameters", params}, {"fit", fit_json(*v.fit)}};
}

nlohmann::json log_report_json(const LogReport& r) {
  const auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json oom = nlohmann::json::array(), steps = nlohmann::json::array(), memory = nlohmann::json::array();
  for (const auto& m : r.oom) {
    nlohmann::json others = nlohmann::json::array();
    for (const auto& p : m.other_processes) others.push_back({{"pid", p.pid}, {"bytes", p.bytes}});
    oom.push_back({{"line", m.line},
                   {"tried_to_allocate_bytes", opt(m.tried_to_allocate_bytes)},
                   {"total_capacity_bytes", opt(m.total_capacity_bytes)},
                   {"free_bytes", opt(m.free_bytes)},
                   {"process_in_use_bytes", opt(m.process_in_use_bytes)},
                   {"allocated_by_pytorch_bytes", opt(m.allocated_by_pytorch_bytes)},
                   {"reserved_unallocated_bytes", opt(m.reserved_unallocated_bytes)},
                   {"reserved_total_bytes", opt(m.reserved_total_bytes)},
                   {"private_pools_bytes", opt(m.private_pools_bytes)},
                   {"gpu_index", opt(m.gpu_index)},
                   {"other_processes", others},
                   {"phase", m.phase}});
  }
  for (const auto& s : r.steps)
    steps.push_back({{"line", s.line}, {"sec_per_step", s.sec_per_step}, {"step", opt(s.step)},
                     {"total", opt(s.total)}, {"what", s.what}, {"label", s.label}});
  for (const auto& m : r.memory)
    memory.push_back({{"line", m.line}, {"source", m.source}, {"gpu_index", opt(m.gpu_index)},
                      {"used_bytes", opt(m.used_bytes)}, {"total_bytes", opt(m.total_bytes)},
                      {"allocated_bytes", opt(m.allocated_bytes)}, {"reserved_bytes", opt(m.reserved_bytes)},
                      {"max_allocated_bytes", opt(m.max_allocated_bytes)},
                      {"max_reserved_bytes", opt(m.max_reserved_bytes)},
                      {"process_used_bytes", opt(m.process_used_bytes)}, {"pid", opt(m.pid)},
                      {"note", m.note.empty() ? nlohmann::json() : nlohmann::json(m.note)}});
  return {{"log", r.path}, {"oom", oom}, {"steps", steps}, {"memory", memory}};
}

}  // namespace segadvise::cli
