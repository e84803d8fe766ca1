// The optimal per-block planner: block graph, exactness against brute force, and never worse than
// the trainer's uniform schedules on the shipped families.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>

#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/evaluator.hpp"
#include "segadvise/planner/plan_json.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/block_graph.hpp"
#include "segadvise/planner/front_svg.hpp"
#include "segadvise/planner/measured_text.hpp"
#include "segadvise/planner/optimal.hpp"

using namespace segadvise;

namespace {

// A family's example setup on a catalog GPU with the shipped coefficients and 1 GiB headroom (what
// `segadvise advise --model M --gpu G` plans).
Context example_context(const std::string& model, const std::string& gpu) {
  AdvisorRequest r;
  r.family = &find_family(model);
  r.setup = default_setup(*r.family);
  r.gpu = find_gpu(gpu);
  r.coef = coefficients_for("");
  return Context(r);
}

// A GPU and setup with nothing static: weights, adapters and optimizer state are 0 bytes, so the
// predicted peak VRAM is the activation peak x (1 + fragmentation).
GpuSpec test_gpu() {
  GpuSpec g;
  g.id = "test";
  g.total_bytes = 1e15;
  g.bf16_flops_per_s = 1e12;
  g.mem_bytes_per_s = 1e12;
  g.pcie_bytes_per_s = 1e10;
  return g;
}

struct Lcg {
  unsigned long long s;
  double next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(s >> 11) / 9007199254740992.0;
  }
};

// n blocks in two lists; block 2 not checkpointable, block 4 without an FFN boundary, odd blocks
// offload attention. With `skips`, blocks 0 and 1 push skip tensors that blocks n-2 and n-1 pop.
BlockChain random_chain(int n, unsigned long long seed, bool skips) {
  Lcg r{seed};
  BlockChain c;
  double stack = 0;
  const double hidden = 40;
  for (int i = 0; i < n; ++i) {
    BlockCost b;
    b.list = i < n / 2 ? "double" : "single";
    b.index = i < n / 2 ? i : i - n / 2;
    b.kind = "t";
    b.checkpointable = i != 2;
    b.has_ffn_boundary = i != 4;
    b.attention_offloadable = i % 2 == 1;
    b.saved_attention_bytes = std::round(100 + 200 * r.next());
    b.saved_ffn_bytes = std::round(100 + 200 * r.next());
    b.saved_rest_bytes = std::round(30 * r.next());
    b.ffn_input_bytes = std::round(20 + 20 * r.next());
    b.transient_bytes = std::round(50 * r.next());
    b.matmul_flops = 1e10 * (1 + r.next());
    b.ffn_matmul_flops = b.matmul_flops * 0.5;
    b.attention_flops = 1e9 * r.next();
    if (skips && i < 2) b.skip_push_bytes = 30 + 10 * i;
    if (skips && i >= n - 2) b.skip_pop_bytes = 30 + 10 * (n - 1 - i);
    b.boundary_bytes = hidden + stack;
    b.carried_skip_bytes = stack;  // as the analyzer sets it: held by the chain until popped
    stack += b.skip_push_bytes - b.skip_pop_bytes;
    c.blocks.push_back(b);
  }
  c.outside_activation_bytes = 60;
  return c;
}

struct Best {
  bool found = false;
  double step_time_s = 0;
};

// Every plan of the optimizer's space: per position a kept block, an FFN-only block (GPU or host),
// or a checkpoint call [i, e) (GPU or host) within a list; attention offload off and on.
Best brute_force(const BlockChain& chain, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef,
                 double peak_limit_bytes, int* plans_seen) {
  const int n = static_cast<int>(chain.blocks.size());
  Best best;
  Plan plan;
  std::function<void(int)> go = [&](int i) {
    if (i == n) {
      for (bool att : {false, true}) {
        plan.offload_attention = att;
        const Prediction p = predict(chain, plan, setup, gpu, coef, 0);
        ++*plans_seen;
        if (p.peak_vram_bytes <= peak_limit_bytes && (!best.found || p.step_time_s < best.step_time_s)) {
          best.found = true;
          best.step_time_s = p.step_time_s;
        }
      }
      return;
    }
    const BlockCost& b = chain.blocks[i];
    plan.segments.push_back({i, i + 1, BlockMode::Keep, false});
    go(i + 1);
    plan.segments.pop_back();
    if (!b.checkpointable) return;
    if (b.has_ffn_boundary)
      for (bool host : {false, true}) {
        plan.segments.push_back({i, i + 1, BlockMode::CheckpointFfn, host});
        go(i + 1);
        plan.segments.pop_back();
      }
    for (int e = i + 1; e <= n && chain.blocks[e - 1].checkpointable && chain.blocks[e - 1].list == b.list; ++e)
      for (bool host : {false, true}) {
        plan.segments.push_back({i, e, BlockMode::Checkpoint, host});
        go(e);
        plan.segments.pop_back();
      }
  };
  go(0);
  return best;
}

void check_against_brute_force(const BlockChain& chain) {
  const GpuSpec gpu = test_gpu();
  TrainingSetup setup;
  Coefficients coef;
  const PlanOptimizer opt(chain, setup, gpu, coef, 0);
  const double lo = opt.min_peak_vram_bytes();
  const double hi = opt.solve_for_peak(1e300).prediction.peak_vram_bytes;
  REQUIRE(lo < hi);
  // budgets below the smallest peak, between, and above the largest
  for (double f : {-0.05, 0.0, 0.03, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95, 1.0, 1.2}) {
    const double limit = lo + f * (hi - lo);
    int seen = 0;
    const Best bf = brute_force(chain, setup, gpu, coef, limit, &seen);
    const OptimalPlan o = opt.solve_for_peak(limit);
    CAPTURE(f);
    CAPTURE(limit);
    REQUIRE(o.found == bf.found);
    if (!bf.found) continue;
    CHECK(o.exact);
    CHECK(o.prediction.step_time_s == doctest::Approx(bf.step_time_s).epsilon(1e-12));
    CHECK(o.prediction.peak_vram_bytes <= limit * (1 + 1e-12));
    // the DP's own figures are the cost model's
    CHECK(o.dp_step_time_s == doctest::Approx(o.prediction.step_time_s).epsilon(1e-12));
    CHECK(o.dp_activation_peak_bytes ==
          doctest::Approx(simulate_activations(chain, o.plan, coef).peak_bytes).epsilon(1e-12));
  }
}

}  // namespace

TEST_CASE("the block graph carries skip tensors from the block that pushes them to the block that pops them") {
  // hidden state 10 bytes; block 0 pushes 4, block 1 pushes 2, block 2 pops 2, block 3 pops 4:
  // cuts before blocks 0..3 carry 10, 10+4, 10+4+2, 10+4 bytes
  BlockChain c;
  const double push[] = {4, 2, 0, 0}, pop[] = {0, 0, 2, 4}, boundary[] = {10, 14, 16, 14};
  for (int i = 0; i < 4; ++i) {
    BlockCost b;
    b.list = "blocks";
    b.index = i;
    b.skip_push_bytes = push[i];
    b.skip_pop_bytes = pop[i];
    b.boundary_bytes = boundary[i];
    c.blocks.push_back(b);
  }
  const BlockGraph g(c);
  int skips = 0;
  for (auto [e, end] = boost::edges(g.graph()); e != end; ++e) {
    const TensorEdge& t = g.graph()[*e];
    if (t.kind != EdgeKind::Skip) continue;
    ++skips;
    const auto u = boost::source(*e, g.graph()), v = boost::target(*e, g.graph());
    if (u == 1) CHECK((v == 2 && t.bytes == 2));  // last pushed, first popped
    if (u == 0) CHECK((v == 3 && t.bytes == 4));
  }
  CHECK(skips == 2);
  for (int p = 0; p < 4; ++p) CHECK(g.bytes_entering(p) == boundary[p]);
  CHECK(g.skips_entering(0) == 0);
  CHECK(g.skips_entering(2) == 2);
  CHECK(g.skip_bytes_entering(3) == 4);
}

TEST_CASE("the bytes crossing every cut of a U-Net chain are its boundary bytes, skip tensors included") {
  for (const char* model : {"kolors", "zlab-i1", "flux1"}) {
    const Context ctx = example_context(model, "h100");
    const BlockGraph g(ctx.chain);
    bool any_skip = false;
    for (int p = 0; p < g.block_count(); ++p) {
      CHECK(g.bytes_entering(p) == doctest::Approx(ctx.chain.blocks[p].boundary_bytes).epsilon(1e-12));
      any_skip = any_skip || g.skips_entering(p) > 0;
    }
    CHECK(any_skip == (std::string(model) != "flux1"));
  }
}

TEST_CASE("two blocks: the optimizer checkpoints the first and keeps the second when all-keep does not fit") {
  // Each block saves 10 bytes (rest side), boundary 1, no transient, nothing outside the blocks,
  // no fragmentation, no static memory, so peak VRAM = activation peak:
  //   keep        L = max(forward 10+0+1, backward 10+2x1) = 12, retains 10
  //   checkpoint  L = max(11, input 1 + recomputed 10 + 2) = 13, retains 1
  //   all keep: max(12, 10+12) = 22; checkpoint 0 + keep 1: max(13, 1+12) = 13;
  //   keep 0 + checkpoint 1: max(12, 10+13) = 23; both singly: 14; one call [0,2): 1+20+2 = 23
  BlockChain c;
  for (int i = 0; i < 2; ++i) {
    BlockCost b;
    b.list = "blocks";
    b.index = i;
    b.kind = "t";
    b.has_ffn_boundary = false;
    b.saved_rest_bytes = 10;
    b.boundary_bytes = 1;
    b.matmul_flops = 1e12;
    c.blocks.push_back(b);
  }
  const GpuSpec gpu = test_gpu();
  TrainingSetup setup;
  Coefficients coef;
  coef.fragmentation = 0;
  OptimalOptions o;
  o.allow_offload = false;
  const PlanOptimizer opt(c, setup, gpu, coef, 0, o);
  CHECK(opt.min_peak_vram_bytes() == doctest::Approx(13));
  const OptimalPlan roomy = opt.solve_for_peak(22);
  REQUIRE(roomy.found);
  CHECK(roomy.prediction.peak_vram_bytes == doctest::Approx(22));
  CHECK(roomy.plan.segments.size() == 1);  // the two kept blocks merge into one range
  const OptimalPlan tight = opt.solve_for_peak(21);
  REQUIRE(tight.found);
  REQUIRE(tight.plan.segments.size() == 2);
  CHECK(tight.plan.segments[0].mode == BlockMode::Checkpoint);
  CHECK(tight.plan.segments[1].mode == BlockMode::Keep);
  CHECK(tight.prediction.peak_vram_bytes == doctest::Approx(13));
  CHECK_FALSE(opt.solve_for_peak(12.9).found);
  // the one plan-JSON writer (planner/plan_json.hpp) keeps the plan's description
  CHECK(plan_to_json(tight.plan).dump() ==
        R"({"description":"optimal per-block plan: 1 of 2 blocks checkpointed in 1 calls, 1 kept",)"
        R"("offload_attention":false,"segments":[{"begin":0,"end":1,"mode":"checkpoint","offload_to_host":false},)"
        R"({"begin":1,"end":2,"mode":"keep","offload_to_host":false}]})");
}

TEST_CASE("on six blocks with every per-block choice the optimizer matches brute force at every budget") {
  for (unsigned long long seed : {1ULL, 7ULL, 42ULL}) {
    CAPTURE(seed);
    check_against_brute_force(random_chain(6, seed, false));
  }
}

TEST_CASE("with skip tensors crossing checkpoint boundaries the optimizer still matches brute force") {
  for (unsigned long long seed : {3ULL, 11ULL}) {
    CAPTURE(seed);
    check_against_brute_force(random_chain(7, seed, true));
  }
}

TEST_CASE("the optimal plan is never slower than a trainer schedule of no larger peak, on every family") {
  for (const char* gpu : {"h100", "l40s"}) {
    for (const auto& fam : builtin_families()) {
      CAPTURE(fam.id);
      // every shipped family's example setup must load: an InputError here fails the test
      const Context ctx = example_context(fam.id, gpu);
      const Advice a = advise_schedules(ctx);
      const PlanOptimizer opt(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, optimal_options(ctx));
      const OptimalPlan best = opt.solve();
      CAPTURE(gpu);
      if (a.recommended >= 0) {
        REQUIRE(best.found);
        CHECK(best.prediction.fits);
        CHECK(best.dp_step_time_s == doctest::Approx(best.prediction.step_time_s).epsilon(1e-12));
        CHECK(best.dp_activation_peak_bytes ==
              doctest::Approx(simulate_activations(ctx.chain, best.plan, ctx.coef).peak_bytes).epsilon(1e-12));
        CHECK(best.prediction.step_time_s <= a.candidates[a.recommended].prediction.step_time_s * (1 + 1e-12));
      }
      // at the peaks of up to five of the trainer's Pareto-optimal schedules, spread over the front
      std::vector<const Candidate*> front;
      for (const Candidate& c : a.candidates)
        if (c.pareto) front.push_back(&c);
      for (std::size_t k = 0; k < 5 && !front.empty(); ++k) {
        const Candidate& c = *front[k * (front.size() - 1) / 4];
        const OptimalPlan at = opt.solve_for_peak(c.prediction.peak_vram_bytes);
        CAPTURE(c.schedule.name());
        REQUIRE(at.found);
        CHECK(at.prediction.step_time_s <= c.prediction.step_time_s * (1 + 1e-12));
      }
    }
  }
}

TEST_CASE("the Pareto front of optimal plans falls in time as memory grows and its knee lies inside") {
  const Context ctx = example_context("wan2.1-14b", "l40s");
  const PlanOptimizer opt(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, optimal_options(ctx));
  const ParetoFront front = opt.pareto_front(12);
  REQUIRE(front.points.size() >= 3);
  for (std::size_t i = 1; i < front.points.size(); ++i) {
    CHECK(front.points[i].peak_vram_bytes > front.points[i - 1].peak_vram_bytes);
    CHECK(front.points[i].step_time_s < front.points[i - 1].step_time_s);
  }
  CHECK(front.knee > 0);
  CHECK(front.knee < static_cast<int>(front.points.size()) - 1);
  CHECK(front.points.front().peak_vram_bytes == doctest::Approx(opt.min_peak_vram_bytes()).epsilon(1e-9));
  // every point is an optimal plan: none faster fits under its peak (the budgets are solved side by
  // side on threads; each answer is the one-budget search's)
  for (const FrontPoint& p : front.points)
    CHECK(opt.solve_for_peak(p.peak_vram_bytes).prediction.step_time_s == doctest::Approx(p.step_time_s).epsilon(1e-12));
  CHECK(front.points.back().step_time_s == doctest::Approx(opt.solve_for_peak(1e300).prediction.step_time_s).epsilon(1e-12));

  FrontPlot plot;
  plot.title = "wan <14B>";
  plot.front = front;
  plot.marked = {{front.points[0].peak_vram_bytes, front.points[0].step_time_s, "recommended: layer"}};
  const std::string svg = front_svg(plot);
  CHECK(svg.rfind("<svg", 0) == 0);
  CHECK(svg.find("</svg>") != std::string::npos);
  CHECK(svg.find("<polyline") != std::string::npos);
  CHECK(svg.find("wan &lt;14B&gt;") != std::string::npos);
  CHECK(svg.find("knee") != std::string::npos);
}

TEST_CASE("a chain past 256 blocks gets a front of at most 8 budgets, each point a real plan") {
  // 300 blocks (longer than any shipped family): the front is held to 8 budgets (pareto_front);
  // 60 blocks keep the 16 asked for (at most: budgets on one plan give one point)
  const GpuSpec gpu = test_gpu();
  TrainingSetup setup;
  Coefficients coef;
  OptimalOptions o;
  o.max_segment_blocks = 32;  // as the advisor sets it on long chains
  const BlockChain long_chain = random_chain(300, 5, false);
  const PlanOptimizer opt(long_chain, setup, gpu, coef, 0, o);
  const ParetoFront front = opt.pareto_front(16);
  REQUIRE(front.points.size() >= 3);
  CHECK(front.points.size() <= 8);
  for (std::size_t i = 0; i < front.points.size(); ++i) {
    const Prediction p = opt.predict_plan(front.points[i].plan);
    CHECK(p.peak_vram_bytes == doctest::Approx(front.points[i].peak_vram_bytes).epsilon(1e-12));
    CHECK(p.step_time_s == doctest::Approx(front.points[i].step_time_s).epsilon(1e-12));
    if (i) CHECK(front.points[i].step_time_s < front.points[i - 1].step_time_s);
  }
  const BlockChain short_chain = random_chain(60, 5, false);
  const PlanOptimizer short_opt(short_chain, setup, gpu, coef, 0, o);
  CHECK(short_opt.pareto_front(16).points.size() > 8);
}

TEST_CASE("the memory insight rows add up to the bytes the plan frees and the time it adds") {
  const Context ctx = example_context("wan2.1-14b", "l40s");
  const PlanOptimizer opt(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, optimal_options(ctx));
  const OptimalPlan best = opt.solve();
  REQUIRE(best.found);
  Plan keep;
  for (int i = 0; i < static_cast<int>(ctx.chain.blocks.size()); ++i) keep.segments.push_back({i, i + 1, BlockMode::Keep, false});
  double freed = 0, added = 0;
  for (const InsightRow& r : opt.insight(best.plan)) {
    freed += r.gpu_bytes_saved;
    added += r.seconds_added;
  }
  const double kept_retained = simulate_activations(ctx.chain, keep, ctx.coef).retained_after_forward_bytes;
  const double plan_retained = simulate_activations(ctx.chain, best.plan, ctx.coef).retained_after_forward_bytes;
  CHECK(freed == doctest::Approx(kept_retained - plan_retained).epsilon(1e-9));
  const double keep_s = predict(ctx.chain, keep, ctx.setup, ctx.gpu, ctx.coef, 0).step_time_s;
  CHECK(added == doctest::Approx(best.prediction.step_time_s - keep_s).epsilon(1e-9));
}

namespace {

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// every block kept, except the blocks of d under its mode
Plan plan_of_decision(int n, const PlanOptimizer::Decision& d, bool attention_offload) {
  Plan p;
  p.offload_attention = attention_offload;
  for (int i = 0; i < d.begin; ++i) p.segments.push_back({i, i + 1, BlockMode::Keep, false});
  p.segments.push_back({d.begin, d.end, d.mode, d.offload});
  for (int i = d.end; i < n; ++i) p.segments.push_back({i, i + 1, BlockMode::Keep, false});
  return p;
}

}  // namespace

TEST_CASE("the optimal planner's decision costs are the evaluator's segment costs, on every family") {
  // every decision of both attention-offload settings, bit for bit: the DP prices a segment with
  // the walk predict() runs
  int compared = 0;
  for (const auto& fam : builtin_families()) {
    const Context ctx = example_context(fam.id, "l40s");
    const PlanOptimizer opt(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, optimal_options(ctx));
    const TransferRates rates = transfer_rates(ctx.prepared);
    for (bool att : {false, true}) {
      const OffloadView view = checkpointing_view(ctx.prepared, att);
      for (const auto& at : opt.decisions(att))
        for (const auto& d : at) {
          const SegmentCost c = segment_cost(ctx.prepared, view, Segment{d.begin, d.end, d.mode, d.offload});
          INFO(fam.id, " [", d.begin, ",", d.end, ") ", to_string(d.mode), d.offload ? " host" : "",
               att ? " attention offload" : "");
          CHECK(same_bits(c.working_bytes, d.local_bytes));
          CHECK(same_bits(c.retained_bytes, d.retained_bytes));
          CHECK(same_bits(segment_added_s(ctx.prepared, view, Segment{d.begin, d.end, d.mode, d.offload}, rates),
                          d.seconds));
          ++compared;
        }
    }
  }
  CHECK(compared > 10000);
}

TEST_CASE("a decision adds to the all-keep plan the time predict() adds for a plan of that decision alone") {
  // and without attention offload, the plan's activation peak is the base plus the largest
  // retained prefix and working set of its segments
  for (const char* model : {"wan2.1-14b", "sdxl", "flux1", "stable-cascade-c"}) {
    const Context ctx = example_context(model, "l40s");
    const PlanOptimizer opt(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, optimal_options(ctx));
    const int n = static_cast<int>(ctx.chain.blocks.size());
    Plan keep;
    for (int i = 0; i < n; ++i) keep.segments.push_back({i, i + 1, BlockMode::Keep, false});
    const double keep_s = predict(ctx.prepared, keep, ctx.headroom_bytes).step_time_s;
    for (bool att : {false, true}) {
      const auto& ds = opt.decisions(att);
      for (const auto& at : ds)
        for (const auto& d : at) {
          if (d.mode == BlockMode::Keep) continue;  // a plan checkpointing nothing prices offload apart
          INFO(model, " [", d.begin, ",", d.end, ") ", to_string(d.mode), d.offload ? " host" : "",
               att ? " attention offload" : "");
          const Plan plan = plan_of_decision(n, d, att);
          double added = d.seconds, retained = 0, working = 0;
          for (const Segment& s : plan.segments) {
            const PlanOptimizer::Decision& here =
                s.mode == BlockMode::Keep ? ds[s.begin][0] : d;  // the kept block's own decision
            if (s.mode == BlockMode::Keep) added += here.seconds;
            working = std::max(working, retained + here.local_bytes);
            retained += here.retained_bytes;
          }
          const Prediction p = predict(ctx.prepared, plan, ctx.headroom_bytes);
          CHECK(p.step_time_s == doctest::Approx(keep_s + added).epsilon(1e-12));
          if (!att)
            CHECK(p.memory.activation_peak_bytes ==
                  doctest::Approx(ctx.chain.outside_activation_bytes + working).epsilon(1e-12));
        }
    }
  }
}

TEST_CASE("a measured run that moves the level moves the optimal plan's predicted time and peak the same way") {
  // Wan 2.1 14B on an L40S, `layer` measured 30% slower and 10% fuller than the model says: every
  // trainer schedule's figures are anchored, and so are the optimal plan's
  AdvisorRequest r;
  r.family = &find_family("wan2.1-14b");
  r.setup = default_setup(*r.family);
  r.gpu = find_gpu("l40s");
  r.coef = coefficients_for("");
  const Context plain(r);
  const Prediction layer = evaluate(plain, Schedule::parse("layer")).prediction;
  char text[96];
  std::snprintf(text, sizeof text, "layer:%.6f:%.6f", 1.3 * layer.step_time_s, 1.1 * layer.peak_vram_bytes / kGiB);
  r.measured.push_back(parse_measurement(text));
  const Context measured(r);
  REQUIRE_FALSE(measured.anchor.points.empty());
  REQUIRE(optimal_options(measured).anchor == &measured.anchor);
  const PlanOptimizer plain_opt(plain.chain, plain.setup, plain.gpu, plain.coef, plain.headroom_bytes,
                                optimal_options(plain));
  const PlanOptimizer measured_opt(measured.chain, measured.setup, measured.gpu, measured.coef,
                                   measured.headroom_bytes, optimal_options(measured));
  // a trainer schedule nobody measured moves by the anchor
  const Schedule other = Schedule::parse("none");
  const double other_plain_s = evaluate(plain, other).prediction.step_time_s;
  const double other_measured_s = evaluate(measured, other).prediction.step_time_s;
  CHECK(other_measured_s > other_plain_s);
  // with no budget binding both pick the same plan: its figures are the anchored ones, bit for bit
  const OptimalPlan roomy_plain = plain_opt.solve_for_peak(1e300), roomy = measured_opt.solve_for_peak(1e300);
  REQUIRE(roomy_plain.found);
  REQUIRE(roomy.found);
  CHECK(plan_to_json(roomy.plan) == plan_to_json(roomy_plain.plan));
  const Prediction expected = apply_anchor_scales(measured.anchor, roomy_plain.prediction, measured.headroom_bytes);
  CHECK(same_bits(roomy.prediction.step_time_s, expected.step_time_s));
  CHECK(same_bits(roomy.prediction.peak_vram_bytes, expected.peak_vram_bytes));
  CHECK(roomy.prediction.step_time_s > roomy_plain.prediction.step_time_s);
  CHECK(roomy.prediction.peak_vram_bytes > roomy_plain.prediction.peak_vram_bytes);
  CHECK(roomy.dp_step_time_s == doctest::Approx(roomy.prediction.step_time_s).epsilon(1e-12));
  // on the card: the anchored plan fits by its anchored peak, and is no faster than the plain one
  // (a fuller level leaves it less room, a slower one makes every second count more)
  const OptimalPlan fit_plain = plain_opt.solve(), fit = measured_opt.solve();
  REQUIRE(fit_plain.found);
  REQUIRE(fit.found);
  CHECK(fit.prediction.peak_vram_bytes + measured.headroom_bytes <= fit.prediction.usable_vram_bytes * (1 + 1e-12));
  CHECK(fit.prediction.step_time_s > fit_plain.prediction.step_time_s);
  CHECK(fit.dp_step_time_s == doctest::Approx(fit.prediction.step_time_s).epsilon(1e-12));
  // the advisor's optimal view carries the anchored figures
  const OptimalView v = compute_optimal(measured, advise_schedules(measured), false);
  REQUIRE(v.optimal.found);
  CHECK(same_bits(v.optimal.prediction.step_time_s, fit.prediction.step_time_s));
}
