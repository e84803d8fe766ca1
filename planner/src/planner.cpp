#include "segadvise/planner/planner.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "segadvise/costmodel/parallel.hpp"
#include "segadvise/trainers/trainer_plans.hpp"  // fastest_fit

namespace segadvise {

std::vector<Schedule> enumerate_schedules(const ScheduleSpace& space) {
  std::vector<Schedule> out;
  // Every schedule below has its own name (Schedule::name) once each backend is listed once, so
  // no set of names is needed (building ~18k names was a millisecond of Stable Cascade's advise).
  std::vector<Backend> backends;
  for (Backend b : space.backends)
    if (std::find(backends.begin(), backends.end(), b) == backends.end()) backends.push_back(b);
  auto add = [&](const Schedule& s) { out.push_back(s); };
  std::vector<bool> offloads = {false};
  if (space.attention_offload) offloads.push_back(true);
  for (bool off : offloads) {
    Schedule none;
    none.checkpointing = false;
    none.offload_attention = off;
    add(none);
    for (Backend b : backends) {
      Schedule layer;
      layer.backend = b;
      layer.offload_attention = off;
      add(layer);
      if (!space.interval) continue;
      for (int k = 2; k <= space.max_interval; ++k) {
        Schedule s = layer;
        s.interval = k;
        add(s);
        if (!space.stride) continue;
        for (int st = k + 1; st <= space.max_interval; ++st) {
          s.stride = st;
          add(s);
        }
      }
    }
  }
  return out;
}

std::vector<bool> pareto_flags(const std::vector<double>& peak_bytes, const std::vector<double>& time_s) {
  // walking by increasing peak (ties: faster first), a point is on the front when it is faster
  // than every point that needs no more memory
  std::vector<std::size_t> order(peak_bytes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (peak_bytes[a] != peak_bytes[b]) return peak_bytes[a] < peak_bytes[b];
    return time_s[a] < time_s[b];
  });
  std::vector<bool> flags(peak_bytes.size(), false);
  double best_time = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    flags[i] = time_s[i] < best_time - 1e-12;
    if (flags[i]) best_time = time_s[i];
  }
  return flags;
}

void mark_pareto(std::vector<Candidate>& candidates) {
  std::vector<double> peak, time;
  for (const auto& c : candidates) {
    peak.push_back(c.prediction.peak_vram_bytes);
    time.push_back(c.prediction.step_time_s);
  }
  const std::vector<bool> flags = pareto_flags(peak, time);
  for (std::size_t i = 0; i < candidates.size(); ++i) candidates[i].pareto = flags[i];
}

ScheduleScore score_of(const Candidate& c) {
  return {c.prediction.supported, c.prediction.peak_vram_bytes, c.prediction.step_time_s,
          c.prediction.usable_vram_bytes, c.verdict()};
}

Advice advise(const std::vector<Schedule>& schedules, const Evaluate& evaluate, double headroom_bytes,
              bool keep_all, const Score& score) {
  struct Scored {
    std::size_t index;
    double peak_bytes, time_s, usable_bytes;
    FitVerdict verdict;
  };
  Advice a;
  // Score in parallel: `evaluate` only reads shared state. Large spaces (Stable Cascade's 192
  // micro-blocks give ~18k schedules) would otherwise take most of advise's time budget.
  std::vector<ScheduleScore> scores(schedules.size());
  auto work = [&](std::size_t begin, std::size_t end) {
    if (score)
      score(schedules.data() + begin, end - begin, scores.data() + begin);
    else
      for (std::size_t i = begin; i < end; ++i) scores[i] = score_of(evaluate(schedules[i]));
  };
  // one contiguous chunk per thread: consecutive schedules share their first blocks, whose walk a
  // scorer reuses (PlanScorer)
  const std::size_t threads = schedules.size() < 2000 ? 1 : worker_threads(schedules.size());
  const std::size_t chunk = (schedules.size() + threads - 1) / threads;
  for_each_parallel(threads, threads, [&](std::size_t t) {
    const std::size_t b = t * chunk, e = std::min(schedules.size(), b + chunk);
    if (b < e) work(b, e);
  });
  std::vector<Scored> scored;
  scored.reserve(schedules.size());
  for (std::size_t i = 0; i < scores.size(); ++i) {
    const ScheduleScore& c = scores[i];
    ++a.evaluated_count;
    if (!c.supported) {
      ++a.unsupported_count;
      continue;
    }
    scored.push_back({i, c.peak_vram_bytes, c.step_time_s, c.usable_vram_bytes, c.verdict});
  }
  std::vector<ScheduleScore>().swap(scores);  // freed before the candidates are built
  a.supported_count = static_cast<int>(scored.size());
  std::stable_sort(scored.begin(), scored.end(), [](const Scored& x, const Scored& y) {
    if (x.time_s != y.time_s) return x.time_s < y.time_s;
    return x.peak_bytes < y.peak_bytes;
  });
  std::vector<double> peak(scored.size()), time(scored.size());
  for (std::size_t i = 0; i < scored.size(); ++i) {
    peak[i] = scored[i].peak_bytes;
    time[i] = scored[i].time_s;
  }
  const std::vector<bool> pareto = pareto_flags(peak, time);
  const auto over = [&](std::size_t i) { return scored[i].peak_bytes + headroom_bytes - scored[i].usable_bytes; };
  // the fastest that fits; when none, the schedule worth measuring: the fastest borderline one whose
  // point prediction fits (the likeliest to settle as "fits"), else the fastest borderline one
  const int pick = fastest_fit(scored.size(), [&](std::size_t i) { return scored[i].verdict; },
                               [&](std::size_t i) { return over(i) <= 0; });
  const int recommended = pick >= 0 && scored[pick].verdict == FitVerdict::Fits ? pick : -1;
  const int borderline = pick >= 0 && scored[pick].verdict == FitVerdict::Borderline ? pick : -1;
  double smallest_over = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < scored.size(); ++i) smallest_over = std::min(smallest_over, over(i));
  if (recommended < 0 && !scored.empty()) a.shortfall_bytes = std::max(0.0, smallest_over);
  for (std::size_t i = 0; i < scored.size(); ++i) {
    const int k = static_cast<int>(i);
    if (!keep_all && !pareto[i] && k != recommended && k != borderline) continue;
    Candidate c = evaluate(schedules[scored[i].index]);
    c.pareto = pareto[i];
    if (k == borderline) a.borderline = static_cast<int>(a.candidates.size());
    if (k == recommended) a.recommended = static_cast<int>(a.candidates.size());
    a.candidates.push_back(std::move(c));
  }
  return a;
}

void put_ranges(Candidate& c, const RangeModel& ranges, const Anchor& anchor, double headroom_bytes) {
  const RangedPrediction r = ranged_prediction(ranges, anchor, c.schedule, c.prediction, headroom_bytes);
  c.prediction = r.prediction;
  if (!c.prediction.supported) return;
  c.ranged = true;
  c.peak_range_bytes = r.peak_vram_bytes;
  c.step_range_s = r.step_time_s;
  c.fit = r.fit;
  c.measured = r.measured;
}

Anchor anchor_measurements(const std::vector<Measurement>& measured,
                           const std::function<Candidate(const Schedule&)>& evaluate, const AnchorOptions& opt) {
  std::vector<AnchorPoint> points;
  for (const Measurement& m : measured) points.push_back({m, evaluate(m.schedule).prediction});
  return fit_anchor(points, opt);
}

}  // namespace segadvise
