// The three figures of a peak a user can check, each with its quantity named (docs/memory.md):
//   allocated   torch.cuda.max_memory_allocated: the tensors alive at the peak
//   reserved    torch.cuda.max_memory_reserved: allocated plus the caching allocator's slack (the model's
//               figure, fitted on the sweep's reserved peaks)
//   nvidia-smi  the process's device memory as nvidia-smi shows it: reserved plus the CUDA context and
//               the library workspaces outside the allocator (card_overhead)
// and the card's memory as the verdict uses it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/planner/advisor.hpp"

namespace segadvise::cli {

struct PeakFigures {
  double allocated = 0, reserved = 0, nvidia_smi = 0;  // bytes
  Range allocated_range, reserved_range, nvidia_smi_range;
};

// From a reserved peak and its range: allocated takes off the allocator slack the prediction counts
// (MemoryBreakdown::fragmentation_bytes, as its share of the prediction's peak), nvidia-smi adds
// Prediction::smi_extra_bytes.
PeakFigures peak_figures(const Prediction& p, double reserved_bytes, const Range& reserved_range);

// "18.2 GiB reserved (90%: 16.9–20.4); allocated 17.1, nvidia-smi 18.7"
std::string peak_figures_text(const PeakFigures& f, bool ranged);

// Adds to a prediction's JSON `j` (which holds PREFIXpeak_vram_gib, the reserved figure): the quantity
// of PREFIXpeak_vram_gib, the allocated and nvidia-smi figures with their ranges, and PREFIXpeak_vram_gib_range
// as the range of a figure a user's run reports (any of the three quantities, on their trainer and card:
// the allocated range's lower end and the nvidia-smi range's upper end widened by published_band(); not
// widened for a measured schedule), with its parts in PREFIXpeak_vram_gib_range_parts.
void add_peak_figures_json(nlohmann::json& j, const std::string& prefix, const PeakFigures& f, bool widen = true);

// The card's memory as the verdict takes it: total, what is not the allocator's, the headroom and why,
// and the rule.
nlohmann::json card_memory_json(const CardOverhead& o, double headroom_bytes, const std::string& headroom_from);
// "24.0 GiB total; 0.3 driver, 0.4 CUDA context, 0.1 library workspaces, 0.2 allocator margin: 23.0 for the
// reserved peak; headroom 0.5 (…)"
std::string card_memory_text(const CardOverhead& o, double headroom_bytes, const std::string& headroom_from);

}  // namespace segadvise::cli

namespace segadvise::cli {

// Windows: the NVIDIA driver (536.40 and later) lets a process that runs out of device memory spill into
// shared system memory instead of failing; the run goes on at PCIe speed for what spilled. Where a
// setup on Windows does not fit with confidence: how much would spill (at the point and at the range's
// upper end) and the least time it costs a step (each spilled byte crossing PCIe once each way).
struct SysmemFallback {
  bool applies = false;
  double spill_bytes = 0, spill_hi_bytes = 0;
  double extra_s_at_least = 0;
  std::string os_from;
};
SysmemFallback sysmem_fallback(const TrainingSetup& s, const GpuSpec& g, double reserved_bytes, double reserved_hi_bytes,
                               double usable_bytes, double headroom_bytes);
nlohmann::json sysmem_fallback_json(const SysmemFallback& f);
std::string sysmem_fallback_text(const SysmemFallback& f);

}  // namespace segadvise::cli

namespace segadvise::cli {
// why the context's headroom is what it is: the card's default and its reason, or the flag
std::string headroom_reason(const Context& ctx);
// a check's fallback on Windows, on the whole run's reserved peak (the step's with --step-only)
SysmemFallback check_sysmem_fallback(const CheckReport& r);
}  // namespace segadvise::cli

namespace segadvise::cli {
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True for a check: whether the run sets it (and what said so),
// the step's allocator slack as predicted, what it would be with expandable segments, and the verdict with
// them (the training step's range moved by the difference; the other phases as they are). `changes`:
// not set, and the verdict would be better with it.
struct ExpandableSegmentsHint {
  bool set = false;
  std::string from;
  double slack_bytes = 0, slack_with_bytes = 0;
  FitVerdict verdict_now = FitVerdict::DoesNotFit, verdict_with = FitVerdict::DoesNotFit;
  bool changes = false;
};
ExpandableSegmentsHint expandable_segments_hint(const CheckReport& r);
nlohmann::json expandable_segments_json(const ExpandableSegmentsHint& h);
std::string expandable_segments_text(const ExpandableSegmentsHint& h);  // "" unless it changes the verdict
}  // namespace segadvise::cli
