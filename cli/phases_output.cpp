#include "phases_output.hpp"

#include <cstdio>

#include "common.hpp"
#include "output.hpp"

namespace segadvise::cli {

namespace {

double gib(double bytes) { return bytes / kGiB; }

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

}  // namespace

nlohmann::ordered_json phases_json(const RunPhases& run, double budget_bytes) {
  using oj = nlohmann::ordered_json;
  oj j = oj::object();
  for (const auto& p : run.phases) {
    oj resident = oj::array();  // in the order they add up
    for (const auto& r : p.resident) resident.push_back({{"what", r.what}, {"gib", gib(r.bytes)}});
    j[to_string(p.phase)] = {{"peak_vram_gib", p.runs ? oj(gib(p.peak_vram_bytes)) : oj(nullptr)},
                             {"peak_vram_gib_range", p.runs ? oj({gib(p.peak_lo_bytes), gib(p.peak_hi_bytes)}) : oj(nullptr)},
                             {"fit", p.runs ? oj(to_string(p.verdict(budget_bytes))) : oj(nullptr)},
                             {"runs", p.runs},
                             {"resident", resident},
                             {"set_by", p.set_by}};
  }
  return j;
}

nlohmann::json phase_advice_json(const RunPhases& run) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& f : run.fixes)
    a.push_back({{"phase", to_string(f.phase)}, {"key", f.key}, {"value", nlohmann::json::parse(f.value_json)},
                 {"peak_after_gib", gib(f.peak_after_bytes)},
                 {"peak_after_gib_range", {gib(f.peak_after_lo_bytes), gib(f.peak_after_hi_bytes)}},
                 {"fits_after", f.fits_after}, {"fit_after", to_string(f.fit_after)}});
  return a;
}

nlohmann::json host_memory_json(const HostMemory& host) {
  nlohmann::json parts = nlohmann::json::object();
  for (const auto& r : host.parts) parts[r.what] = gib(r.bytes);
  return {{"peak_gib", gib(host.peak_bytes)}, {"set_by", host.set_by}, {"parts", parts}};
}

void add_phases_json(nlohmann::json& p, const RunPhases& run, double usable_bytes, double headroom_bytes,
                     bool step_only, FitVerdict run_verdict) {
  p["step_peak_vram_gib"] = p["peak_vram_gib"];
  p["step_peak_vram_gib_range"] = p["peak_vram_gib_range"];
  p["step_fits"] = p["fits"];
  p["step_fit"] = p["fit"];
  if (!step_only) {
    p["peak_vram_gib"] = gib(run.peak_vram_bytes);
    p["peak_vram_gib_range"] = {gib(run.peak_lo_bytes), gib(run.peak_hi_bytes)};
    p["fits"] = p["step_fits"].get<bool>() && run.peak_vram_bytes + headroom_bytes <= usable_bytes;
    p["fit"] = to_string(run_verdict);
  }
  p["peak_phase"] = step_only ? "training_step" : to_string(run.peak_phase);
  p["phases"] = nlohmann::json::parse(phases_json(run, usable_bytes - headroom_bytes).dump());
}

void print_phases(std::ostream& out, const RunPhases& run, double usable_bytes, double headroom_bytes, bool markdown) {
  out << (markdown ? "\n### The whole run\n\n" : "\nThe whole run (phases):\n");
  Table t({"phase", "peak GiB", "90% range", "", "set by"});
  const double budget = usable_bytes - headroom_bytes;
  for (const auto& p : run.phases) {
    std::vector<std::string> marks;
    if (p.runs && p.phase == run.peak_phase) marks.push_back("peak");
    if (p.runs && p.verdict(budget) == FitVerdict::DoesNotFit) marks.push_back("over");
    if (p.runs && p.verdict(budget) == FitVerdict::Borderline) marks.push_back("borderline");
    std::string mark;
    for (const auto& m : marks) mark += (mark.empty() ? "" : ", ") + m;
    const std::string range = p.runs ? number(p.peak_lo_bytes / kGiB) + "–" + number(p.peak_hi_bytes / kGiB) : "-";
    t.add({to_string(p.phase), p.runs ? number(p.peak_vram_bytes / kGiB) : "-", range, mark, p.set_by});
  }
  t.print(out, markdown);
  out << (markdown ? "\n" : "") << "run peak: " << gib_str(run.peak_vram_bytes) << " in " << to_string(run.peak_phase)
      << " (90%: " << number(run.peak_lo_bytes / kGiB) << "–" << number(run.peak_hi_bytes / kGiB) << " GiB; "
      << gib_str(budget) << " available after headroom)\n";
  if (run.host.peak_bytes > 0)
    out << "host memory: " << gib_str(run.host.peak_bytes) << " (" << run.host.set_by << ")\n";
  if (run.fixes.empty()) return;
  out << (markdown ? "\n#### Phase advice\n\n" : "\nPhase advice (cheapest key first):\n");
  for (const auto& f : run.fixes)
    out << (markdown ? "- " : "  ") << to_string(f.phase) << ": " << f.key << ": " << f.value_json << " -> "
        << gib_str(f.peak_after_bytes) << " (90%: " << number(f.peak_after_lo_bytes / kGiB) << "–"
        << number(f.peak_after_hi_bytes / kGiB) << ", "
        << (f.fit_after == FitVerdict::Fits ? "fits" : (f.fit_after == FitVerdict::Borderline ? "borderline" : "still over"))
        << ")\n";
}

nlohmann::ordered_json with_phase_fixes(const nlohmann::ordered_json& raw, const std::vector<PhaseFix>& fixes) {
  nlohmann::ordered_json out = raw;
  for (const auto& f : fixes) {
    const std::string dashed = "--" + f.key;
    const std::string key = out.contains(dashed) && !out.contains(f.key) ? dashed : f.key;
    out[key] = nlohmann::ordered_json::parse(f.value_json);
  }
  return out;
}

}  // namespace segadvise::cli
