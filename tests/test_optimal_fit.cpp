// The optimal plan whose range fits (advisor.cpp, fit_optimal): a bounded set of searches at each
// kind of run's cap, and the same answer as searching the whole candidate set without cutoffs.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <limits>

#include "advisor_request.hpp"
#include "segadvise/calibration/ranges.hpp"
#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/constants.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/optimal.hpp"

using namespace segadvise;

namespace {

// What `segadvise --model stable-cascade-c --gpu l40s` plans: the example setup, the shipped
// coefficients and 90% bands, no headroom (a datacenter card without display outputs).
Context stable_cascade_on_l40s() {
  AdvisorRequest r = test::request_for("stable-cascade-c", "l40s");
  r.ranges = default_ranges();
  r.headroom_bytes = 0;
  return Context(r);
}

// The kind of run of a plan, as the advisor ranges it: per-block, segmented (a call longer than one
// block), offload (host copies of saved inputs or attention activations)
Schedule kind_of(const Plan& plan) {
  Schedule s;
  bool any = false;
  for (const Segment& g : plan.segments) {
    if (g.mode == BlockMode::Keep) continue;
    any = true;
    if (g.end - g.begin > 1) s.interval = 2;
    if (g.offload_to_host) s.backend = Backend::Unsloth;
  }
  s.checkpointing = any;
  s.offload_attention = plan.offload_attention;
  return s;
}

FitVerdict verdict(const Context& ctx, const OptimalPlan& p) {
  return ranged_prediction(ctx.ranges, Anchor{}, kind_of(p.plan), p.prediction, ctx.headroom_bytes).fit;
}

}  // namespace

TEST_CASE("Stable Cascade C on an L40S: the plan that fits takes at most 12 searches, not one per block") {
  const Context ctx = stable_cascade_on_l40s();
  REQUIRE(ctx.chain.blocks.size() == 192);
  const OptimalView v = compute_optimal(ctx, advise_schedules(ctx), false);
  REQUIRE(v.optimal.found);
  CHECK(v.verdict == FitVerdict::Fits);
  // Keeping every block does not fit here (nor does the point-budget plan), so the fit searches
  // ran. Their bound is structural: 3 kinds of run (per-block, segmented, offload), one cap each,
  // and at each cap the 4 subsets of {host copies, calls longer than one block}: 3 x 4 = 12,
  // whatever the 192 blocks (a loop stepping the budget down a block's bytes at a time could take
  // ~192 steps).
  CHECK(v.fit_searches >= 1);
  CHECK(v.fit_searches <= 12);
  // the plan's peak is within the card's usable memory with its whole range
  const RangedPrediction r =
      ranged_prediction(ctx.ranges, Anchor{}, kind_of(v.optimal.plan), v.optimal.prediction, ctx.headroom_bytes);
  CHECK(r.peak_vram_bytes.hi + ctx.headroom_bytes <= v.optimal.prediction.usable_vram_bytes);
}

TEST_CASE("Stable Cascade C on an L40S: the fitting plan is the fastest of every candidate searched without cutoffs") {
  const Context ctx = stable_cascade_on_l40s();
  const OptimalView v = compute_optimal(ctx, advise_schedules(ctx), false);
  REQUIRE(v.optimal.found);
  REQUIRE(v.verdict == FitVerdict::Fits);
  // Brute force over the same candidate set: the kinds' caps, then at each cap every
  // subset of the features the caps allow there, each searched with no cutoff and ranged as it is.
  const PlanOptimizer full(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, optimal_options(ctx));
  const OptimalPlan point = full.solve();
  REQUIRE(point.found);
  REQUIRE(verdict(ctx, point) == FitVerdict::Borderline);  // the case the fit searches are for
  // the caps are those of plans whose parts other than activations are keeping every block's
  Plan keep_all;
  for (int i = 0; i < static_cast<int>(ctx.chain.blocks.size()); ++i)
    keep_all.segments.push_back(Segment{i, i + 1, BlockMode::Keep, false});
  const std::array<double, 3> cap = optimal_fit_caps(ctx, full.predict_plan(keep_all));
  // the kinds' bands differ (the offload band is the widest): every cap is below the point limit
  for (double c : cap) CHECK(c < point.prediction.usable_vram_bytes - ctx.headroom_bytes);
  MESSAGE("caps (GiB): per-block " << cap[0] / kGiB << ", segmented " << cap[1] / kGiB << ", offload " << cap[2] / kGiB);
  double best_s = std::numeric_limits<double>::infinity();
  int fitting = 0;
  for (double c : cap) {
    if (c <= 0) continue;
    const bool host_allowed = cap[2] >= c, segments_allowed = cap[1] >= c;
    for (int host = 0; host <= int(host_allowed); ++host)
      for (int segments = 0; segments <= int(segments_allowed); ++segments) {
        OptimalOptions o = optimal_options(ctx);
        o.allow_offload = o.allow_attention_offload = host == 1;
        if (segments == 0) o.max_segment_blocks = 1;
        const PlanOptimizer opt(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, o);
        const OptimalPlan p = opt.solve_for_peak(c);
        if (!p.found || verdict(ctx, p) != FitVerdict::Fits) continue;
        ++fitting;
        best_s = std::min(best_s, p.prediction.step_time_s);
      }
  }
  REQUIRE(fitting > 0);
  CHECK(v.optimal.prediction.step_time_s == doctest::Approx(best_s).epsilon(1e-9));
  // and never slower than the first plan found whose range fits by stepping the budget down from the
  // point plan's by its own upper-end ratio (the tightening this replaces: 1.68 s at 27.9 GiB here)
  const RangedPrediction pr =
      ranged_prediction(ctx.ranges, Anchor{}, kind_of(point.plan), point.prediction, ctx.headroom_bytes);
  const double limit = point.prediction.usable_vram_bytes - ctx.headroom_bytes;
  const OptimalPlan stepped = full.solve_for_peak(point.prediction.peak_vram_bytes * limit / pr.peak_vram_bytes.hi);
  REQUIRE(stepped.found);
  CHECK(v.optimal.prediction.step_time_s <= stepped.prediction.step_time_s);
}

TEST_CASE("with an incumbent the optimizer finds only plans at least as fast, the same optimum otherwise") {
  const Context ctx = stable_cascade_on_l40s();
  OptimalOptions o = optimal_options(ctx);
  o.allow_offload = o.allow_attention_offload = false;
  o.max_segment_blocks = 1;  // one-block calls: a small search
  const PlanOptimizer opt(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, o);
  const double budget = 34 * kGiB;
  const OptimalPlan free = opt.solve_for_peak(budget);
  REQUIRE(free.found);
  // a cutoff above the optimum: the same plan and time
  const OptimalPlan above = opt.solve_for_peak(budget, free.prediction.step_time_s * 1.01);
  REQUIRE(above.found);
  CHECK(above.prediction.step_time_s == doctest::Approx(free.prediction.step_time_s).epsilon(1e-12));
  // at the optimum itself (ties are kept): found
  CHECK(opt.solve_for_peak(budget, free.prediction.step_time_s).found);
  // below it: nothing is that fast
  CHECK_FALSE(opt.solve_for_peak(budget, free.prediction.step_time_s * 0.99).found);
}
