// The whole run's phases (trainers/phases.hpp) as text (JSON: json_report.hpp), and the per-phase advice
// written into a SimpleTuner config.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "segadvise/trainers/phases.hpp"

namespace segadvise::cli {

class TextFormat;  // text_format.hpp

// One row per phase (peak, set by), the run's peak, the host memory, then the advice.
void print_phases(std::ostream& out, const RunPhases& run, double usable_bytes, double headroom_bytes,
                  const TextFormat& fmt);

// `raw` with the advised keys set (an existing key keeps its place and its leading `--`).
nlohmann::ordered_json with_phase_fixes(const nlohmann::ordered_json& raw, const std::vector<PhaseFix>& fixes);

}  // namespace segadvise::cli
