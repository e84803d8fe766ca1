// The advisor: one request in (family, setup, GPU, coefficients, headroom, an optional profile),
// one report out (a prediction, an advice, a check). Everything between parsing flags and printing
// lives here; the CLI fills a request and prints the report it gets back.
//
//   AdvisorRequest --make_context--> Context --predict_report / advise_report / check_report--> *Report
//
// No file is read here: coefficients and profiles arrive as values (calibration and the CLI load them).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/families/profile.hpp"
#include "segadvise/planner/diagnostic.hpp"
#include "segadvise/planner/optimal.hpp"
#include "segadvise/planner/planner.hpp"

namespace segadvise {

struct AdvisorRequest {
  const Family* family = nullptr;  // from the catalog (find_family); outlives the request
  TrainingSetup setup;             // the family's defaults (or a config's setup) with the user's choices
  GpuSpec gpu;
  Coefficients coef;
  double headroom_bytes = kGiB;     // memory kept free on the card
  std::optional<Profile> profile;   // measured block costs (segadvise profile); none: analytic costs
  // The chain to plan when it is not the family's whole chain for the setup (validate runs its first
  // N blocks, a profile already applied); none: analyze(family, setup), then the profile.
  std::optional<BlockChain> chain;
  // Measured runs of this very setup (--measured): every prediction is anchored on them
  // (costmodel/anchor.hpp); a measurement that contradicts the setup is an InputError naming it.
  std::vector<Measurement> measured;
  // The 90% bands put around every prediction (calibration's ranges file); empty bands: every
  // range is the point and the verdict is the point verdict.
  RangeModel ranges;
};

// The evaluation context of a request: family, setup, GPU (with a profile's bandwidth), coefficients,
// the analyzed block chain and its schedule-independent costs. Immutable: its state is built once
// and shared by every copy, so the prepared costs always match the chain and setup they came from.
// A different setup is a new context (with_setup).
class Context {
  struct State;
  std::shared_ptr<const State> state_;

 public:
  explicit Context(const AdvisorRequest& request);
  // The same family, GPU and coefficients for another setup; the chain is re-analyzed (a profile
  // given to the request is not re-applied: its costs were measured for the original shape, nor are
  // the measurements: they measured the original setup; the range bands stay).
  Context with_setup(const TrainingSetup& setup) const;

  const Family* const family;
  const TrainingSetup& setup;
  const GpuSpec& gpu;
  const Coefficients& coef;
  const BlockChain& chain;
  const double headroom_bytes;
  const std::vector<std::string>& warnings;  // "block costs measured by …"
  const std::vector<Diagnostic>& diagnostics;  // the same, each with its kind
  const PreparedChain& prepared;
  const RangeModel& ranges;
  const Anchor& anchor;  // from the request's measurements (no points: nothing measured)
  // why the trainer would not start this setup (trainers/setup_rules.hpp, and for several GPUs
  // trainers/multi_gpu_rules.hpp), "" when it runs; every schedule is then unsupported with this
  // reason. The multi-GPU rules' changes are in `setup`.
  const std::string& trainer_rejection;

 private:
  explicit Context(std::shared_ptr<const State> state);
};

// Realizes `s` the way the trainer runs it on this family and predicts it: anchored on the
// context's measurements, with its 90% ranges and three-valued verdict (put_ranges).
Candidate evaluate(const Context& ctx, const Schedule& s);
// score_of(evaluate(ctx, s)), bit for bit, without building the candidate (what advise ranks by).
ScheduleScore score(const Context& ctx, const Schedule& s);
// Every schedule the family's trainer supports: intervals up to the longest checkpointed list (the
// whole chain where the trainer indexes blocks globally), strides, backends, attention offload.
ScheduleSpace schedule_space(const Context& ctx);
// The trainer's schedules, predicted, scored and recommended (advise over schedule_space).
Advice advise_schedules(const Context& ctx, bool keep_all = false);

// What the family's execution allows beyond the uniform knobs: checkpoint calls span lists only
// where the trainer's own segments do (a global block index); long chains cap a call's length.
OptimalOptions optimal_options(const Context& ctx);

// The optimal per-block plan next to the best trainer schedule, its gain, the Pareto front of
// optimal plans (when asked) and the memory-insight table.
struct OptimalView {
  OptimalPlan optimal;
  ParetoFront front;
  std::vector<InsightRow> insight;
  // the optimal plan's 90% range against the card, as every schedule's (fits only when its upper end
  // plus the headroom fits)
  FitVerdict verdict = FitVerdict::DoesNotFit;
  // searches run to find a plan whose range fits where keeping every block does not fit: at each
  // kind of run's cap (per-block, segmented, offload) each subset of {host copies, calls longer than
  // one block}, so at most 3 x 4 = 12 whatever the chain (advisor.cpp, fit_optimal)
  int fit_searches = 0;
  int uniform = -1;        // index of the best trainer schedule that fits (advice.recommended)
  double gain_s = 0;       // uniform step time minus optimal (>= 0)
  double gain_fraction = 0;
};
OptimalView compute_optimal(const Context& ctx, const Advice& advice, bool with_front);
// Where keeping every block does not fit, the largest point peak at which a plan of each kind of
// run has a range that fits (per-block, segmented, offload; -1: none fits even
// with no activations), for a plan whose other parts are `like`'s: the budgets compute_optimal
// searches at (advisor.cpp, fit_optimal).
std::array<double, 3> optimal_fit_caps(const Context& ctx, const Prediction& like);

// One change of the setup that makes something fit, with the schedule advise would then pick.
struct Alternative {
  std::string change;  // "train_batch_size 2", "base_model_precision int8-quanto", …
  Schedule schedule;
  Prediction prediction;
};
// When nothing fits: a smaller batch, resolution or frames; a quantized base; weight streaming.
std::vector<Alternative> what_would_fit(const Context& ctx);
// True only when no schedule of ctx can be judged "fits" (a lower bound on every schedule's peak:
// static memory plus the largest block's forward working set, ranged as advise ranges it). The
// what-would-fit search skips such setups without scoring their schedules.
bool nothing_can_fit(const Context& ctx);

// ---- reports -------------------------------------------------------------------------------

struct PredictionReport {
  Context context;
  Candidate candidate;  // the schedule asked for, realized and predicted
  // its 90% range against the card (does-not-fit when the trainer would not run it)
  FitVerdict verdict() const {
    return candidate.prediction.supported ? candidate.verdict() : FitVerdict::DoesNotFit;
  }
};

struct AdviceOptions {
  bool keep_all = false;    // every supported schedule, not only the Pareto front
  bool with_front = false;  // the Pareto front of optimal plans (~100 ms; seconds on long chains)
  RunSetup run_setup;       // the keys that move the run's other phases (the trainer's defaults)
  // with several GPUs: advise every strategy x context-parallel option the trainer has
  // (distributed_advice.hpp) and the best one's schedules (--gpus N without --strategy or
  // --context-parallel); the request's own multi-GPU setup otherwise
  bool search_multi_gpu = false;
};

struct DistributedAdvice;  // distributed_advice.hpp

// When only borderline schedules remain: what measuring the suggested one (advice.borderline) would
// make of a candidate's range, were the measurement to land on its point prediction (the anchored
// ranges of that measurement: the level and the static part settled, the structure between the
// schedules left).
struct RangeIfMeasured {
  int candidate = -1;   // index into advice.candidates
  Range peak_now_bytes, peak_after_bytes;
  Range time_now_s, time_after_s;
  FitVerdict verdict_after = FitVerdict::DoesNotFit;
  // (hi - lo) after / before: 0.3 = the range shrinks to 30% of its width
  double peak_width_ratio = 1, time_width_ratio = 1;
};
// The range_if_measured of every borderline candidate (the measured one itself: its measurement).
std::vector<RangeIfMeasured> ranges_if_measured(const Context& ctx, const Advice& advice);

struct AdviceReport {
  Context context;
  Advice advice;
  OptimalView optimal;
  std::vector<Alternative> alternatives;  // only when nothing fits
  bool keep_all = false;
  std::optional<RunPhases> phases;    // the recommendation's whole run (startup … save)
  // search_multi_gpu on several GPUs: every strategy x context-parallel option (null otherwise);
  // `context` is then the best option's
  std::shared_ptr<const DistributedAdvice> distributed;
  std::vector<RangeIfMeasured> if_measured;  // only when only borderline schedules remain
  const Candidate* recommended() const {
    return advice.recommended >= 0 ? &advice.candidates[advice.recommended] : nullptr;
  }
  // fits: a schedule fits with confidence (the recommendation); borderline: only borderline ones
  // remain; does-not-fit: nothing does
  FitVerdict verdict() const {
    if (advice.recommended >= 0) return FitVerdict::Fits;
    return advice.borderline >= 0 ? FitVerdict::Borderline : FitVerdict::DoesNotFit;
  }
};

// A configured run: the schedule its keys ask for, and what a config reader found.
struct CheckRequest {
  AdvisorRequest run;
  Schedule schedule;
  std::vector<std::string> rejections;  // the trainer stops before training: the reasons
  std::vector<std::string> warnings;    // keys ignored or changed, assumptions
  bool advise = false;                  // also advise over the run's setup
  AdviceOptions advice_options;
  RunSetup run_setup;                   // the keys that move the run's other phases
  bool step_only = false;               // judge the training step alone, not the whole run
  // the memory of the machine that will run it (known when it is this one), 0: unknown; a run needing
  // more host memory is warned about
  double host_memory_bytes = 0;
};

struct CheckReport {
  Context context;
  Candidate candidate;                // the config's own schedule
  std::vector<std::string> warnings;  // the reader's, the context's, "runs as …", the plan's
  // the request's rejections, then the warnings above, each with its kind
  std::vector<Diagnostic> diagnostics;
  std::optional<AdviceReport> advice;
  std::optional<RunPhases> phases;  // the whole run (none when the trainer would not run it)
  bool step_only = false;
  // The three-valued verdict of the config: the step's (its 90% range against the card) and every
  // other phase's (its 90% range, trainers/phases.hpp), the worst of them; the step's alone with step_only.
  FitVerdict verdict() const {
    if (!candidate.prediction.supported) return FitVerdict::DoesNotFit;
    const FitVerdict step = candidate.verdict();
    if (step_only || !phases) return step;
    return worst(step, phases->verdict(candidate.prediction.usable_vram_bytes - context.headroom_bytes));
  }
};

// The whole run around a predicted step (trainers/phases.hpp), with the step's 90% range: phase advice
// against the card's usable memory minus the headroom.
RunPhases predict_run(const Context& ctx, const Candidate& step, const RunSetup& run);

PredictionReport predict_report(const AdvisorRequest& request, const Schedule& schedule);
AdviceReport advise_report(const AdvisorRequest& request, const AdviceOptions& options);
AdviceReport advise_report(const Context& ctx, const AdviceOptions& options);
CheckReport check_report(const CheckRequest& request);

}  // namespace segadvise
