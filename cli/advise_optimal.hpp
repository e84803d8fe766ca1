// advise's --plot (SVG) and --plan-out (plan JSON) files of the optimal part (its text:
// segadvise/report/optimal_output.hpp).
#pragma once

#include <string>

#include "segadvise/planner/advisor.hpp"

namespace segadvise::cli {

// --plot FILE (SVG) and --plan-out FILE (plan JSON), written atomically; "" skips a file.
void write_optimal_files(const OptimalView& v, const Context& ctx, const Advice& advice, const std::string& plot_file,
                         const std::string& plan_file);

}  // namespace segadvise::cli
