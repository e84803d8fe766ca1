// Anchoring on measured runs, 90% ranges and the three-valued verdict (costmodel/anchor.hpp).
// Predictions are built by hand so every figure below can be checked with a pencil.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/planner/measured_text.hpp"
#include "segadvise/planner/planner.hpp"

using namespace segadvise;

namespace {

// fixed part: weights + 1 GiB adapters/gradients/optimizer each split as given; activations as
// activation peak + fragmentation; compute_s is forward (0.4) + backward (0.6), recompute_s the
// recompute pass on top
Prediction made(double weights_gib, double other_fixed_gib, double act_gib, double frag_gib, double compute_s,
                double host_s, double transfer_s, double usable_gib = 40, double recompute_s = 0) {
  Prediction p;
  p.supported = true;
  p.memory.weights_bytes = weights_gib * kGiB;
  p.memory.trainable_bytes = other_fixed_gib * kGiB;
  p.memory.activation_peak_bytes = act_gib * kGiB;
  p.memory.fragmentation_bytes = frag_gib * kGiB;
  p.peak_vram_bytes = (weights_gib + other_fixed_gib + act_gib + frag_gib) * kGiB;
  p.usable_vram_bytes = usable_gib * kGiB;
  p.time.forward_s = compute_s * 0.4;
  p.time.backward_s = compute_s * 0.6;
  p.time.recompute_s = recompute_s;
  p.time.overhead_s = host_s;
  p.time.transfer_s = transfer_s;
  p.step_time_s = compute_s + recompute_s + host_s + transfer_s;
  return p;
}

AnchorOptions clean_options() {
  AnchorOptions o;
  o.fixed_sigma = 0.1;
  o.activation_sigma = 0.5;
  o.compute_sigma = 0.4;
  o.recompute_sigma = 0.8;
  o.host_sigma = 0.4;
  o.transfer_sigma = 0.6;
  return o;
}

double gib(double bytes) { return bytes / kGiB; }

}  // namespace

TEST_CASE("a measurement is parsed from SCHEDULE:SEC:GIB and SCHEDULE:oom") {
  const Measurement m = parse_measurement("layer:1.85:16.2");
  CHECK(m.schedule.name() == "layer");
  CHECK_FALSE(m.oom);
  CHECK(m.step_time_s == doctest::Approx(1.85));
  CHECK(gib(m.peak_vram_bytes) == doctest::Approx(16.2));
  CHECK(parse_measurement("interval2+unsloth:2:20").schedule.name() == "interval2+unsloth");
  const Measurement o = parse_measurement("none:oom");
  CHECK(o.oom);
  CHECK(o.schedule.name() == "none");
}

TEST_CASE("every malformed --measured form is bad input naming it") {
  for (const char* text : {"layer", "layer:1.85", "layer:1.85:16.2:3", ":1:2", "layr:1:2", "layer:0:16",
                           "layer:-1:16", "layer:nan:16", "layer:1:inf", "layer:abc:16", "layer:1.5x:16", "layer:1:0",
                           "layer:1:-3", "layer::16", "layer:oops", "interval0:1:2"}) {
    CAPTURE(text);
    try {
      parse_measurement(text);
      FAIL("accepted");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find(std::string("--measured '") + text + "'") != std::string::npos);
    }
  }
}

TEST_CASE("a measurement that contradicts the setup is bad input") {
  // resident weights 10 GiB counted: a 4.9 GiB peak is under half of them (the default floor): not this setup
  AnchorPoint low{parse_measurement("layer:1:4.9"), made(10, 2, 4, 0, 1, 0.5, 0)};
  CHECK_THROWS_WITH_AS(fit_anchor({low}),
                       doctest::Contains("below 50% of this setup's resident weights (10.00 GiB, at least 5.00 GiB)"),
                       InputError);
  AnchorOptions strict;
  strict.weights_floor = 1.0;
  AnchorPoint under{parse_measurement("layer:1:9"), made(10, 2, 4, 0, 1, 0.5, 0)};
  CHECK_THROWS_WITH_AS(fit_anchor({under}, strict), doctest::Contains("below 100% of this setup's resident weights"),
                       InputError);
  AnchorPoint unsupported{parse_measurement("interval2:1:20"), Prediction{}};
  unsupported.predicted.supported = false;
  unsupported.predicted.reason = "this family ignores interval";
  CHECK_THROWS_WITH_AS(fit_anchor({unsupported}), doctest::Contains("does not run schedule 'interval2'"), InputError);
}

TEST_CASE("a measured peak under the counted weights, above the floor, scales the fixed part down") {
  // counted: fixed 12 GiB (10 weights + 2 other), activations 4; measured 9 GiB: surprise -7.
  // sigma^2 v^2: fixed 0.01 * 144 = 1.44, activations 0.25 * 16 = 4, W = 5.44.
  // k_fixed = 1 - 7 * 0.01 * 12 / 5.44 = 0.845588, k_act = 1 - 7 * 0.25 * 4 / 5.44 = -0.286765, under the
  // 0.05 floor: the activations keep 0.2 GiB and the fixed part takes the rest, (9 - 0.2) / 12 = 0.733333
  const Anchor a = fit_anchor({{parse_measurement("layer:1:9"), made(10, 2, 4, 0, 1, 0.5, 0)}}, clean_options());
  CHECK(a.peak_anchored);
  CHECK(a.activation_scale == doctest::Approx(0.05));
  CHECK(a.fixed_scale == doctest::Approx(8.8 / 12));
  const Prediction self = apply_anchor(a, Schedule::parse("none"), made(10, 2, 8, 0, 1, 0.5, 0), kGiB);
  CHECK(gib(self.memory.weights_bytes) == doctest::Approx(10 * 8.8 / 12));
  CHECK(gib(self.peak_vram_bytes) == doctest::Approx(8.8 + 8 * 0.05));
}

TEST_CASE("two runs of one schedule that contradict each other are bad input naming both") {
  const Prediction p = made(8, 2, 9, 1, 1.0, 0.5, 0);
  const AnchorPoint oom{parse_measurement("layer:oom"), p}, ok{parse_measurement("layer:1:16"), p};
  CHECK_THROWS_WITH_AS(fit_anchor({oom, ok}),
                       doctest::Contains("--measured 'layer:oom' and 'layer:1:16' contradict each other"), InputError);
  // 16 vs 20 GiB: 20% apart; 1 s vs 2 s: 50% apart
  const AnchorPoint high{parse_measurement("layer:1:20"), p}, slow{parse_measurement("layer:2:16"), p};
  CHECK_THROWS_WITH_AS(fit_anchor({ok, high}), doctest::Contains("peaks of 16.00 GiB and 20.00 GiB"), InputError);
  CHECK_THROWS_WITH_AS(fit_anchor({ok, slow}), doctest::Contains("step times"), InputError);
  // repeated runs within noise (3% peak, 10% time) and runs of other schedules are consistent
  const AnchorPoint again{parse_measurement("layer:1.1:16.5"), p}, none{parse_measurement("none:oom"), p};
  CHECK_NOTHROW(fit_anchor({ok, again, none}));
}

TEST_CASE("one measured schedule shares its surprise by the model's uncertainty of each part") {
  // measured: fixed 10 GiB (8 weights + 2 other), activations 10 GiB (9 + 1 fragmentation), model 20 GiB,
  // measured 22.6 GiB: surprise 2.6. Weights sigma^2 v^2: fixed 0.01 * 100 = 1, activations
  // 0.25 * 100 = 25, W = 26. k_fixed = 1 + 2.6 * 0.01 * 10 / 26 = 1.01, k_act = 1 + 2.6 * 0.25 * 10 / 26
  // = 1.25 (10.1 + 12.5 = 22.6).
  // time: compute 1.0 s, host 0.5 s, measured 2.0 s: surprise 0.5; sigma^2 v^2 = 0.16 and 0.04, W = 0.2;
  // k_compute = 1 + 0.5 * 0.16 * 1 / 0.2 = 1.4, k_host = 1 + 0.5 * 0.16 * 0.5 / 0.2 = 1.2 (1.4 + 0.6 = 2.0)
  const AnchorPoint pt{parse_measurement("layer:2.0:22.6"), made(8, 2, 9, 1, 1.0, 0.5, 0)};
  const Anchor a = fit_anchor({pt}, clean_options());
  CHECK(a.peak_anchored);
  CHECK(a.time_anchored);
  CHECK(a.fixed_scale == doctest::Approx(1.01));
  CHECK(a.activation_scale == doctest::Approx(1.25));
  CHECK(a.compute_scale == doctest::Approx(1.4));
  CHECK(a.host_scale == doctest::Approx(1.2));
  CHECK(a.transfer_scale == doctest::Approx(1.0));  // nothing transferred in the measured schedule
  // another schedule of the setup: fixed 10, activations 4 -> 10.1 + 5 = 15.1 GiB; compute 0.8 s,
  // host 0.5 s, transfer 0.3 s -> 1.12 + 0.6 + 0.3 = 2.02 s
  const Prediction other = made(8, 2, 4, 0, 0.8, 0.5, 0.3);
  const Prediction q = apply_anchor(a, Schedule::parse("seg2-stride4"), other, kGiB);
  CHECK(gib(q.peak_vram_bytes) == doctest::Approx(15.1));
  CHECK(q.step_time_s == doctest::Approx(2.02));
  CHECK(q.fits);  // 15.1 + 1 <= 40
  // the measured schedule itself is the measurement
  const Prediction self = apply_anchor(a, Schedule::parse("layer"), pt.predicted, kGiB);
  CHECK(gib(self.peak_vram_bytes) == doctest::Approx(22.6));
  CHECK(self.step_time_s == doctest::Approx(2.0));
}

TEST_CASE("a measured layer run's surprise goes to the recompute pass apart, and none follows") {
  // layer, predicted: fixed 10 GiB (8 weights + 2 adapters), activations 2 GiB; forward + backward 0.8 s,
  // recompute 0.4 s, host 0.4 s (model 1.6 s, 12 GiB). Measured 1.96 s, 12.6 GiB.
  // time: surprise 0.36; sigmas forward+backward 0.25, recompute 0.5, host 0.25:
  //   sigma^2 v^2 = 0.0625 * 0.64 = 0.04, 0.25 * 0.16 = 0.04, 0.0625 * 0.16 = 0.01; W = 0.09
  //   k_compute   = 1 + 0.36 * 0.0625 * 0.8 / 0.09 = 1.2
  //   k_recompute = 1 + 0.36 * 0.25 * 0.4 / 0.09 = 1.4
  //   k_host      = 1 + 0.36 * 0.0625 * 0.4 / 0.09 = 1.1   (0.96 + 0.56 + 0.44 = 1.96)
  // peak: surprise 0.6; sigmas fixed 0.1, activations 0.5: 0.01 * 100 = 1, 0.25 * 4 = 1, W = 2
  //   k_fixed = 1 + 0.6 * 0.01 * 10 / 2 = 1.03, k_act = 1 + 0.6 * 0.25 * 2 / 2 = 1.15 (10.3 + 2.3 = 12.6)
  AnchorOptions o = clean_options();
  o.compute_sigma = 0.25;
  o.recompute_sigma = 0.5;
  o.host_sigma = 0.25;
  const Prediction layer = made(8, 2, 2, 0, 0.8, 0.4, 0, 40, 0.4);
  const Anchor a = fit_anchor({{parse_measurement("layer:1.96:12.6"), layer}}, o);
  CHECK(a.compute_scale == doctest::Approx(1.2));
  CHECK(a.recompute_scale == doctest::Approx(1.4));
  CHECK(a.host_scale == doctest::Approx(1.1));
  CHECK(a.fixed_scale == doctest::Approx(1.03));
  CHECK(a.activation_scale == doctest::Approx(1.15));
  // none: the same forward + backward and host, no recompute, activations 12 GiB:
  //   time 0.8 * 1.2 + 0.4 * 1.1 = 1.40 s; peak 10 * 1.03 + 12 * 1.15 = 10.3 + 13.8 = 24.1 GiB.
  // (One scale over forward + backward + recompute would have put 1.27 on all of it: 1.016 + 0.436 = 1.452 s.)
  const Prediction none = apply_anchor(a, Schedule::parse("none"), made(8, 2, 12, 0, 0.8, 0.4, 0), kGiB);
  CHECK(none.step_time_s == doctest::Approx(1.40));
  CHECK(none.time.recompute_s == 0);
  CHECK(gib(none.peak_vram_bytes) == doctest::Approx(24.1));
  // interval2 recomputes half as much (0.2 s): 0.96 + 0.2 * 1.4 + 0.44 = 1.68 s
  const Prediction i2 = apply_anchor(a, Schedule::parse("interval2"), made(8, 2, 7, 0, 0.8, 0.4, 0, 40, 0.2), kGiB);
  CHECK(i2.step_time_s == doctest::Approx(1.68));
  CHECK(i2.time.recompute_s == doctest::Approx(0.28));
}

TEST_CASE("a surprise that would push a part below the floor is carried by the other parts") {
  // fixed 10, activations 10, measured 12: the split would give k_act = 1 - 8 * 0.25 * 10 / 26 = 0.23;
  // with a floor of 0.5 the activations keep 5 GiB and the fixed part takes the rest: 12 - 5 = 7 -> 0.7
  AnchorOptions o = clean_options();
  o.min_scale = 0.5;
  const Anchor a = fit_anchor({{parse_measurement("layer:1.5:12"), made(8, 2, 10, 0, 1.0, 0.5, 0)}}, o);
  CHECK(a.activation_scale == doctest::Approx(0.5));
  CHECK(a.fixed_scale == doctest::Approx(0.7));
}

TEST_CASE("two measured schedules separate the fixed part from the activations exactly") {
  // layer: fixed 10, activations 4, measured 17; none: fixed 10, activations 20, measured 41:
  // 16 k_act = 41 - 17 -> k_act = 1.5; 10 k_fixed = 17 - 6 -> k_fixed = 1.1.
  // time: layer compute 1.2 s + host 0.5 s measured 2.0 s; none compute 1.0 s + host 0.5 s measured
  // 1.75 s: 0.2 k_c = 0.25 -> k_c = 1.25; 0.5 k_h = 1.75 - 1.25 -> k_h = 1.0
  const AnchorPoint layer{parse_measurement("layer:2.0:17"), made(9, 1, 4, 0, 1.2, 0.5, 0)};
  const AnchorPoint none{parse_measurement("none:1.75:41"), made(9, 1, 20, 0, 1.0, 0.5, 0)};
  AnchorOptions exact;
  exact.ridge = 1e-12;
  const Anchor a = fit_anchor({layer, none}, exact);
  CHECK(a.activation_scale == doctest::Approx(1.5).epsilon(1e-4));
  CHECK(a.fixed_scale == doctest::Approx(1.1).epsilon(1e-4));
  CHECK(a.compute_scale == doctest::Approx(1.25).epsilon(1e-4));
  CHECK(a.host_scale == doctest::Approx(1.0).epsilon(1e-4));
  // interval2: activations 10 -> 11 + 15 = 26 GiB; compute 1.1 s -> 1.375 + 0.5 = 1.875 s
  const Prediction q = apply_anchor(a, Schedule::parse("interval2"), made(9, 1, 10, 0, 1.1, 0.5, 0), kGiB);
  CHECK(gib(q.peak_vram_bytes) == doctest::Approx(26).epsilon(1e-4));
  CHECK(q.step_time_s == doctest::Approx(1.875).epsilon(1e-4));
}

TEST_CASE("an out-of-memory measurement is a lower bound on that schedule's peak") {
  // layer: fixed 10, activations 4, measured 15.2: surprise 1.2, sigma^2 v^2 = 1 and 0.25 * 16 = 4,
  // W = 5: k_fixed = 1 + 1.2 * 0.01 * 10 / 5 = 1.024, k_act = 1 + 1.2 * 0.25 * 4 / 5 = 1.24.
  // none (activations 20) would then be 10.24 + 24.8 = 35.04 GiB, under the 44 GiB it ran out of:
  // k_act rises to (44 - 10.24) / 20 = 1.688; interval2 (activations 12): 10.24 + 20.256 = 30.496
  const AnchorPoint layer{parse_measurement("layer:1:15.2"), made(9, 1, 4, 0, 1, 0.5, 0, 44)};
  const AnchorPoint none{parse_measurement("none:oom"), made(9, 1, 20, 0, 0.8, 0.5, 0, 44)};
  const Anchor a = fit_anchor({layer, none}, clean_options());
  CHECK(a.raised_by_oom);
  CHECK(a.fixed_scale == doctest::Approx(1.024));
  CHECK(a.activation_scale == doctest::Approx(1.688));
  const Prediction i2 = apply_anchor(a, Schedule::parse("interval2"), made(9, 1, 12, 0, 0.9, 0.5, 0, 44), 0);
  CHECK(gib(i2.peak_vram_bytes) == doctest::Approx(30.496));
  CHECK(gib(apply_anchor(a, Schedule::parse("layer"), layer.predicted, 0).peak_vram_bytes) == doctest::Approx(15.2));
  // the OOM schedule itself never fits, even with no headroom
  const RangedPrediction r = ranged_prediction(RangeModel{}, a, Schedule::parse("none"), none.predicted, 0);
  CHECK(r.fit == FitVerdict::DoesNotFit);
  CHECK(gib(r.peak_vram_bytes.lo) >= 44);
  // an OOM already above the usable memory changes nothing: none at 60 activations -> 10.24 + 74.4
  const AnchorPoint big{parse_measurement("none:oom"), made(9, 1, 60, 0, 0.8, 0.5, 0, 44)};
  const Anchor b = fit_anchor({layer, big}, clean_options());
  CHECK_FALSE(b.raised_by_oom);
  CHECK(b.activation_scale == doctest::Approx(1.24));
}

TEST_CASE("the verdict is fits, borderline or does-not-fit by the range against usable memory and headroom") {
  const double u = 40 * kGiB, h = kGiB;
  CHECK(fit_verdict({30 * kGiB, 38 * kGiB}, u, h) == FitVerdict::Fits);        // 38 + 1 <= 40
  CHECK(fit_verdict({30 * kGiB, 39 * kGiB}, u, h) == FitVerdict::Fits);        // 39 + 1 == 40
  CHECK(fit_verdict({35 * kGiB, 41 * kGiB}, u, h) == FitVerdict::Borderline);  // 41 + 1 > 40, 35 + 1 <= 40
  CHECK(fit_verdict({39 * kGiB, 45 * kGiB}, u, h) == FitVerdict::Borderline);  // 39 + 1 == 40
  CHECK(fit_verdict({39.5 * kGiB, 45 * kGiB}, u, h) == FitVerdict::DoesNotFit);  // 39.5 + 1 > 40
  CHECK(to_string(FitVerdict::DoesNotFit) == "does-not-fit");
}

TEST_CASE("split-conformal bands take the (n+1)-corrected order statistics and hold the prediction") {
  // 19 residuals -0.09 .. 0.09: n + 1 = 20, lower rank floor(20 * 0.05) = 1, upper ceil(20 * 0.95) = 19
  std::vector<double> r;
  for (int i = 1; i <= 19; ++i) r.push_back((i - 10) / 100.0);
  const Band b = conformal_band(r, 0.9);
  CHECK(b.n == 19);
  CHECK(b.log_lo == doctest::Approx(-0.09));
  CHECK(b.log_hi == doctest::Approx(0.09));
  // 39 residuals: lower rank floor(40 * 0.05) = 2, upper ceil(40 * 0.95) = 38
  std::vector<double> s;
  for (int i = 1; i <= 39; ++i) s.push_back((i - 20) / 100.0);
  const Band c = conformal_band(s, 0.9);
  CHECK(c.log_lo == doctest::Approx(-0.18));
  CHECK(c.log_hi == doctest::Approx(0.18));
  // all predictions too low (residuals 0.1 .. 0.3): the band still starts at the prediction
  const Band d = conformal_band({0.1, 0.2, 0.3}, 0.9);
  CHECK(d.log_lo == 0);
  CHECK(d.log_hi == doctest::Approx(0.3));
}

TEST_CASE("ranges are the anchored bands when a measurement set the level, the plain ones otherwise") {
  RangeModel m;  // no sigma: u = 1, one factor for every run
  m.peak.all = {std::log(0.8), std::log(1.3), 100};
  m.time.all = {std::log(0.7), std::log(1.5), 100};
  m.peak_anchored.all = {std::log(0.95), std::log(1.1), 100};
  m.time_anchored.all = {std::log(0.9), std::log(1.2), 100};
  // unanchored 20 GiB, 2 s on 40 usable: peak 16 .. 26, time 1.4 .. 3.0; 26 + 1 <= 40 fits
  const Prediction p = made(8, 2, 10, 0, 1.5, 0.5, 0);
  const RangedPrediction r = ranged_prediction(m, Anchor{}, Schedule::parse("interval2"), p, kGiB);
  CHECK(gib(r.peak_vram_bytes.lo) == doctest::Approx(16));
  CHECK(gib(r.peak_vram_bytes.hi) == doctest::Approx(26));
  CHECK(r.step_time_s.lo == doctest::Approx(1.4));
  CHECK(r.step_time_s.hi == doctest::Approx(3.0));
  CHECK(r.fit == FitVerdict::Fits);
  // 34 GiB unanchored: 27.2 .. 44.2 -> borderline; the same point anchored: 32.3 .. 37.4 -> fits
  const Prediction big = made(8, 2, 24, 0, 1.5, 0.5, 0);
  CHECK(ranged_prediction(m, Anchor{}, Schedule::parse("none"), big, kGiB).fit == FitVerdict::Borderline);
  Anchor a;  // an anchor that changes no scale, measured on layer
  a.peak_anchored = a.time_anchored = true;
  a.points.push_back({parse_measurement("layer:2:20"), p});
  const RangedPrediction ra = ranged_prediction(m, a, Schedule::parse("none"), big, kGiB);
  CHECK(gib(ra.peak_vram_bytes.lo) == doctest::Approx(32.3));
  CHECK(gib(ra.peak_vram_bytes.hi) == doctest::Approx(37.4));
  CHECK(ra.fit == FitVerdict::Fits);
  // the lower end never goes under the resident weights: weights 30 GiB of a 34 GiB peak, band 0.8
  // would say 27.2; the range starts at 30
  const Prediction heavy = made(30, 2, 2, 0, 1.5, 0.5, 0);
  CHECK(gib(ranged_prediction(m, Anchor{}, Schedule::parse("none"), heavy, kGiB).peak_vram_bytes.lo) ==
        doctest::Approx(30));
  // the measured schedule's range is its measurement
  const RangedPrediction self = ranged_prediction(m, a, Schedule::parse("layer"), p, kGiB);
  CHECK(self.measured);
  CHECK(gib(self.peak_vram_bytes.lo) == doctest::Approx(20));
  CHECK(gib(self.peak_vram_bytes.hi) == doctest::Approx(20));
}

TEST_CASE("a ranges file round-trips and a broken one is bad input naming the field") {
  RangeModel m;
  m.peak.all = {-0.2, 0.3, 10};
  m.peak.sigma = {0.05, 0.1, 0.2, 0.5};
  m.peak.strata["none"] = {-1.5, 2.0, 60};
  m.time_anchored.all = {-0.1, 0.05, 7};
  m.source = "test";
  const RangeModel back = range_model_from_json(to_json(m), "ranges.json");
  CHECK(back.peak.all.log_lo == doctest::Approx(-0.2));
  CHECK(back.peak.sigma.size() == 4);
  CHECK(back.peak.sigma[3] == doctest::Approx(0.5));
  CHECK(back.peak.strata.at("none").log_hi == doctest::Approx(2.0));
  CHECK(back.time_anchored.all.log_hi == doctest::Approx(0.05));
  CHECK(back.time_anchored.all.n == 7);
  CHECK(back.time.sigma.empty());
  nlohmann::json j = to_json(m);
  j.erase("time");
  CHECK_THROWS_WITH_AS(range_model_from_json(j, "ranges.json"), doctest::Contains("'time'"), InputError);
  j = to_json(m);
  j["peak"]["log_lo"] = 0.5;
  CHECK_THROWS_WITH_AS(range_model_from_json(j, "ranges.json"), doctest::Contains("log_lo must be <= 0"), InputError);
  j = to_json(m);
  j["time"]["strata"]["eager"] = {{"log_lo", -1.0}, {"log_hi", 1.0}, {"n", 50}};
  CHECK_THROWS_WITH_AS(range_model_from_json(j, "ranges.json"),
                       doctest::Contains("time.strata.eager': not a kind of run (none, per-block, segmented, "
                                         "offload, streamed, compiled)"),
                       InputError);
  j = to_json(m);
  j["peak"]["sigma"]["gradients"] = 0.1;
  CHECK_THROWS_WITH_AS(range_model_from_json(j, "ranges.json"), doctest::Contains("peak.sigma.gradients"), InputError);
  j = to_json(m);
  j["peak"]["sigma"]["activations"] = -1;
  CHECK_THROWS_WITH_AS(range_model_from_json(j, "ranges.json"), doctest::Contains("peak.sigma.activations"), InputError);
  j = to_json(m);
  j["peak"]["strata"]["sometimes"] = j["peak"]["strata"]["none"];
  CHECK_THROWS_WITH_AS(range_model_from_json(j, "ranges.json"), doctest::Contains("peak.strata.sometimes"), InputError);
  j = to_json(m);
  j["coverage"] = 1.5;
  CHECK_THROWS_WITH_AS(range_model_from_json(j, "ranges.json"), doctest::Contains("'coverage'"), InputError);
}

// ---- planner: advise goes by the verdict ----------------------------------------------------

namespace {

// a candidate with a hand-set peak, time and verdict (as put_ranges would leave it)
Candidate verdict_candidate(const std::string& name, double peak_gib, double time_s, FitVerdict v) {
  Candidate c;
  c.schedule = Schedule::parse(name);
  c.prediction.supported = true;
  c.prediction.peak_vram_bytes = peak_gib * kGiB;
  c.prediction.usable_vram_bytes = 40 * kGiB;
  c.prediction.step_time_s = time_s;
  c.prediction.fits = peak_gib + 1 <= 40;
  c.ranged = true;
  c.fit = v;
  return c;
}

Advice advise_over(const std::vector<Candidate>& cs) {
  std::vector<Schedule> schedules;
  for (const auto& c : cs) schedules.push_back(c.schedule);
  return advise(schedules, [&](const Schedule& s) {
    for (const auto& c : cs)
      if (c.schedule.name() == s.name()) return c;
    return Candidate{};
  }, kGiB);
}

}  // namespace

TEST_CASE("advise recommends the fastest schedule that fits with confidence, not a faster borderline one") {
  // none is fastest and fits by its point (38 + 1 <= 40) but its range says borderline: interval2 wins
  const Advice a = advise_over({verdict_candidate("none", 38, 1.0, FitVerdict::Borderline),
                                verdict_candidate("interval2", 30, 1.2, FitVerdict::Fits),
                                verdict_candidate("layer", 20, 1.4, FitVerdict::Fits)});
  REQUIRE(a.recommended >= 0);
  CHECK(a.candidates[a.recommended].schedule.name() == "interval2");
  CHECK(a.borderline == -1);
}

TEST_CASE("when only borderline schedules remain advise names the one to measure") {
  const Advice a = advise_over({verdict_candidate("none", 45, 1.0, FitVerdict::DoesNotFit),
                                verdict_candidate("interval2", 39, 1.2, FitVerdict::Borderline),
                                verdict_candidate("layer", 38.5, 1.4, FitVerdict::Borderline)});
  CHECK(a.recommended == -1);
  REQUIRE(a.borderline >= 0);
  CHECK(a.candidates[a.borderline].schedule.name() == "interval2");  // the fastest borderline
  // shortfall: the smallest peak + headroom over usable: 38.5 + 1 - 40 < 0 -> 0
  CHECK(a.shortfall_bytes == 0);
}

TEST_CASE("the borderline schedule to measure is the fastest whose point prediction fits") {
  // none (1.0 s) is borderline but its point is over the card (45 + 1 > 40); interval2 (1.2 s) is
  // borderline with its point under it (36 + 1 <= 40): measuring interval2 can settle "fits"
  const Advice a = advise_over({verdict_candidate("none", 45, 1.0, FitVerdict::Borderline),
                                verdict_candidate("interval2", 36, 1.2, FitVerdict::Borderline),
                                verdict_candidate("layer", 30, 1.4, FitVerdict::Borderline)});
  CHECK(a.recommended == -1);
  REQUIRE(a.borderline >= 0);
  CHECK(a.candidates[a.borderline].schedule.name() == "interval2");
  // when no borderline point fits, the fastest borderline one is named
  const Advice b = advise_over({verdict_candidate("none", 45, 1.0, FitVerdict::Borderline),
                                verdict_candidate("layer", 41, 1.4, FitVerdict::Borderline)});
  REQUIRE(b.borderline >= 0);
  CHECK(b.candidates[b.borderline].schedule.name() == "none");
}

TEST_CASE("measurements anchor every schedule a planner evaluates") {
  // the model: layer fixed 10 + activations 4, none 10 + 20 (GiB); layer measured at 15.2 GiB:
  // with the shipped sigmas (fixed 1.0, activations 0.3) sigma^2 v^2 = 100 and 0.09 * 16 = 1.44,
  // W = 101.44, surprise 1.2: k_fixed = 1 + 1.2 * 10 / 101.44, k_act = 1 + 1.2 * 0.09 * 4 / 101.44;
  // none = 10 k_fixed + 20 k_act = 30 + 1.2 * (100 + 0.09 * 80) / 101.44 = 31.268 GiB
  const auto eval = [](const Schedule& s) {
    Candidate c;
    c.schedule = s;
    c.prediction = made(9, 1, s.checkpointing ? 4 : 20, 0, 1.0, 0.5, 0, 44);
    return c;
  };
  const Anchor a = anchor_measurements({parse_measurement("layer:1.6:15.2")}, eval);
  Candidate none = eval(Schedule::parse("none"));
  put_ranges(none, RangeModel{}, a, kGiB);
  CHECK(gib(none.prediction.peak_vram_bytes) == doctest::Approx(30 + 1.2 * 107.2 / 101.44));
  CHECK(none.ranged);
  CHECK(none.fit == FitVerdict::Fits);  // 31.27 + 1 <= 44, empty bands: the range is the point
  Candidate layer = eval(Schedule::parse("layer"));
  put_ranges(layer, RangeModel{}, a, kGiB);
  CHECK(layer.measured);
  CHECK(gib(layer.prediction.peak_vram_bytes) == doctest::Approx(15.2));
  // a measurement of a schedule the family does not run is bad input
  const auto refuses = [&](const Schedule& s) {
    Candidate c = eval(s);
    if (s.interval > 1) c.prediction = unsupported_prediction("ignores interval");
    return c;
  };
  CHECK_THROWS_AS(anchor_measurements({parse_measurement("interval2:1:20")}, refuses), InputError);
}

TEST_CASE("an out-of-memory measurement with its need: SCHEDULE:oom:GIB") {
  const Measurement m = parse_measurement("layer:oom:21.5");
  CHECK(m.oom);
  CHECK(gib(m.oom_need_bytes) == doctest::Approx(21.5));
  CHECK_FALSE(m.oom_elsewhere);
  CHECK_THROWS_AS(parse_measurement("layer:oom:0"), InputError);
  CHECK_THROWS_AS(parse_measurement("layer:oom:x"), InputError);
  // on this card the bound is the larger of the need and the usable memory; elsewhere the need alone
  CHECK(gib(oom_lower_bound(m, 20 * kGiB)) == doctest::Approx(21.5));
  CHECK(gib(oom_lower_bound(m, 22 * kGiB)) == doctest::Approx(22));
  Measurement other = m;
  other.oom_elsewhere = true;
  CHECK(gib(oom_lower_bound(other, 78 * kGiB)) == doctest::Approx(21.5));
}

TEST_CASE("which schedules never need less memory than another") {
  auto at_least = [](const char* s, const char* x) { return needs_at_least(Schedule::parse(s), Schedule::parse(x)); };
  CHECK(at_least("layer", "layer"));
  CHECK(at_least("none", "layer"));
  CHECK(at_least("none", "seg2-stride4-offload"));
  CHECK(at_least("interval2", "layer"));   // each 1-block call lies inside a 2-block call
  CHECK(at_least("interval4", "interval2"));
  CHECK_FALSE(at_least("interval3", "interval2"));  // calls [0,3) and [2,4) overlap: no containment
  CHECK_FALSE(at_least("layer", "interval2"));
  CHECK_FALSE(at_least("layer", "none"));
  CHECK_FALSE(at_least("interval2+unsloth", "layer"));    // its saved inputs live on the host
  CHECK_FALSE(at_least("activation-offload", "layer"));  // attention offloaded
  CHECK_FALSE(at_least("seg2-stride4", "layer"));        // strided: not compared
}

TEST_CASE("an OOM with its need on another card bounds the peak from below without failing the schedule") {
  // layer: fixed 10 GiB, activations 4 on a card with 40 usable. An OOM needing 20 GiB on a smaller card:
  // k_act = (20 - 10) / 4 = 2.5; interval2 (activations 5) -> 10 + 12.5 = 22.5; layer's range starts at 20.
  Measurement m = parse_measurement("layer:oom:20");
  m.oom_elsewhere = true;
  const AnchorPoint layer{m, made(9, 1, 4, 0, 1, 0.5, 0, 40)};
  const Anchor a = fit_anchor({layer}, clean_options());
  CHECK(a.raised_by_oom);
  CHECK(a.activation_scale == doctest::Approx(2.5));
  const RangedPrediction r = ranged_prediction(RangeModel{}, a, Schedule::parse("layer"), layer.predicted, kGiB);
  CHECK(gib(r.prediction.peak_vram_bytes) == doctest::Approx(20));
  CHECK(gib(r.peak_vram_bytes.lo) == doctest::Approx(20));
  CHECK(r.fit == FitVerdict::Fits);  // 20 + 1 <= 40, the default band is the point
  // on this card the same OOM fails layer and interval2 (which needs at least as much), whatever the model says
  Measurement here = m;
  here.oom_elsewhere = false;
  const Anchor b = fit_anchor({{here, layer.predicted}}, clean_options());
  CHECK(a.activation_scale < b.activation_scale);  // raised to the usable 40: (40 - 10) / 4 = 7.5
  CHECK(b.activation_scale == doctest::Approx(7.5));
  // interval2 modelled below layer (activations 3.9 -> 10 + 29.25 = 39.25 GiB), still fails: its point and
  // lower end are raised to the 40 GiB layer was proven to exceed
  const RangedPrediction i2 = ranged_prediction(RangeModel{}, b, Schedule::parse("interval2"),
                                                made(9, 1, 3.9, 0, 1, 0.5, 0, 40), 0);
  CHECK(i2.fit == FitVerdict::DoesNotFit);
  CHECK(gib(i2.prediction.peak_vram_bytes) == doctest::Approx(40));
  CHECK(gib(i2.peak_vram_bytes.lo) == doctest::Approx(40));
  // layer+unsloth is not bounded by it: 10 + 2 * 7.5 = 25 GiB, fits
  const RangedPrediction u = ranged_prediction(RangeModel{}, b, Schedule::parse("layer+unsloth"),
                                               made(9, 1, 2, 0, 1, 0.5, 0, 40), kGiB);
  CHECK(gib(u.prediction.peak_vram_bytes) == doctest::Approx(25));
  CHECK(u.fit == FitVerdict::Fits);
}

// ---- ranges by part --------------------------------------------------------------------------

TEST_CASE("a range propagates each part's uncertainty: counted weights narrow it, activations widen it") {
  RangeModel m;
  // level 2%, weights 5%, training state 10%, activations 50%; scores within +-1.645
  m.peak.sigma = {0.02, 0.05, 0.1, 0.5};
  m.peak.all = {-1.645, 1.645, 100};
  // 80% counted weights: 16 GiB weights + 4 GiB activations = 20 GiB.
  //   u = sqrt((0.02 * 20)^2 + (0.05 * 16)^2 + (0.5 * 4)^2) / 20 = sqrt(0.16 + 0.64 + 4) / 20 = 0.109545
  //   range 20 * exp(-+1.645 * 0.109545) = 16.702 .. 23.949 GiB (x0.835 .. x1.197)
  const Prediction weights = made(16, 0, 4, 0, 1, 0.5, 0);
  const RangedPrediction a = ranged_prediction(m, Anchor{}, Schedule::parse("layer"), weights, kGiB);
  CHECK(a.peak_u == doctest::Approx(0.109545).epsilon(1e-5));
  CHECK(gib(a.peak_vram_bytes.lo) == doctest::Approx(16.702).epsilon(1e-4));
  CHECK(gib(a.peak_vram_bytes.hi) == doctest::Approx(23.949).epsilon(1e-4));
  CHECK(std::string(a.peak_parts.stratum) == "per-block");
  // all activations, the same 20 GiB: u = sqrt(0.16 + 100) / 20 = 0.50040,
  //   range 20 * exp(-+1.645 * 0.50040) = 8.781 .. 45.554 GiB
  const Prediction acts = made(0, 0, 20, 0, 1, 0.5, 0);
  const RangedPrediction b = ranged_prediction(m, Anchor{}, Schedule::parse("layer"), acts, kGiB);
  CHECK(b.peak_u == doctest::Approx(0.50040).epsilon(1e-4));
  CHECK(gib(b.peak_vram_bytes.lo) == doctest::Approx(8.781).epsilon(1e-3));
  CHECK(gib(b.peak_vram_bytes.hi) == doctest::Approx(45.554).epsilon(1e-4));
  CHECK(a.fit == FitVerdict::Fits);        // 23.95 + 1 <= 40
  CHECK(b.fit == FitVerdict::Borderline);  // 45.55 + 1 > 40 >= 8.78 + 1
  // the time: compute 1 s, host 0.5 s, no transfer; sigmas level 0, compute 0.2, host 0.6:
  //   u = sqrt((0.2 * 1)^2 + (0.6 * 0.5)^2) / 1.5 = sqrt(0.04 + 0.09) / 1.5 = 0.240370
  m.time.sigma = {0, 0.2, 0.6, 0.6};
  m.time.all = {-1, 2, 100};
  const RangedPrediction t = ranged_prediction(m, Anchor{}, Schedule::parse("layer"), weights, kGiB);
  CHECK(t.time_u == doctest::Approx(0.240370).epsilon(1e-5));
  CHECK(t.step_time_s.lo == doctest::Approx(1.5 * std::exp(-0.240370)).epsilon(1e-5));
  CHECK(t.step_time_s.hi == doctest::Approx(1.5 * std::exp(2 * 0.240370)).epsilon(1e-5));
}

TEST_CASE("a compiled step's time range is of its own kind; its peak range keeps the schedule's") {
  RangeModel m;
  m.time.sigma = {0, 0.2, 0.6, 0.6};
  m.time.all = {-2, 3, 100};               // every run's scores, compiled ones among them
  m.time.strata["per-block"] = {-1, 1, 60};  // eager per-block runs' scores
  Prediction p = made(16, 0, 4, 0, 1, 0.5, 0);
  // eager: compute 1 s, host 0.5 s -> u = 0.240370 (as above); the per-block scores -1 .. 1
  const RangedPrediction eager = ranged_prediction(m, Anchor{}, Schedule::parse("layer"), p, kGiB);
  CHECK(std::string(eager.time_parts.stratum) == "per-block");
  CHECK(eager.step_time_s.hi == doctest::Approx(1.5 * std::exp(0.240370)).epsilon(1e-5));
  // compiled: no "compiled" quantiles of its own here, so the pooled -2 .. 3 apply
  p.time.compiled = true;
  const RangedPrediction comp = ranged_prediction(m, Anchor{}, Schedule::parse("layer"), p, kGiB);
  CHECK(std::string(comp.time_parts.stratum) == "compiled");
  CHECK(std::string(comp.peak_parts.stratum) == "per-block");
  CHECK(comp.step_time_s.lo == doctest::Approx(1.5 * std::exp(-2 * 0.240370)).epsilon(1e-5));
  CHECK(comp.step_time_s.hi == doctest::Approx(1.5 * std::exp(3 * 0.240370)).epsilon(1e-5));
}

TEST_CASE("an anchored range keeps only what the measurement leaves open: the structure between schedules") {
  RangeModel m;
  m.peak_anchored.sigma = {0.01, 0.4};  // level 1%, structure 40%
  m.peak_anchored.all = {-2, 2, 100};
  m.peak_anchored.strata["none"] = {-3, 1, 60};
  // measured layer at what the model said (20 GiB: 8 weights + 2 other + 10 activations): scales 1
  const Prediction layer = made(8, 2, 10, 0, 1.5, 0.5, 0);
  Anchor a = fit_anchor({{parse_measurement("layer:2:20"), layer}}, clean_options());
  REQUIRE(a.activation_scale == doctest::Approx(1));
  // interval2 with the same activations: only the level is open, u = 0.01 -> 20 * exp(-+0.02)
  const RangedPrediction same = ranged_prediction(m, a, Schedule::parse("interval2"), layer, kGiB);
  CHECK(std::string(same.peak_parts.stratum) == "segmented");
  CHECK(same.peak_u == doctest::Approx(0.01));
  CHECK(gib(same.peak_vram_bytes.hi) == doctest::Approx(20 * std::exp(0.02)));
  // none with 24 GiB activations (34 GiB): 14 GiB differ from layer's 10:
  //   u = sqrt((0.01 * 34)^2 + (0.4 * 14)^2) / 34 = sqrt(0.1156 + 31.36) / 34 = 5.61030 / 34 = 0.165009; its own
  //   stratum's scores -3 .. 1: 34 * exp(-3 u) .. 34 * exp(u) = 20.7 .. 40.1 GiB
  const Prediction none = made(8, 2, 24, 0, 1.2, 0.5, 0);
  const RangedPrediction big = ranged_prediction(m, a, Schedule::parse("none"), none, kGiB);
  CHECK(big.peak_u == doctest::Approx(0.165009).epsilon(1e-5));
  CHECK(gib(big.peak_vram_bytes.lo) == doctest::Approx(34 * std::exp(-3 * 0.165009)).epsilon(1e-6));
  CHECK(gib(big.peak_vram_bytes.hi) == doctest::Approx(34 * std::exp(0.165009)).epsilon(1e-6));
}

TEST_CASE("the least upper factor bounds every unanchored peak range's upper end") {
  RangeModel m;
  m.peak.sigma = {0.02, 0.05, 0.1, 0.5};
  m.peak.all = {-1, 1.5, 100};
  m.peak.strata["none"] = {-1, 1.2, 50};
  // least u^2 = 0.02^2 + 1 / (1/0.05^2 + 1/0.1^2 + 1/0.5^2) = 0.0004 + 1 / 504 = 0.0023841; factor exp(1.2 u)
  CHECK(m.least_peak_hi_factor() == doctest::Approx(std::exp(1.2 * std::sqrt(0.0004 + 1.0 / 504))));
  for (const Prediction& p : {made(16, 0, 4, 0, 1, 0.5, 0), made(0, 0, 20, 0, 1, 0.5, 0), made(5, 5, 5, 0, 1, 0.5, 0)})
    for (const char* s : {"none", "layer", "interval2"}) {
      const RangedPrediction r = ranged_prediction(m, Anchor{}, Schedule::parse(s), p, kGiB);
      CHECK(r.peak_vram_bytes.hi >= p.peak_vram_bytes * m.least_peak_hi_factor() * (1 - 1e-12));
    }
}
