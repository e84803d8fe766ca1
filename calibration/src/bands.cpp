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

// The order statistics of sorted scores `z` at tail probabilities a_lo (below) and a_hi (above):
// ranks floor((n+1) a_lo) and ceil((n+1) (1 - a_hi)), clamped to 1..n (conformal_band with a_lo =
// a_hi = (1 - coverage) / 2), the band always holding 0 (the prediction itself).
Band tail_band(const std::vector<double>& z, double a_lo, double a_hi) {
  if (z.empty()) return Band{};
  const long n = static_cast<long>(z.size());
  const double n1 = static_cast<double>(n + 1);
  const long lo = std::clamp(static_cast<long>(std::floor(n1 * a_lo + 1e-9)), 1L, n);
  const long hi = std::clamp(static_cast<long>(std::ceil(n1 * (1 - a_hi) - 1e-9)), 1L, n);
  return Band(std::min(0.0, z[lo - 1]), std::max(0.0, z[hi - 1]), static_cast<int>(n));
}

struct Scored {
  const std::string* family;
  std::string stratum;
  double z;
};

// the scores of every family but `without`, sorted, pooled and per stratum that has at least
// kRangeStratumRuns of them from kRangeStratumFamilies families (the others take the pooled ones)
struct Pools {
  std::vector<double> all;
  std::map<std::string, std::vector<double>> strata;
  std::map<std::string, int> families;
  int all_families = 0;
};
Pools pools(const std::vector<Scored>& scored, const std::string* without) {
  Pools out;
  std::map<std::string, std::set<std::string>> fams;
  std::set<std::string> every;
  for (const Scored& x : scored) {
    if (without && *x.family == *without) continue;
    out.all.push_back(x.z);
    out.strata[x.stratum].push_back(x.z);
    fams[x.stratum].insert(*x.family);
    every.insert(*x.family);
  }
  std::sort(out.all.begin(), out.all.end());
  for (auto it = out.strata.begin(); it != out.strata.end();) {
    if (it->second.size() < static_cast<std::size_t>(kRangeStratumRuns) ||
        fams[it->first].size() < static_cast<std::size_t>(kRangeStratumFamilies)) {
      it = out.strata.erase(it);
      continue;
    }
    std::sort(it->second.begin(), it->second.end());
    out.families[it->first] = static_cast<int>(fams[it->first].size());
    ++it;
  }
  out.all_families = static_cast<int>(every.size());
  return out;
}

const std::vector<double>& pool_of(const Pools& p, const std::string& stratum) {
  const auto it = p.strata.find(stratum);
  return it == p.strata.end() ? p.all : it->second;
}

}  // namespace

TailLevels family_tail_levels(const std::vector<std::pair<std::string, std::pair<std::string, double>>>& scores,
                              double coverage) {
  std::vector<Scored> scored;
  std::set<std::string> fam_names;
  for (const auto& x : scores) fam_names.insert(x.first);
  std::vector<std::string> fams(fam_names.begin(), fam_names.end());
  for (const auto& x : scores)
    scored.push_back({&*std::lower_bound(fams.begin(), fams.end(), x.first), x.second.first, x.second.second});
  const double a = (1 - coverage) / 2;
  TailLevels out{a, a};
  if (fams.size() < 2) return out;
  // each family's scores against the pools of the others
  std::vector<Pools> without;
  without.reserve(fams.size());
  for (const std::string& g : fams) without.push_back(pools(scored, &g));
  // the largest tail probability (of a / kRangeTailSteps steps down to 0: the extreme scores) at
  // which the families left out fall beyond that end no more often than a
  for (int side = 0; side < 2; ++side) {
    double level = 0;
    for (int k = kRangeTailSteps; k >= 0; --k) {
      const double t = a * k / kRangeTailSteps;
      double beyond = 0;
      for (std::size_t gi = 0; gi < fams.size(); ++gi)
        for (const Scored& x : scored) {
          if (x.family != &fams[gi]) continue;
          const Band b = side == 0 ? tail_band(pool_of(without[gi], x.stratum), t, a)
                                   : tail_band(pool_of(without[gi], x.stratum), a, t);
          beyond += side == 0 ? x.z < b.log_lo : x.z > b.log_hi;
        }
      const double n = static_cast<double>(scored.size());
      // the conformal (n + 1) correction, the next family's run counted as one beyond
      if (beyond + 1 <= a * (n + 1)) {
        level = t;
        break;
      }
    }
    (side == 0 ? out.lo : out.hi) = level;
  }
  return out;
}

ScoreModel fit_score_model(const ResidualsByFamily& by_family, const std::string& left_out, RangeKind kind,
                           double coverage) {
  ScoreModel m;
  std::vector<const ScoredResidual*> r;
  std::vector<const std::string*> family_of;
  for (const auto& [fam, v] : by_family)
    if (fam != left_out)
      for (const ScoredResidual& x : v) {
        r.push_back(&x);
        family_of.push_back(&fam);
      }
  if (r.empty()) return m;
  const std::size_t parts = range_part_names(kind).size();
  // a part the residuals cannot see (a share of at least kSeenShare in fewer than kSeenRuns runs, or in
  // runs of fewer than kRangeStratumFamilies families: transfers, where nothing streams or offloads)
  // is not fitted: it takes the largest fitted sigma of the other parts (no evidence says it is better
  // known than they are; one family's runs share its error, so a few families do not say it either)
  std::vector<bool> seen(parts, false);
  seen[0] = true;
  for (std::size_t k = 1; k < parts; ++k) {
    int n = 0;
    std::set<const std::string*> families;
    for (std::size_t i = 0; i < r.size(); ++i)
      if (r[i]->parts.total > 0 && r[i]->parts.x[k] / r[i]->parts.total >= kRangeSeenShare) {
        ++n;
        families.insert(family_of[i]);
      }
    seen[k] = n >= kRangeSeenRuns && families.size() >= static_cast<std::size_t>(kRangeStratumFamilies);
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
  std::vector<std::pair<std::string, std::pair<std::string, double>>> flat;
  for (const auto& [fam, v] : by_family) {
    if (fam == left_out) continue;
    for (const ScoredResidual& x : v) {
      const double u = m.u(x.parts);
      if (u > 0) flat.push_back({fam, {x.parts.stratum, x.log_ratio / u}});
    }
  }
  // the tails at which these families, each left out in turn, stay inside as often as promised;
  // then the quantiles of every score at those tails, per stratum where it has its own
  const TailLevels t = family_tail_levels(flat, coverage);
  std::vector<Scored> scored;
  for (const auto& x : flat) scored.push_back({&x.first, x.second.first, x.second.second});
  const Pools p = pools(scored, nullptr);
  m.all = tail_band(p.all, t.lo, t.hi);
  m.all.families = p.all_families;
  for (const auto& [st, z] : p.strata) {
    Band b = tail_band(z, t.lo, t.hi);
    b.families = p.families.at(st);
    m.strata[st] = b;
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
               ": per-part sigmas (Laplace fit) and conformal quantiles of log(measured / predicted) / u by kind "
               "of run, at the tails that hold on families left out, on leave-one-family-out residuals";
    b.bands = std::move(m);
  }
  return b;
}

}  // namespace segadvise
