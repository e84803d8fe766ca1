#include "segadvise/report/phases_output.hpp"

#include <cstdio>

#include "segadvise/report/format.hpp"
#include "segadvise/report/output.hpp"
#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

namespace {

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

}  // namespace





void print_phases(std::ostream& out, const RunPhases& run, double usable_bytes, double headroom_bytes,
                  const TextFormat& fmt) {
  out << "\n" << fmt.section(3, "The whole run", "The whole run (phases):\n");
  Table t({"phase", "peak GiB reserved", "90% range", "", "set by"});
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
  fmt.table(out, t);
  out << fmt.gap() << "run peak: " << gib_str(run.peak_vram_bytes) << " reserved in " << to_string(run.peak_phase)
      << " (90%: " << number(run.peak_lo_bytes / kGiB) << "–" << number(run.peak_hi_bytes / kGiB) << " GiB; "
      << gib_str(budget) << " available after headroom)\n";
  if (run.host.peak_bytes > 0)
    out << "host memory: " << gib_str(run.host.peak_bytes) << " (" << run.host.set_by << ")\n";
  if (run.fixes.empty()) return;
  out << "\n" << fmt.section(4, "Phase advice", "Phase advice (cheapest key first):\n");
  for (const auto& f : run.fixes) {
    if (f.key.empty()) {  // the trainer has no key for this phase
      out << fmt.item() << to_string(f.phase) << ": " << f.note << " (" << gib_str(f.peak_after_bytes) << ")\n";
      continue;
    }
    out << fmt.item() << to_string(f.phase) << ": " << f.key << ": " << (f.value_json == "null" ? "remove it" : f.value_json) << " -> "
        << gib_str(f.peak_after_bytes) << " (90%: " << number(f.peak_after_lo_bytes / kGiB) << "–"
        << number(f.peak_after_hi_bytes / kGiB) << ", "
        << (f.fit_after == FitVerdict::Fits ? "fits" : (f.fit_after == FitVerdict::Borderline ? "borderline" : "still over"))
        << ")\n";
  }
}

nlohmann::ordered_json with_phase_fixes(const nlohmann::ordered_json& raw, const std::vector<PhaseFix>& fixes) {
  nlohmann::ordered_json out = raw;
  for (const auto& f : fixes) {
    if (f.key.empty()) continue;  // "no key": nothing to write
    const std::string dashed = "--" + f.key;
    const std::string key = out.contains(dashed) && !out.contains(f.key) ? dashed : f.key;
    out[key] = nlohmann::ordered_json::parse(f.value_json);
  }
  return out;
}

}  // namespace segadvise::cli
