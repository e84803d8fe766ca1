// Every JSON answer of segadvise, built in this library and nowhere else: the keys scripts read
// (prediction.peak_vram_gib, prediction.step_time_s, prediction.fits, prediction.fit, …) for predict,
// advise, check, calibrate and accuracy, and the parts they share (segadvise-torch's: torch_output.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include "segadvise/report/printer.hpp"

namespace segadvise::cli {

nlohmann::json prediction_report_json(const PredictionReport& r);
// `trainer`: the plan within another trainer's knobs (--emit), nullptr for none
nlohmann::json advice_json(const AdviceReport& r, const TrainerAdvice* trainer);
nlohmann::json check_report_json(const CheckView& v);
// calibrate's summary: where the coefficients went, each fitted parameter, how the fit ended
nlohmann::json calibration_json(const CalibrationView& v);
nlohmann::json accuracy_json(const AccuracyView& v);
// list: the families, GPUs, precisions or optimizers compiled in
nlohmann::json catalog_json(Catalog what);
// read-log: {log, oom: [...], steps: [...], memory: [...]}, null where a figure is absent
nlohmann::json log_report_json(const LogReport& r);
// The coefficients file calibrate writes: the coefficients and how they were fitted.
nlohmann::json coefficients_file_json(const FitResult& fit);

// ---- parts ------------------------------------------------------------------------------------

// The setup as predicted: the family's names, tokens, blocks, where block costs and coefficients come from.
nlohmann::json setup_json(const Context& ctx);
// Adds peak_vram_gib_range, step_time_s_range, fit (and measured) to a prediction's JSON.
void add_range_json(nlohmann::json& prediction, const Candidate& c);
// The measurements used: each one's schedule, what was measured, what the model said, and the
// scales they set.
nlohmann::json measurements_json(const Anchor& a);
// plan_to_json without the description (advise's JSON gives it beside the plan, as "description"):
// also the --plan-out file
nlohmann::json plan_segments_json(Plan plan);
nlohmann::json optimal_json(const OptimalView& v);
// {"startup_caching": {"peak_vram_gib", "peak_vram_gib_range": [lo, hi], "fit", "runs",
// "resident": [{"what", "gib"}], "set_by"}, …} in run order; the fit against `budget_bytes`.
nlohmann::ordered_json phases_json(const RunPhases& run, double budget_bytes);
// [{"phase", "key", "value", "peak_after_gib", "peak_after_gib_range", "fits_after", "fit_after"}]
nlohmann::json phase_advice_json(const RunPhases& run);
nlohmann::json host_memory_json(const HostMemory& host);
// Into a prediction object: step_peak_vram_gib(_range), step_fits, step_fit, peak_phase, phases; unless
// `step_only`, peak_vram_gib(_range), fits (the point) and fit (`run_verdict`) become the whole run's.
void add_phases_json(nlohmann::json& prediction, const RunPhases& run, const Prediction& step, double usable_bytes, double headroom_bytes,
                     bool step_only, FitVerdict run_verdict);
// advise on several GPUs: the best option's SimpleTuner keys, accelerate YAML, DeepSpeed JSON, every option
nlohmann::json multi_gpu_advice_json(const AdviceReport& r);

}  // namespace segadvise::cli
