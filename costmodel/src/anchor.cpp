#include "segadvise/costmodel/anchor.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "segadvise/io/json_input.hpp"

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

// Solves A x = b (n <= 4) by Gaussian elimination with partial pivoting; false when singular.
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
// the time parts an anchor scales apart: forward + backward, the recompute pass, host, transfers
std::vector<double> time_vector(const Prediction& p) {
  const TimeParts q = time_parts(p);
  return {p.time.forward_s + p.time.backward_s, p.time.recompute_s, q.host_s, q.transfer_s};
}

void validate(const AnchorPoint& p, double weights_floor) {
  const Measurement& m = p.measured;
  if (!p.predicted.supported)
    throw bad(m.text, "the trainer does not run schedule '" + m.schedule.name() + "' for this setup (" +
                          p.predicted.reason + ")");
  const double floor = weights_floor * p.predicted.memory.weights_bytes;
  if (!m.oom && m.peak_vram_bytes < floor)
    throw bad(m.text, "a peak of " + gib_text(m.peak_vram_bytes) + " is below " +
                          std::to_string(static_cast<int>(std::lround(weights_floor * 100))) +
                          "% of this setup's resident weights (" + gib_text(p.predicted.memory.weights_bytes) +
                          ", at least " + gib_text(floor) + "): not a run of this setup");
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

PeakParts peak_parts(const Prediction& p) {
  const MemoryBreakdown& m = p.memory;
  return {m.weights_bytes + m.trainable_bytes + m.gradient_bytes + m.optimizer_bytes,
          m.activation_peak_bytes - m.upcast_weight_bytes + m.fragmentation_bytes, m.upcast_weight_bytes};
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
    validate(p, opt.weights_floor);
    if (p.measured.oom) continue;
    pv.push_back(peak_vector(p.predicted));
    pm.push_back(p.measured.peak_vram_bytes - peak_parts(p.predicted).exact_bytes);
    tv.push_back(time_vector(p.predicted));
    tm.push_back(p.measured.step_time_s);
  }
  const std::vector<double> ps = {opt.fixed_sigma, opt.activation_sigma};
  const std::vector<double> ts = {opt.compute_sigma, opt.recompute_sigma, opt.host_sigma, opt.transfer_sigma};
  if (!pv.empty()) {
    std::vector<double> k = split_surprise(pv[0], ps, pm[0], opt.min_scale);
    if (pv.size() > 1) k = solve_parts(pv, pm, ps, k, opt.min_scale, opt.ridge);
    a.fixed_scale = k[0];
    a.activation_scale = k[1];
    a.peak_anchored = true;
    std::vector<double> t = split_surprise(tv[0], ts, tm[0], opt.min_scale);
    if (tv.size() > 1) t = solve_parts(tv, tm, ts, t, opt.min_scale, opt.ridge);
    a.compute_scale = t[0];
    a.recompute_scale = t[1];
    a.host_scale = t[2];
    a.transfer_scale = t[3];
    a.time_anchored = true;
  }
  // an OOM is a lower bound on that schedule's peak (oom_lower_bound): raise the activations until the
  // prediction reaches it (the fixed part is the better known one)
  for (const AnchorPoint& p : points) {
    if (!p.measured.oom) continue;
    const PeakParts q = peak_parts(p.predicted);
    const double bound = oom_lower_bound(p.measured, p.predicted.usable_vram_bytes) - q.exact_bytes;
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
  // the upcast weight copies stay as counted (PeakParts::exact_bytes)
  const double copies = m.upcast_weight_bytes;
  m.activation_peak_bytes = (m.activation_peak_bytes - copies) * a.activation_scale + copies;
  m.fragmentation_bytes *= a.activation_scale;
  TimeBreakdown& t = q.time;
  t.forward_s *= a.compute_scale;
  t.backward_s *= a.compute_scale;
  t.recompute_s *= a.recompute_scale;
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
                      &m.activation_peak_bytes, &m.upcast_weight_bytes, &m.fragmentation_bytes})
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

const std::vector<std::string>& range_part_names(RangeKind k) {
  static const std::vector<std::string> peak = {"level", "weights", "training_state", "activations"};
  static const std::vector<std::string> time = {"level", "compute", "host", "transfer"};
  static const std::vector<std::string> peak_anchored = {"level", "structure"};
  static const std::vector<std::string> time_anchored = {"level", "compute_structure", "transfer_structure"};
  switch (k) {
    case RangeKind::Peak: return peak;
    case RangeKind::Time: return time;
    case RangeKind::PeakAnchored: return peak_anchored;
    case RangeKind::TimeAnchored: return time_anchored;
  }
  return peak;
}

std::string to_string(RangeKind k) {
  switch (k) {
    case RangeKind::Peak: return "peak";
    case RangeKind::Time: return "time";
    case RangeKind::PeakAnchored: return "peak_anchored";
    case RangeKind::TimeAnchored: return "time_anchored";
  }
  return "peak";
}

namespace {

const char* const kStrata[] = {"none", "per-block", "segmented", "offload", "streamed", "compiled"};
enum StratumIndex { kStratumNone, kStratumPerBlock, kStratumSegmented, kStratumOffload, kStratumStreamed, kStratumCompiled };

// "none, per-block, ..." for an error message
std::string strata_list() {
  std::string out;
  for (const char* s : kStrata) out += (out.empty() ? "" : ", ") + std::string(s);
  return out;
}

double activation_part(const Prediction& p) { return peak_parts(p).activation_bytes; }

}  // namespace

const char* range_stratum(RangeKind k, const Schedule& s, const Prediction& p) {
  const bool time_kind = k == RangeKind::Time || k == RangeKind::TimeAnchored;
  if (time_kind && p.time.compiled) return kStrata[kStratumCompiled];
  // streaming changes what is resident and what moves more than the schedule does: its own kind
  if (p.memory.streamed_weights_bytes > 0) return kStrata[kStratumStreamed];
  if (s.offload_attention || (s.checkpointing && is_unsloth(s.backend))) return kStrata[kStratumOffload];
  if (!s.checkpointing) return kStrata[kStratumNone];
  if (s.interval > 1 || s.stride > 1) return kStrata[kStratumSegmented];
  return kStrata[kStratumPerBlock];
}

RangeParts range_parts(RangeKind k, const Anchor& a, const Schedule& schedule, const Prediction& q) {
  RangeParts r;
  r.stratum = range_stratum(k, schedule, q);
  const MemoryBreakdown& m = q.memory;
  const TimeParts t = time_parts(q);
  switch (k) {
    case RangeKind::Peak:
      r.total = q.peak_vram_bytes;
      r.x = {q.peak_vram_bytes, m.weights_bytes + m.upcast_weight_bytes,  // the copies: as sure as the weights
             m.trainable_bytes + m.gradient_bytes + m.optimizer_bytes, activation_part(q)};
      break;
    case RangeKind::Time:
      r.total = q.step_time_s;
      r.x = {q.step_time_s, t.compute_s, t.host_s, t.transfer_s};
      break;
    case RangeKind::PeakAnchored:
    case RangeKind::TimeAnchored: {
      // what the measurement leaves open: the difference between this schedule's anchored parts
      // and those of the nearest measured schedule (same setup: the fixed part is the same)
      double da = -1, dc = -1, dx = -1;
      const double act = activation_part(q);
      for (const AnchorPoint& pt : a.points) {
        if (pt.measured.oom) continue;
        const TimeParts pm = time_parts(pt.predicted);
        const double am = a.activation_scale * activation_part(pt.predicted);
        const double d_a = std::fabs(act - am);
        // the measured schedule's compute as anchored: forward + backward and the recompute pass
        // each by its own scale (apply_anchor)
        const double pr = pt.predicted.time.recompute_s;
        const double d_c = std::fabs(t.compute_s - (a.compute_scale * (pm.compute_s - pr) + a.recompute_scale * pr));
        const double d_x = std::fabs(t.transfer_s - a.transfer_scale * pm.transfer_s);
        if (da < 0 || d_a < da) da = d_a;
        if (dc < 0 || d_c + d_x < dc + dx) {
          dc = d_c;
          dx = d_x;
        }
      }
      if (k == RangeKind::PeakAnchored) {
        r.total = q.peak_vram_bytes;
        r.x = {q.peak_vram_bytes, std::max(0.0, da), 0, 0};
      } else {
        r.total = q.step_time_s;
        r.x = {q.step_time_s, std::max(0.0, dc), std::max(0.0, dx), 0};
      }
      break;
    }
  }
  return r;
}

const Band& ScoreModel::band(const char* stratum) const {
  if (!strata.empty()) {
    const auto it = strata.find(stratum);
    if (it != strata.end()) return it->second;
  }
  return all;
}

double ScoreModel::u(const RangeParts& p) const {
  if (sigma.empty()) return 1;
  if (!(p.total > 0)) return 0;
  double v = 0;
  for (std::size_t k = 0; k < sigma.size() && k < p.x.size(); ++k) v += sigma[k] * sigma[k] * p.x[k] * p.x[k];
  return std::sqrt(v) / p.total;
}

ScoreModel& RangeModel::of(RangeKind k) {
  switch (k) {
    case RangeKind::Peak: return peak;
    case RangeKind::Time: return time;
    case RangeKind::PeakAnchored: return peak_anchored;
    case RangeKind::TimeAnchored: return time_anchored;
  }
  return peak;
}

const ScoreModel& RangeModel::of(RangeKind k) const { return const_cast<RangeModel*>(this)->of(k); }

double RangeModel::least_peak_hi_factor() const {
  // u^2 = sigma_0^2 + sum_k sigma_k^2 s_k^2 over shares s_k summing to 1 is least at
  // sigma_0^2 + 1 / sum_k 1 / sigma_k^2 (a part with sigma 0 takes the whole peak: sigma_0^2)
  double u = 1;
  if (!peak.sigma.empty()) {
    double inv = 0;
    bool zero = false;
    for (std::size_t k = 1; k < peak.sigma.size(); ++k) {
      if (peak.sigma[k] <= 0) zero = true;
      else inv += 1 / (peak.sigma[k] * peak.sigma[k]);
    }
    const double rest = zero || inv <= 0 ? 0 : 1 / inv;
    u = std::sqrt(peak.sigma[0] * peak.sigma[0] + rest);
  }
  double hi = peak.all.log_hi;
  for (const auto& [name, b] : peak.strata) hi = std::min(hi, b.log_hi);
  return std::exp(std::max(0.0, hi) * u);
}

namespace {

Band band_from_json(const nlohmann::json& b, const std::string& origin, const std::string& key) {
  if (!b.is_object()) throw InputError(origin + ": field '" + key + "' must be an object");
  double edge[2];
  const char* fields[2] = {"log_lo", "log_hi"};
  for (int k = 0; k < 2; ++k) {
    const char* field = fields[k];
    if (!b.contains(field) || !b[field].is_number() || !std::isfinite(b[field].get<double>()))
      throw InputError(origin + ": field '" + key + "." + field + "' must be a finite number");
    edge[k] = b[field].get<double>();
  }
  if (edge[0] > 0 || edge[1] < 0) throw InputError(origin + ": field '" + key + "': log_lo must be <= 0 <= log_hi");
  for (const char* field : {"n", "families"})
    if (b.contains(field) && !(b[field].is_number_integer() && b[field].get<long long>() >= 0))
      throw InputError(origin + ": field '" + key + "." + field + "' must be a non-negative integer");
  Band out(edge[0], edge[1], b.value("n", 0));
  out.families = b.value("families", 0);
  return out;
}

nlohmann::json band_json(const Band& b) {
  return {{"log_lo", b.log_lo}, {"log_hi", b.log_hi}, {"n", b.n}, {"families", b.families}};
}

ScoreModel score_from_json(const nlohmann::json& j, const std::string& origin, RangeKind kind) {
  const std::string key = to_string(kind);
  if (!j.contains(key) || !j[key].is_object()) throw InputError(origin + ": field '" + key + "' is missing");
  const nlohmann::json& o = j[key];
  ScoreModel m;
  m.all = band_from_json(o, origin, key);
  if (o.contains("sigma")) {
    const nlohmann::json& s = o["sigma"];
    if (!s.is_object()) throw InputError(origin + ": field '" + key + ".sigma' must be an object of part: sigma");
    const std::vector<std::string>& names = range_part_names(kind);
    for (auto it = s.begin(); it != s.end(); ++it)
      if (std::find(names.begin(), names.end(), it.key()) == names.end())
        throw InputError(origin + ": field '" + key + ".sigma." + it.key() + "': not a part of " + key);
    for (const std::string& n : names) {
      if (!s.contains(n) || !s[n].is_number() || !std::isfinite(s[n].get<double>()) || s[n].get<double>() < 0)
        throw InputError(origin + ": field '" + key + ".sigma." + n + "' must be a finite number >= 0");
      m.sigma.push_back(s[n].get<double>());
    }
  }
  if (o.contains("strata")) {
    const nlohmann::json& st = o["strata"];
    if (!st.is_object()) throw InputError(origin + ": field '" + key + ".strata' must be an object");
    for (auto it = st.begin(); it != st.end(); ++it) {
      if (std::find(std::begin(kStrata), std::end(kStrata), it.key()) == std::end(kStrata))
        throw InputError(origin + ": field '" + key + ".strata." + it.key() +
                         "': not a kind of run (" + strata_list() + ")");
      m.strata[it.key()] = band_from_json(it.value(), origin, key + ".strata." + it.key());
    }
  }
  return m;
}

nlohmann::json score_json(const ScoreModel& m, RangeKind kind) {
  nlohmann::json j = band_json(m.all);
  if (!m.sigma.empty()) {
    nlohmann::json s = nlohmann::json::object();
    const std::vector<std::string>& names = range_part_names(kind);
    for (std::size_t k = 0; k < names.size() && k < m.sigma.size(); ++k) s[names[k]] = m.sigma[k];
    j["sigma"] = s;
  }
  if (!m.strata.empty()) {
    nlohmann::json st = nlohmann::json::object();
    for (const auto& [name, b] : m.strata) st[name] = band_json(b);
    j["strata"] = st;
  }
  return j;
}

constexpr RangeKind kAllKinds[] = {RangeKind::Peak, RangeKind::Time, RangeKind::PeakAnchored, RangeKind::TimeAnchored};

}  // namespace

RangeModel range_model_from_json(const nlohmann::json& j, const std::string& origin) {
  if (!j.is_object()) throw InputError(origin + ": a ranges file is a JSON object");
  RangeModel m;
  if (!j.contains("coverage") || !j["coverage"].is_number() || !(j["coverage"].get<double>() > 0) ||
      !(j["coverage"].get<double>() < 1))
    throw InputError(origin + ": field 'coverage' must be a number in (0, 1)");
  m.coverage = j["coverage"].get<double>();
  for (RangeKind k : kAllKinds) m.of(k) = score_from_json(j, origin, k);
  m.source = j.value("source", origin);
  return m;
}

nlohmann::json to_json(const RangeModel& m) {
  nlohmann::json j = {{"coverage", m.coverage}, {"source", m.source}};
  for (RangeKind k : kAllKinds) j[to_string(k)] = score_json(m.of(k), k);
  return j;
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
  const RangeKind pk = a.peak_anchored ? RangeKind::PeakAnchored : RangeKind::Peak;
  const RangeKind tk = a.time_anchored ? RangeKind::TimeAnchored : RangeKind::Time;
  r.peak_parts = range_parts(pk, a, schedule, q);
  r.time_parts = range_parts(tk, a, schedule, q);
  const ScoreModel& ps = ranges.of(pk);
  const ScoreModel& ts = ranges.of(tk);
  r.peak_u = ps.u(r.peak_parts);
  r.time_u = ts.u(r.time_parts);
  const Band& pb = ps.band(r.peak_parts.stratum);
  const Band& tb = ts.band(r.time_parts.stratum);
  r.peak_vram_bytes = {q.peak_vram_bytes * std::exp(pb.log_lo * r.peak_u), q.peak_vram_bytes * std::exp(pb.log_hi * r.peak_u)};
  r.step_time_s = {q.step_time_s * std::exp(tb.log_lo * r.time_u), q.step_time_s * std::exp(tb.log_hi * r.time_u)};
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
