#include "measured.hpp"
#include "common.hpp"

#include <cstdio>

namespace segadvise::cli {

namespace {

std::string num(double x, int decimals) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f", decimals, x);
  return b;
}

// seconds with enough digits to tell 0.43 from 0.47
int time_decimals(double s) { return s < 10 ? 2 : 1; }

}  // namespace

std::vector<Measurement> parse_measurements(const std::vector<std::string>& texts) {
  std::vector<Measurement> out;
  for (const auto& t : texts) out.push_back(parse_measurement(t));
  return out;
}

std::string peak_with_range(const Candidate& c) {
  const double p = c.prediction.peak_vram_bytes / kGiB;
  std::string s = num(p, 1) + " GiB";
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

void add_range_json(nlohmann::json& j, const Candidate& c) {
  if (!c.prediction.supported) {
    j["fit"] = nullptr;
    j["peak_vram_gib_range"] = nullptr;
    j["step_time_s_range"] = nullptr;
    return;
  }
  j["fit"] = to_string(c.verdict());
  if (c.ranged) {
    j["peak_vram_gib_range"] = {c.peak_range_bytes.lo / kGiB, c.peak_range_bytes.hi / kGiB};
    j["step_time_s_range"] = {c.step_range_s.lo, c.step_range_s.hi};
  } else {
    j["peak_vram_gib_range"] = {c.prediction.peak_vram_bytes / kGiB, c.prediction.peak_vram_bytes / kGiB};
    j["step_time_s_range"] = {c.prediction.step_time_s, c.prediction.step_time_s};
  }
  j["measured"] = c.measured;
}

nlohmann::json measurements_json(const Anchor& a) {
  nlohmann::json used = nlohmann::json::array();
  for (const AnchorPoint& p : a.points) {
    nlohmann::json m = {{"text", p.measured.text}, {"schedule", p.measured.schedule.name()}};
    if (p.measured.oom) m["measured"] = "oom";
    else m["measured"] = {{"sec_per_step", p.measured.step_time_s}, {"peak_vram_gib", p.measured.peak_vram_bytes / kGiB}};
    m["model"] = {{"sec_per_step", p.predicted.step_time_s}, {"peak_vram_gib", p.predicted.peak_vram_bytes / kGiB},
                  {"usable_vram_gib", p.predicted.usable_vram_bytes / kGiB}};
    used.push_back(m);
  }
  return {{"used", used},
          {"peak_anchored", a.peak_anchored},
          {"time_anchored", a.time_anchored},
          {"raised_by_oom", a.raised_by_oom},
          {"scales",
           {{"fixed_memory", a.fixed_scale},
            {"activations", a.activation_scale},
            {"compute", a.compute_scale},
            {"host_overhead", a.host_scale},
            {"transfers", a.transfer_scale}}}};
}

void print_measurements(std::ostream& out, const Anchor& a, bool md) {
  if (a.points.empty()) return;
  out << (md ? "### Measurements\n\n" : "Measurements of this setup:\n");
  for (const AnchorPoint& p : a.points) {
    out << (md ? "- " : "  ") << p.measured.schedule.name() << ": ";
    if (p.measured.oom) out << "ran out of memory (the model said " << num(p.predicted.peak_vram_bytes / kGiB, 1) << " GiB of "
                            << num(p.predicted.usable_vram_bytes / kGiB, 1) << " usable)\n";
    else
      out << num(p.measured.step_time_s, 2) << " s/step, " << num(p.measured.peak_vram_bytes / kGiB, 1)
          << " GiB measured; the model said " << num(p.predicted.step_time_s, 2) << " s, "
          << num(p.predicted.peak_vram_bytes / kGiB, 1) << " GiB\n";
  }
  out << (md ? "\n" : "  ") << "every prediction below is anchored on them: fixed memory x" << num(a.fixed_scale, 2)
      << ", activations x" << num(a.activation_scale, 2) << (a.raised_by_oom ? " (raised to honour the OOM)" : "");
  if (a.time_anchored)
    out << "; compute x" << num(a.compute_scale, 2) << ", host overhead x" << num(a.host_scale, 2);
  out << "\n\n";
}

void print_verdict(std::ostream& out, const Candidate& c, bool md) {
  if (!c.prediction.supported || !c.ranged) return;
  out << (md ? "**" : "") << "verdict: " << verdict_text(c) << (md ? "**" : "") << " — peak " << peak_with_range(c)
      << " against " << num(c.prediction.usable_vram_bytes / kGiB, 1) << " GiB usable; " << time_with_range(c, "/step")
      << "\n";
  if (c.fit == FitVerdict::Borderline)
    out << "(the 90% range straddles the usable memory minus headroom: pass --measured " << c.schedule.name()
        << ":SEC:GIB from a few real steps to settle it)\n";
  out << "\n";
}

std::string settle_hint(const Candidate& c) {
  return "nothing fits with confidence; '" + c.schedule.name() + "' is borderline (" + peak_with_range(c) +
         "): run it for a few steps and pass --measured " + c.schedule.name() +
         ":SEC:GIB (or " + c.schedule.name() + ":oom) to settle it";
}

}  // namespace segadvise::cli
