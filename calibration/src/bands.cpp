#include "segadvise/calibration/bands.hpp"

#include <map>

namespace segadvise {

namespace {

RangeModel bands_without(const Residuals& plain, const Residuals& anchored, const std::string& left_out, double coverage) {
  RangeModel m;
  m.coverage = coverage;
  m.peak = band_without(plain.peak, left_out, coverage);
  m.time = band_without(plain.time, left_out, coverage);
  m.peak_anchored = band_without(anchored.peak, left_out, coverage);
  m.time_anchored = band_without(anchored.time, left_out, coverage);
  return m;
}

// Ranges and verdicts on top of plain predictions, anchored on `anchors` (none: as they are): point
// predictions, residuals by family, then each family's runs banded by the other families' residuals
// (anchored bands from the residuals of this same anchoring).
AccuracyReport ranged_report(const PreparedSet& set, const AccuracyReport& plain, const std::vector<Schedule>& anchors,
                             const Residuals& plain_res, const BandOptions& o) {
  const RangeModel none;
  const auto no_bands = [&](const std::string&) -> const RangeModel& { return none; };
  const Residuals anch_res =
      anchors.empty() ? Residuals{}
                      : residuals(set, ranged_runs(set, plain.predictions, anchors, no_bands, o.headroom_bytes, o.anchor));
  std::map<std::string, RangeModel> by_family;
  for (const auto& r : set.runs)
    if (!by_family.count(r.group)) by_family[r.group] = bands_without(plain_res, anch_res, r.group, o.coverage);
  const auto lofo = [&](const std::string& g) -> const RangeModel& { return by_family.at(g); };
  return score(set, ranged_runs(set, plain.predictions, anchors, lofo, o.headroom_bytes, o.anchor), o.headroom_bytes,
               plain.method + (anchors.empty() ? "" : ", anchored on " + join_names(anchors)));
}

}  // namespace

std::string join_names(const std::vector<Schedule>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : "+") + s.name();
  return out;
}

BandedAccuracy banded_accuracy(const PreparedSet& set, const AccuracyReport& plain, const BandOptions& o) {
  BandedAccuracy b;
  const std::vector<Schedule>& anchors = o.anchors;
  const RangeModel none;
  const auto no_bands = [&](const std::string&) -> const RangeModel& { return none; };
  const Residuals plain_res = residuals(set, ranged_runs(set, plain.predictions, {}, no_bands, o.headroom_bytes, o.anchor));
  const std::vector<Schedule> layer = {Schedule::parse("layer")};
  const std::vector<Schedule> layer_none = {Schedule::parse("layer"), Schedule::parse("none")};
  b.report = ranged_report(set, plain, anchors, plain_res, o);
  for (const auto& sc : {std::vector<Schedule>{}, layer, layer_none}) {
    const bool same = join_names(sc) == join_names(anchors);
    b.summary.emplace_back(sc.empty() ? "none" : join_names(sc),
                           same ? b.report.overall : ranged_report(set, plain, sc, plain_res, o).overall);
  }
  if (!anchors.empty() && join_names(anchors) != "layer" && join_names(anchors) != "layer+none")
    b.summary.emplace_back(join_names(anchors), b.report.overall);
  if (o.bands_from_every_family) {
    const std::vector<Schedule>& file_anchors = anchors.empty() ? layer : anchors;
    const Residuals anch_res =
        residuals(set, ranged_runs(set, plain.predictions, file_anchors, no_bands, o.headroom_bytes, o.anchor));
    RangeModel m = bands_without(plain_res, anch_res, "", o.coverage);
    m.source = "written by `segadvise accuracy --leave-family-out --anchor " + join_names(file_anchors) +
               " --write-ranges` from " + std::to_string(set.data.runs.size()) + " runs of " +
               (set.data.source.empty() ? set.data.origin : set.data.source) +
               ": split-conformal quantiles of log(measured / predicted), leave-one-family-out";
    b.bands = std::move(m);
  }
  return b;
}

}  // namespace segadvise
