// advise's "optimal" part: the optimal per-block plan next to the best schedule the trainer's knobs
// reach, its gain, the Pareto front of optimal plans with its knee, the memory-insight table, and
// the --plot (SVG) and --plan-out (plan JSON) files. Computation first, printers apart.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "common.hpp"
#include "segadvise/planner/optimal.hpp"

namespace segadvise::cli {

// What the family's execution allows beyond the uniform knobs: checkpoint calls span lists only
// where the trainer's own segments do (a global block index).
OptimalOptions optimal_options(const Context& ctx);

struct OptimalView {
  OptimalPlan optimal;
  ParetoFront front;
  std::vector<InsightRow> insight;
  int uniform = -1;        // index of the best trainer schedule that fits (advice.recommended)
  double gain_s = 0;       // uniform step time minus optimal (>= 0)
  double gain_fraction = 0;
};

OptimalView compute_optimal(const Context& ctx, const Advice& advice, bool with_front);

nlohmann::json optimal_json(const OptimalView& v);
void print_optimal(std::ostream& out, const OptimalView& v, const Advice& advice, bool markdown);
// --plot FILE (SVG) and --plan-out FILE (plan JSON), written atomically; "" skips a file.
void write_optimal_files(const OptimalView& v, const Context& ctx, const Advice& advice, const std::string& plot_file,
                         const std::string& plan_file);

}  // namespace segadvise::cli
