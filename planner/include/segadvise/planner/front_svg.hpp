// A picture of the time-vs-memory trade-off as a self-contained SVG (no external libraries):
// the optimal plans' Pareto front as a line with its knee, the trainer's schedules as grey dots,
// marked points (the recommended schedule, the optimal plan) and the memory limit as a dashed line.
#pragma once

#include <string>
#include <vector>

#include "segadvise/planner/optimal.hpp"

namespace segadvise {

struct PlotPoint {
  double peak_vram_bytes = 0;
  double step_time_s = 0;
  std::string label;  // legend text for marked points
};

struct FrontPlot {
  std::string title;
  ParetoFront front;                    // optimal plans
  std::vector<PlotPoint> uniform;       // the trainer's schedules (unlabelled dots)
  std::vector<PlotPoint> marked;        // drawn large and labelled: recommended, optimal
  double limit_bytes = 0;               // usable minus headroom (0: not drawn)
};

std::string front_svg(const FrontPlot& plot);

}  // namespace segadvise
