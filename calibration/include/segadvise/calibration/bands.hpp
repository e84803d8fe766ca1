// The 90% range bands and the verdicts they give, measured on the runs themselves: every family's
// runs banded by the other families' residuals (leave-one-family-out, split-conformal), unanchored
// or anchored on a measured schedule of each setup; and the bands from every family that
// calibration/data/ranges.json ships.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "segadvise/calibration/calibrate.hpp"
#include "segadvise/costmodel/anchor.hpp"

namespace segadvise {

struct BandOptions {
  double headroom_bytes = kGiB;
  double coverage = 0.9;
  AnchorOptions anchor;           // how one measurement's surprise is shared between the parts
  std::vector<Schedule> anchors;  // predict each setup from its measured cells of these (none: as they are)
  bool bands_from_every_family = false;  // also derive the bands to ship (`bands` below)
};

struct BandedAccuracy {
  AccuracyReport report;  // the plain predictions with ranges and verdicts, anchored on `anchors`
  // overall metrics with no measurement, anchored on layer, on layer and none (and on the anchors)
  std::vector<std::pair<std::string, Metrics>> summary;
  // from every family's residuals: unanchored, and anchored on the anchors (layer when none)
  std::optional<RangeModel> bands;
};

// "layer+none"
std::string join_names(const std::vector<Schedule>& schedules);

// Ranges and verdicts on top of `plain` (one prediction per run, holding `full`).
BandedAccuracy banded_accuracy(const PreparedSet& set, const AccuracyReport& plain, const BandOptions& opt);

}  // namespace segadvise
