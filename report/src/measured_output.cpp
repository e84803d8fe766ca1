// Measurements and ranges as the report shows them (measured_output.hpp).
#include "segadvise/report/measured_output.hpp"

#include <cmath>
#include <cstdio>

#include "segadvise/planner/measurements.hpp"
#include "segadvise/report/format.hpp"
#include "segadvise/report/memory_figures.hpp"
#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

namespace {

std::string num(double x, int decimals) { return fixed_str(x, decimals); }

// seconds with enough digits to tell 0.43 from 0.47
int time_decimals(double s) { return s < 10 ? 2 : 1; }

}  // namespace

std::string peak_with_range(const Candidate& c) {
  const double p = c.prediction.peak_vram_bytes / kGiB;
  std::string s = num(p, 1) + " GiB reserved";
  if (!c.ranged) return s;
  if (c.measured) return s + " (measured)";
  return s + " (90%: " + num(c.peak_range_bytes.lo / kGiB, 1) + "–" + num(c.peak_range_bytes.hi / kGiB, 1) + ")";
}

std::string time_with_range(const Candidate& c, const std::string& suffix) {
  const double t = c.prediction.step_time_s;
  const int d = time_decimals(t);
  std::string s = num(t, d) + " s" + suffix;
  if (!c.ranged) return s;
  if (c.measured) return s + " (measured)";
  return s + " (90%: " + num(c.step_range_s.lo, d) + "–" + num(c.step_range_s.hi, d) + ")";
}

std::string verdict_text(const Candidate& c) {
  if (!c.prediction.supported) return "unsupported";
  switch (c.verdict()) {
    case FitVerdict::Fits: return "fits";
    case FitVerdict::Borderline: return "borderline";
    case FitVerdict::DoesNotFit: return "does not fit";
  }
  return "does not fit";
}



void print_measurements(std::ostream& out, const Anchor& a, const TextFormat& fmt) {
  if (a.points.empty()) return;
  out << fmt.section(3, "Measurements", "Measurements of this setup:\n");
  for (const AnchorPoint& p : a.points) {
    out << fmt.item() << p.measured.schedule.name() << ": ";
    if (p.measured.oom) {
      out << "ran out of memory";
      if (p.measured.oom_need_bytes > 0) out << " needing at least " << num(p.measured.oom_need_bytes / kGiB, 1) << " GiB";
      if (p.measured.oom_elsewhere) out << " on another card";
      out << " (the model said " << num(p.predicted.peak_vram_bytes / kGiB, 1) << " GiB of "
          << num(p.predicted.usable_vram_bytes / kGiB, 1) << " usable)\n";
    }
    else
      out << num(p.measured.step_time_s, 2) << " s/step, " << num(p.measured.peak_vram_bytes / kGiB, 1)
          << " GiB measured; the model said " << num(p.predicted.step_time_s, 2) << " s, "
          << num(p.predicted.peak_vram_bytes / kGiB, 1) << " GiB\n";
    if (!p.measured.source.empty()) out << fmt.item("    ") << "read from " << p.measured.source << "\n";
  }
  out << fmt.either("  ", "\n") << "every prediction below is anchored on them: fixed memory x" << num(a.fixed_scale, 2)
      << ", activations x" << num(a.activation_scale, 2) << (a.raised_by_oom ? " (raised to honour the OOM)" : "");
  if (a.time_anchored)
    out << "; compute x" << num(a.compute_scale, 2) << ", recompute x" << num(a.recompute_scale, 2)
        << ", host overhead x" << num(a.host_scale, 2);
  out << "\n\n";
}

void print_verdict(std::ostream& out, const Candidate& c, const TextFormat& fmt) {
  if (!c.prediction.supported || !c.ranged) return;
  out << fmt.strong("verdict: " + verdict_text(c)) << " — peak " << peak_with_range(c)
      << " against " << num(c.prediction.usable_vram_bytes / kGiB, 1) << " GiB usable for it; " << time_with_range(c, "/step")
      << "\n";
  if (c.prediction.supported) {
    const Range r = c.ranged ? c.peak_range_bytes : Range{c.prediction.peak_vram_bytes, c.prediction.peak_vram_bytes};
    const PeakFigures f = peak_figures(c.prediction, c.prediction.peak_vram_bytes, r);
    out << "(as nvidia-smi shows it: " << num(f.nvidia_smi / kGiB, 1) << " GiB, 90%: " << num(f.nvidia_smi_range.lo / kGiB, 1)
        << "–" << num(f.nvidia_smi_range.hi / kGiB, 1) << "; max_memory_allocated: " << num(f.allocated / kGiB, 1) << " GiB)\n";
  }
  if (c.fit == FitVerdict::Borderline)
    out << "(the 90% range straddles the usable memory minus headroom: pass --measured " << c.schedule.name()
        << ":SEC:GIB from a few real steps to settle it)\n";
  out << "\n";
}

std::string shrink_line(const Candidate& c, const RangeIfMeasured& x, const std::string& measured) {
  auto gib_range = [](const Range& r) { return num(r.lo / kGiB, 1) + "–" + num(r.hi / kGiB, 1) + " GiB"; };
  if (c.schedule.name() == measured)
    return c.schedule.name() + ": its own measurement (peak now " + gib_range(x.peak_now_bytes) + ")";
  return c.schedule.name() + ": peak " + gib_range(x.peak_now_bytes) + " -> " + gib_range(x.peak_after_bytes) + " (" +
         num(100 * x.peak_width_ratio, 0) + "% of the width; " + to_string(x.verdict_after) + "), s/step " +
         num(x.time_now_s.lo, time_decimals(x.time_now_s.lo)) + "–" + num(x.time_now_s.hi, time_decimals(x.time_now_s.hi)) +
         " -> " + num(x.time_after_s.lo, time_decimals(x.time_after_s.lo)) + "–" +
         num(x.time_after_s.hi, time_decimals(x.time_after_s.hi)) + " s";
}

std::string settle_hint(const Candidate& c) {
  return "nothing fits with confidence; '" + c.schedule.name() + "' is borderline (" + peak_with_range(c) +
         "): run it for a few steps and pass --measured " + c.schedule.name() +
         ":SEC:GIB (or " + c.schedule.name() + ":oom) to settle it";
}

void print_remembered(std::ostream& out, const AdvisorRequest& r, const std::string& format) {
  if (format == "json") return;
  bool any = false;
  for (const Measurement& m : r.measured) {
    if (!is_remembered(m)) continue;
    any = true;
    out << "anchored on " << m.source.substr(0, m.source.find("): ") + 1) << ": " << m.schedule.name() << " ";
    if (m.oom) {
      out << "ran out of memory";
      if (m.oom_need_bytes > 0) out << " needing at least " << num(m.oom_need_bytes / kGiB, 1) << " GiB";
    } else {
      out << num(m.step_time_s, 2) << " s/step, " << num(m.peak_vram_bytes / kGiB, 1) << " GiB";
    }
    out << "\n";
  }
  if (any) out << "(segadvise runs list shows them; --no-runs leaves them out)\n\n";
}

}  // namespace segadvise::cli
