// Calibration: dataset loading, the bounded least-squares fitter, OOM constraints, accuracy scoring.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "test_util.hpp"
#include "segadvise/calibration/bands.hpp"
#include "segadvise/calibration/calibrate.hpp"
#include "segadvise/calibration/dataset.hpp"
#include "segadvise/calibration/lsq.hpp"
#include "segadvise/planner/measured_text.hpp"

using namespace segadvise;

namespace {

std::string error_of(const std::function<void()>& f) { return test::input_error_of(f); }

MeasuredRun run(const std::string& model, const std::string& gpu, const std::string& mode, int w, int h, int frames,
                const std::string& precision = "bf16") {
  MeasuredRun r;
  r.model = model;
  r.family_name = model;
  r.gpu = gpu;
  r.mode = mode;
  r.width = w;
  r.height = h;
  r.frames = frames;
  r.batch = 1;
  r.precision = precision;
  r.status = "ok";
  return r;
}

// "Measured" figures produced by the cost model itself with known coefficients.
Dataset synthetic(const Coefficients& truth) {
  Dataset d;
  d.origin = "synthetic";
  for (const std::string gpu : {"h100", "l40s"})
    for (const std::string prec : {"bf16", "int8-sdnq-hadamard"})
      for (int res : {512, 768, 1024})
        for (const std::string mode : {"none", "layer", "interval2", "seg2-stride4", "activation-offload"}) {
          d.runs.push_back(run("sd3", gpu, mode, res, res, 1, prec));
          d.runs.push_back(run("wan:t2v-480p-1.3b-2.1", gpu, mode, res / 2 + 64, res / 2, 9, prec));
        }
  for (std::size_t i = 0; i < d.runs.size(); ++i) d.runs[i].id = "synthetic#" + std::to_string(i + 1);
  PreparedSet set = prepare(d);
  for (std::size_t i = 0; i < set.runs.size(); ++i) {
    const RunPrediction p = predict_run(set, set.runs[i], truth, kGiB);
    REQUIRE(p.supported);
    d.runs[i].peak_gib = p.peak_gib;
    d.runs[i].sec_per_step = p.step_s;
  }
  return d;
}

}  // namespace

TEST_CASE("Levenberg-Marquardt fits a straight line and respects its box") {
  // y = 2x + 1 sampled exactly; with the slope boxed to [0, 1.5] the best slope is the bound
  BoundedProblem p;
  p.x0 = {0.5, 0.0};
  p.lo = {0.0, -10};
  p.hi = {10.0, 10};
  p.residuals = [](const std::vector<double>& x, std::vector<double>& r) {
    r.clear();
    for (int i = 0; i < 5; ++i) r.push_back(x[0] * i + x[1] - (2.0 * i + 1));
  };
  LsqResult free_fit = bounded_levenberg_marquardt(p);
  CHECK(free_fit.x[0] == doctest::Approx(2.0).epsilon(1e-6));
  CHECK(free_fit.x[1] == doctest::Approx(1.0).epsilon(1e-6));
  p.hi[0] = 1.5;
  LsqResult boxed = bounded_levenberg_marquardt(p);
  CHECK(boxed.x[0] == doctest::Approx(1.5));
  // with the slope at 1.5, the best intercept is mean(y - 1.5 x) = mean(0.5 x + 1) = 2
  CHECK(boxed.x[1] == doctest::Approx(2.0).epsilon(1e-6));
}

TEST_CASE("the soft-L1 residual is linear near zero and grows like a square root far out") {
  CHECK(soft_l1(0.01, 1.0) == doctest::Approx(0.01).epsilon(1e-3));
  CHECK(soft_l1(-0.01, 1.0) == doctest::Approx(-0.01).epsilon(1e-3));
  // r = 100, c = 1: sqrt(2 (sqrt(10001) - 1)) = 14.0
  CHECK(soft_l1(100, 1.0) == doctest::Approx(14.0).epsilon(0.01));
}

TEST_CASE("fitting synthetic runs made with known coefficients recovers them within 1%") {
  Coefficients truth;
  // matmul, attention and elementwise efficiency, overhead, PCIe efficiency, reserve
  auto gpu = [](double mm, double attn, double ew, double overhead, double pcie, double reserve) {
    GpuCoefficients g;
    g.matmul_efficiency = mm;
    g.attention_efficiency = attn;
    g.elementwise_efficiency = ew;
    g.overhead_s = overhead;
    g.pcie_efficiency = pcie;
    g.reserve_bytes = reserve;
    return g;
  };
  truth.gpu["h100"] = gpu(0.40, 0.55, 0.35, 0.30, 0.70, 1.7 * kGiB);
  truth.gpu["l40s"] = gpu(0.60, 0.30, 0.25, 0.20, 0.50, 1.4 * kGiB);
  truth.backward_factor = 1.3;
  truth.fragmentation = 0.12;
  truth.offload_overlap = 0.3;
  truth.matmul_time_factor["int8-sdnq-hadamard"] = 1.8;
  truth.dequant_passes["int8-sdnq-hadamard"] = 20;
  // compute-bound regime: with a host launch time at its lower bound no block is launch-bound,
  // so efficiencies are identifiable (under a binding max() floor their gradients vanish)
  truth.launch_s = 2e-6;
  const PreparedSet set = prepare(synthetic(truth));

  Coefficients start;  // the built-in starting values, far from the truth
  start.launch_s = 2e-6;
  start.gpu["h100"].reserve_bytes = 1.7 * kGiB;
  start.gpu["l40s"].reserve_bytes = 1.4 * kGiB;
  FitOptions opt;
  opt.fit_activation = false;  // sides of one kind cannot be told apart without FFN-only runs
  opt.fit_reserve = false;
  opt.prior_weight = 0;
  opt.robust_scale = 10;  // exact data: plain least squares
  opt.max_iterations = 200;
  const FitResult fr = fit_coefficients(set, start, opt);
  const Coefficients& c = fr.coef;
  // What the runs determine, each within 1%: the coefficients no other one can stand in for
  for (const std::string g : {"h100", "l40s"}) {
    CAPTURE(g);
    CHECK(c.for_gpu(g).attention_efficiency == doctest::Approx(truth.for_gpu(g).attention_efficiency).epsilon(0.01));
    CHECK(c.for_gpu(g).overhead_s == doctest::Approx(truth.for_gpu(g).overhead_s).epsilon(0.01));
    // an offloaded byte costs 2 / (PCIe x pcie_efficiency) x (1 - offload_overlap): without streamed
    // weights (the other use of pcie_efficiency) only that ratio is determined, not its two factors
    const auto exposed = [g](const Coefficients& k) { return (1 - k.offload_overlap) / k.for_gpu(g).pcie_efficiency; };
    CHECK(exposed(c) == doctest::Approx(exposed(truth)).epsilon(0.01));
  }
  CHECK(c.fragmentation == doctest::Approx(0.12).epsilon(0.01));
  CHECK(c.dequant("int8-sdnq-hadamard") == doctest::Approx(20).epsilon(0.01));
  CHECK(c.launch_s == doctest::Approx(2e-6).epsilon(0.01));
  // Matmul and elementwise work both grow with the tokens (the matmul's size share and the two
  // families' FLOP-to-byte ratios tell them apart only weakly: the fit settles within a few percent of
  // each efficiency, of backward_factor and of the quantized time factor, at a cost of 1e-7). What the
  // runs do determine is each part of every run's step: forward, backward, recompute and exposed
  // transfers, each within 1% of the truth's, and the step and peak within 0.1%.
  for (const PreparedRun& r : set.runs) {
    CAPTURE(r.run->id);
    const RunPrediction fit = predict_run(set, r, c, kGiB), exact = predict_run(set, r, truth, kGiB);
    REQUIRE(fit.supported);
    const TimeBreakdown &a = fit.full.time, &b = exact.full.time;
    CHECK(a.forward_s == doctest::Approx(b.forward_s).epsilon(0.01));
    CHECK(a.backward_s == doctest::Approx(b.backward_s).epsilon(0.01));
    CHECK(a.recompute_s == doctest::Approx(b.recompute_s).epsilon(0.01));
    CHECK(a.transfer_s == doctest::Approx(b.transfer_s).epsilon(0.01));
    CHECK(fit.step_s == doctest::Approx(exact.step_s).epsilon(0.001));
    CHECK(fit.peak_gib == doctest::Approx(exact.peak_gib).epsilon(0.001));
  }
}

TEST_CASE("leave-one-family-out gives the same predictions on one thread and on three") {
  Coefficients truth;
  truth.launch_s = 2e-6;
  const PreparedSet set = prepare(synthetic(truth));
  FitOptions opt;
  opt.max_iterations = 20;
  opt.threads = 1;
  const AccuracyReport one = accuracy_leave_family_out(set, truth, opt);
  opt.threads = 3;
  const AccuracyReport three = accuracy_leave_family_out(set, truth, opt);
  REQUIRE(one.predictions.size() == set.runs.size());
  REQUIRE(three.predictions.size() == set.runs.size());
  for (std::size_t i = 0; i < set.runs.size(); ++i) {
    CHECK(one.predictions[i].peak_gib == three.predictions[i].peak_gib);
    CHECK(one.predictions[i].step_s == three.predictions[i].step_s);
  }
}

TEST_CASE("fitting synthetic runs recovers an activation scale per block kind within 1%") {
  Coefficients truth;
  truth.activation_scale["mmdit_double.attention"] = 1.6;
  truth.activation_scale["mmdit_double.ffn"] = 1.6;
  truth.activation_scale["mmdit_double.rest"] = 1.6;
  truth.activation_scale["dit_cross.attention"] = 0.7;
  truth.activation_scale["dit_cross.ffn"] = 0.7;
  truth.activation_scale["dit_cross.rest"] = 0.7;
  truth.fragmentation = 0.1;
  const PreparedSet set = prepare(synthetic(truth));
  // one scale per kind (all sides tied): attention offload separates attention from the rest,
  // so fit the attention side and tie the others to it through the data's symmetry
  FitOptions opt;
  opt.fit_gpu = opt.fit_precision = opt.fit_reserve = false;
  opt.prior_weight = 0;
  opt.robust_scale = 10;
  opt.max_iterations = 200;
  const FitResult fr = fit_coefficients(set, Coefficients{}, opt);
  CHECK(fr.coef.scale("mmdit_double", "attention") == doctest::Approx(1.6).epsilon(0.01));
  CHECK(fr.coef.scale("dit_cross", "attention") == doctest::Approx(0.7).epsilon(0.01));
  CHECK(fr.coef.fragmentation == doctest::Approx(0.1).epsilon(0.01));
}

TEST_CASE("an OOM run pushes its predicted peak above the usable memory, a completed run below it") {
  Dataset d;
  d.origin = "oom-test";
  MeasuredRun oom = run("sd3", "5090", "none", 1024, 1024, 1);
  // batch 4: the analyzer now counts what PyTorch saves (no 2d "rest" per token), so batch 3 no
  // longer sits where the bounded global factors can move it across the 5090's usable memory
  oom.batch = 4;
  oom.status = "oom";
  oom.id = "oom#1";
  d.runs.push_back(oom);
  // a completed run of the same family (families with no completed run are not fitted on); far
  // below its card, it adds no constraint while its peak and time residuals are switched off
  MeasuredRun ran = run("sd3", "h100", "layer", 512, 512, 1);
  ran.id = "ran#1";
  ran.peak_gib = 3;
  ran.sec_per_step = 1;
  d.runs.push_back(ran);
  const PreparedSet set = prepare(d);
  Coefficients start;
  start.fragmentation = 0;
  const RunPrediction before = predict_run(set, set.runs[0], start, kGiB);
  REQUIRE(before.peak_gib < before.usable_gib);  // starts as an unsafe fit
  FitOptions opt;
  opt.fit_gpu = opt.fit_precision = opt.fit_activation = opt.fit_reserve = false;  // only global factors move
  opt.peak_weight = opt.time_weight = 0;
  const FitResult fr = fit_coefficients(set, start, opt);
  const RunPrediction after = predict_run(set, set.runs[0], fr.coef, kGiB);
  CHECK(after.peak_gib >= after.usable_gib * 0.999);
  CHECK_FALSE(after.fits);

  // the mirror: a run that completed but is predicted above the card comes down to it
  Dataset d2 = d;
  d2.runs[0].status = "ok";
  d2.runs[0].peak_gib = 1;  // the peak residual is switched off: only the hinge acts
  d2.runs[0].sec_per_step = 1;
  const PreparedSet set2 = prepare(d2);
  Coefficients big;
  big.fragmentation = 0.5;
  FitOptions o2 = opt;
  const RunPrediction hi = predict_run(set2, set2.runs[0], big, kGiB);
  REQUIRE(hi.peak_gib > hi.usable_gib);
  const FitResult f2 = fit_coefficients(set2, big, o2);
  CHECK(predict_run(set2, set2.runs[0], f2.coef, kGiB).peak_gib <= hi.usable_gib * 1.001);
}

TEST_CASE("a run measured OOM but predicted to fit counts as an unsafe fit") {
  Dataset d;
  d.origin = "score-test";
  MeasuredRun a = run("sd3", "h100", "layer", 1024, 1024, 1);
  a.status = "oom";
  a.id = "a";
  MeasuredRun b = run("sd3", "h100", "none", 1024, 1024, 1);
  b.id = "b";
  b.peak_gib = 10;
  b.sec_per_step = 1;
  d.runs = {a, b};
  const PreparedSet set = prepare(d);
  const AccuracyReport rep = accuracy_in_sample(set, Coefficients{}, kGiB);
  CHECK(rep.overall.confusion.fit_oom == 1);  // layer at 1024px batch 1 fits an H100 in the model
  CHECK(rep.overall.confusion.fit_ok == 1);
  CHECK(rep.overall.decision_groups == 1);
  // none is predicted faster than layer and both fit: the choice is b, which ran and is the fastest
  CHECK(rep.overall.decision_good == 1);
}

TEST_CASE("dataset errors name the file, the run and the field") {
  using nlohmann::json;
  const std::string missing = error_of([] {
    parse_dataset_json(json::parse(R"({"runs": [{"gpu": "h100", "mode": "layer", "status": "ok"}]})"), "my-runs.json");
  });
  CHECK(missing.find("my-runs.json") != std::string::npos);
  CHECK(missing.find("run 1") != std::string::npos);
  CHECK(missing.find("'model'") != std::string::npos);

  const std::string no_peak = error_of([] {
    parse_dataset_json(json::parse(R"([{"model": "sd3", "gpu": "h100", "mode": "layer", "status": "ok", "sec_per_step": 1}])"),
                       "x.json");
  });
  CHECK(no_peak.find("'peak_gib'") != std::string::npos);

  const std::string bad_status = error_of([] {
    parse_dataset_json(json::parse(R"([{"model": "sd3", "gpu": "h100", "mode": "layer", "status": "crashed"}])"), "x.json");
  });
  CHECK(bad_status.find("'status'") != std::string::npos);
  CHECK(bad_status.find("crashed") != std::string::npos);

  const std::string csv = error_of([] {
    parse_dataset_csv("model,gpu,mode,status,sec_per_step,peak_gib\nsd3,h100,layer,ok,fast,7.7\n", "mine.csv");
  });
  CHECK(csv.find("mine.csv: line 2") != std::string::npos);
  CHECK(csv.find("'sec_per_step'") != std::string::npos);
  CHECK(csv.find("fast") != std::string::npos);

  const std::string unknown = error_of([] {
    parse_dataset_json(json::parse(R"([{"model": "sd3", "gpu": "h100", "mode": "layer", "status": "oom", "peek_gib": 3}])"), "x.json");
  });
  CHECK(unknown.find("'peek_gib'") != std::string::npos);
}

TEST_CASE("a CSV row and a JSON row describe the same run") {
  const Dataset c = parse_dataset_csv(
      "model,gpu,width,height,batch,precision,mode,status,sec_per_step,peak_gib\n"
      "sd3,h100,1024,1024,3,int8-sdnq-hadamard,seg2-stride4,ok,1.049,19.02\n",
      "runs.csv");
  REQUIRE(c.runs.size() == 1);
  CHECK(c.runs[0].peak_gib == doctest::Approx(19.02));
  CHECK(c.runs[0].batch == 3);
  const PreparedSet set = prepare(c);
  REQUIRE(set.runs[0].family != nullptr);
  CHECK(set.runs[0].setup.sdnq_hadamard);
  CHECK(set.runs[0].setup.base_precision == "int8-sdnq");
  CHECK(set.runs[0].plan.supported);
}

TEST_CASE("the shipped dataset holds every sweep case and resolves every model") {
  const Dataset& d = builtin_dataset();
  CHECK(d.runs.size() == 892);
  const PreparedSet set = prepare(d);
  for (const auto& r : set.runs) {
    CAPTURE(r.run->id);
    CHECK(r.family != nullptr);
  }
}

TEST_CASE("accuracy --anchor predicts each setup group from its measured anchor cell") {
  Dataset d;
  d.origin = "anchor-test";
  MeasuredRun layer = run("sd3", "h100", "layer", 1024, 1024, 1);
  layer.id = "layer";
  layer.peak_gib = 10;
  layer.sec_per_step = 1;
  MeasuredRun none = run("sd3", "h100", "none", 1024, 1024, 1);
  none.id = "none";
  none.peak_gib = 30;
  none.sec_per_step = 0.8;
  MeasuredRun lonely = run("sd3", "l40s", "none", 1024, 1024, 1);  // its group has no layer run
  lonely.id = "lonely";
  lonely.peak_gib = 30;
  lonely.sec_per_step = 2;
  d.runs = {layer, none, lonely};
  const PreparedSet set = prepare(d);
  std::vector<RunPrediction> base;
  for (const auto& r : set.runs) base.push_back(predict_run(set, r, Coefficients{}, kGiB));
  const RangeModel no_bands;
  const auto bands = [&](const std::string&) -> const RangeModel& { return no_bands; };
  const std::vector<RunPrediction> a = ranged_runs(set, base, {Schedule::parse("layer")}, bands, kGiB);
  // the anchor cell is its own measurement; the other cell is what fit_anchor makes of it
  CHECK(a[0].measured_anchor);
  CHECK(a[0].peak_gib == doctest::Approx(10));
  CHECK(a[0].step_s == doctest::Approx(1));
  const Anchor expected = fit_anchor({{parse_measurement("layer:1:10"), base[0].full}});
  const Prediction none_anchored = apply_anchor(expected, Schedule::parse("none"), base[1].full, kGiB);
  CHECK(a[1].anchored);
  CHECK_FALSE(a[1].measured_anchor);
  CHECK(a[1].peak_gib == doctest::Approx(none_anchored.peak_vram_bytes / kGiB));
  CHECK(a[1].step_s == doctest::Approx(none_anchored.step_time_s));
  CHECK_FALSE(a[2].modelled);  // no anchor in its group: left out
  // anchored on both: none is measured too
  const std::vector<RunPrediction> b =
      ranged_runs(set, base, {Schedule::parse("layer"), Schedule::parse("none")}, bands, kGiB);
  CHECK(b[1].measured_anchor);
  CHECK(b[1].peak_gib == doctest::Approx(30));
  // residuals leave the anchor cells out: only `none` of the first group (and `lonely` unanchored)
  const Residuals res = residuals(set, a);
  REQUIRE(res.peak.size() == 1);
  CHECK(res.peak.begin()->second.size() == 1);
  CHECK(res.peak.begin()->second[0].log_ratio == doctest::Approx(std::log(30 / a[1].peak_gib)));
  CHECK(std::string(res.peak.begin()->second[0].parts.stratum) == "none");
}

TEST_CASE("accuracy --by family prints the signed median error of a cell and the part carrying it") {
  Dataset d;
  d.origin = "cells-test";
  MeasuredRun a = run("sd3", "h100", "layer", 1024, 1024, 1);
  a.id = "a";
  a.peak_gib = 10;
  a.sec_per_step = 2;
  MeasuredRun b = a;
  b.id = "b";
  b.gpu = "l40s";
  MeasuredRun c = a;  // another schedule: its own cell
  c.id = "c";
  c.mode = "none";
  d.runs = {a, b, c};
  const PreparedSet set = prepare(d);
  auto made_up = [&](std::size_t i, double weights_gib, double activation_gib, double forward_s, double backward_s) {
    RunPrediction p;
    p.prepared = &set.runs[i];
    p.modelled = p.supported = true;
    p.full.memory.weights_bytes = weights_gib * kGiB;
    p.full.memory.activation_peak_bytes = activation_gib * kGiB;
    p.full.time.forward_s = forward_s;
    p.full.time.backward_s = backward_s;
    p.peak_gib = weights_gib + activation_gib;
    p.step_s = forward_s + backward_s;
    return p;
  };
  // a: 12 GiB (3 weights + 9 activations) against 10 measured: +20%; 3 s against 2 s: +50%
  // b:  9 GiB (3 + 6): -10%; 1 s (0.25 forward + 0.75 backward): -50%
  // the cell's medians of two: (+20% - 10%) / 2 = +5% peak, (+50% - 50%) / 2 = 0% time;
  // activation shares 9/12 = 0.75 and 6/9 = 0.667, median 0.708; backward shares 2/3 and 0.75, median 0.708
  // c: 4 GiB (3 + 1) against 10: -60%, carried by the weights (3/4)
  const AccuracyReport rep =
      score(set, {made_up(0, 3, 9, 1, 2), made_up(1, 3, 6, 0.25, 0.75), made_up(2, 3, 1, 1, 1)}, kGiB, "test");
  const std::vector<ErrorCell> cells = error_cells(set, rep);
  REQUIRE(cells.size() == 2);
  const ErrorCell& layer = cells[0].schedule == "layer" ? cells[0] : cells[1];
  const ErrorCell& none = cells[0].schedule == "layer" ? cells[1] : cells[0];
  CHECK(layer.n == 2);
  CHECK(layer.peak_error == doctest::Approx(0.05));
  CHECK(layer.time_error == doctest::Approx(0.0));
  CHECK(layer.peak_carrier == "activations");
  CHECK(layer.peak_carrier_share == doctest::Approx((0.75 + 2.0 / 3) / 2));
  CHECK(layer.time_carrier == "backward");
  CHECK(layer.time_carrier_share == doctest::Approx((0.75 + 2.0 / 3) / 2));
  CHECK(layer.time_error_by_gpu.at("h100") == doctest::Approx(0.5));
  CHECK(layer.time_error_by_gpu.at("l40s") == doctest::Approx(-0.5));
  CHECK(none.peak_error == doctest::Approx(-0.6));
  CHECK(none.peak_carrier == "weights");
}

TEST_CASE("score models: conformal quantiles of the normalized score, by stratum where the residuals support one") {
  // parts of the level only: u = sigma_level for every run, so the range factor exp(z u) is the
  // log ratio's own order statistic, whatever sigma the fit finds
  auto res = [](double r, const char* stratum) {
    ScoredResidual x;
    x.log_ratio = r;
    x.parts.total = 10;
    x.parts.x = {10, 0, 0, 0};
    x.parts.stratum = stratum;
    return x;
  };
  ResidualsByFamily by;
  // "none": 40 residuals -0.19 .. 0.20 over 5 families (k = -19..20, family k mod 5);
  // "per-block": 40 residuals -0.019 .. 0.020 likewise; "segmented": -0.5 and 0.5 in each family (10)
  for (int k = -19; k <= 20; ++k) {
    const std::string fam = "f" + std::to_string((k + 20) % 5);
    by[fam].push_back(res(k / 100.0, "none"));
    by[fam].push_back(res(k / 1000.0, "per-block"));
  }
  for (int f = 0; f < 5; ++f) {
    by["f" + std::to_string(f)].push_back(res(-0.5, "segmented"));
    by["f" + std::to_string(f)].push_back(res(0.5, "segmented"));
  }
  const ScoreModel m = fit_score_model(by, "", RangeKind::Peak, 0.9);
  REQUIRE(m.sigma.size() == 4);
  const double u = m.sigma[0];
  RangeParts p;
  p.total = 10;
  p.x = {10, 0, 0, 0};
  CHECK(m.u(p) == doctest::Approx(u));
  // n = 40: ranks floor(41 * 0.05) = 2 and ceil(41 * 0.95) = 39 -> -0.18 .. 0.19
  REQUIRE(m.strata.count("none"));
  CHECK(m.strata.at("none").log_lo * u == doctest::Approx(-0.18));
  CHECK(m.strata.at("none").log_hi * u == doctest::Approx(0.19));
  CHECK(m.strata.at("none").families == 5);
  CHECK(m.strata.at("per-block").log_lo * u == doctest::Approx(-0.018));
  CHECK(m.strata.at("per-block").log_hi * u == doctest::Approx(0.019));
  // 10 segmented residuals: no quantiles of its own; the pooled 90: ranks floor(91 * 0.05) = 4 and
  // ceil(91 * 0.95) = 87, inside the five -0.5 and the five 0.5
  CHECK_FALSE(m.strata.count("segmented"));
  p.stratum = "segmented";
  CHECK(m.band(p.stratum).log_lo * u == doctest::Approx(-0.5));
  CHECK(m.band(p.stratum).log_hi * u == doctest::Approx(0.5));
  CHECK(m.all.n == 90);
  // leaving family f0 out: 32 "none" residuals, under the 40 a stratum needs
  const ScoreModel lofo = fit_score_model(by, "f0", RangeKind::Peak, 0.9);
  CHECK_FALSE(lofo.strata.count("none"));
  CHECK(lofo.all.n == 72);
}

TEST_CASE("a part held by the runs of fewer than five families takes the largest fitted sigma") {
  // peak parts level, weights, training state, activations: every run holds weights and activations;
  // training state (half the peak) only in families f0..f2's 30 runs, 3 families under the 5 a part
  // needs, so its sigma is not fitted: it is the larger of the weights' and the activations'
  ResidualsByFamily by;
  for (int f = 0; f < 6; ++f)
    for (int k = 0; k < 10; ++k) {
      ScoredResidual x;
      x.log_ratio = ((k % 2) ? 1 : -1) * (0.02 + 0.01 * k);
      x.parts.total = 10;
      x.parts.x = {10, f < 3 ? 2.0 : 5.0, f < 3 ? 5.0 : 0.0, f < 3 ? 3.0 : 5.0};
      x.parts.stratum = "none";
      by["f" + std::to_string(f)].push_back(x);
    }
  const ScoreModel m = fit_score_model(by, "", RangeKind::Peak, 0.9);
  REQUIRE(m.sigma.size() == 4);
  CHECK(m.sigma[2] == doctest::Approx(std::max(m.sigma[1], m.sigma[3])));
  // the same runs spread over six families: seen, and fitted on its own
  ResidualsByFamily six;
  int i = 0;
  for (const auto& [fam, v] : by)
    for (ScoredResidual x : v) {
      x.parts.x = {10, 2.0, ((i / 6) % 2) ? 5.0 : 0.0, 3.0};
      six["g" + std::to_string(i++ % 6)].push_back(x);
    }
  const ScoreModel s6 = fit_score_model(six, "", RangeKind::Peak, 0.9);
  CHECK(s6.sigma[2] != doctest::Approx(std::max(s6.sigma[1], s6.sigma[3])));
}

TEST_CASE("score tails are set on families left out: a family beyond every other one opens its end to the extremes") {
  // coverage 0.9: a = 0.05 per end; 10 families of 10 runs (n = 100), the promise checked as
  // beyond + 1 <= a (n + 1) = 5.05, i.e. at most 4 runs of the families left out beyond an end
  using Scores = std::vector<std::pair<std::string, std::pair<std::string, double>>>;
  Scores same;
  for (int f = 0; f < 10; ++f)
    for (int z = 1; z <= 10; ++z) same.push_back({"f" + std::to_string(f), {"s", static_cast<double>(z)}});
  // every family holds the scores 1..10: leaving one out, the others' 90 scores are nine copies of
  // 1..10; the upper end at a = 0.05 is rank ceil(91 * 0.95) = 87 of 90 -> 10, the lower rank
  // floor(91 * 0.05) = 4 -> 1: no run of the family left out falls beyond, the tails stay at a
  const TailLevels t = family_tail_levels(same, 0.9);
  CHECK(t.lo == doctest::Approx(0.05));
  CHECK(t.hi == doctest::Approx(0.05));
  // family f9 measured 20 on all its runs, above every other family: left out, its ten runs lie
  // above the others' largest score (10) at every tail probability, 10 > 4, so the upper end takes
  // the extreme (tail 0); its runs are never below, and leaving out any other family the lower end
  // (rank 4 of eight copies of 1..10 and ten 20s -> 1) holds all of them: the lower tail stays a
  Scores outlier;
  for (const auto& x : same)
    outlier.push_back(x.first == "f9" ? std::make_pair(x.first, std::make_pair(std::string("s"), 20.0)) : x);
  const TailLevels o = family_tail_levels(outlier, 0.9);
  CHECK(o.lo == doctest::Approx(0.05));
  CHECK(o.hi == doctest::Approx(0.0));
}

TEST_CASE("accuracy counts how often the ranges hold the measurement, overall and per stratum") {
  Dataset d;
  d.origin = "coverage-test";
  const char* modes[] = {"none", "none", "layer", "layer"};
  for (int i = 0; i < 4; ++i) {
    MeasuredRun r = run("sd3", "h100", modes[i], 1024, 1024, 1);
    r.id = "r" + std::to_string(i);
    r.peak_gib = 20;
    r.sec_per_step = 2;
    d.runs.push_back(r);
  }
  const PreparedSet set = prepare(d);
  std::vector<RunPrediction> preds;
  // ranges set by hand: peak ranges 18-22 (holds 20), 21-25 (misses), 19-21 (holds), 10-19.9 (misses);
  // time ranges all 1-3 (hold 2)
  const double lo[] = {18, 21, 19, 10}, hi[] = {22, 25, 21, 19.9};
  for (int i = 0; i < 4; ++i) {
    RunPrediction p = predict_run(set, set.runs[i], Coefficients{}, kGiB);
    REQUIRE(p.supported);
    p.has_range = true;
    p.peak_gib = (lo[i] + hi[i]) / 2;
    p.peak_lo_gib = lo[i];
    p.peak_hi_gib = hi[i];
    p.step_s = 2;
    p.step_lo_s = 1;
    p.step_hi_s = 3;
    p.verdict = FitVerdict::Fits;
    p.peak_parts.stratum = i < 2 ? "none" : "per-block";
    // fixed share (weights and training state over the peak): 0.5 for the first two, 0.8 for the others
    p.full.memory = MemoryBreakdown{};
    p.full.peak_vram_bytes = 10 * kGiB;
    p.full.memory.weights_bytes = (i < 2 ? 4.0 : 7.0) * kGiB;
    p.full.memory.optimizer_bytes = 1 * kGiB;
    p.full.memory.activation_peak_bytes = (i < 2 ? 5.0 : 2.0) * kGiB;
    preds.push_back(p);
  }
  const AccuracyReport rep = score(set, preds, kGiB, "test");
  CHECK(rep.overall.ranges.peak_n == 4);
  CHECK(rep.overall.ranges.peak_covered == 2);
  CHECK(rep.overall.ranges.time_covered == 4);
  CHECK(rep.ranges_by_stratum.at("none").peak_covered == 1);
  CHECK(rep.ranges_by_stratum.at("per-block").peak_n == 2);
  CHECK(rep.ranges_by_stratum.at("per-block").peak_covered == 1);
  // hi / lo medians: none 22/18 = 1.2222 and 25/21 = 1.1905 -> 1.2063; time 3 everywhere
  CHECK(rep.ranges_by_stratum.at("none").peak_hi_lo_median == doctest::Approx((22.0 / 18 + 25.0 / 21) / 2));
  CHECK(rep.overall.ranges.time_hi_lo_median == doctest::Approx(3));
  // the same runs by fixed share: 0.5 falls in 40-60%, 0.8 in 75-90%
  CHECK(std::string(fixed_share_band(preds[0].full)) == "40-60%");
  CHECK(std::string(fixed_share_band(preds[2].full)) == "75-90%");
  CHECK(rep.ranges_by_fixed_share.size() == 2);
  CHECK(rep.ranges_by_fixed_share.at("40-60%").peak_n == 2);
  CHECK(rep.ranges_by_fixed_share.at("40-60%").peak_covered == 1);
  CHECK(rep.ranges_by_fixed_share.at("75-90%").peak_covered == 1);
  CHECK(rep.ranges_by_fixed_share.at("75-90%").peak_hi_lo_median == doctest::Approx((21.0 / 19 + 19.9 / 10) / 2));
}

TEST_CASE("a checkpointed run measured at its setup's none peak did not engage: left out of the range residuals") {
  Dataset d;
  d.origin = "engaged-test";
  // one setup (sd3, H100, bf16): none measured 30.0 GiB; layer 30.1 GiB (within 0.5% of none: freed
  // nothing); interval2 18 GiB (freed 40%); a second layer run on the L40S setup at 30.0 GiB whose
  // setup has no none run (nothing to compare with: kept)
  const char* modes[] = {"none", "layer", "interval2", "layer"};
  const char* gpus[] = {"h100", "h100", "h100", "l40s"};
  const double peaks[] = {30.0, 30.1, 18.0, 30.0};
  for (int i = 0; i < 4; ++i) {
    MeasuredRun r = run("sd3", gpus[i], modes[i], 1024, 1024, 1);
    r.id = "r" + std::to_string(i);
    r.peak_gib = peaks[i];
    r.sec_per_step = 2;
    d.runs.push_back(r);
  }
  const PreparedSet set = prepare(d);
  // predictions by hand: none 30 GiB, the checkpointed runs 10 GiB (the model says they free 2/3)
  std::vector<RunPrediction> preds;
  for (int i = 0; i < 4; ++i) {
    RunPrediction p = predict_run(set, set.runs[i], Coefficients{}, kGiB);
    REQUIRE(p.supported);
    p.peak_gib = i == 0 ? 30 : 10;
    p.step_s = 2;
    p.peak_parts.total = p.peak_gib * kGiB;
    p.peak_parts.x = {p.peak_gib * kGiB, 0, 0, 0};
    p.time_parts.total = 2;
    p.time_parts.x = {2, 0, 0, 0};
    preds.push_back(p);
  }
  const std::vector<bool> off = checkpointing_not_engaged(set, preds);
  CHECK(off == std::vector<bool>{false, true, false, false});
  const Residuals res = residuals(set, preds);
  REQUIRE(res.peak.count("sd3"));
  // none, interval2 and the L40S layer run stay: log(30/30), log(18/10), log(30/10)
  REQUIRE(res.peak.at("sd3").size() == 3);
  CHECK(res.peak.at("sd3")[0].log_ratio == doctest::Approx(0));
  CHECK(res.peak.at("sd3")[1].log_ratio == doctest::Approx(std::log(1.8)));
  CHECK(res.peak.at("sd3")[2].log_ratio == doctest::Approx(std::log(3.0)));
  CHECK(res.time.at("sd3").size() == 3);
  // a model that predicts the layer run flat too (within 10% of none: 28 GiB) got it right: kept
  preds[1].peak_gib = 28;
  CHECK(checkpointing_not_engaged(set, preds) == std::vector<bool>{false, false, false, false});
}

TEST_CASE("a none run slower than its setup's layer run stalled on something else: no time residual") {
  Dataset d;
  d.origin = "stall-test";
  // none 3.0 s against layer 2.0 s (layer does all of none's work and more): 3.0 > 1.05 x 2.0;
  // on the L40S setup none 2.05 s against layer 2.0 s is within 5%: kept
  const char* modes[] = {"none", "layer", "none", "layer"};
  const char* gpus[] = {"h100", "h100", "l40s", "l40s"};
  const double secs[] = {3.0, 2.0, 2.05, 2.0};
  for (int i = 0; i < 4; ++i) {
    MeasuredRun r = run("sd3", gpus[i], modes[i], 1024, 1024, 1);
    r.id = "s" + std::to_string(i);
    r.peak_gib = i % 2 ? 10 : 30;
    r.sec_per_step = secs[i];
    d.runs.push_back(r);
  }
  const PreparedSet set = prepare(d);
  CHECK(none_slower_than_layer(set) == std::vector<bool>{true, false, false, false});
  std::vector<RunPrediction> preds;
  for (int i = 0; i < 4; ++i) {
    RunPrediction p = predict_run(set, set.runs[i], Coefficients{}, kGiB);
    REQUIRE(p.supported);
    p.peak_gib = i % 2 ? 10 : 30;  // the model agrees with every peak: no run is "not engaged"
    p.step_s = 2;
    preds.push_back(p);
  }
  const Residuals res = residuals(set, preds);
  CHECK(res.peak.at("sd3").size() == 4);
  REQUIRE(res.time.at("sd3").size() == 3);
  CHECK(res.time.at("sd3")[0].log_ratio == doctest::Approx(0));                 // h100 layer 2 / 2
  CHECK(res.time.at("sd3")[1].log_ratio == doctest::Approx(std::log(2.05 / 2)));  // l40s none
}
