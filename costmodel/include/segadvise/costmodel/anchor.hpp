// Measured beats modelled: predictions anchored on measured runs of the user's own
// setup (`--measured SCHEDULE:SEC:GIB`, `SCHEDULE:oom`), 90% ranges on every prediction, and the
// three-valued fit verdict. Used by the planner (advise/predict/check) and by calibration
// (`accuracy --anchor`, which scores this very arithmetic), so it lives beside the cost model.
//
// What a measurement tells (not one blind factor):
//   peak = fixed part (resident weights, adapters, gradients, optimizer state)
//        + activation part (activation peak over the step + allocator fragmentation)
//   time = compute (forward + backward + recompute) + host part (optimizer + fixed overhead)
//        + exposed transfers (offload, streamed weights)
// Each part gets its own multiplier. One measured schedule moves the parts in proportion to how
// uncertain the model is about each (AnchorOptions, variance-weighted); two or more measured
// schedules of different shapes separate them (least squares, exact for two). A measurement of the
// schedule itself replaces the prediction of that schedule.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

// One measured run: `SCHEDULE:SEC:GIB` (sec/step, peak allocated GiB), `SCHEDULE:oom` or
// `SCHEDULE:oom:GIB` (ran out of memory needing at least GIB).
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
// Throws InputError naming the text: malformed, unknown schedule, zero/negative/NaN/infinite numbers.
Measurement parse_measurement(const std::string& text);

// A measurement with the model's prediction of the same schedule (same setup, GPU, coefficients).
struct AnchorPoint {
  Measurement measured;
  Prediction predicted;
};

struct PeakParts {
  double fixed_bytes = 0, activation_bytes = 0;
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
// model's 1.2 GiB against ~4.9 GiB measured under `layer`). The time sigmas barely matter (10.3-10.6%
// median whichever way): compute dominates every step.
struct AnchorOptions {
  double fixed_sigma = 1.0;
  double activation_sigma = 0.3;
  double compute_sigma = 0.4;
  double host_sigma = 0.4;
  double transfer_sigma = 0.6;
  // no part is scaled below this (a measurement far under the model must not zero a part out)
  double min_scale = 0.05;
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
  double compute_scale = 1, host_scale = 1, transfer_scale = 1;
  bool raised_by_oom = false;  // an OOM measurement raised the activation scale
  std::vector<AnchorPoint> points;
};

// Throws InputError naming the measurement when it contradicts the setup: a schedule the family's
// trainer does not run, a peak below the resident weights.
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
// Ranges: split-conformal bands of log(measured / predicted) from leave-one-family-out residuals,
// at `coverage` (two-sided: the (1-c)/2 and (1+c)/2 order statistics with the (n+1) correction).

struct Band {
  Band() = default;
  Band(double log_lo_edge, double log_hi_edge, int residuals);  // the factors follow the edges
  double log_lo = 0, log_hi = 0;  // range = prediction * exp(log_lo) .. prediction * exp(log_hi)
  double lo = 1, hi = 1;          // exp(log_lo), exp(log_hi), formed once: advise ranges thousands of schedules
  int n = 0;                      // residuals it was derived from
};
// The (1-c)/2 and (1+c)/2 conformal quantiles of the residuals (log ratios measured/predicted).
Band conformal_band(std::vector<double> log_ratios, double coverage);

struct RangeModel {
  double coverage = 0.9;
  Band peak, time;                    // no measurement
  Band peak_anchored, time_anchored;  // anchored on one measured schedule of the setup
  std::string source;                 // how it was derived
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
  FitVerdict fit = FitVerdict::DoesNotFit;
  bool peak_anchored = false, time_anchored = false;
  bool measured = false;  // this schedule was measured: its figures are the measurement's
};
// Anchors (when `a` holds points), then puts the bands around the result: the anchored bands where
// an ok measurement set the level, the unanchored ones otherwise; a measured schedule's range is its
// measurement. The lower end of a peak is never under the resident weights; an OOM-measured
// schedule's lower end is at least its proven need and, when the OOM was on this card, the usable memory,
// and so is that of every schedule that needs at least as much (needs_at_least); on this card they do not fit.
RangedPrediction ranged_prediction(const RangeModel& ranges, const Anchor& a, const Schedule& schedule,
                                   const Prediction& p, double headroom_bytes);

}  // namespace segadvise
