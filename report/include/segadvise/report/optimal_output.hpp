// advise's "optimal" part as text (computed by the advisor: compute_optimal): the optimal per-block plan
// next to the best schedule the trainer's knobs reach, its gain, the Pareto front of optimal plans with
// its knee, and the memory-insight table.
#pragma once

#include <ostream>

#include "segadvise/planner/advisor.hpp"

namespace segadvise::cli {

class TextFormat;  // text_format.hpp

void print_optimal(std::ostream& out, const OptimalView& v, const Advice& advice, const TextFormat& fmt);

}  // namespace segadvise::cli
