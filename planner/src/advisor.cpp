#include "segadvise/planner/advisor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/evaluator.hpp"
#include "segadvise/costmodel/multi_gpu.hpp"
#include "segadvise/trainers/multi_gpu_rules.hpp"
#include "segadvise/trainers/setup_rules.hpp"
#include "segadvise/trainers/card_limits.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/planner/distributed_advice.hpp"
#include "segadvise/planner/search_policy.hpp"

namespace segadvise {

namespace {

// The cost model's own prediction of a schedule on a context's state, before any anchoring.
template <class S>
Candidate model_candidate(const S& st, const Schedule& s) {
  Candidate c;
  c.schedule = s;
  c.plan = realize(*st.family, st.chain, s, st.setup);
  if (!st.trainer_rejection.empty()) {  // the trainer stops before any schedule runs
    c.prediction = unsupported_prediction(st.trainer_rejection);
    return c;
  }
  if (!c.plan.supported) {
    c.prediction = unsupported_prediction(c.plan.reason);
    return c;
  }
  c.prediction = predict(st.prepared, c.plan.plan, st.headroom_bytes);
  c.prediction.warnings = c.plan.warnings;
  return c;
}

}  // namespace

// Built in place and never moved: `prepared` points at the chain, setup, GPU and coefficients
// beside it.
// context parallel: each rank runs 1/K of the sequence; the model width sizes the CP collectives
// the trainer's multi-GPU rules (trainers/multi_gpu_rules.hpp): its silent changes become the setup
static void apply_rules(const Family& fam, TrainingSetup& setup, std::vector<std::string>& warnings,
                        std::vector<Diagnostic>& diagnostics, std::string& rejection) {
  MultiGpuRuling ru = multi_gpu_rules(fam, setup);
  setup = ru.setup;
  for (auto& w : ru.warnings) {
    diagnostics.push_back({DiagnosticKind::Warning, w});
    warnings.push_back(std::move(w));
  }
  for (const auto& r : ru.rejections) rejection += (rejection.empty() ? "" : "; ") + r;
}

static void prepare_multi_gpu(const Family& fam, TrainingSetup& setup, BlockChain& chain) {
  for (const auto& l : fam.block_lists) setup.multi_gpu.hidden = std::max(setup.multi_gpu.hidden, l.hidden);
  chain = split_sequence(chain, setup.multi_gpu.context_parallel);
}

struct Context::State {
  const Family* family;
  TrainingSetup setup;
  GpuSpec gpu;
  Coefficients coef;
  BlockChain chain;
  double headroom_bytes;
  std::vector<std::string> warnings;
  std::vector<Diagnostic> diagnostics;  // `warnings` with their kinds
  std::string trainer_rejection;  // why the trainer would not start this setup, one GPU or several ("" : it runs)
  PreparedChain prepared;
  RangeModel ranges;
  Anchor anchor;

  State(const Family* fam, TrainingSetup s, GpuSpec g, Coefficients c, double headroom, const Profile* profile,
        const BlockChain* given_chain, RangeModel bands, const std::vector<Measurement>& measured)
      : family(fam),
        setup(std::move(s)),
        gpu(std::move(g)),
        coef(std::move(c)),
        headroom_bytes(headroom),
        ranges(std::move(bands)) {
    if (!family) throw InputError("advisor: the request names no model family");
    // what the card cannot run, as the setup's trainer handles it (trainers/card_limits.hpp): the
    // precision and kernels it really runs, its warnings, and its stop
    CardLimits limits = apply_card_limits(setup, gpu);
    for (const auto& w : limits.warnings) warn(DiagnosticKind::Warning, w);
    for (const auto& why : limits.rejections) trainer_rejection += (trainer_rejection.empty() ? "" : "; ") + why;
    // the trainer's setup rules (trainers/setup_rules.hpp): it stops before any schedule runs
    for (const auto& why : setup_rejections(*family, setup))
      trainer_rejection += (trainer_rejection.empty() ? "" : "; ") + why;
    if (setup.multi_gpu.active()) {
      // the anchor splits a single-GPU breakdown (anchor.hpp); a rank's gathered units, buckets and
      // communication are outside that split, so a measurement would be applied to the wrong parts
      if (!measured.empty())
        throw InputError("--measured: anchoring on a measured run is for one GPU; with --gpus/--strategy/"
                         "--context-parallel the per-rank parts (gathered units, buckets, communication) "
                         "are not in the anchored breakdown");
      apply_rules(*family, setup, warnings, diagnostics, trainer_rejection);
      // no multi-GPU run was measured: the 90% bands are the single-GPU ones (constants.hpp)
      warn(DiagnosticKind::Assumption,
           "multi-GPU: the 90% ranges are the single-GPU ones and the link efficiency and CPU "
           "optimizer rate are assumptions; no multi-GPU run was measured");
    }
    chain = given_chain ? *given_chain : analyze(*family, setup);
    if (setup.multi_gpu.active()) prepare_multi_gpu(*family, setup, chain);
    if (profile) {
      apply_profile(*profile, *family, setup, chain, gpu.id);
      apply_profile_bandwidth(*profile, coef.for_gpu(gpu.id).pcie_efficiency, gpu);
      warn(DiagnosticKind::Note, "block costs measured by " + profile->path + " (" + profile->device + ")");
    }
    prepared = prepare(chain, setup, gpu, coef);
    if (!measured.empty())
      anchor = anchor_measurements(measured, [&](const Schedule& sc) { return model_candidate(*this, sc); });
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

 private:
  void warn(DiagnosticKind kind, const std::string& text) {
    warnings.push_back(text);
    diagnostics.push_back({kind, text});
  }
};

Context::Context(std::shared_ptr<const State> state)
    : state_(std::move(state)),
      family(state_->family),
      setup(state_->setup),
      gpu(state_->gpu),
      coef(state_->coef),
      chain(state_->chain),
      headroom_bytes(state_->headroom_bytes),
      warnings(state_->warnings),
      diagnostics(state_->diagnostics),
      prepared(state_->prepared),
      ranges(state_->ranges),
      anchor(state_->anchor),
      trainer_rejection(state_->trainer_rejection) {}

Context::Context(const AdvisorRequest& r)
    : Context(std::make_shared<const State>(r.family, r.setup, r.gpu, r.coef, r.headroom_bytes,
                                            r.profile ? &*r.profile : nullptr,
                                            r.chain ? &*r.chain : nullptr, r.ranges, r.measured)) {}

Context Context::with_setup(const TrainingSetup& s) const {
  return Context(std::make_shared<const State>(family, s, gpu, coef, headroom_bytes, nullptr, nullptr, ranges,
                                               std::vector<Measurement>{}));
}

Candidate evaluate(const Context& ctx, const Schedule& s) {
  Candidate c = model_candidate(ctx, s);
  put_ranges(c, ctx.ranges, ctx.anchor, ctx.headroom_bytes);
  return c;
}

// evaluate()'s figures by its own steps, less what only a printed candidate needs (the peak's
// phase name, the plan and its warnings kept, the prediction copied into a candidate)
namespace {

ScheduleScore ranged_score(const Context& ctx, const Schedule& s, const Prediction& p) {
  const RangedPrediction r = ranged_prediction(ctx.ranges, ctx.anchor, s, p, ctx.headroom_bytes);
  return {true, r.prediction.peak_vram_bytes, r.prediction.step_time_s, r.prediction.usable_vram_bytes, r.fit};
}

// score() of `count` schedules in order: consecutive plans share their first blocks, whose walk
// PlanScorer reuses (the same figures, bit for bit)
void score_batch(const Context& ctx, const Schedule* s, std::size_t count, ScheduleScore* out) {
  if (!ctx.trainer_rejection.empty()) {  // the trainer stops before any schedule runs (as evaluate)
    std::fill(out, out + count, ScheduleScore{});
    return;
  }
  thread_local PlanResult plan;  // realized in place: the segment buffer serves every schedule
  PlanScorer scorer(ctx.prepared);
  for (std::size_t i = 0; i < count; ++i) {
    realize_into(*ctx.family, ctx.chain, s[i], ctx.setup, plan);
    out[i] = plan.supported ? ranged_score(ctx, s[i], scorer.figures(plan.plan, ctx.headroom_bytes)) : ScheduleScore{};
  }
}

}  // namespace

ScheduleScore score(const Context& ctx, const Schedule& s) {
  if (!ctx.trainer_rejection.empty()) return {};  // the trainer stops before any schedule runs (as evaluate)
  const PlanResult plan = realize(*ctx.family, ctx.chain, s, ctx.setup);
  if (!plan.supported) return {};
  return ranged_score(ctx, s, predict_figures(ctx.prepared, plan.plan, ctx.headroom_bytes));
}

ScheduleSpace schedule_space(const Context& ctx) {
  ScheduleSpace sp;
  const CheckpointSemantics& cs = ctx.family->checkpointing;
  std::map<std::string, int> per_list;
  int longest = 0, total = 0;
  for (const auto& b : ctx.chain.blocks) {
    if (!b.checkpointable) continue;
    longest = std::max(longest, ++per_list[b.list]);
    ++total;
  }
  const bool global = cs.index == BlockIndex::Global || cs.interval == IntervalRule::MicroBlocks;
  sp.max_interval = global ? total : longest;
  // a long sequence enumerates intervals and strides up to a cap (planner/data/search.json: why)
  const SearchPolicy& policy = search_policy();
  if (sp.max_interval > policy.long_sequence_blocks)
    sp.max_interval = std::min(sp.max_interval, policy.long_sequence_max_interval);
  sp.interval = cs.interval != IntervalRule::Ignored;
  sp.stride = cs.stride;
  sp.backends = {Backend::Torch};
  if (cs.backend_setter) sp.backends.push_back(Backend::Unsloth);
  if (cs.ffn_backend) {
    sp.backends.push_back(Backend::TorchFfn);
    if (cs.backend_setter) sp.backends.push_back(Backend::UnslothFfn);
  }
  sp.attention_offload = cs.attention_offload;
  return sp;
}

Advice advise_schedules(const Context& ctx, bool keep_all) {
  return advise(enumerate_schedules(schedule_space(ctx)), [&](const Schedule& s) { return evaluate(ctx, s); },
                ctx.headroom_bytes, keep_all,
                [&](const Schedule* s, std::size_t count, ScheduleScore* out) { score_batch(ctx, s, count, out); });
}

OptimalOptions optimal_options(const Context& ctx) {
  OptimalOptions o;
  o.segments_cross_lists = ctx.family->checkpointing.index == BlockIndex::Global;
  // long chains cap a checkpoint call's length (constants.hpp: why)
  if (ctx.chain.blocks.size() > kLongChainBlocks) o.max_segment_blocks = kLongChainMaxSegmentBlocks;
  // measured runs of the setup: the optimal plan's costs are anchored as every schedule's are
  if (!ctx.anchor.points.empty()) o.anchor = &ctx.anchor;
  return o;
}

// A schedule of the same kind of run as a per-block plan, for its range's stratum (range_stratum):
// nothing checkpointed -> none; one-block checkpoints only -> layer; anything longer -> segmented;
// host copies of checkpoint inputs -> unsloth's offload; the plan-wide attention offload as itself
static Schedule kind_of_plan(const Plan& plan) {
  Schedule s;
  bool any = false, longer = false, host = false;
  for (const Segment& g : plan.segments) {
    if (g.mode == BlockMode::Keep) continue;
    any = true;
    longer = longer || g.end - g.begin > 1;
    host = host || g.offload_to_host;
  }
  s.checkpointing = any;
  if (longer) s.interval = 2;
  if (host) s.backend = Backend::Unsloth;
  s.offload_attention = plan.offload_attention;
  return s;
}

// The kinds of run an optimal plan can be (kind_of_plan), each ranged with its own band
// (range_stratum): only checkpoints of one block (or FFN-only), some call longer than one block, some
// copy to the host (saved inputs or attention activations). Their order is FitKindIndex's.
enum FitKindIndex { kPerBlockKind, kSegmentedKind, kOffloadKind, kFitKinds };

static Schedule fit_kind(int k) {
  Schedule s;  // checkpointing, interval 1, torch: per-block
  if (k == kSegmentedKind) s.interval = 2;
  if (k == kOffloadKind) s.backend = Backend::Unsloth;
  return s;
}

// The largest point peak at which a plan of `kind` has a range whose upper end fits (its verdict is
// "fits"), for a plan whose parts other than activations are `like`'s (weights, training state, the
// card): -1 when none fits even with no activations, `limit` when one at the point limit fits.
// The upper end is point x exp(log_hi x u), u the root of the squared parts' sigmas over the point:
// it rises with the activation part (the part that the plans differ by), so the bytes that fit form
// one interval from the floor up, and a bisection over them finds its end. kCapHalvings halvings
// leave an interval of (limit - floor) / 2^64, under a byte for any card. Every plan solved at such a
// peak is ranged again as it is (its own parts), so a cap off by rounding never yields a verdict
// that does not hold.
constexpr int kCapHalvings = 64;

static double fitting_peak(const Context& ctx, const Schedule& kind, const Prediction& like, double limit) {
  const PeakParts parts = peak_parts(like);
  const double floor = like.peak_vram_bytes - parts.activation_bytes;
  const auto fits_at = [&](double peak) {
    Prediction q = like;
    q.memory.activation_peak_bytes += peak - like.peak_vram_bytes;
    q.peak_vram_bytes = peak;
    return ranged_prediction(ctx.ranges, Anchor{}, kind, q, ctx.headroom_bytes).fit == FitVerdict::Fits;
  };
  if (!(floor <= limit) || !fits_at(floor)) return -1;
  if (fits_at(limit)) return limit;
  double lo = floor, hi = limit;  // fits at lo, not at hi
  for (int k = 0; k < kCapHalvings && hi - lo > 1; ++k) {
    const double mid = lo + (hi - lo) / 2;
    (fits_at(mid) ? lo : hi) = mid;
  }
  return lo;
}

std::array<double, kFitKinds> optimal_fit_caps(const Context& ctx, const Prediction& like) {
  const double limit = like.usable_vram_bytes - ctx.headroom_bytes;
  std::array<double, kFitKinds> cap{};
  for (int k = 0; k < kFitKinds; ++k) cap[k] = fitting_peak(ctx, fit_kind(k), like, limit);
  return cap;
}

// The optimal plan when keeping every block does not fit: the fastest plan of a candidate set,
// computed once, whose own range fits (none: nothing returned). Each kind's cap (fitting_peak) is the largest point peak at
// which a plan of that kind fits; at a cap c the features a fitting plan may use are those of the
// kinds whose cap reaches c (host copies where the offload cap does, calls longer than one block
// where the segmented cap does). The candidates are the fastest plan at each cap of each subset of
// the features allowed there: at most kFitKinds caps x 4 subsets = 12 searches, whatever the
// chain's length (in practice a few: most are skipped, below), each plan ranged again as it is. The
// fastest candidate that fits is taken.
// The searches run fewest features first (the cheapest), larger budgets first. Each looks only for
// plans at least as fast as its cutoff: the fastest fitting plan so far, and, at the same cap, what
// each search over fewer features found (a plan faster than all of those uses every added feature,
// so it is of the kind whose cap allowed them, and fits). A search is skipped when one over at least
// its features at no smaller budget found nothing faster than that cutoff (the same candidate set
// then holds nothing it could add). So the result is the fastest fitting plan of the whole set
// (a tie in time aside): what solving all 12 and ranging each gives.
template <class VerdictOf>
static std::optional<OptimalPlan> fit_optimal(const Context& ctx, const PlanOptimizer& opt, const Prediction& like,
                                              const VerdictOf& verdict_of, OptimalView& v) {
  const std::array<double, kFitKinds> cap = optimal_fit_caps(ctx, like);
  struct Search {
    double budget;
    bool host, segments;
    double step_time_s;  // what it found; with nothing found, its cutoff (no plan is faster)
  };
  std::vector<Search> todo;
  for (int k = 0; k < kFitKinds; ++k) {
    const double c = cap[k];
    if (c <= 0) continue;
    const bool host = cap[kOffloadKind] >= c, segments = cap[kSegmentedKind] >= c;
    for (int h = 0; h <= int(host); ++h)
      for (int g = 0; g <= int(segments); ++g) {
        const bool known = std::any_of(todo.begin(), todo.end(), [&](const Search& t) {
          return t.budget == c && t.host == bool(h) && t.segments == bool(g);
        });
        if (!known) todo.push_back({c, bool(h), bool(g), 0});
      }
  }
  std::sort(todo.begin(), todo.end(), [](const Search& a, const Search& b) {
    const int na = a.host + a.segments, nb = b.host + b.segments;
    return na != nb ? na < nb : a.budget > b.budget;
  });
  std::unique_ptr<PlanOptimizer> restricted[2][2];  // [host][segments]; opt itself is [1][1]
  const auto optimizer = [&](bool host, bool segments) -> const PlanOptimizer& {
    if (host && segments) return opt;  // built with every option
    std::unique_ptr<PlanOptimizer>& o = restricted[host][segments];
    if (!o) {
      OptimalOptions options = optimal_options(ctx);
      options.allow_offload = options.allow_attention_offload = host;
      if (!segments) options.max_segment_blocks = 1;
      o = std::make_unique<PlanOptimizer>(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, options);
    }
    return *o;
  };
  std::optional<OptimalPlan> best;
  double best_s = std::numeric_limits<double>::infinity();
  std::vector<Search> done;
  for (const Search& s : todo) {
    double cutoff = best_s;
    for (const Search& d : done)
      if (d.budget == s.budget && d.host <= s.host && d.segments <= s.segments) cutoff = std::min(cutoff, d.step_time_s);
    const bool covered = std::any_of(done.begin(), done.end(), [&](const Search& d) {
      return d.budget >= s.budget && d.host >= s.host && d.segments >= s.segments && d.step_time_s >= cutoff;
    });
    if (covered) continue;
    OptimalPlan p = optimizer(s.host, s.segments).solve_for_peak(s.budget, cutoff);
    ++v.fit_searches;
    done.push_back({s.budget, s.host, s.segments, p.found ? p.prediction.step_time_s : cutoff});
    if (!p.found || verdict_of(p).fit != FitVerdict::Fits) continue;
    const double t = p.prediction.step_time_s;
    if (!best || t < best_s || (t == best_s && p.prediction.peak_vram_bytes < best->prediction.peak_vram_bytes)) {
      best_s = t;
      best = std::move(p);
    }
  }
  return best;
}

static OptimalView solve_optimal(const Context& ctx, bool with_front) {
  OptimalView v;
  const PlanOptimizer opt(ctx.chain, ctx.setup, ctx.gpu, ctx.coef, ctx.headroom_bytes, optimal_options(ctx));
  // the optimal plan's figures are the cost model's own (not anchored): its unanchored bands
  const auto verdict_of = [&](const OptimalPlan& o) {
    return ranged_prediction(ctx.ranges, Anchor{}, kind_of_plan(o.plan), o.prediction, ctx.headroom_bytes);
  };
  // One rule for "fits" (the range's upper end plus headroom), for the optimal plan as for every
  // schedule, while the DP's budget is on the point peak. Keeping every block is the fastest plan
  // of all: where its range fits, the point-budget search finds it at once. Otherwise the candidate
  // set at the kinds' caps (fit_optimal) holds the fastest plan that fits: the point-budget plan
  // when its own range fits (its peak is then within its kind's cap, and nothing is faster), so
  // that search (the costliest of all: ~60,000 labels on Stable Cascade C on a V100) runs only
  // when no candidate fits, for the plan and verdict shown then.
  Plan keep_all;
  for (int i = 0; i < static_cast<int>(ctx.chain.blocks.size()); ++i)
    keep_all.segments.push_back(Segment{i, i + 1, BlockMode::Keep, false});
  const Prediction keep = opt.predict_plan(keep_all);
  Schedule none;
  none.checkpointing = false;
  const bool keep_fits =
      ranged_prediction(ctx.ranges, Anchor{}, none, keep, ctx.headroom_bytes).fit == FitVerdict::Fits;
  std::optional<OptimalPlan> fitting;
  if (!keep_fits && keep.supported) fitting = fit_optimal(ctx, opt, keep, verdict_of, v);
  v.optimal = fitting ? std::move(*fitting) : opt.solve();
  if (v.optimal.found) {
    v.verdict = verdict_of(v.optimal).fit;
    v.insight = opt.insight(v.optimal.plan);
  }
  if (with_front) v.front = opt.pareto_front(kParetoFrontPlans);
  return v;
}

static void compare_with_advice(OptimalView& v, const Advice& advice) {
  v.uniform = advice.recommended;
  if (v.uniform >= 0 && v.optimal.found) {
    const double t = advice.candidates[v.uniform].prediction.step_time_s;
    v.gain_s = t - v.optimal.prediction.step_time_s;
    v.gain_fraction = t > 0 ? v.gain_s / t : 0;
  }
}

OptimalView compute_optimal(const Context& ctx, const Advice& advice, bool with_front) {
  OptimalView v = solve_optimal(ctx, with_front);
  compare_with_advice(v, advice);
  return v;
}

// True when no schedule of the context can be judged "fits", known without scoring one: every
// schedule's timeline visits each block's forward position, base + retained + saved + transient +
// boundary with retained >= 0 (the evaluator's least_forward_live is that position at retained 0), and every later sum (peak, fragmentation, the range's upper end)
// only grows with the activation peak. Each bound below is formed in the order the cost model forms
// the real figure (simulate_activations, predict, ranged_prediction), and rounding is monotone, so
// the bound never exceeds the figure it bounds: the advise it saves would recommend nothing.
bool nothing_can_fit(const Context& ctx) {
  if (!ctx.anchor.points.empty()) return false;  // anchored figures are scaled: no bound here
  // on several GPUs a rank holds a share of the model state (FSDP2, ZeRO): the one-GPU static memory
  // below is no bound there
  if (ctx.setup.multi_gpu.active()) return false;
  const PreparedChain& pc = ctx.prepared;
  double activation_bytes = 0;
  for (std::size_t i = 0; i < pc.scaled.size(); ++i)
    activation_bytes = std::max(activation_bytes, least_forward_live(pc, static_cast<int>(i)));
  const StaticMemory& sm = pc.static_memory;
  const double peak_bytes = sm.weights_bytes + sm.trainable_bytes + sm.gradient_bytes + sm.optimizer_bytes +
                            activation_bytes + activation_bytes * allocator_slack_share(ctx.setup, ctx.coef);
  const double hi_bytes = peak_bytes * ctx.ranges.least_peak_hi_factor();
  return !(hi_bytes + ctx.headroom_bytes <= pc.usable_vram_bytes);
}

std::vector<Alternative> what_would_fit(const Context& base) {
  std::vector<Alternative> out;
  // one changed setup: advise over it, keep its recommendation when there is one; true when it fits
  // (a setup where nothing can fit is known without scoring its schedules)
  auto attempt = [&](const std::string& change, const std::function<void(TrainingSetup&)>& edit) {
    TrainingSetup s = base.setup;
    edit(s);
    const Context ctx = base.with_setup(s);
    if (nothing_can_fit(ctx)) return false;
    const Advice a = advise_schedules(ctx);
    if (a.recommended < 0) return false;
    const Candidate& c = a.candidates[a.recommended];
    out.push_back({change, c.schedule, c.prediction});
    return true;
  };
  const TrainingSetup& s = base.setup;
  const WhatWouldFitPolicy& policy = search_policy().what_would_fit;  // planner/data/search.json
  for (int b = s.batch / policy.batch_divisor; b >= 1; b /= policy.batch_divisor)
    if (attempt("train_batch_size " + std::to_string(b), [b](TrainingSetup& x) { x.batch = b; })) break;
  for (double f : policy.resolution_scales) {
    const int w = round_to_alignment(s.width * f, base.family->geometry.alignment);
    const int h = round_to_alignment(s.height * f, base.family->geometry.alignment);
    if (attempt("resolution " + std::to_string(w) + "x" + std::to_string(h), [w, h](TrainingSetup& x) {
          x.width = w;
          x.height = h;
        }))
      break;
  }
  if (s.frames > 1) {
    for (const auto& [num, den] : policy.frame_fractions) {
      const int fr = static_cast<int>(static_cast<long long>(s.frames) * num / den);
      const int frames = apply_frame_rule(*base.family, std::max(1, fr));
      if (frames >= s.frames || frames < 1) continue;
      if (attempt("frames " + std::to_string(frames), [frames](TrainingSetup& x) { x.frames = frames; })) break;
    }
  }
  if (!precision_info(s.base_precision).quantized && s.model_type == ModelType::Lora) {
    for (const std::string& p : policy.quantized_precisions)
      if (attempt("base_model_precision " + p, [&p](TrainingSetup& x) { x.base_precision = p; })) break;
  }
  if (!s.ramtorch) attempt("ramtorch: true (stream block weights)", [&policy](TrainingSetup& x) {
      x.ramtorch = true;
      x.ramtorch_percent = policy.ramtorch_percent;
    });
  return out;
}

PredictionReport predict_report(const AdvisorRequest& request, const Schedule& schedule) {
  Context ctx(request);
  Candidate c = evaluate(ctx, schedule);
  return {std::move(ctx), std::move(c)};
}

RunPhases predict_run(const Context& ctx, const Candidate& step, const RunSetup& run) {
  return predict_phases(*ctx.family, ctx.setup, ctx.chain, step.prediction, run,
                        usable_vram_bytes(ctx.gpu, ctx.coef) - ctx.headroom_bytes,
                        step.ranged ? step.peak_range_bytes : Range{});
}

AdviceReport advise_report(const Context& ctx, const AdviceOptions& options) {
  // The optimal per-block plan does not depend on the schedules' scores: it is searched on a second
  // thread while they are scored (Kandinsky 5 image: the search is ~60% of advise). Both only read
  // the immutable context; the cost model's scratch buffers are thread_local.
  std::future<OptimalView> optimal =
      std::async(std::launch::async, [&ctx, &options] { return solve_optimal(ctx, options.with_front); });
  AdviceReport r{ctx, advise_schedules(ctx, options.keep_all), {}, {}, options.keep_all, std::nullopt, nullptr, {}};
  r.optimal = optimal.get();
  compare_with_advice(r.optimal, r.advice);
  // what would fit is searched only when nothing is even borderline: with a borderline schedule the
  // answer is its measurement (and the search re-advises several setups: ~5x the time)
  if (r.advice.recommended < 0 && r.advice.borderline < 0) r.alternatives = what_would_fit(ctx);
  if (r.advice.recommended < 0 && r.advice.borderline >= 0) r.if_measured = ranges_if_measured(ctx, r.advice);
  if (const Candidate* c = r.recommended()) r.phases = predict_run(ctx, *c, options.run_setup);
  return r;
}

std::vector<RangeIfMeasured> ranges_if_measured(const Context& ctx, const Advice& advice) {
  std::vector<RangeIfMeasured> out;
  if (advice.borderline < 0) return out;
  const Candidate& b = advice.candidates[advice.borderline];
  if (!b.prediction.supported) return out;
  // the measurement as it would be if the model were right about the measured schedule; with the
  // user's own measurements kept beside it
  std::vector<AnchorPoint> points = ctx.anchor.points;
  Measurement m;
  m.schedule = b.schedule;
  m.text = b.schedule.name() + " (as predicted)";
  m.step_time_s = b.prediction.step_time_s;
  m.peak_vram_bytes = b.prediction.peak_vram_bytes;
  if (measured_ok(ctx.anchor, b.schedule)) return out;  // already measured: nothing to add
  points.push_back({m, model_candidate(ctx, b.schedule).prediction});
  Anchor hyp;
  try {
    hyp = fit_anchor(points);
  } catch (const InputError&) {
    return out;  // the predicted point contradicts a measurement of the user's: no such run
  }
  auto width = [](const Range& r) { return r.hi - r.lo; };
  for (std::size_t i = 0; i < advice.candidates.size(); ++i) {
    const Candidate& c = advice.candidates[i];
    if (!c.ranged || c.fit != FitVerdict::Borderline) continue;
    const RangedPrediction after =
        ranged_prediction(ctx.ranges, hyp, c.schedule, model_candidate(ctx, c.schedule).prediction, ctx.headroom_bytes);
    RangeIfMeasured x;
    x.candidate = static_cast<int>(i);
    x.peak_now_bytes = c.peak_range_bytes;
    x.time_now_s = c.step_range_s;
    x.peak_after_bytes = after.peak_vram_bytes;
    x.time_after_s = after.step_time_s;
    x.verdict_after = after.fit;
    if (width(x.peak_now_bytes) > 0) x.peak_width_ratio = width(x.peak_after_bytes) / width(x.peak_now_bytes);
    if (width(x.time_now_s) > 0) x.time_width_ratio = width(x.time_after_s) / width(x.time_now_s);
    out.push_back(x);
  }
  return out;
}

AdviceReport advise_report(const AdvisorRequest& request, const AdviceOptions& options) {
  if (!options.search_multi_gpu || request.setup.multi_gpu.world() <= 1) return advise_report(Context(request), options);
  auto distributed = std::make_shared<const DistributedAdvice>(advise_distributed(Context(request)));
  AdvisorRequest best = request;
  if (distributed->best >= 0) best.setup.multi_gpu = distributed->options[distributed->best].multi_gpu;
  AdviceReport r = advise_report(Context(best), options);
  r.distributed = std::move(distributed);
  return r;
}

namespace {

std::string gib_1(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / kGiB);
  return buf;
}

std::string secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f s" : "%.1f s", s);
  return buf;
}

std::string verdict_words(FitVerdict v) {
  switch (v) {
    case FitVerdict::Fits: return "fits";
    case FitVerdict::Borderline: return "borderline";
    case FitVerdict::DoesNotFit: break;
  }
  return "does not fit";
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : sep) + x;
  return out;
}

}  // namespace

const char* to_string(DiagnosticKind k) {
  switch (k) {
    case DiagnosticKind::Warning: return "warning";
    case DiagnosticKind::Rejection: return "rejection";
    case DiagnosticKind::Assumption: return "assumption";
    case DiagnosticKind::Note: return "note";
  }
  return "warning";
}

CheckReport check_report(const CheckRequest& request) {
  CheckReport r{Context(request.run), {}, request.warnings, {}, std::nullopt, std::nullopt, false};
  const Context& ctx = r.context;
  for (const auto& why : request.rejections) r.diagnostics.push_back({DiagnosticKind::Rejection, why});
  for (const auto& w : request.warnings) r.diagnostics.push_back({DiagnosticKind::Warning, w});
  for (const auto& w : ctx.warnings) r.warnings.push_back(w);
  for (const auto& d : ctx.diagnostics) r.diagnostics.push_back(d);
  Candidate& c = r.candidate;
  if (!request.rejections.empty()) {
    c.schedule = request.schedule;
    c.plan.supported = false;
    c.plan.reason = join(request.rejections, "; ");
    c.prediction = unsupported_prediction(c.plan.reason);
  } else {
    c = evaluate(ctx, request.schedule);
    const std::optional<Schedule> as_run =
        c.prediction.supported ? std::nullopt : schedule_as_run(*ctx.family, request.schedule);
    if (as_run) {
      const Candidate ran = evaluate(ctx, *as_run);
      if (ran.prediction.supported)
        r.warnings.push_back("the trainer runs this config as '" + as_run->name() + "' (" + to_string(as_run->backend) +
                             "): peak " + gib_1(ran.prediction.peak_vram_bytes) + ", " +
                             secs(ran.prediction.step_time_s) + "/step, " + verdict_words(ran.verdict()));
      if (ran.prediction.supported) r.diagnostics.push_back({DiagnosticKind::Note, r.warnings.back()});
    }
  }
  for (const auto& w : c.plan.warnings) r.warnings.push_back(w);
  for (const auto& w : c.plan.warnings) r.diagnostics.push_back({DiagnosticKind::Warning, w});
  r.step_only = request.step_only;
  if (c.prediction.supported) {
    r.phases = predict_run(ctx, c, request.run_setup);
    for (const auto& w : r.phases->warnings) r.warnings.push_back(w);
    for (const auto& w : r.phases->warnings) r.diagnostics.push_back({DiagnosticKind::Warning, w});
    const HostMemory& host = r.phases->host;
    if (request.host_memory_bytes > 0 && host.peak_bytes > request.host_memory_bytes) {
      r.warnings.push_back("host memory: the run needs about " + gib_1(host.peak_bytes) + " (" + host.set_by +
                           "), this machine has " + gib_1(request.host_memory_bytes));
      r.diagnostics.push_back({DiagnosticKind::Warning, r.warnings.back()});
    }
  }
  if (request.advise) {
    AdviceOptions options = request.advice_options;
    options.run_setup = request.run_setup;
    r.advice.emplace(advise_report(ctx, options));
  }
  return r;
}

}  // namespace segadvise
