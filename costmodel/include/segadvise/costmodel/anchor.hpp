// Measured beats modelled: predictions anchored on measured runs of the user's own
// setup (`--measured SCHEDULE:SEC:GIB`, `SCHEDULE:oom`), 90% ranges on every prediction, and the
// three-valued fit verdict. Used by the planner (advise/predict/check) and by calibration
// (`accuracy --anchor`, which scores this very arithmetic), so it lives beside the cost model.
//
// What a measurement tells (not one blind factor):
//   peak = fixed part (resident weights, adapters, gradients, optimizer state)
//        + activation part (activation peak over the step + allocator fragmentation)
//   time = compute (forward + backward) + the recompute pass + host part (optimizer + fixed overhead)
//        + exposed transfers (offload, streamed weights)
// Each part gets its own multiplier. One measured schedule moves the parts in proportion to how
// uncertain the model is about each (AnchorOptions, variance-weighted); two or more measured
// schedules of different shapes separate them (least squares, exact for two). A measurement of the
// schedule itself replaces the prediction of that schedule.
#pragma once

#include <array>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

// One measured run: sec/step and peak allocated GiB, or an out-of-memory run (with the need it
// proved, when known). Typed as `--measured` text (planner/measured_text.hpp) or read from logs.
struct Measurement {
  std::string text;  // as given, quoted in messages
  Schedule schedule;
  bool oom = false;
  double step_time_s = 0;      // ok runs
  double peak_vram_bytes = 0;  // ok runs
  // an OOM: the need it proves, a lower bound on the schedule's peak (PyTorch's "allocated by PyTorch" plus
  // "tried to allocate" when read from the message); 0 when the message gave no figures
  double oom_need_bytes = 0;
  // an OOM on a card of another capacity than the one predicted for: it proves the need only, not that
  // the schedule fails on this card
  bool oom_elsewhere = false;
  std::string source;          // where it was read ("train.log line 12: …"); "" : typed as --measured
};

// A measurement with the model's prediction of the same schedule (same setup, GPU, coefficients).
struct AnchorPoint {
  Measurement measured;
  Prediction predicted;
};

// the parts a measurement scales apart, and what it leaves as it is: the upcast weight copies
// (MemoryBreakdown::upcast_weight_bytes), bytes the model counts exactly, in neither part
struct PeakParts {
  double fixed_bytes = 0, activation_bytes = 0, exact_bytes = 0;
};
struct TimeParts {
  double compute_s = 0, host_s = 0, transfer_s = 0;
};
PeakParts peak_parts(const Prediction& p);
TimeParts time_parts(const Prediction& p);

// How uncertain the static model is about each part, as a relative standard deviation: one
// measurement's surprise is shared out in proportion to sigma^2 * part^2 (the least-squares split
// of a sum of independent errors). Chosen by `accuracy --leave-family-out --anchor layer
// --anchor-sigmas ...` (peak median / p90 error of the other schedules, 892 sweep runs): fixed 0.05 /
// activations 0.5 (trust the counted weights) 19.7% / 206%; 0.3 / 0.3: 14.7% / 169%; 1 / 0.3: 14.2% /
// 122%; 3 / 0.3: 14.4% / 107%. The fixed part is the less known one: what the model does not count
// (a text encoder or VAE left on the card, caches) is a schedule-independent offset (ERNIE: the
// model's 1.2 GiB against ~4.9 GiB measured under `layer`).
// Time: forward + backward (their kernels by class against the published figures) are the best
// known part; the recompute pass and the per-step host part less: the sweep's measured layer - none
// gaps are 1 to 2.3x the modelled recompute (the checkpoint machinery adds to the forward it
// re-runs), and the per-step overhead is a fitted per-GPU constant that stands in for what the model
// lacks (0.22 s on the H100, above the 0.18 s whole steps of its small models without
// checkpointing). So a measured `layer` run corrects the recompute and the host part most, and
// `none` (no recompute) keeps the forward + backward nearest to the model. Chosen on the sweep's
// runs anchored on `layer` (score-check in-sample, time median of the other schedules): 0.4 for
// every part 11.0%; recompute 1.0, host 1.5: 10.4%; the transfer sigma barely matters (0.3-1.0).
struct AnchorOptions {
  double fixed_sigma = 1.0;
  double activation_sigma = 0.3;
  double compute_sigma = 0.3;  // forward + backward
  double recompute_sigma = 1.0;
  double host_sigma = 1.5;
  double transfer_sigma = 0.6;
  // no part is scaled below this (a measurement far under the model must not zero a part out)
  double min_scale = 0.05;
  // A measured peak under the counted resident weights is still a run of this setup down to this share
  // of them: the weights are counted from parameter facts and what the quantizer converts, and the
  // count can be high (the sweep's HiDream and Qwen-Image SDNQ `layer` runs peak at 17.9-18.0 GiB under
  // 19.4 GiB counted: SDNQ converts their modulation Linears, which the model keeps at bf16). Half the
  // count is what a base stored one precision step narrower than the setup's leaves (an 8-bit run
  // passed for a bf16 config): that is no run of this setup.
  double weights_floor = 0.5;
  // several measurements: pull towards the first one's split, against the relative misfit. 1e-3
  // (a 0.5 change of a scale weighs like a 6% misfit) keeps two near-collinear time measurements
  // (layer and none differ only by the recompute) from trading compute against overhead on their
  // noise: layer+none anchored, in-sample, time median 11.3% at 1e-6, 7.3% at 1e-3, 8.2% at 1e-2;
  // peak median 9.8% either way
  double ridge = 1e-3;
};

struct Anchor {
  bool peak_anchored = false;  // an ok measurement fixed the peak's level
  bool time_anchored = false;
  double fixed_scale = 1, activation_scale = 1;
  double compute_scale = 1, recompute_scale = 1, host_scale = 1, transfer_scale = 1;
  bool raised_by_oom = false;  // an OOM measurement raised the activation scale
  std::vector<AnchorPoint> points;
};

// Throws InputError naming the measurement when it contradicts the setup: a schedule the family's
// trainer does not run, a peak below AnchorOptions::weights_floor of the resident weights.
Anchor fit_anchor(const std::vector<AnchorPoint>& points, const AnchorOptions& opt = {});
// The anchored prediction of `schedule` (its parts scaled; a measured schedule's own figures
// replace it); `fits` is recomputed with the headroom. Unsupported predictions pass unchanged.
Prediction apply_anchor(const Anchor& a, const Schedule& schedule, const Prediction& p, double headroom_bytes);
// The same for a plan that is no trainer schedule (the optimal per-block plan): its parts scaled,
// `fits` recomputed; no measurement replaces it.
Prediction apply_anchor_scales(const Anchor& a, const Prediction& p, double headroom_bytes);
// What an OOM of `m.schedule` proves about the peak of that schedule and of every one that needs at least as
// much (needs_at_least): at least its need and, on this card, the usable memory `usable_bytes`.
double oom_lower_bound(const Measurement& m, double usable_bytes);
// True when `s` never needs less memory than `x` on the same setup: the same schedule; `s` without
// checkpointing (it keeps every activation any schedule keeps); or both checkpointing every block with the
// same backend and attention offload, without a stride, where each of x's checkpoint calls lies inside one
// of s's (s's interval a multiple of x's: a coarser call recomputes more at once). In the measured sweep
// (302 pairs: none against layer, interval2, seg2-stride4, activation-offload; interval2 against layer) no
// such `s` ever peaked lower or ran where `x` ran out of memory.
bool needs_at_least(const Schedule& s, const Schedule& x);
// The ok measurement of this schedule, if any (nullptr otherwise).
const Measurement* measured_ok(const Anchor& a, const Schedule& schedule);

// ---------------------------------------------------------------------------------------------
// Ranges: the model's own uncertainty of a prediction, part by part, calibrated by split-conformal
// quantiles of a normalized score on leave-one-family-out residuals.
//
// A prediction is a sum of parts whose errors are taken as independent, each with a relative
// uncertainty sigma_k (fitted to the residuals, calibration/bands.hpp): the model's uncertainty of a
// run is u = sqrt(sum_k (sigma_k x_k)^2) / total, x_k the part's bytes or seconds. The parts:
//   peak:           level (the whole peak), weights (resident at their precision), training state
//                   (trainable parameters + gradients + optimizer state: counted from parameter
//                   facts), activations (timeline peak + allocator slack: modelled)
//   time:           level, compute (forward + backward + recompute), host (optimizer + per-step
//                   overhead and launch floor), exposed transfers (offload, streamed weights)
//   anchored peak:  level, structure (how far the schedule's activations are from the measured
//                   schedule's, after anchoring: what the measurement does not settle)
//   anchored time:  level, compute structure, transfer structure (the same, for compute and transfers)
// The nonconformity score of a measured run is z = log(measured / predicted) / u; the range is
// prediction * exp(z_lo u) .. prediction * exp(z_hi u), z_lo and z_hi the conformal quantiles of the
// scores of the run's stratum (kind of run: range_stratum) where the residuals support one, of every
// run otherwise. With no sigma (an older ranges file) u = 1: the band is one factor for every run.

struct Band {
  Band() = default;
  Band(double log_lo_edge, double log_hi_edge, int residuals);  // the factors follow the edges
  double log_lo = 0, log_hi = 0;  // quantiles of the score (u = 1: range = prediction * exp(log_lo) ..)
  double lo = 1, hi = 1;          // exp(log_lo), exp(log_hi)
  int n = 0;                      // residuals it was derived from
  int families = 0;               // families they came from (0: not recorded)
};
// The (1-c)/2 and (1+c)/2 conformal quantiles of the scores (the (n+1)-corrected order statistics).
Band conformal_band(std::vector<double> scores, double coverage);

enum class RangeKind { Peak, Time, PeakAnchored, TimeAnchored };
constexpr int kRangeKinds = 4;
constexpr int kMaxRangeParts = 4;
// the names of a kind's parts, in order ("level", "weights", ...); their count
const std::vector<std::string>& range_part_names(RangeKind k);
std::string to_string(RangeKind k);  // "peak", "time", "peak_anchored", "time_anchored"

// The parts of one prediction a range is built from (bytes or seconds), and its stratum.
struct RangeParts {
  double total = 0;
  std::array<double, kMaxRangeParts> x{};
  const char* stratum = "";  // range_stratum
};

// Kind of run, for the stratified quantiles: "none" (no checkpointing), "per-block" (every block
// checkpointed), "segmented" (an interval or segments), "offload" (attention offload or unsloth's
// host copies), "streamed" (block weights streamed from the host: RamTorch, block swap).
// A time range (Time, TimeAnchored) has one kind more: "compiled" (regionally compiled blocks,
// whatever the schedule): a compiled step runs other kernels, fewer launches, and whatever
// recompiles it hits, so its residuals say nothing of how far eager PyTorch's step time is from
// its prediction.
const char* range_stratum(RangeKind k, const Schedule& s, const Prediction& p);

struct ScoreModel {
  std::vector<double> sigma;          // per part of the kind (empty: u = 1)
  Band all;                           // quantiles of every residual's score
  std::map<std::string, Band> strata;  // where a stratum's residuals support its own quantiles
  const Band& band(const char* stratum) const;
  double u(const RangeParts& p) const;  // the model's uncertainty of a prediction (relative, log scale)
};

struct RangeModel {
  double coverage = 0.9;
  ScoreModel peak, time;                    // no measurement
  ScoreModel peak_anchored, time_anchored;  // anchored on one measured schedule of the setup
  std::string source;                       // how it was derived
  ScoreModel& of(RangeKind k);
  const ScoreModel& of(RangeKind k) const;
  // the least upper factor of any unanchored peak range (the upper end is never under
  // point * this): a bound for pruning setups where nothing can fit
  double least_peak_hi_factor() const;
};
RangeModel range_model_from_json(const nlohmann::json& j, const std::string& origin);  // InputError naming it
nlohmann::json to_json(const RangeModel& m);

struct Range {
  double lo = 0, hi = 0;
};

enum class FitVerdict { Fits, Borderline, DoesNotFit };
std::string to_string(FitVerdict v);  // "fits", "borderline", "does-not-fit"
// fits:         the range's upper end plus headroom fits the usable memory (hi + headroom <= usable)
// does-not-fit: even the lower end does not (lo + headroom > usable)
// borderline:   in between
// The point verdict (Prediction::fits: peak + headroom <= usable) always lies between: a "fits"
// verdict implies a point fit, a point fit excludes "does-not-fit".
FitVerdict fit_verdict(const Range& peak_bytes, double usable_bytes, double headroom_bytes);

struct RangedPrediction {
  Prediction prediction;  // anchored when the anchor applies
  Range peak_vram_bytes, step_time_s;
  RangeParts peak_parts, time_parts;  // what the ranges were built from (anchored kinds when anchored)
  double peak_u = 0, time_u = 0;      // the model's uncertainty of each (ScoreModel::u)
  FitVerdict fit = FitVerdict::DoesNotFit;
  bool peak_anchored = false, time_anchored = false;
  bool measured = false;  // this schedule was measured: its figures are the measurement's
};
// The parts of a prediction for a kind of range (RangeKind). Anchored kinds: `q` anchored by `a`,
// the structure measured from the nearest ok measured schedule (its anchored prediction).
RangeParts range_parts(RangeKind k, const Anchor& a, const Schedule& schedule, const Prediction& q);
// Anchors (when `a` holds points), then puts the ranges around the result: the anchored kinds where
// an ok measurement set the level, the unanchored ones otherwise; a measured schedule's range is its
// measurement. The lower end of a peak is never under the resident weights; an OOM-measured
// schedule's lower end is at least its proven need and, when the OOM was on this card, the usable memory,
// and so is that of every schedule that needs at least as much (needs_at_least); on this card they do not fit.
RangedPrediction ranged_prediction(const RangeModel& ranges, const Anchor& a, const Schedule& schedule,
                                   const Prediction& p, double headroom_bytes);

}  // namespace segadvise
