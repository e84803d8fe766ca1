#include "segadvise/report/optimal_output.hpp"

#include <cstdio>

#include "segadvise/report/format.hpp"
#include "segadvise/report/output.hpp"
#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

namespace {

std::string ms_str(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.0f ms", s * 1000);
  return buf;
}


std::string gain_str(const OptimalView& v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f s/step faster (%.1f%%)", v.gain_s, 100 * v.gain_fraction);
  return buf;
}

}  // namespace


void print_optimal(std::ostream& out, const OptimalView& v, const Advice& advice, const TextFormat& fmt) {
  out << "\n"
      << fmt.section(3, "Best with your trainer's knobs vs optimal",
                     "Best with your trainer's knobs vs optimal per-block plan:\n");
  const Candidate* u = v.uniform >= 0 ? &advice.candidates[v.uniform] : nullptr;
  const Prediction* o = v.optimal.found ? &v.optimal.prediction : nullptr;
  Table t({"", "best with your trainer's knobs", "optimal (per-block plan)"});
  const int blocks = v.optimal.found ? v.optimal.plan.segments.back().end : 0;
  t.add({"plan", u ? u->schedule.name() + ": " + describe_plan(u->plan.plan, blocks ? blocks : u->plan.plan.segments.empty() ? 0 : u->plan.plan.segments.back().end) : "nothing fits",
         o ? describe_plan(v.optimal.plan, v.optimal.plan.segments.back().end)
           : v.optimal.reason});
  t.add({"peak VRAM reserved", u ? gib_str(u->prediction.peak_vram_bytes) : "-", o ? gib_str(o->peak_vram_bytes) : "-"});
  t.add({"s/step", u ? secs_str(u->prediction.step_time_s) : "-", o ? secs_str(o->step_time_s) : "-"});
  fmt.table(out, t);
  if (!o) return;
  out << "\n";
  if (u)
    out << "Gain of the optimal plan: " << gain_str(v) << " than " << u->schedule.name() << ".\n";
  else
    out << (v.verdict == FitVerdict::Fits ? "The optimal plan fits where no schedule of the trainer does.\n"
                                          : "The optimal plan does not fit with confidence either.\n");
  if (!v.front.points.empty()) {
    const auto& a = v.front.points.front();
    const auto& b = v.front.points.back();
    out << "Pareto front of optimal plans: " << v.front.points.size() << " points, " << gib_str(a.peak_vram_bytes)
        << " at " << secs_str(a.step_time_s) << " to " << gib_str(b.peak_vram_bytes) << " at " << secs_str(b.step_time_s);
    if (v.front.knee >= 0) {
      const auto& k = v.front.points[v.front.knee];
      out << "; knee at " << gib_str(k.peak_vram_bytes) << ", " << secs_str(k.step_time_s);
    }
    out << ".\n";
  }
  if (!v.insight.empty()) {
    out << "\n" << fmt.section(4, "Memory insight", "Memory insight (each decision against keeping those blocks):\n");
    Table m({"decision", "GPU memory saved", "time added"});
    const std::size_t shown = std::min<std::size_t>(v.insight.size(), 12);
    for (std::size_t i = 0; i < shown; ++i)
      m.add({v.insight[i].what, gib_str(v.insight[i].gpu_bytes_saved, 2), ms_str(v.insight[i].seconds_added)});
    fmt.table(out, m);
    if (v.insight.size() > shown)
      out << "… " << v.insight.size() - shown << " more decisions (--format json lists them all)\n";
  }
}

}  // namespace segadvise::cli
