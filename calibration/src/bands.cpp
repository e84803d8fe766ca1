#include "segadvise/calibration/bands.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace segadvise {

namespace {

// ScoreModel::u without a model
double score_u(const std::vector<double>& sigma, const RangeParts& p) {
  if (!(p.total > 0)) return 0;
  double v = 0;
  for (std::size_t k = 0; k < sigma.size() && k < p.x.size(); ++k) v += sigma[k] * sigma[k] * p.x[k] * p.x[k];
  return std::sqrt(v) / p.total;
}

// Laplace negative log-likelihood of the residuals with scale u_i: sum log u_i + |r_i| / u_i. Its
// minimum puts each part's sigma where the residuals of the runs that part dominates say; the
// conformal quantiles on top hold the coverage whatever the scale model gets wrong.
double laplace_nll(const std::vector<const ScoredResidual*>& r, const std::vector<double>& sigma) {
  double s = 0;
  for (const ScoredResidual* x : r) {
    const double u = std::max(1e-6, score_u(sigma, x->parts));
    s += std::log(u) + std::fabs(x->log_ratio) / u;
  }
  return s;
}

// golden-section search of one log sigma over [lo, hi], the others held
double minimize_one(const std::vector<const ScoredResidual*>& r, std::vector<double>& sigma, std::size_t k, double lo,
                    double hi) {
  const double g = (std::sqrt(5.0) - 1) / 2;
  double a = std::log(lo), b = std::log(hi);
  auto f = [&](double ls) {
    sigma[k] = std::exp(ls);
    return laplace_nll(r, sigma);
  };
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = f(c), fd = f(d);
  for (int it = 0; it < 40; ++it) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = f(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = f(d);
    }
  }
  sigma[k] = std::exp((a + b) / 2);
  return laplace_nll(r, sigma);
}

struct StrataBands {
  Band all;
  std::map<std::string, Band> strata;
};

// conformal quantiles of the scores of every family but `without`, pooled and per stratum (a stratum
// with fewer than kRangeStratumRuns scores or kRangeStratumFamilies families has none of its own)
template <class S>
StrataBands strata_bands(const std::vector<S>& scored, const std::string& without, double coverage) {
  StrataBands out;
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by;
  std::map<std::string, std::set<std::string>> fams;
  std::set<std::string> every;
  for (const S& x : scored) {
    if (*x.family == without) continue;
    all.push_back(x.z);
    by[x.stratum].push_back(x.z);
    fams[x.stratum].insert(*x.family);
    every.insert(*x.family);
  }
  out.all = conformal_band(std::move(all), coverage);
  out.all.families = static_cast<int>(every.size());
  for (auto& [st, z] : by) {
    if (z.size() < static_cast<std::size_t>(kRangeStratumRuns) ||
        fams[st].size() < static_cast<std::size_t>(kRangeStratumFamilies))
      continue;
    Band b = conformal_band(std::move(z), coverage);
    b.families = static_cast<int>(fams[st].size());
    out.strata[st] = b;
  }
  return out;
}

}  // namespace

ScoreModel fit_score_model(const ResidualsByFamily& by_family, const std::string& left_out, RangeKind kind,
                           double coverage) {
  ScoreModel m;
  std::vector<const ScoredResidual*> r;
  for (const auto& [fam, v] : by_family)
    if (fam != left_out)
      for (const ScoredResidual& x : v) r.push_back(&x);
  if (r.empty()) return m;
  const std::size_t parts = range_part_names(kind).size();
  // a part the residuals cannot see (a share of at least kSeenShare in fewer than kSeenRuns runs:
  // transfers, where nothing streams or offloads) is not fitted: it takes the largest fitted sigma
  // of the other parts (no evidence says it is better known than they are)
  std::vector<bool> seen(parts, false);
  seen[0] = true;
  for (std::size_t k = 1; k < parts; ++k) {
    int n = 0;
    for (const ScoredResidual* x : r)
      if (x->parts.total > 0 && x->parts.x[k] / x->parts.total >= kRangeSeenShare) ++n;
    seen[k] = n >= kRangeSeenRuns;
  }
  std::vector<double> sigma(parts, 0.0);
  for (std::size_t k = 0; k < parts; ++k) sigma[k] = seen[k] ? 0.3 : 0.0;
  for (int sweep = 0; sweep < 6; ++sweep)
    for (std::size_t k = 0; k < parts; ++k)
      if (seen[k]) minimize_one(r, sigma, k, kRangeSigmaMin, kRangeSigmaMax);
  double widest = 0;
  for (std::size_t k = 1; k < parts; ++k)
    if (seen[k]) widest = std::max(widest, sigma[k]);
  for (std::size_t k = 1; k < parts; ++k)
    if (!seen[k]) sigma[k] = widest > 0 ? widest : sigma[0];
  m.sigma = sigma;
  // scores, with their family and stratum
  struct Scored {
    const std::string* family;
    std::string stratum;
    double z;
  };
  std::vector<Scored> scored;
  for (const auto& [fam, v] : by_family) {
    if (fam == left_out) continue;
    for (const ScoredResidual& x : v) {
      const double u = m.u(x.parts);
      if (u > 0) scored.push_back({&fam, x.parts.stratum, x.log_ratio / u});
    }
  }
  const StrataBands bands = strata_bands(scored, "", coverage);
  m.all = bands.all;
  m.strata = bands.strata;
  // strata only where they hold better on families left out: each training family predicted by the
  // quantiles of the others, pooled against stratified (fewer covered with strata: the strata
  // describe the measured families, not the next one; the pooled quantiles serve every stratum)
  if (!m.strata.empty()) {
    std::set<std::string> fams;
    for (const Scored& x : scored) fams.insert(*x.family);
    int pooled = 0, stratified = 0;
    for (const std::string& g : fams) {
      const StrataBands b = strata_bands(scored, g, coverage);
      for (const Scored& x : scored) {
        if (*x.family != g) continue;
        pooled += x.z >= b.all.log_lo && x.z <= b.all.log_hi;
        const auto it = b.strata.find(x.stratum);
        const Band& sb = it == b.strata.end() ? b.all : it->second;
        stratified += x.z >= sb.log_lo && x.z <= sb.log_hi;
      }
    }
    if (stratified < pooled) m.strata.clear();
  }
  return m;
}

RangeModel fit_range_model(const Residuals& plain, const Residuals& anchored, const std::string& left_out,
                           double coverage) {
  RangeModel m;
  m.coverage = coverage;
  m.peak = fit_score_model(plain.peak, left_out, RangeKind::Peak, coverage);
  m.time = fit_score_model(plain.time, left_out, RangeKind::Time, coverage);
  m.peak_anchored = fit_score_model(anchored.peak, left_out, RangeKind::PeakAnchored, coverage);
  m.time_anchored = fit_score_model(anchored.time, left_out, RangeKind::TimeAnchored, coverage);
  return m;
}

namespace {

// Ranges and verdicts on top of plain predictions, anchored on `anchors` (none: as they are): point
// predictions, residuals by family, then each family's runs ranged by the score models fitted to the
// other families' residuals (anchored kinds from the residuals of this same anchoring).
AccuracyReport ranged_report(const PreparedSet& set, const AccuracyReport& plain, const std::vector<Schedule>& anchors,
                             const Residuals& plain_res, const BandOptions& o) {
  const RangeModel none;
  const auto no_bands = [&](const std::string&) -> const RangeModel& { return none; };
  const Residuals anch_res =
      anchors.empty() ? Residuals{}
                      : residuals(set, ranged_runs(set, plain.predictions, anchors, no_bands, o.headroom_bytes, o.anchor));
  std::map<std::string, RangeModel> by_family;
  for (const auto& r : set.runs)
    if (!by_family.count(r.group)) by_family[r.group] = fit_range_model(plain_res, anch_res, r.group, o.coverage);
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
    RangeModel m = fit_range_model(plain_res, anch_res, "", o.coverage);
    m.source = "written by `segadvise accuracy --leave-family-out --anchor " + join_names(file_anchors) +
               " --write-ranges` from " + std::to_string(set.data.runs.size()) + " runs of " +
               (set.data.source.empty() ? set.data.origin : set.data.source) +
               ": per-part sigmas (Laplace fit) and split-conformal quantiles of log(measured / predicted) / u, "
               "by kind of run, on leave-one-family-out residuals";
    b.bands = std::move(m);
  }
  return b;
}

}  // namespace segadvise
