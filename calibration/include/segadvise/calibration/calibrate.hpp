// Fitting the cost model's coefficients to measured runs, and measuring how well it predicts them.
//
//   prepare()            each run -> family, setup, GPU, schedule, block chain, trainer plan
//   fit_coefficients()   bounded robust least squares over the physically meaningful coefficients
//   evaluate()/accuracy  predictions against measurements: fit/OOM agreement, errors, decisions;
//                        leave-one-family-out refits without each family in turn
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "segadvise/calibration/dataset.hpp"
#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise {

struct PreparedRun {
  const MeasuredRun* run = nullptr;
  const Family* family = nullptr;  // null when the run cannot be modelled (see error)
  std::string group;               // leave-out unit: the source's family label
  TrainingSetup setup;
  GpuSpec gpu;
  Schedule schedule;
  std::size_t chain = 0;  // index into PreparedSet::chains
  PlanResult plan;
  std::string error;  // why the run is not modelled (unknown model or GPU, bad schedule)
};

struct PreparedSet {
  Dataset data;  // owns the runs the PreparedRuns point to
  std::vector<BlockChain> chains;
  std::vector<PreparedRun> runs;
};

// Resolves every run (InputError only for a malformed schedule/precision naming the run).
PreparedSet prepare(Dataset data);
// The setup a run describes, on top of its family's example (precision names of the sweep mapped:
// bf16/bf16-upcast -> no_change, int8-sdnq-hadamard -> int8-sdnq + Hadamard).
TrainingSetup setup_for_run(const Family& fam, const MeasuredRun& r);

struct FitOptions {
  double headroom_bytes = kGiB;  // default headroom of advise/check; OOM constraints use usable memory
  std::set<std::string> exclude_groups;  // leave these families out of the fit
  int max_iterations = 60;
  double peak_weight = 1.0;   // residual weights (log ratios)
  double time_weight = 0.5;
  double oom_weight = 1.0;    // hinge: OOM runs predicted below usable memory, ok runs above it
  double robust_scale = 0.15;
  // pull of log(activation scale) towards 0 (trust in the static analyzer, which matches measured
  // saved tensors within 0.5%); chosen by leave-one-family-out: 0.3 gave fit/OOM 0.854, peak
  // median 25.0%; 3 gave 0.875, 21.5%; 10 gave 0.873, 21.3%
  double prior_weight = 3.0;
  // parameter groups to fit; the rest stay at the starting values
  bool fit_gpu = true, fit_activation = true, fit_precision = true, fit_global = true, fit_reserve = true;
  int threads = 1;  // leave-one-family-out: fits run side by side (results identical for any count)
  // progress, for a display (none: silent); neither changes a result
  std::function<void(int iteration, double cost)> on_iteration;  // each Levenberg-Marquardt iteration of a fit
  // leave-one-family-out: as the fit without `family` starts, `started` of `total` (calls serialized)
  std::function<void(const std::string& family, std::size_t started, std::size_t total)> on_family;
};

struct FittedParameter {
  std::string name;
  double value = 0, lo = 0, hi = 0;
  bool at_bound = false;
};

struct FitResult {
  Coefficients coef;
  std::vector<FittedParameter> parameters;
  int runs_used = 0;       // ok + oom runs in the fit
  int residuals = 0;
  int iterations = 0;
  double cost = 0;
  std::string stop_reason;
};

FitResult fit_coefficients(const PreparedSet& set, const Coefficients& start, const FitOptions& opt = {});

struct RunPrediction {
  const PreparedRun* prepared = nullptr;
  bool modelled = false;   // the run resolved to a family and GPU
  bool supported = false;  // realize() accepts the schedule
  std::string reason;
  bool fits = false;       // peak + headroom <= usable
  double peak_gib = 0, usable_gib = 0, step_s = 0;
  double static_gib = 0, activation_gib = 0;  // parts of peak_gib (the rest is fragmentation)
  Prediction full;  // the cost model's prediction (unanchored), parts included
  // ranges (ranged_runs): 90% bands around peak_gib / step_s and the three-valued verdict
  bool has_range = false;
  double peak_lo_gib = 0, peak_hi_gib = 0, step_lo_s = 0, step_hi_s = 0;
  FitVerdict verdict = FitVerdict::DoesNotFit;
  bool anchored = false;         // predicted from its group's measured anchor cell(s)
  bool measured_anchor = false;  // this run is an anchor: its figures are its own measurement
  RangeParts peak_parts, time_parts;  // what its ranges are built from (anchor.hpp), stratum included
};

RunPrediction predict_run(const PreparedSet& set, const PreparedRun& r, const Coefficients& coef, double headroom_bytes);

struct Confusion {
  int fit_ok = 0;      // predicted fit, ran
  int fit_oom = 0;     // predicted fit, measured OOM: an unsafe fit
  int nofit_ok = 0;    // predicted not to fit, ran
  int nofit_oom = 0;   // predicted not to fit, measured OOM
  int total() const { return fit_ok + fit_oom + nofit_ok + nofit_oom; }
  double agreement() const { return total() ? double(fit_ok + nofit_oom) / total() : 0; }
};

struct SupportAgreement {
  int both_supported = 0, both_unsupported = 0;
  int data_unsupported_model_supported = 0;  // measured "unsupported", realize() runs it
  int data_supported_model_unsupported = 0;  // it ran (or OOMed/failed), realize() refuses it
  int total() const {
    return both_supported + both_unsupported + data_unsupported_model_supported + data_supported_model_unsupported;
  }
  double agreement() const { return total() ? double(both_supported + both_unsupported) / total() : 0; }
};

// How the 90% ranges did on runs that completed, and the three-valued verdicts on ok/OOM runs.
struct RangeStats {
  int peak_n = 0, peak_covered = 0, time_n = 0, time_covered = 0;
  double peak_width_median = 0, time_width_median = 0;  // (hi - lo) / prediction
  double peak_hi_lo_median = 0, time_hi_lo_median = 0;  // hi / lo
  int fits = 0, borderline = 0, does_not_fit = 0;
  int fits_oom = 0;  // "fits" verdicts on runs that ran out of memory: unsafe
  int verdicts() const { return fits + borderline + does_not_fit; }
};

struct Metrics {
  int runs = 0;
  bool has_ranges = false;
  RangeStats ranges;
  Confusion confusion;
  int peak_n = 0, time_n = 0;
  double peak_median = 0, peak_p90 = 0;  // absolute relative error, ok runs predicted supported
  double time_median = 0, time_p90 = 0;
  SupportAgreement support;
  int decision_groups = 0, decision_good = 0;
  double decision() const { return decision_groups ? double(decision_good) / decision_groups : 0; }
};

struct DecisionGroup {
  std::string key;  // family | precision | GPU | variant
  std::string chosen, measured_best;  // schedules (ids)
  bool good = false;
  std::string why;
};

struct AccuracyReport {
  std::string method;  // "in-sample" or "leave-one-family-out"
  double headroom_gib = 1;
  Metrics overall;
  std::map<std::string, Metrics> per_family;
  // the ranges by kind of run (range_stratum of the peak's parts: none, per-block, segmented, ...)
  std::map<std::string, RangeStats> ranges_by_stratum;
  // the same by the share of the predicted peak that no schedule changes (weights and training state,
  // peak_parts' fixed part), in the bands of kFixedShareBands: whether a range holds as often for a
  // weights-bound run (a LoRA on a large base) as for an activation-bound one
  std::map<std::string, RangeStats> ranges_by_fixed_share;
  std::vector<RunPrediction> predictions;  // one per prepared run (LOFO: from the fit without its family)
  std::vector<DecisionGroup> decisions;
  std::map<std::string, std::string> family_notes;  // why a family misses a target, where known
};

// The bands of ranges_by_fixed_share: upper ends of the fixed share, and the name of the band below
// each ("0-40%" ... "90-100%"; the names sort in the bands' order).
struct FixedShareBand {
  double upper;
  const char* name;
};
inline constexpr FixedShareBand kFixedShareBands[] = {
    {0.40, "0-40%"}, {0.60, "40-60%"}, {0.75, "60-75%"}, {0.90, "75-90%"}, {1.01, "90-100%"}};
// the band of a prediction's fixed share (fixed bytes / peak)
const char* fixed_share_band(const Prediction& p);

// Metrics of given predictions (one per run, same order as set.runs).
AccuracyReport score(const PreparedSet& set, std::vector<RunPrediction> predictions, double headroom_bytes,
                     const std::string& method);
AccuracyReport accuracy_in_sample(const PreparedSet& set, const Coefficients& coef, double headroom_bytes);
// Fits once per family without it (starting from `start`) and predicts that family's runs.
AccuracyReport accuracy_leave_family_out(const PreparedSet& set, const Coefficients& start, const FitOptions& opt);

// ---------------------------------------------------------------------------------------------
// Diagnostics (`accuracy --by family`)

// One family x precision x schedule cell of a report: the signed median error (predicted / measured
// - 1: positive = over-predicted) of peak and step time over its completed runs, and the breakdown
// component carrying the prediction (the largest part, by median share: the one that would have to be
// off by error / share to explain the error alone).
struct ErrorCell {
  std::string family, precision, schedule;
  int n = 0;  // completed, supported, predicted runs
  double peak_error = 0, time_error = 0;
  std::string peak_carrier, time_carrier;
  double peak_carrier_share = 0, time_carrier_share = 0;
  std::map<std::string, double> time_error_by_gpu;  // signed median per GPU id
};
// Cells in family, precision, schedule order; cells without a completed run are left out.
std::vector<ErrorCell> error_cells(const PreparedSet& set, const AccuracyReport& rep);
// The named parts of a prediction, in breakdown order ("weights", "adapter+optimizer", "activations",
// "fragmentation"; "forward", "backward", "recompute", "transfer", "optimizer", "overhead").
std::vector<std::pair<std::string, double>> peak_components(const Prediction& p);
std::vector<std::pair<std::string, double>> time_components(const Prediction& p);

// ---------------------------------------------------------------------------------------------
// Anchoring and ranges

// The setup a run belongs to: family | precision | GPU (| variant that changes the setup); the
// same key groups the decision metric.
std::string setup_group(const PreparedRun& r);

// Band of each family's runs: derived without that family (leave-one-family-out conformal).
using RangesFor = std::function<const RangeModel&(const std::string& group)>;

// `base` (one prediction per run, holding `full`) re-predicted with ranges. `anchors` empty: every
// run as it is. Otherwise every cell of each setup group is predicted from the group's anchor
// cells (runs of those schedules, torch backend, that completed -> SCHEDULE:SEC:GIB, or ran out of
// memory -> SCHEDULE:oom), exactly as `--measured` would; groups without such a cell, or whose anchor
// the model rejects (a measured peak below the modelled weights), drop out (modelled = false).
std::vector<RunPrediction> ranged_runs(const PreparedSet& set, const std::vector<RunPrediction>& base,
                                       const std::vector<Schedule>& anchors, const RangesFor& ranges,
                                       double headroom_bytes, const AnchorOptions& opt = {});

// log(measured / predicted) of a completed, supported, predicted (not anchor) run, with the parts
// its range is built from
struct ScoredResidual {
  double log_ratio = 0;
  RangeParts parts;
};
using ResidualsByFamily = std::map<std::string, std::vector<ScoredResidual>>;
struct Residuals {
  ResidualsByFamily peak, time;
};
// Ranges are calibrated on runs that ran the schedule they are labelled with. A checkpointed run
// whose measured peak equals its setup's measured `none` peak (to kNotEngagedPeakTolerance) while the
// model says the schedule frees at least kNotEngagedPredictedSaving of that peak freed nothing any
// checkpointing frees: the schedule did not engage (the sweep's Sana and SanaVideo rows: the same peak,
// and the same step time to 0.3%, with and without checkpointing, although the trainer's code
// checkpoints their blocks; Cosmos 3's flat rows). Such a run measures `none`, not its schedule: its
// residual says nothing about how uncertain a schedule's prediction is, and it is left out of the
// residuals (it is still scored: `accuracy` counts it in coverage and verdicts). Runs the model
// already predicts flat (regional compilation keeping activations: Krea 2, MageFlow) are not
// touched. True per run of `preds` (aligned with set.runs).
constexpr double kNotEngagedPeakTolerance = 0.005;
constexpr double kNotEngagedPredictedSaving = 0.10;
std::vector<bool> checkpointing_not_engaged(const PreparedSet& set, const std::vector<RunPrediction>& preds);
// The same for step time: a `none` run measured slower than its setup's completed `layer` run (by
// more than kNoneSlowerTolerance) spent its time on something besides the step both run — `layer`
// does all of `none`'s work and recomputes every block's forward on top — such as a compile stall
// (the sweep's Cosmos 3 SDNQ runs: `none` 17.1 s, `layer` 3.2 s on the H100; AnyFlow's and OmniGen's
// SDNQ rows). Its time residual is left out of the time ranges' residuals (its peak residual stays).
constexpr double kNoneSlowerTolerance = 0.05;
std::vector<bool> none_slower_than_layer(const PreparedSet& set);
Residuals residuals(const PreparedSet& set, const std::vector<RunPrediction>& preds);

}  // namespace segadvise
