// Search over the trainer's schedule space: enumerate every combination a family supports,
// predict each, keep the Pareto front (step time against peak VRAM), recommend the fastest that
// fits with headroom.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/types.hpp"

namespace segadvise {

struct ScheduleSpace {
  int max_interval = 1;   // longest checkpointed list (intervals 2..max)
  bool stride = true;     // strides k+1..max for each interval
  bool interval = true;   // interval/stride wired at all
  std::vector<Backend> backends = {Backend::Torch};
  bool attention_offload = false;
};

// Every schedule of the space, without duplicates: none, none-offload, layer, activation-offload, intervalK,
// segK-strideS, each with every backend and attention offload on and off.
std::vector<Schedule> enumerate_schedules(const ScheduleSpace& space);

struct Candidate {
  Schedule schedule;
  PlanResult plan;
  Prediction prediction;  // anchored on the measurements when there are any
  bool pareto = false;
  // 90% ranges and the three-valued verdict (costmodel/anchor.hpp), when put_ranges() ran
  bool ranged = false;
  Range peak_range_bytes, step_range_s;
  FitVerdict fit = FitVerdict::DoesNotFit;
  bool measured = false;  // the figures are a measurement of this very schedule
  // the verdict advise goes by: the ranged one, else the point verdict as fits / does-not-fit
  FitVerdict verdict() const {
    if (ranged) return fit;
    return prediction.supported && prediction.fits ? FitVerdict::Fits : FitVerdict::DoesNotFit;
  }
};

// Anchors the candidate's prediction on `anchor` (when it holds measurements) and puts the bands
// of `ranges` around it with the verdict (ranged_prediction).
void put_ranges(Candidate& c, const RangeModel& ranges, const Anchor& anchor, double headroom_bytes);

struct Advice {
  // supported schedules sorted by step time: the Pareto front and the recommendation (every
  // supported one with keep_all)
  std::vector<Candidate> candidates;
  int unsupported_count = 0;
  int evaluated_count = 0;
  int supported_count = 0;
  int recommended = -1;  // index into candidates: the fastest "fits" verdict, -1 when none
  // when nothing fits with confidence: the fastest "borderline" schedule (index into candidates),
  // the one whose measurement would settle it; -1 otherwise
  int borderline = -1;
  double shortfall_bytes = 0;  // when nothing fits: the smallest peak minus what is available
};

// `evaluate` realizes and predicts one schedule (the caller owns families and the cost model).
using Evaluate = std::function<Candidate(const Schedule&)>;
// The measurements of the user's setup as an anchor: each measured schedule predicted by
// `evaluate` (unanchored), then fit_anchor (InputError naming a measurement that contradicts it).
Anchor anchor_measurements(const std::vector<Measurement>& measured, const std::function<Candidate(const Schedule&)>& evaluate,
                           const AnchorOptions& opt = {});

// What advise ranks a schedule by: the figures of evaluate(schedule), without its plan, strings and
// warnings (the same numbers, bit for bit).
struct ScheduleScore {
  bool supported = false;
  double peak_vram_bytes = 0, step_time_s = 0, usable_vram_bytes = 0;
  FitVerdict verdict = FitVerdict::DoesNotFit;
};
using Score = std::function<ScheduleScore(const Schedule&)>;
// The score of a candidate evaluate() returned.
ScheduleScore score_of(const Candidate& c);

// Scores every schedule keeping only its figures (thousands of full candidates would cost more in
// allocation than in prediction), then re-evaluates the ones it returns. `score`, when given, must
// give score_of(evaluate(s)) for every schedule, only cheaper.
Advice advise(const std::vector<Schedule>& schedules, const Evaluate& evaluate, double headroom_bytes,
              bool keep_all = false, const Score& score = {});

// Pareto-optimal points of (peak, time): no other point is both faster and no larger.
std::vector<bool> pareto_flags(const std::vector<double>& peak_bytes, const std::vector<double>& time_s);
// Marks the Pareto-optimal candidates (pareto_flags over their predictions).
void mark_pareto(std::vector<Candidate>& candidates);

}  // namespace segadvise
