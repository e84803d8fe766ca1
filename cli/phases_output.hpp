// The whole run's phases (families/phases.hpp) as JSON, a table or markdown, and the per-phase advice
// written into a SimpleTuner config.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "segadvise/families/phases.hpp"

namespace segadvise::cli {

// {"startup_caching": {"peak_vram_gib", "peak_vram_gib_range": [lo, hi], "fit", "runs",
// "resident": [{"what", "gib"}], "set_by"}, …} in run order; the fit against `budget_bytes`.
nlohmann::ordered_json phases_json(const RunPhases& run, double budget_bytes);
// [{"phase", "key", "value", "peak_after_gib", "peak_after_gib_range", "fits_after", "fit_after"}]
nlohmann::json phase_advice_json(const RunPhases& run);
nlohmann::json host_memory_json(const HostMemory& host);
// Into a prediction object: step_peak_vram_gib(_range), step_fits, step_fit, peak_phase, phases; unless
// `step_only`, peak_vram_gib(_range), fits (the point) and fit (`run_verdict`) become the whole run's.
void add_phases_json(nlohmann::json& prediction, const RunPhases& run, double usable_bytes, double headroom_bytes,
                     bool step_only, FitVerdict run_verdict);

// One row per phase (peak, set by), the run's peak, the host memory, then the advice.
void print_phases(std::ostream& out, const RunPhases& run, double usable_bytes, double headroom_bytes, bool markdown);

// `raw` with the advised keys set (an existing key keeps its place and its leading `--`).
nlohmann::ordered_json with_phase_fixes(const nlohmann::ordered_json& raw, const std::vector<PhaseFix>& fixes);

}  // namespace segadvise::cli
