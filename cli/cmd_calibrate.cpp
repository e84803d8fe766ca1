// `segadvise calibrate`: fit the cost model's coefficients to measured runs.
// `segadvise accuracy`: how well the model predicts them, in-sample or leaving each family out.
// Computation lives in calibration/ (calibrate.hpp); this file parses flags and prints.
#include <chrono>
#include <cmath>
#include <iostream>

#include "commands.hpp"
#include "output.hpp"
#include "segadvise/calibration/bands.hpp"
#include "segadvise/calibration/calibrate.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/json_io.hpp"

namespace segadvise::cli {

namespace {

struct CalFlags {
  std::vector<std::string> cases;
  std::string output;
  std::string start;  // coefficients to start from / evaluate
  std::string format = "table";
  double headroom_gib = 1.0;
  bool leave_family_out = false;
  bool runs = false;  // print every run's prediction
  int max_iterations = 60;
  double prior_weight = FitOptions{}.prior_weight;  // pull of activation scales towards the analyzer
  std::vector<std::string> anchors;  // accuracy --anchor SCHEDULE (repeatable)
  std::string write_ranges;          // accuracy --write-ranges FILE
  double coverage = 0.9;
  std::vector<double> anchor_sigmas;  // fixed, activation, compute, host, transfer (AnchorOptions)
  std::string by;                     // accuracy --by family: signed errors per family x precision x schedule
  int threads = 1;                    // accuracy --leave-family-out --threads N
};

std::string pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f%%", 100 * x);
  return b;
}
std::string fixed(double x, int d = 2) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", d, x);
  return b;
}

// The starting point of a fit: the built-in defaults (types.hpp) unless a file is named, so a
// calibration is reproducible and does not depend on the previous one.
Coefficients starting_coefficients(const std::string& path) {
  if (!path.empty()) return coefficients_for(path);
  Coefficients c;
  c.source = "built-in starting values";
  return c;
}

nlohmann::json ranges_json(const RangeStats& r) {
  auto share = [](int k, int n) { return n ? double(k) / n : 0.0; };
  return {{"peak_coverage", share(r.peak_covered, r.peak_n)}, {"peak_n", r.peak_n},
          {"peak_width_median", r.peak_width_median},         {"time_coverage", share(r.time_covered, r.time_n)},
          {"time_n", r.time_n},                               {"time_width_median", r.time_width_median},
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

void print_ranges(std::ostream& out, const AccuracyReport& rep, bool md) {
  out << "\n" << (md ? "#### " : "") << "90% ranges (bands from the other families' residuals) and verdicts\n\n";
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
  row(md ? "**overall**" : "OVERALL", rep.overall);
  t.print(out, md);
  out << "Width: median (hi - lo) / prediction. Verdicts on runs that completed or ran out of memory; an unsafe "
         "fit is a \"fits\" verdict on a run that ran out of memory. Decision above picks the fastest \"fits\" "
         "(the fastest \"borderline\" where none fits), as advise does.\n";
}

void print_summary(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& summary, bool md);

std::string signed_pct(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%+.0f%%", 100 * x);
  return b;
}

std::string by_gpu(const std::map<std::string, double>& v) {
  std::string out;
  for (const auto& [g, e] : v) out += (out.empty() ? "" : " ") + g + " " + signed_pct(e);
  return out;
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

// accuracy --by family: one row per family x precision x schedule, signed so a systematic error shows
void print_error_cells(std::ostream& out, const std::vector<ErrorCell>& cells, bool md) {
  out << "\n" << (md ? "#### " : "") << "Signed median error per family x precision x schedule "
      << "(predicted / measured - 1; + over-predicts)\n\n";
  Table t({"family", "precision", "schedule", "runs", "peak", "peak carried by", "s/step", "s/step by GPU",
           "s/step carried by"});
  for (const auto& c : cells)
    t.add({c.family, c.precision, c.schedule, std::to_string(c.n), signed_pct(c.peak_error),
           c.peak_carrier + " " + pct(c.peak_carrier_share), signed_pct(c.time_error), by_gpu(c.time_error_by_gpu),
           c.time_carrier + " " + pct(c.time_carrier_share)});
  t.print(out, md);
  out << "Carried by: the largest part of the prediction (median share); alone it would have to be off by "
         "error / share.\n";
}

void print_accuracy(std::ostream& out, const AccuracyReport& rep, const PreparedSet& set, const CalFlags& f,
                    const std::vector<std::pair<std::string, Metrics>>& summary) {
  if (f.format == "json") {
    nlohmann::json j = {{"method", rep.method}, {"headroom_gib", rep.headroom_gib}, {"cases", set.data.origin},
                        {"overall", metrics_json(rep.overall)}};
    nlohmann::json fams = nlohmann::json::object();
    for (const auto& [k, m] : rep.per_family) fams[k] = metrics_json(m);
    j["per_family"] = fams;
    nlohmann::json dec = nlohmann::json::array();
    for (const auto& d : rep.decisions)
      dec.push_back({{"group", d.key}, {"chosen", d.chosen}, {"measured_fastest", d.measured_best}, {"good", d.good}, {"why", d.why}});
    j["decisions"] = dec;
    nlohmann::json sum = nlohmann::json::array();
    for (const auto& [name, m] : summary) sum.push_back({{"measured", name}, {"overall", metrics_json(m)}});
    j["anchoring_summary"] = sum;
    if (f.by == "family") j["by_family"] = error_cells_json(error_cells(set, rep));
    if (f.runs) {
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
    out << j.dump(2) << "\n";
    return;
  }
  const bool md = f.format == "markdown";
  out << (md ? "### " : "") << "Accuracy, " << rep.method << " (" << set.data.runs.size() << " runs from "
      << set.data.origin << ", headroom " << fixed(rep.headroom_gib, 1) << " GiB)\n\n";
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
  row(md ? "**overall**" : "OVERALL", rep.overall);
  t.print(out, md);
  const Confusion& c = rep.overall.confusion;
  out << "\n" << (md ? "Fit/OOM confusion (predicted x measured):\n\n" : "Fit/OOM confusion (predicted x measured):\n");
  Table ct({"", "measured ran", "measured OOM"});
  ct.add({"predicted fits", std::to_string(c.fit_ok), std::to_string(c.fit_oom) + " (unsafe)"});
  ct.add({"predicted OOM", std::to_string(c.nofit_ok), std::to_string(c.nofit_oom)});
  ct.print(out, md);
  const SupportAgreement& s = rep.overall.support;
  out << "\nSupport (measured status vs the trainer semantics): " << s.both_supported << " both supported, "
      << s.both_unsupported << " both unsupported, " << s.data_unsupported_model_supported
      << " measured unsupported but modelled as supported, " << s.data_supported_model_unsupported
      << " ran but modelled as unsupported.\n";
  out << "Errors are absolute relative errors on runs that completed; decision: share of family x precision x GPU "
         "groups whose fastest schedule predicted to fit is within 5% of the measured fastest.\n";
  if (rep.overall.has_ranges) print_ranges(out, rep, md);
  print_summary(out, summary, md);
  if (f.by == "family") print_error_cells(out, error_cells(set, rep), md);
  if (f.runs) {
    out << "\n";
    Table rt({"run", "status", "measured", "predicted", "fits", "note"});
    for (const auto& p : rep.predictions) {
      const MeasuredRun& r = *p.prepared->run;
      std::string meas = r.status == "ok" ? fixed(r.sec_per_step) + " s " + fixed(r.peak_gib) + " GiB" : r.status;
      std::string pred = !p.modelled ? "not modelled" : !p.supported ? "unsupported" : fixed(p.step_s) + " s " + fixed(p.peak_gib) + " GiB";
      rt.add({r.id, r.status, meas, pred, p.supported ? (p.fits ? "yes" : "no") : "-", p.supported ? "" : p.reason.substr(0, 80)});
    }
    rt.print(out, md);
  }
}

AnchorOptions anchor_options(const CalFlags& f) {
  AnchorOptions ao;
  if (f.anchor_sigmas.empty()) return ao;
  for (double x : f.anchor_sigmas)
    if (!(x > 0)) throw InputError("--anchor-sigmas: every value must be > 0");
  ao.fixed_sigma = f.anchor_sigmas[0];
  ao.activation_sigma = f.anchor_sigmas[1];
  ao.compute_sigma = f.anchor_sigmas[2];
  ao.host_sigma = f.anchor_sigmas[3];
  ao.transfer_sigma = f.anchor_sigmas[4];
  return ao;
}

void print_summary(std::ostream& out, const std::vector<std::pair<std::string, Metrics>>& summary, bool md) {
  out << "\n" << (md ? "#### " : "") << "With and without a measured run of each setup (anchor cells not scored)\n\n";
  Table t({"measured", "peak med", "peak p90", "s/step med", "s/step p90", "decision", "unsafe (point)",
           "unsafe (fits)", "peak covered", "s/step covered", "peak width", "borderline"});
  for (const auto& [name, m] : summary) {
    const RangeStats& r = m.ranges;
    auto share = [](int k, int n) { return n ? pct(double(k) / n) : std::string("-"); };
    t.add({name, pct(m.peak_median), pct(m.peak_p90), pct(m.time_median), pct(m.time_p90), pct(m.decision()),
           std::to_string(m.confusion.fit_oom), std::to_string(r.fits_oom), share(r.peak_covered, r.peak_n),
           share(r.time_covered, r.time_n), pct(r.peak_width_median), share(r.borderline, r.verdicts())});
  }
  t.print(out, md);
}

}  // namespace

void setup_calibrate(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<CalFlags>();
  auto* cmd = app.add_subcommand("calibrate", "fit the cost model's coefficients to measured runs");
  cmd->add_option("--cases", f->cases, "measured runs, .json or .csv (repeatable; default: the shipped sweep)");
  cmd->add_option("--output,-o", f->output, "write the coefficients here (atomically); default: print them");
  cmd->add_option("--calibration", f->start, "coefficients to start from (default: built-in starting values)");
  cmd->add_option("--headroom-gib", f->headroom_gib, "headroom used for fit decisions (default 1)")
      ->check(number_in(0, 4096, false, "must be 0..4096 GiB"));
  cmd->add_option("--max-iterations", f->max_iterations, "Levenberg-Marquardt iterations (default 60)")->check(kNonNegative);
  cmd->add_option("--prior-weight", f->prior_weight,
                  "pull of each activation scale towards the static analyzer's 1.0 (default 3)")
      ->check(kNonNegative);
  cmd->add_option("--format", f->format, "table | json | markdown (the summary)")->check(kFormat);
  cmd->callback([f, &exit_code] {
    const auto t0 = std::chrono::steady_clock::now();
    const PreparedSet set = prepare(dataset_for(f->cases));
    FitOptions opt;
    opt.headroom_bytes = f->headroom_gib * kGiB;
    opt.max_iterations = f->max_iterations;
    opt.prior_weight = f->prior_weight;
    FitResult fr = fit_coefficients(set, starting_coefficients(f->start), opt);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fr.coef.source = "fitted by `segadvise calibrate` on " + std::to_string(fr.runs_used) + " runs of " +
                     (set.data.source.empty() ? set.data.origin : set.data.source);
    nlohmann::json cj = to_json(fr.coef);
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : fr.parameters)
      params.push_back({{"name", p.name}, {"value", p.value}, {"lo", p.lo}, {"hi", p.hi}, {"at_bound", p.at_bound}});
    // a coefficient pinned at a bound stands in for a term the model lacks (issue 12, item 5)
    std::vector<std::string> at_bound;
    for (const auto& p : fr.parameters)
      if (p.at_bound) at_bound.push_back(p.name);
    cj["fit"] = {{"method", "bounded Levenberg-Marquardt, soft-L1 on log ratios, OOM hinge constraints"},
                 {"runs", fr.runs_used}, {"residuals", fr.residuals}, {"iterations", fr.iterations},
                 {"cost", fr.cost}, {"stop", fr.stop_reason}, {"at_bound", at_bound}};
    const std::string text = cj.dump(2) + "\n";
    if (f->output.empty()) {
      std::cout << text;
    } else {
      write_file_atomically(f->output, text);
    }
    std::ostream& out = f->output.empty() ? std::cerr : std::cout;
    if (f->format == "json" && !f->output.empty()) {
      out << nlohmann::json{{"output", f->output}, {"parameters", params}, {"fit", cj["fit"]}}.dump(2) << "\n";
    } else {
      const bool md = f->format == "markdown";
      out << "fitted " << fr.parameters.size() << " coefficients on " << fr.runs_used << " runs (" << fr.residuals
          << " residuals) in " << fr.iterations << " iterations, " << fixed(secs, 1) << " s: " << fr.stop_reason
          << "\n";
      Table t({"coefficient", "value", "bounds", ""});
      for (const auto& p : fr.parameters)
        t.add({p.name, fixed(p.value, 4), "[" + fixed(p.lo, 2) + ", " + fixed(p.hi, 2) + "]", p.at_bound ? "at bound" : ""});
      for (const auto& [g, gc] : fr.coef.gpu) t.add({"gpu." + g + ".reserve_gib", fixed(gc.reserve_bytes / kGiB, 3), "envelope", ""});
      t.print(out, md);
      if (!at_bound.empty()) {
        out << at_bound.size() << " coefficient(s) ended at a bound (each stands in for a term the model lacks):";
        for (const auto& n : at_bound) out << " " << n;
        out << "\n";
      }
      if (!f->output.empty()) out << "wrote " << f->output << "\n";
    }
    exit_code = kOk;
  });
}

void setup_accuracy(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<CalFlags>();
  auto* cmd = app.add_subcommand("accuracy", "accuracy against measured runs");
  cmd->add_option("--cases", f->cases, "measured runs, .json or .csv (repeatable; default: the shipped sweep)");
  cmd->add_flag("--leave-family-out", f->leave_family_out,
                "predict each family with coefficients fitted without it (the honest figure)");
  cmd->add_option("--calibration", f->start,
                  "coefficients to evaluate (default: the shipped calibration); with --leave-family-out, to start from");
  cmd->add_option("--headroom-gib", f->headroom_gib, "memory kept free when deciding fit (default 1)")
      ->check(number_in(0, 4096, false, "must be 0..4096 GiB"));
  cmd->add_option("--max-iterations", f->max_iterations, "iterations per leave-out fit (default 60)")->check(kNonNegative);
  cmd->add_option("--prior-weight", f->prior_weight,
                  "with --leave-family-out: pull of activation scales towards 1.0 (default 3)")
      ->check(kNonNegative);
  cmd->add_flag("--runs", f->runs, "also print every run's measured and predicted figures");
  cmd->add_option("--threads", f->threads, "with --leave-family-out: fits run side by side (default 1)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--by", f->by,
                  "family: also print the signed median error of peak and step time per family x precision x "
                  "schedule and the breakdown component carrying it")
      ->check(CLI::IsMember({"family"}));
  cmd->add_option("--anchor", f->anchors,
                  "predict every cell of each family x precision x GPU group from its measured cell of this schedule "
                  "(repeatable: layer and none), as --measured would");
  cmd->add_option("--write-ranges", f->write_ranges,
                  "with --leave-family-out: write the 90% range bands (unanchored, and anchored on --anchor or "
                  "layer) to this file (calibration/data/ranges.json ships them)");
  cmd->add_option("--coverage", f->coverage, "coverage of the ranges (default 0.9)")
      ->check(number_in(0, 1, true, "must be in (0, 1)"));
  cmd->add_option("--anchor-sigmas", f->anchor_sigmas,
                  "relative uncertainty of the fixed, activation, compute, host and transfer parts that shares one "
                  "measurement's surprise (5 numbers; default: AnchorOptions)")
      ->expected(5)
      ->delimiter(',');
  cmd->add_option("--format", f->format, "table | json | markdown")->check(kFormat);
  cmd->callback([f, &exit_code] {
    if (!(f->coverage > 0 && f->coverage < 1)) throw InputError("--coverage: must be in (0, 1)");
    if (!f->write_ranges.empty() && !f->leave_family_out)
      throw InputError("--write-ranges: needs --leave-family-out (ranges come from residuals on unseen families)");
    std::vector<Schedule> anchors;
    for (const auto& a : f->anchors) {
      try {
        anchors.push_back(Schedule::parse(a));
      } catch (const InputError& e) {
        throw InputError("--anchor '" + a + "': " + e.what());
      }
    }
    const PreparedSet set = prepare(dataset_for(f->cases));
    AccuracyReport rep;
    if (f->leave_family_out) {
      FitOptions opt;
      opt.headroom_bytes = f->headroom_gib * kGiB;
      opt.max_iterations = f->max_iterations;
      opt.prior_weight = f->prior_weight;
      opt.threads = f->threads;
      rep = accuracy_leave_family_out(set, starting_coefficients(f->start), opt);
    } else {
      rep = accuracy_in_sample(set, coefficients_for(f->start), f->headroom_gib * kGiB);
    }
    BandOptions bo;
    bo.headroom_bytes = f->headroom_gib * kGiB;
    bo.coverage = f->coverage;
    bo.anchor = anchor_options(*f);
    bo.anchors = anchors;
    bo.bands_from_every_family = !f->write_ranges.empty();
    const BandedAccuracy banded = banded_accuracy(set, rep, bo);
    if (banded.bands) {
      write_file_atomically(f->write_ranges, to_json(*banded.bands).dump(2) + "\n");
      std::cerr << "wrote " << f->write_ranges << "\n";
    }
    print_accuracy(std::cout, banded.report, set, *f, banded.summary);
    exit_code = kOk;
  });
}

}  // namespace segadvise::cli
