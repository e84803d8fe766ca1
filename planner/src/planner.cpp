#include "segadvise/planner/planner.hpp"

#include <algorithm>
#include <limits>
#include <set>

namespace segadvise {

std::vector<Schedule> enumerate_schedules(const ScheduleSpace& space) {
  std::vector<Schedule> out;
  std::set<std::string> seen;
  auto add = [&](const Schedule& s) {
    if (seen.insert(s.name()).second) out.push_back(s);
  };
  std::vector<bool> offloads = {false};
  if (space.attention_offload) offloads.push_back(true);
  for (bool off : offloads) {
    Schedule none;
    none.checkpointing = false;
    none.offload_attention = off;
    add(none);
    for (Backend b : space.backends) {
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

void mark_pareto(std::vector<Candidate>& candidates) {
  std::vector<std::size_t> order(candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto &pa = candidates[a].prediction, &pb = candidates[b].prediction;
    if (pa.peak_vram_bytes != pb.peak_vram_bytes) return pa.peak_vram_bytes < pb.peak_vram_bytes;
    return pa.step_time_s < pb.step_time_s;
  });
  double best_time = std::numeric_limits<double>::infinity();
  for (std::size_t i : order) {
    candidates[i].pareto = candidates[i].prediction.step_time_s < best_time - 1e-12;
    if (candidates[i].pareto) best_time = candidates[i].prediction.step_time_s;
  }
}

Advice advise(const std::vector<Schedule>& schedules, const Evaluate& evaluate, double headroom_bytes) {
  Advice a;
  for (const auto& s : schedules) {
    Candidate c = evaluate(s);
    ++a.evaluated_count;
    if (!c.prediction.supported) {
      ++a.unsupported_count;
      continue;
    }
    a.candidates.push_back(std::move(c));
  }
  std::stable_sort(a.candidates.begin(), a.candidates.end(), [](const Candidate& x, const Candidate& y) {
    if (x.prediction.step_time_s != y.prediction.step_time_s) return x.prediction.step_time_s < y.prediction.step_time_s;
    return x.prediction.peak_vram_bytes < y.prediction.peak_vram_bytes;
  });
  mark_pareto(a.candidates);
  double smallest_over = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < a.candidates.size(); ++i) {
    const Prediction& p = a.candidates[i].prediction;
    if (p.fits && a.recommended < 0) a.recommended = static_cast<int>(i);
    smallest_over = std::min(smallest_over, p.peak_vram_bytes + headroom_bytes - p.usable_vram_bytes);
  }
  if (a.recommended < 0 && !a.candidates.empty()) a.shortfall_bytes = std::max(0.0, smallest_over);
  return a;
}

}  // namespace segadvise
