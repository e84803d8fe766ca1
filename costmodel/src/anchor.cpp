#include "segadvise/costmodel/anchor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "segadvise/costmodel/json_input.hpp"

namespace segadvise {

namespace {

std::string gib_text(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / kGiB);
  return b;
}

InputError bad(const std::string& text, const std::string& why) {
  return InputError("--measured '" + text + "': " + why);
}

// a positive finite number filling the whole field
double positive_number(const std::string& text, const std::string& field, const std::string& what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(field, &used);
  } catch (const std::exception&) {
    throw bad(text, what + " '" + field + "' is not a number");
  }
  if (used != field.size()) throw bad(text, what + " '" + field + "' is not a number");
  if (!std::isfinite(v) || v <= 0) throw bad(text, what + " must be a positive finite number, not '" + field + "'");
  return v;
}

std::vector<std::string> split_colons(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ':') out.emplace_back();
    else out.back() += c;
  }
  return out;
}

// Scales k_i so that sum k_i v_i = target, each part moved by a share of the surprise
// (target - sum v) proportional to sigma_i^2 v_i^2: k_i = 1 + delta sigma_i^2 v_i / W with
// W = sum sigma_j^2 v_j^2. A part that would fall under min_scale is held there and the rest is
// shared among the others.
std::vector<double> split_surprise(const std::vector<double>& v, const std::vector<double>& sigma, double target,
                                   double min_scale) {
  std::vector<double> k(v.size(), 1.0);
  std::vector<bool> held(v.size(), false);
  for (std::size_t round = 0; round <= v.size(); ++round) {
    double free_sum = 0, held_sum = 0, w = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (held[i]) held_sum += k[i] * v[i];
      else {
        free_sum += v[i];
        w += sigma[i] * sigma[i] * v[i] * v[i];
      }
    }
    const double delta = target - held_sum - free_sum;
    bool changed = false;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (held[i]) continue;
      if (w > 0) k[i] = 1 + delta * sigma[i] * sigma[i] * v[i] / w;
      else if (free_sum > 0) k[i] = (target - held_sum) / free_sum;
      if (k[i] < min_scale) {
        k[i] = min_scale;
        held[i] = true;
        changed = true;
      }
    }
    if (!changed) break;
  }
  return k;
}

// Solves A x = b (n <= 3) by Gaussian elimination with partial pivoting; false when singular.
bool solve(std::vector<std::vector<double>> a, std::vector<double> b, std::vector<double>& x) {
  const std::size_t n = b.size();
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t p = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::fabs(a[r][c]) > std::fabs(a[p][c])) p = r;
    if (std::fabs(a[p][c]) < 1e-300) return false;
    std::swap(a[p], a[c]);
    std::swap(b[p], b[c]);
    for (std::size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (std::size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  x.assign(n, 0);
  for (std::size_t c = n; c-- > 0;) {
    double s = b[c];
    for (std::size_t k = c + 1; k < n; ++k) s -= a[c][k] * x[k];
    x[c] = s / a[c][c];
  }
  return true;
}

// Several measurements: least squares on the relative misfit sum_m (sum_i k_i v_mi / M_m - 1)^2,
// with a faint pull (ridge / sigma_i^2) towards k0, the split of the first measurement: exact when
// the measurements separate the parts, k0 for a part they cannot see (zero in every measurement).
std::vector<double> solve_parts(const std::vector<std::vector<double>>& v, const std::vector<double>& measured,
                                const std::vector<double>& sigma, const std::vector<double>& k0, double min_scale,
                                double kRidge) {
  const std::size_t n = sigma.size();
  std::vector<std::vector<double>> ata(n, std::vector<double>(n, 0));
  std::vector<double> atb(n, 0);
  for (std::size_t m = 0; m < v.size(); ++m)
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) ata[i][j] += v[m][i] * v[m][j] / (measured[m] * measured[m]);
      atb[i] += v[m][i] / measured[m];
    }
  for (std::size_t i = 0; i < n; ++i) {
    ata[i][i] += kRidge / (sigma[i] * sigma[i]);
    atb[i] += kRidge / (sigma[i] * sigma[i]) * k0[i];
  }
  std::vector<double> k;
  if (!solve(ata, atb, k)) return k0;
  for (double& x : k) x = std::max(x, min_scale);
  return k;
}

std::vector<double> peak_vector(const Prediction& p) {
  const PeakParts q = peak_parts(p);
  return {q.fixed_bytes, q.activation_bytes};
}
std::vector<double> time_vector(const Prediction& p) {
  const TimeParts q = time_parts(p);
  return {q.compute_s, q.host_s, q.transfer_s};
}

void validate(const AnchorPoint& p) {
  const Measurement& m = p.measured;
  if (!p.predicted.supported)
    throw bad(m.text, "the trainer does not run schedule '" + m.schedule.name() + "' for this setup (" +
                          p.predicted.reason + ")");
  if (!m.oom && m.peak_vram_bytes < p.predicted.memory.weights_bytes)
    throw bad(m.text, "a peak of " + gib_text(m.peak_vram_bytes) + " is below this setup's resident weights (" +
                          gib_text(p.predicted.memory.weights_bytes) + "): not a run of this setup");
}

// Runs of one schedule (the same setup) that cannot both be true: one ran out of memory and the other
// did not, or their peaks differ by more than kPeakSpread or their step times by more than
// kTimeSpread (allocator and timing noise between repeated runs stays well inside both).
constexpr double kPeakSpread = 0.10, kTimeSpread = 0.25;

void require_consistent(const std::vector<AnchorPoint>& points) {
  auto spread = [](double a, double b) { return std::fabs(a - b) / std::max(a, b); };
  for (std::size_t i = 0; i < points.size(); ++i)
    for (std::size_t j = i + 1; j < points.size(); ++j) {
      const Measurement& a = points[i].measured;
      const Measurement& b = points[j].measured;
      if (a.schedule.name() != b.schedule.name()) continue;
      const std::string both = "--measured '" + brief_text(a.text) + "' and '" + brief_text(b.text) + "' contradict each other: ";
      if (a.oom != b.oom)
        throw InputError(both + "schedule " + a.schedule.name() + " ran out of memory in one and peaked at " +
                         gib_text(a.oom ? b.peak_vram_bytes : a.peak_vram_bytes) + " in the other");
      if (a.oom) continue;
      if (spread(a.peak_vram_bytes, b.peak_vram_bytes) > kPeakSpread)
        throw InputError(both + "peaks of " + gib_text(a.peak_vram_bytes) + " and " + gib_text(b.peak_vram_bytes) +
                         " for one schedule differ by more than " + std::to_string(int(kPeakSpread * 100)) + "%");
      if (spread(a.step_time_s, b.step_time_s) > kTimeSpread)
        throw InputError(both + "step times for one schedule differ by more than " +
                         std::to_string(int(kTimeSpread * 100)) + "%");
    }
}

}  // namespace

Measurement parse_measurement(const std::string& text) {
  const std::vector<std::string> f = split_colons(text);
  Measurement m;
  m.text = text;
  const bool oom = (f.size() == 2 || f.size() == 3) && (f[1] == "oom" || f[1] == "OOM");
  if (f.size() != 3 && !oom)
    throw bad(text, "expected SCHEDULE:SEC:GIB (sec/step and peak GiB, e.g. layer:1.85:16.2), SCHEDULE:oom or "
                    "SCHEDULE:oom:GIB (ran out of memory needing at least GIB)");
  if (f[0].empty()) throw bad(text, "no schedule before the first ':'");
  try {
    m.schedule = Schedule::parse(f[0]);
  } catch (const InputError& e) {
    throw bad(text, e.what());
  }
  if (oom) {
    m.oom = true;
    if (f.size() == 3) m.oom_need_bytes = positive_number(text, f[2], "needed GiB") * kGiB;
    return m;
  }
  m.step_time_s = positive_number(text, f[1], "sec/step");
  m.peak_vram_bytes = positive_number(text, f[2], "peak GiB") * kGiB;
  return m;
}

PeakParts peak_parts(const Prediction& p) {
  const MemoryBreakdown& m = p.memory;
  return {m.weights_bytes + m.trainable_bytes + m.gradient_bytes + m.optimizer_bytes,
          m.activation_peak_bytes + m.fragmentation_bytes};
}

TimeParts time_parts(const Prediction& p) {
  const TimeBreakdown& t = p.time;
  return {t.forward_s + t.backward_s + t.recompute_s, t.optimizer_s + t.overhead_s, t.transfer_s};
}

Anchor fit_anchor(const std::vector<AnchorPoint>& points, const AnchorOptions& opt) {
  Anchor a;
  a.points = points;
  require_consistent(points);
  std::vector<std::vector<double>> pv, tv;
  std::vector<double> pm, tm;
  for (const AnchorPoint& p : points) {
    validate(p);
    if (p.measured.oom) continue;
    pv.push_back(peak_vector(p.predicted));
    pm.push_back(p.measured.peak_vram_bytes);
    tv.push_back(time_vector(p.predicted));
    tm.push_back(p.measured.step_time_s);
  }
  const std::vector<double> ps = {opt.fixed_sigma, opt.activation_sigma};
  const std::vector<double> ts = {opt.compute_sigma, opt.host_sigma, opt.transfer_sigma};
  if (!pv.empty()) {
    std::vector<double> k = split_surprise(pv[0], ps, pm[0], opt.min_scale);
    if (pv.size() > 1) k = solve_parts(pv, pm, ps, k, opt.min_scale, opt.ridge);
    a.fixed_scale = k[0];
    a.activation_scale = k[1];
    a.peak_anchored = true;
    std::vector<double> t = split_surprise(tv[0], ts, tm[0], opt.min_scale);
    if (tv.size() > 1) t = solve_parts(tv, tm, ts, t, opt.min_scale, opt.ridge);
    a.compute_scale = t[0];
    a.host_scale = t[1];
    a.transfer_scale = t[2];
    a.time_anchored = true;
  }
  // an OOM is a lower bound on that schedule's peak (oom_lower_bound): raise the activations until the
  // prediction reaches it (the fixed part is the better known one)
  for (const AnchorPoint& p : points) {
    if (!p.measured.oom) continue;
    const PeakParts q = peak_parts(p.predicted);
    const double bound = oom_lower_bound(p.measured, p.predicted.usable_vram_bytes);
    if (a.fixed_scale * q.fixed_bytes + a.activation_scale * q.activation_bytes >= bound) continue;
    if (q.activation_bytes > 0) a.activation_scale = (bound - a.fixed_scale * q.fixed_bytes) / q.activation_bytes;
    else if (q.fixed_bytes > 0) a.fixed_scale = bound / q.fixed_bytes;
    a.raised_by_oom = true;
  }
  return a;
}

double oom_lower_bound(const Measurement& m, double usable_bytes) {
  return std::max(m.oom_need_bytes, m.oom_elsewhere ? 0.0 : usable_bytes);
}

bool needs_at_least(const Schedule& s, const Schedule& x) {
  if (s.name() == x.name() || !s.checkpointing) return true;
  if (!x.checkpointing || s.backend != x.backend || s.offload_attention != x.offload_attention) return false;
  if (s.stride != 0 || x.stride != 0) return false;
  return std::max(1, s.interval) % std::max(1, x.interval) == 0;
}

const Measurement* measured_ok(const Anchor& a, const Schedule& schedule) {
  for (const AnchorPoint& p : a.points)
    if (!p.measured.oom && p.measured.schedule.name() == schedule.name()) return &p.measured;
  return nullptr;
}

Prediction apply_anchor_scales(const Anchor& a, const Prediction& p, double headroom_bytes) {
  if (!p.supported) return p;
  Prediction q = p;
  MemoryBreakdown& m = q.memory;
  for (double* x : {&m.weights_bytes, &m.trainable_bytes, &m.gradient_bytes, &m.optimizer_bytes}) *x *= a.fixed_scale;
  m.activation_peak_bytes *= a.activation_scale;
  m.fragmentation_bytes *= a.activation_scale;
  TimeBreakdown& t = q.time;
  for (double* x : {&t.forward_s, &t.backward_s, &t.recompute_s}) *x *= a.compute_scale;
  t.optimizer_s *= a.host_scale;
  t.overhead_s *= a.host_scale;
  t.transfer_s *= a.transfer_scale;
  q.peak_vram_bytes = m.weights_bytes + m.trainable_bytes + m.gradient_bytes + m.optimizer_bytes +
                      m.activation_peak_bytes + m.fragmentation_bytes;
  q.step_time_s = t.forward_s + t.backward_s + t.recompute_s + t.transfer_s + t.optimizer_s + t.overhead_s;
  q.fits = q.peak_vram_bytes + headroom_bytes <= q.usable_vram_bytes;
  return q;
}

Prediction apply_anchor(const Anchor& a, const Schedule& schedule, const Prediction& p, double headroom_bytes) {
  if (!p.supported) return p;
  Prediction q = apply_anchor_scales(a, p, headroom_bytes);
  MemoryBreakdown& m = q.memory;
  TimeBreakdown& t = q.time;
  if (const Measurement* ms = measured_ok(a, schedule)) {
    // the measurement is the figure; the parts keep the anchored split
    const double pk = ms->peak_vram_bytes / q.peak_vram_bytes, tk = ms->step_time_s / q.step_time_s;
    for (double* x : {&m.weights_bytes, &m.trainable_bytes, &m.gradient_bytes, &m.optimizer_bytes,
                      &m.activation_peak_bytes, &m.fragmentation_bytes})
      *x *= pk;
    for (double* x : {&t.forward_s, &t.backward_s, &t.recompute_s, &t.transfer_s, &t.optimizer_s, &t.overhead_s})
      *x *= tk;
    q.peak_vram_bytes = ms->peak_vram_bytes;
    q.step_time_s = ms->step_time_s;
  }
  q.fits = q.peak_vram_bytes + headroom_bytes <= q.usable_vram_bytes;
  return q;
}

// ---------------------------------------------------------------------------------------------

Band::Band(double log_lo_edge, double log_hi_edge, int residuals)
    : log_lo(log_lo_edge), log_hi(log_hi_edge), lo(std::exp(log_lo_edge)), hi(std::exp(log_hi_edge)), n(residuals) {}

Band conformal_band(std::vector<double> r, double coverage) {
  if (r.empty()) return Band{};
  std::sort(r.begin(), r.end());
  const double n1 = static_cast<double>(r.size() + 1);
  const long lo = std::max(1L, static_cast<long>(std::floor(n1 * (1 - coverage) / 2 + 1e-9)));
  const long hi = std::min(static_cast<long>(r.size()), static_cast<long>(std::ceil(n1 * (1 + coverage) / 2 - 1e-9)));
  // the band always holds the prediction itself, so a "fits" verdict implies the point verdict
  return Band(std::min(0.0, r[lo - 1]), std::max(0.0, r[hi - 1]), static_cast<int>(r.size()));
}

namespace {

Band band_from_json(const nlohmann::json& j, const std::string& origin, const std::string& key) {
  if (!j.contains(key) || !j[key].is_object()) throw InputError(origin + ": field '" + key + "' is missing");
  const nlohmann::json& b = j[key];
  double edge[2];
  const char* fields[2] = {"log_lo", "log_hi"};
  for (int k = 0; k < 2; ++k) {
    const char* field = fields[k];
    if (!b.contains(field) || !b[field].is_number() || !std::isfinite(b[field].get<double>()))
      throw InputError(origin + ": field '" + key + "." + field + "' must be a finite number");
    edge[k] = b[field].get<double>();
  }
  if (edge[0] > 0 || edge[1] < 0) throw InputError(origin + ": field '" + key + "': log_lo must be <= 0 <= log_hi");
  return Band(edge[0], edge[1], b.value("n", 0));
}

nlohmann::json band_json(const Band& b) {
  return {{"log_lo", b.log_lo}, {"log_hi", b.log_hi}, {"n", b.n},
          {"ratio", {b.lo, b.hi}}};
}

}  // namespace

RangeModel range_model_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw InputError(origin + ": a ranges file is a JSON object");
  RangeModel m;
  if (!j.contains("coverage") || !j["coverage"].is_number() || !(j["coverage"].get<double>() > 0) ||
      !(j["coverage"].get<double>() < 1))
    throw InputError(origin + ": field 'coverage' must be a number in (0, 1)");
  m.coverage = j["coverage"].get<double>();
  m.peak = band_from_json(j, origin, "peak");
  m.time = band_from_json(j, origin, "time");
  m.peak_anchored = band_from_json(j, origin, "peak_anchored");
  m.time_anchored = band_from_json(j, origin, "time_anchored");
  m.source = j.value("source", origin);
  return m;
}

nlohmann::json to_json(const RangeModel& m) {
  return {{"coverage", m.coverage},
          {"source", m.source},
          {"peak", band_json(m.peak)},
          {"time", band_json(m.time)},
          {"peak_anchored", band_json(m.peak_anchored)},
          {"time_anchored", band_json(m.time_anchored)}};
}

std::string to_string(FitVerdict v) {
  switch (v) {
    case FitVerdict::Fits: return "fits";
    case FitVerdict::Borderline: return "borderline";
    case FitVerdict::DoesNotFit: return "does-not-fit";
  }
  return "does-not-fit";
}

FitVerdict fit_verdict(const Range& peak, double usable_bytes, double headroom_bytes) {
  if (peak.hi + headroom_bytes <= usable_bytes) return FitVerdict::Fits;
  if (peak.lo + headroom_bytes > usable_bytes) return FitVerdict::DoesNotFit;
  return FitVerdict::Borderline;
}

RangedPrediction ranged_prediction(const RangeModel& ranges, const Anchor& a, const Schedule& schedule,
                                   const Prediction& p, double headroom_bytes) {
  RangedPrediction r;
  r.prediction = a.points.empty() ? p : apply_anchor(a, schedule, p, headroom_bytes);
  if (!p.supported) return r;
  const Prediction& q = r.prediction;
  r.peak_anchored = a.peak_anchored;
  r.time_anchored = a.time_anchored;
  const Band& pb = a.peak_anchored ? ranges.peak_anchored : ranges.peak;
  const Band& tb = a.time_anchored ? ranges.time_anchored : ranges.time;
  r.peak_vram_bytes = {q.peak_vram_bytes * pb.lo, q.peak_vram_bytes * pb.hi};
  r.step_time_s = {q.step_time_s * tb.lo, q.step_time_s * tb.hi};
  // no run holds less than its resident weights (counted from parameters and dtypes; a measurement
  // below them is refused as bad input): the lower end never goes under them
  r.peak_vram_bytes.lo = std::min(q.peak_vram_bytes, std::max(r.peak_vram_bytes.lo, q.memory.weights_bytes));
  if (measured_ok(a, schedule)) {
    r.measured = true;
    r.peak_vram_bytes = {q.peak_vram_bytes, q.peak_vram_bytes};
    r.step_time_s = {q.step_time_s, q.step_time_s};
  }
  // an OOM bounds its schedule's peak, and that of every schedule needing at least as much, from below
  bool failed_here = false;
  for (const AnchorPoint& pt : a.points) {
    if (!pt.measured.oom || !needs_at_least(schedule, pt.measured.schedule)) continue;
    const double bound = oom_lower_bound(pt.measured, q.usable_vram_bytes);
    r.peak_vram_bytes.lo = std::max(r.peak_vram_bytes.lo, bound);
    r.peak_vram_bytes.hi = std::max(r.peak_vram_bytes.hi, r.peak_vram_bytes.lo);
    if (r.prediction.peak_vram_bytes < bound) {  // the point too (its activations): never below what the run proved
      r.prediction.memory.activation_peak_bytes += bound - r.prediction.peak_vram_bytes;
      r.prediction.peak_vram_bytes = bound;
      r.prediction.fits = bound + headroom_bytes <= q.usable_vram_bytes;
    }
    failed_here = failed_here || !pt.measured.oom_elsewhere;
  }
  r.fit = fit_verdict(r.peak_vram_bytes, q.usable_vram_bytes, headroom_bytes);
  if (failed_here) r.fit = FitVerdict::DoesNotFit;
  return r;
}

}  // namespace segadvise
