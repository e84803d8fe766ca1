// The advisor API: a request in, a report out, equal to what the cost model predicts directly.
#include <doctest/doctest.h>

#include "advisor_request.hpp"

#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/calibration/ranges.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/distributed_advice.hpp"

using namespace segadvise;

namespace {

using test::request_for;

Schedule parse(const std::string& name) { return Schedule::parse(name); }

}  // namespace

TEST_CASE("usable memory: a measured card's total minus its fitted reserve, never below zero; others by their parts") {
  GpuSpec g;
  g.id = "test";
  g.total_bytes = 24 * kGiB;
  g.driver_reserved_bytes = 0.25 * kGiB;
  g.context_bytes = 0.5 * kGiB;
  g.library_bytes = 0.25 * kGiB;
  g.allocator_margin_share = 0.01;
  Coefficients coef;
  // not measured: 24 - 0.25 - 0.5 - 0.25 - 0.01 x 24 = 22.76 GiB; the default reserve plays no part
  coef.default_gpu.reserve_bytes = 2 * kGiB;
  CHECK(usable_vram_bytes(g, coef) / kGiB == doctest::Approx(22.76));
  coef.gpu["test"].reserve_bytes = 2 * kGiB;  // measured: 24 - 2 = 22 GiB, the margin what is left of the 2
  CHECK(usable_vram_bytes(g, coef) == doctest::Approx(22 * kGiB));
  CHECK(card_overhead(g, coef).allocator_margin_bytes == doctest::Approx(1 * kGiB));
  coef.gpu["test"].reserve_bytes = 30 * kGiB;  // more reserve than memory: nothing usable
  CHECK(usable_vram_bytes(g, coef) == 0);
}

TEST_CASE("a prediction report equals the cost model's prediction for the same chain and plan") {
  const AdvisorRequest req = request_for("sd1x", "4090");
  const PredictionReport r = predict_report(req, parse("layer"));
  // the same thing by hand: analyze, realize as the trainer runs it, predict
  const BlockChain chain = analyze(*req.family, req.setup);
  const PlanResult plan = realize(*req.family, chain, parse("layer"), req.setup);
  REQUIRE(plan.supported);
  const Prediction p = predict(chain, plan.plan, req.setup, req.gpu, req.coef, req.headroom_bytes);
  CHECK(r.candidate.prediction.supported);
  CHECK(r.candidate.prediction.peak_vram_bytes == p.peak_vram_bytes);
  CHECK(r.candidate.prediction.step_time_s == p.step_time_s);
  CHECK(r.candidate.prediction.fits == p.fits);
  // far under the card: the range's upper end fits too, so the verdict agrees with the point
  CHECK(p.fits);
  CHECK(r.verdict() == FitVerdict::Fits);
  CHECK(r.context.chain.blocks.size() == chain.blocks.size());
  // usable memory in the report is the one function's answer
  CHECK(r.candidate.prediction.usable_vram_bytes == usable_vram_bytes(req.gpu, req.coef));
}

TEST_CASE("a context for another setup predicts what a fresh request for that setup does") {
  AdvisorRequest req = request_for("flux", "h100");
  const Context base(req);
  TrainingSetup bigger = req.setup;
  bigger.batch = req.setup.batch * 2;
  const Context derived = base.with_setup(bigger);
  req.setup = bigger;
  const Context fresh(req);
  const Schedule s = parse("layer");
  CHECK(evaluate(derived, s).prediction.peak_vram_bytes == evaluate(fresh, s).prediction.peak_vram_bytes);
  CHECK(evaluate(derived, s).prediction.step_time_s == evaluate(fresh, s).prediction.step_time_s);
  // the base is unchanged: a larger batch holds more activations
  CHECK(evaluate(base, s).prediction.peak_vram_bytes < evaluate(derived, s).prediction.peak_vram_bytes);
  // copies share the prepared costs of their own chain
  const Context copy = derived;
  CHECK(&copy.prepared == &derived.prepared);
  CHECK(copy.prepared.chain == &copy.chain);
}

TEST_CASE("an advice report recommends its fastest fitting candidate, and lists what would fit otherwise") {
  const AdviceReport fits = advise_report(request_for("sd1x", "h100"), AdviceOptions{});
  REQUIRE(fits.recommended() != nullptr);
  for (const Candidate& c : fits.advice.candidates)
    if (c.prediction.fits) CHECK(fits.recommended()->prediction.step_time_s <= c.prediction.step_time_s);
  CHECK(fits.alternatives.empty());

  AdvisorRequest tight = request_for("wan14b", "3090");
  tight.setup.ramtorch = false;
  const AdviceReport none = advise_report(tight, AdviceOptions{});
  CHECK(none.recommended() == nullptr);
  CHECK(none.advice.shortfall_bytes > 0);
  for (const Alternative& alt : none.alternatives) CHECK(alt.prediction.fits);
}

TEST_CASE("the trainer's rules in one place: errors, and the schedule it runs when it ignores a knob") {
  const Family& sdxl = find_family("sdxl");  // interval ignored, no stride, no backend setter
  CHECK(trainer_error(sdxl, parse("interval2")).empty());
  const auto as_run = schedule_as_run(sdxl, parse("interval2"));
  REQUIRE(as_run.has_value());
  CHECK(as_run->name() == "layer");
  CHECK_FALSE(schedule_as_run(sdxl, parse("layer")).has_value());  // every knob acts
  const Family& flux = find_family("flux");
  // stride 2 < interval 4: an error, not an ignored knob
  CHECK(trainer_error(flux, parse("seg4-stride2")).find("smaller than gradient_checkpointing_interval 4") !=
        std::string::npos);
  CHECK_FALSE(schedule_as_run(flux, parse("seg4-stride2")).has_value());
}

TEST_CASE("a check report with advice advises once, over the configured setup") {
  CheckRequest req;
  req.run = request_for("sdxl", "h100");
  req.schedule = parse("interval2");  // ignored by SDXL's trainer: runs as layer
  req.advise = true;
  const CheckReport r = check_report(req);
  CHECK_FALSE(r.candidate.prediction.supported);
  bool as_run = false;
  for (const auto& w : r.warnings) as_run |= w.find("runs this config as 'layer'") != std::string::npos;
  CHECK(as_run);
  REQUIRE(r.advice.has_value());
  CHECK(r.advice->recommended() != nullptr);
  CHECK(r.advice->context.setup.batch == req.run.setup.batch);

  req.rejections = {"the trainer stops"};
  req.advise = false;
  const CheckReport rejected = check_report(req);
  CHECK_FALSE(rejected.candidate.prediction.supported);
  CHECK(rejected.candidate.prediction.reason == "the trainer stops");
  CHECK_FALSE(rejected.advice.has_value());
}

TEST_CASE("check's verdict is the worst phase's, the training step's phase keeping the step's own range") {
  CheckRequest req;
  req.run = request_for("flux", "h100");
  // a band of exp(-0.5) .. exp(0.5) around every peak: 0.6065x .. 1.6487x
  req.run.ranges.peak.all = Band{-0.5, 0.5, 100};
  req.schedule = parse("layer");
  CheckReport r = check_report(req);
  REQUIRE(r.phases.has_value());
  REQUIRE(r.candidate.ranged);
  // nothing is kept loaded beside the model (the trainer's defaults): the step's phase is the step's range
  const PhaseResult& step = r.phases->at(Phase::TrainingStep);
  CHECK(step.peak_lo_bytes == doctest::Approx(r.candidate.peak_range_bytes.lo));
  CHECK(step.peak_hi_bytes == doctest::Approx(r.candidate.peak_range_bytes.hi));
  const double budget = r.candidate.prediction.usable_vram_bytes - r.context.headroom_bytes;
  REQUIRE(r.candidate.verdict() == FitVerdict::Fits);  // Flux under layer on an H100: far under the card
  CHECK(r.verdict() == FitVerdict::Fits);
  // a validation whose range straddles the budget makes the run borderline; one whose lower end is over
  // it, does-not-fit; --step-only judges the step alone
  PhaseResult* validation = nullptr;
  for (auto& p : r.phases->phases)
    if (p.phase == Phase::Validation) validation = &p;
  REQUIRE(validation != nullptr);
  validation->runs = true;
  validation->peak_lo_bytes = budget - kGiB;
  validation->peak_hi_bytes = budget + kGiB;
  CHECK(r.verdict() == FitVerdict::Borderline);
  validation->peak_lo_bytes = budget + kGiB;
  CHECK(r.verdict() == FitVerdict::DoesNotFit);
  r.step_only = true;
  CHECK(r.verdict() == FitVerdict::Fits);
}

TEST_CASE("advise on several GPUs searches the strategies itself and reports the best one's schedules") {
  AdvisorRequest r = request_for("flux", "h100");
  r.setup.multi_gpu.gpus_per_node = 8;
  r.setup.multi_gpu.strategy = Strategy::ddp;
  AdviceOptions searched;
  searched.search_multi_gpu = true;
  const AdviceReport a = advise_report(r, searched);
  REQUIRE(a.distributed != nullptr);
  REQUIRE(a.distributed->best >= 0);
  // the report is the best option's: its context runs that option's multi-GPU setup
  const DistributedOption& best = a.distributed->options[a.distributed->best];
  CHECK(a.context.setup.multi_gpu.strategy == best.multi_gpu.strategy);
  CHECK(a.context.setup.multi_gpu.context_parallel == best.multi_gpu.context_parallel);
  // without the search (a strategy was named), the request's own setup is advised and nothing attached
  const AdviceReport own = advise_report(r, AdviceOptions{});
  CHECK(own.distributed == nullptr);
  CHECK(own.context.setup.multi_gpu.strategy == Strategy::ddp);
  // on one GPU there is nothing to search
  const AdviceReport one = advise_report(request_for("flux", "h100"), searched);
  CHECK(one.distributed == nullptr);
}

TEST_CASE("check warns about host memory only when the machine's is known and the run needs more") {
  CheckRequest req;
  req.run = request_for("flux", "h100");
  req.schedule = parse("layer");
  const auto host_warning = [](const CheckReport& r) {
    for (const auto& w : r.warnings)
      if (w.rfind("host memory: the run needs about", 0) == 0) return true;
    return false;
  };
  CHECK_FALSE(host_warning(check_report(req)));  // unknown: 0
  req.host_memory_bytes = 1024;                  // 1 KiB: every run needs more
  const CheckReport small = check_report(req);
  REQUIRE(small.phases.has_value());
  CHECK(small.phases->host.peak_bytes > 1024);
  CHECK(host_warning(small));
  req.host_memory_bytes = 1e15;  // a petabyte
  CHECK_FALSE(host_warning(check_report(req)));
}

TEST_CASE("every report's verdict is the three-valued one: an advice, a prediction, the optimal plan") {
  const auto ranged = [](const char* gpu, double gib = 0) {
    AdvisorRequest r = request_for("flux", gpu);
    r.ranges = default_ranges();  // the shipped 90% bands
    if (gib > 0) r.gpu.total_bytes = gib * kGiB;
    return r;
  };
  const auto upper_fits = [](const Range& peak, double usable) { return peak.hi + kGiB <= usable; };
  // Flux's example on a 24 GB card: the recommendation is a schedule whose whole range fits
  const AdviceReport a = advise_report(ranged("4090"), AdviceOptions{});
  REQUIRE(a.recommended() != nullptr);
  CHECK(a.verdict() == FitVerdict::Fits);
  CHECK(upper_fits(a.recommended()->peak_range_bytes, a.recommended()->prediction.usable_vram_bytes));
  // the optimal plan by the same rule: the point budget is tightened until its range's upper end fits
  REQUIRE(a.optimal.optimal.found);
  CHECK(a.optimal.verdict == FitVerdict::Fits);
  // the same setup on a 19 GiB card: nothing fits with confidence, the best is only borderline
  const AdviceReport b = advise_report(ranged("4090", 19), AdviceOptions{});
  REQUIRE(b.recommended() == nullptr);
  REQUIRE(b.advice.borderline >= 0);
  CHECK(b.verdict() == FitVerdict::Borderline);
  const PredictionReport p = predict_report(ranged("4090", 19), b.advice.candidates[b.advice.borderline].schedule);
  CHECK(p.verdict() == FitVerdict::Borderline);
  CHECK(p.candidate.prediction.fits);  // the point fits: not a reason to say "fits"
  // with room to spare every verdict is "fits"
  const AdviceReport roomy = advise_report(ranged("h100"), AdviceOptions{});
  CHECK(roomy.verdict() == FitVerdict::Fits);
  CHECK(roomy.optimal.verdict == FitVerdict::Fits);
}
