#include "segadvise/report/memory_figures.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "segadvise/calibration/ranges.hpp"
#include "segadvise/report/format.hpp"

namespace segadvise::cli {

namespace {

std::string num(double x, int decimals) { return fixed_str(x, decimals); }

double gib(double bytes) { return bytes / kGiB; }

nlohmann::json range_json(const Range& r) { return {gib(r.lo), gib(r.hi)}; }

}  // namespace

PeakFigures peak_figures(const Prediction& p, double reserved_bytes, const Range& reserved_range) {
  PeakFigures f;
  // the allocator's slack as the prediction counts it, a share of its peak: the same share of a run's
  // peak in another phase and of the range's ends
  const double slack_share =
      p.peak_vram_bytes > 0 ? std::clamp(p.memory.fragmentation_bytes / p.peak_vram_bytes, 0.0, 1.0) : 0.0;
  const double extra = p.smi_extra_bytes;
  f.reserved = reserved_bytes;
  f.reserved_range = reserved_range;
  f.allocated = reserved_bytes * (1 - slack_share);
  f.allocated_range = {reserved_range.lo * (1 - slack_share), reserved_range.hi * (1 - slack_share)};
  f.nvidia_smi = reserved_bytes + extra;
  f.nvidia_smi_range = {reserved_range.lo + extra, reserved_range.hi + extra};
  return f;
}

std::string peak_figures_text(const PeakFigures& f, bool ranged) {
  std::string s = num(gib(f.reserved), 1) + " GiB reserved";
  if (ranged) s += " (90%: " + num(gib(f.reserved_range.lo), 1) + "–" + num(gib(f.reserved_range.hi), 1) + ")";
  return s + "; allocated " + num(gib(f.allocated), 1) + ", nvidia-smi " + num(gib(f.nvidia_smi), 1);
}

void add_peak_figures_json(nlohmann::json& j, const std::string& prefix, const PeakFigures& f, bool widen) {
  const PublishedBand& band = published_band();
  const Range quantity{f.allocated_range.lo, f.nvidia_smi_range.hi};
  const Range reported = widen ? Range{quantity.lo * band.lo_factor, quantity.hi * band.hi_factor} : quantity;
  j[prefix + "peak_vram_gib_range"] = range_json(reported);
  j[prefix + "peak_vram_gib_range_covers"] =
      "a figure a user's run reports: allocated, reserved or nvidia-smi, on their trainer version and card";
  j[prefix + "peak_vram_gib_range_parts"] = {
      {"model_reserved", range_json(f.reserved_range)},
      {"quantity_allocated_to_nvidia_smi", range_json(quantity)},
      {"user_run", range_json(reported)},
      {"user_run_from", widen ? band.source : "a measured schedule: its measurement"}};
  j[prefix + "peak_vram_quantity"] = "reserved";
  j[prefix + "peak_reserved_gib"] = gib(f.reserved);
  j[prefix + "peak_reserved_gib_range"] = range_json(f.reserved_range);
  j[prefix + "peak_allocated_gib"] = gib(f.allocated);
  j[prefix + "peak_allocated_gib_range"] = range_json(f.allocated_range);
  j[prefix + "peak_nvidia_smi_gib"] = gib(f.nvidia_smi);
  j[prefix + "peak_nvidia_smi_gib_range"] = range_json(f.nvidia_smi_range);
}

nlohmann::json card_memory_json(const CardOverhead& o, double headroom_bytes, const std::string& headroom_from) {
  return {{"total_gib", gib(o.total_bytes)},
          {"total_quantity", "nvidia-smi memory.total"},
          {"driver_reserved_gib", gib(o.driver_reserved_bytes)},
          {"cuda_context_gib", gib(o.context_bytes)},
          {"library_workspaces_gib", gib(o.library_bytes)},
          {"allocator_margin_gib", gib(o.allocator_margin_bytes)},
          {"allocator_margin_from", o.margin_measured ? "this card's measured limit (calibration)" : "a share of the total"},
          {"usable_for_reserved_gib", gib(o.usable_bytes())},
          {"headroom_gib", gib(headroom_bytes)},
          {"headroom_from", headroom_from},
          {"fits_rule",
           "the nvidia-smi peak's 90% upper end + headroom <= total - driver reserved - allocator margin "
           "(the same as: the reserved peak's upper end + headroom <= usable_for_reserved_gib)"}};
}

std::string card_memory_text(const CardOverhead& o, double headroom_bytes, const std::string& headroom_from) {
  return num(gib(o.total_bytes), 1) + " GiB total (nvidia-smi); not the allocator's: driver " +
         num(gib(o.driver_reserved_bytes), 2) + ", CUDA context " + num(gib(o.context_bytes), 2) + ", library workspaces " +
         num(gib(o.library_bytes), 2) + ", allocator margin " + num(gib(o.allocator_margin_bytes), 2) +
         (o.margin_measured ? " (measured on this card)" : "") + " = " + num(gib(o.usable_bytes()), 1) +
         " GiB for the reserved peak; headroom " + num(gib(headroom_bytes), 1) + " GiB (" + headroom_from + ")";
}

}  // namespace segadvise::cli

namespace segadvise::cli {

namespace {
// NVIDIA support answer 5490 (driver 536.40 added the fallback; 546.01 the setting that turns it off)
const char* kFallbackOff =
    "NVIDIA Control Panel > Manage 3D settings > Program Settings > add the python.exe that runs the trainer > "
    "\"CUDA - Sysmem Fallback Policy\" = \"Prefer No Sysmem Fallback\" (driver 546.01 or later), then restart it: "
    "it then stops with an out-of-memory error instead";
}  // namespace

SysmemFallback sysmem_fallback(const TrainingSetup& s, const GpuSpec& g, double reserved_bytes, double reserved_hi_bytes,
                               double usable_bytes, double headroom_bytes) {
  SysmemFallback f;
  if (s.host_os != "windows" || reserved_hi_bytes + headroom_bytes <= usable_bytes) return f;
  f.applies = true;
  f.os_from = s.host_os_from;
  f.spill_bytes = std::max(0.0, reserved_bytes + headroom_bytes - usable_bytes);
  f.spill_hi_bytes = std::max(0.0, reserved_hi_bytes + headroom_bytes - usable_bytes);
  // the least it costs: what spilled crosses PCIe once each way per step at the card's nominal link rate
  if (g.pcie_bytes_per_s > 0) f.extra_s_at_least = 2 * f.spill_bytes / g.pcie_bytes_per_s;
  return f;
}

nlohmann::json sysmem_fallback_json(const SysmemFallback& f) {
  if (!f.applies) return nullptr;
  return {{"os_from", f.os_from},
          {"runs_from_shared_memory", true},
          {"spill_gib", gib(f.spill_bytes)},
          {"spill_gib_upper", gib(f.spill_hi_bytes)},
          {"extra_s_per_step_at_least", f.extra_s_at_least},
          {"turn_off", kFallbackOff}};
}

std::string sysmem_fallback_text(const SysmemFallback& f) {
  if (!f.applies) return "";
  std::string s = "on Windows (" + f.os_from + ") the driver's sysmem fallback does not stop this run: it runs with ";
  s += f.spill_bytes > 0 ? "about " + num(gib(f.spill_bytes), 1) + " GiB" : "nothing at the point prediction";
  s += " (up to " + num(gib(f.spill_hi_bytes), 1) + " GiB at the range's upper end) in shared system memory, slowly: ";
  s += f.spill_bytes > 0 ? "at least " + num(f.extra_s_at_least, 1) + " s more per step over PCIe, often many times more. "
                         : "if it spills, every spilled byte crosses PCIe. ";
  return s + "To fail fast instead: " + kFallbackOff;
}

}  // namespace segadvise::cli

namespace segadvise::cli {

std::string headroom_reason(const Context& ctx) {
  if (std::abs(ctx.headroom_bytes - default_headroom_bytes(ctx.gpu)) < 1) return default_headroom_reason(ctx.gpu);
  return "--headroom-gib";
}

SysmemFallback check_sysmem_fallback(const CheckReport& r) {
  const Candidate& c = r.candidate;
  if (!c.prediction.supported) return {};
  double point = c.prediction.peak_vram_bytes, hi = c.ranged ? c.peak_range_bytes.hi : point;
  if (r.phases && !r.step_only) {
    point = std::max(point, r.phases->peak_vram_bytes);
    hi = std::max(hi, r.phases->peak_hi_bytes);
  }
  return sysmem_fallback(r.context.setup, r.context.gpu, point, hi, c.prediction.usable_vram_bytes, r.context.headroom_bytes);
}

}  // namespace segadvise::cli

namespace segadvise::cli {

ExpandableSegmentsHint expandable_segments_hint(const CheckReport& r) {
  ExpandableSegmentsHint h;
  const TrainingSetup& s = r.context.setup;
  h.set = s.expandable_segments;
  h.from = s.expandable_segments_from;
  const Candidate& c = r.candidate;
  if (!c.prediction.supported) return h;
  const MemoryBreakdown& m = c.prediction.memory;
  h.slack_bytes = m.fragmentation_bytes;
  TrainingSetup with = s;
  with.expandable_segments = true;
  h.slack_with_bytes = (m.activation_peak_bytes - m.upcast_weight_bytes) * allocator_slack_share(with, r.context.coef);
  const double saved = std::max(0.0, h.slack_bytes - h.slack_with_bytes);
  const double budget = c.prediction.usable_vram_bytes - r.context.headroom_bytes;
  h.verdict_now = r.verdict();
  // the step's range moved by what the slack saves; every other phase as predicted
  const Range step = c.ranged ? c.peak_range_bytes : Range{c.prediction.peak_vram_bytes, c.prediction.peak_vram_bytes};
  h.verdict_with = fit_verdict(Range{step.lo - saved, step.hi - saved}, c.prediction.usable_vram_bytes, r.context.headroom_bytes);
  if (r.phases && !r.step_only)
    for (const PhaseResult& p : r.phases->phases)
      if (p.runs && p.phase != Phase::TrainingStep) h.verdict_with = worst(h.verdict_with, p.verdict(budget));
  h.changes = !h.set && h.verdict_with != h.verdict_now && worst(h.verdict_with, h.verdict_now) == h.verdict_now;
  return h;
}

nlohmann::json expandable_segments_json(const ExpandableSegmentsHint& h) {
  nlohmann::json j = {{"set", h.set},
                      {"step_allocator_slack_gib", gib(h.slack_bytes)},
                      {"step_allocator_slack_gib_with_expandable_segments", gib(h.slack_with_bytes)},
                      {"fit_with_expandable_segments", to_string(h.verdict_with)},
                      {"changes_the_verdict", h.changes}};
  if (!h.from.empty()) j["from"] = h.from;
  return j;
}

std::string expandable_segments_text(const ExpandableSegmentsHint& h) {
  if (!h.changes) return "";
  return "with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True in the trainer's environment the allocator's slack at "
         "the step falls from " + num(gib(h.slack_bytes), 1) + " to about " + num(gib(h.slack_with_bytes), 1) +
         " GiB and the verdict becomes \"" + to_string(h.verdict_with) + "\" (check it with --expandable-segments)";
}

}  // namespace segadvise::cli
