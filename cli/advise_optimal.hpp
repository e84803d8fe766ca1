// Printing advise's "optimal" part (computed by the advisor: compute_optimal): the optimal per-block
// plan next to the best schedule the trainer's knobs reach, its gain, the Pareto front of optimal
// plans with its knee, the memory-insight table, and the --plot (SVG) and --plan-out (plan JSON) files.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "common.hpp"
#include "segadvise/planner/advisor.hpp"

namespace segadvise::cli {

class TextFormat;  // text_format.hpp

void print_optimal(std::ostream& out, const OptimalView& v, const Advice& advice, const TextFormat& fmt);
// --plot FILE (SVG) and --plan-out FILE (plan JSON), written atomically; "" skips a file.
void write_optimal_files(const OptimalView& v, const Context& ctx, const Advice& advice, const std::string& plot_file,
                         const std::string& plan_file);

}  // namespace segadvise::cli
