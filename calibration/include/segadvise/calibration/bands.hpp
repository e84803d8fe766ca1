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

// Fitting the score model of one kind of range (anchor.hpp: ScoreModel) to residuals of every family
// but `left_out` ("": all of them):
//   sigma per part: the Laplace maximum likelihood of log(measured / predicted) with scale u (each
//     log sigma by golden section in [kRangeSigmaMin, kRangeSigmaMax], coordinate sweeps); a part the
//     residuals do not see takes the largest fitted sigma of the others
//   quantiles: conformal ones of z = log ratio / u, per stratum (kind of run) where it has at least
//     kRangeStratumRuns residuals from kRangeStratumFamilies families, pooled for the others, at the
//     tail probabilities family_tail_levels finds (asymmetric: each end its own)
// The guarantee assumed: a family nobody measured is exchangeable with the measured ones
// (docs/ranges.md); the runs of one family are not, which is why the tails are set on families left
// out rather than on runs.
constexpr double kRangeSigmaMin = 1e-3, kRangeSigmaMax = 5.0;
// a part is seen when it holds at least this share of the total in at least this many residuals, of at
// least kRangeStratumFamilies families
constexpr double kRangeSeenShare = 0.05;
constexpr int kRangeSeenRuns = 20;
// 40 residuals put the 90% quantiles at the 2nd and 39th order statistic; 5 families keep one
// family's runs (they are not independent of each other) from setting a stratum's edge alone
constexpr int kRangeStratumRuns = 40, kRangeStratumFamilies = 5;
// one tail's probability is tried from (1 - coverage) / 2 down to 0 in this many steps
constexpr int kRangeTailSteps = 20;
struct TailLevels {
  double lo = 0.05, hi = 0.05;  // the probability left beyond each end of the range
};
// The tail probabilities of the quantiles (per stratum, as fit_score_model takes them) at which
// every family's scores, against the quantiles of the other families' scores, fall below the lower
// end, and apart from that above the upper end, no more often than (1 - coverage) / 2 of the runs:
// the largest of 0, a/kRangeTailSteps, ... a (a = (1 - coverage) / 2) that does, 0 (the extreme
// scores) when none does. Split-conformal quantiles of scores that share a family's error hold
// fewer of the next family's runs than they promise; this is the same promise checked on families
// left out. `scores`: (family, (stratum, z)).
TailLevels family_tail_levels(const std::vector<std::pair<std::string, std::pair<std::string, double>>>& scores,
                              double coverage);
ScoreModel fit_score_model(const ResidualsByFamily& by_family, const std::string& left_out, RangeKind kind,
                           double coverage);
RangeModel fit_range_model(const Residuals& plain, const Residuals& anchored, const std::string& left_out,
                           double coverage);

// "layer+none"
std::string join_names(const std::vector<Schedule>& schedules);

// Ranges and verdicts on top of `plain` (one prediction per run, holding `full`).
BandedAccuracy banded_accuracy(const PreparedSet& set, const AccuracyReport& plain, const BandOptions& opt);

}  // namespace segadvise
