// What a card leaves for the reserved peak (docs/memory.md), the three figures of a peak, the default
// headroom, and Windows' sysmem fallback: each derived here by hand from the facts
// (families/data/card-memory.json, families/data/gpus.json, calibration/data/coefficients.json).
#include <doctest/doctest.h>

#include <sstream>

#include "check_options.hpp"
#include "commands.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/report/memory_figures.hpp"

using namespace segadvise;
using namespace segadvise::cli;

namespace {
// the driver reservation's line through the two published cards: 244 MiB at 12 GiB, 317 MiB at 24 GiB
double driver_mib(double total_gib) { return 244 + (317.0 - 244) / 12 * (total_gib - 12); }
}  // namespace

TEST_CASE("a card named by its memory: total less driver, context, workspaces and the allocator margin share") {
  const Coefficients& coef = default_coefficients();
  const GpuSpec g = custom_gpu(24);
  const CardOverhead o = card_overhead(g, coef);
  CHECK(o.driver_reserved_bytes / kMiB == doctest::Approx(317).epsilon(1e-6));
  CHECK(o.context_bytes / kGiB == doctest::Approx(0.4));
  CHECK(o.library_bytes / kGiB == doctest::Approx(0.1));
  CHECK_FALSE(o.margin_measured);
  CHECK(o.allocator_margin_bytes / kGiB == doctest::Approx(0.009 * 24));
  // 24 - 0.3096 - 0.4 - 0.1 - 0.216 = 22.974 GiB for the reserved peak
  CHECK(usable_vram_bytes(g, coef) / kGiB == doctest::Approx(24 - 317 / 1024.0 - 0.5 - 0.216).epsilon(1e-9));
  // a card named only by its memory is taken to drive a display: an idle desktop's 0.5 GiB headroom
  CHECK(g.display);
  CHECK(default_headroom_bytes(g) / kGiB == doctest::Approx(0.5));
}

TEST_CASE("a catalog card: the RTX 3090 (24.0 GiB) and an 8 GiB card by the same rule") {
  const Coefficients& coef = default_coefficients();
  const GpuSpec& g = find_gpu("3090");
  CHECK(g.display);
  const double expect = 24.0 - driver_mib(24) / 1024 - 0.5 - 0.009 * 24;
  CHECK(usable_vram_bytes(g, coef) / kGiB == doctest::Approx(expect).epsilon(1e-9));
  const double eight = 8.0 - driver_mib(8) / 1024 - 0.5 - 0.009 * 8;  // 8 - 0.2139 - 0.5 - 0.072 = 7.214
  CHECK(usable_vram_bytes(custom_gpu(8), coef) / kGiB == doctest::Approx(eight).epsilon(1e-9));
  CHECK(eight == doctest::Approx(7.214).epsilon(1e-3));
}

TEST_CASE("the measured cards keep the envelope the sweep showed; the margin share is their mean") {
  const Coefficients& coef = default_coefficients();
  double share_sum = 0;
  for (const char* id : {"h100", "l40s"}) {
    const GpuSpec& g = find_gpu(id);
    CAPTURE(id);
    const CardOverhead o = card_overhead(g, coef);
    CHECK(o.margin_measured);
    // usable = total - the fitted reserve (the envelope), exactly as calibrated
    CHECK(o.usable_bytes() == doctest::Approx(g.total_bytes - coef.for_gpu(id).reserve_bytes));
    share_sum += o.allocator_margin_bytes / g.total_bytes;
    CHECK_FALSE(g.display);
    CHECK(default_headroom_bytes(g) == 0);
  }
  // card-memory.json's allocator_margin_share (0.9%) is the two measured cards' mean share
  CHECK(share_sum / 2 == doctest::Approx(0.009).epsilon(0.06));
  // --vram-gib on a measured card: another total, so the share rule, not the envelope
  const GpuSpec h40 = custom_gpu(40, &find_gpu("h100"));
  CHECK_FALSE(card_overhead(h40, coef).margin_measured);
}

TEST_CASE("the three figures: allocated less the counted slack, nvidia-smi plus context and workspaces") {
  Prediction p;
  p.supported = true;
  p.peak_vram_bytes = 20 * kGiB;
  p.memory.fragmentation_bytes = 2 * kGiB;  // a tenth of the peak
  p.smi_extra_bytes = 0.5 * kGiB;
  const PeakFigures f = peak_figures(p, 22 * kGiB, Range{18 * kGiB, 26 * kGiB});  // a run peak in another phase
  CHECK(f.reserved / kGiB == doctest::Approx(22));
  CHECK(f.allocated / kGiB == doctest::Approx(22 * 0.9));
  CHECK(f.allocated_range.lo / kGiB == doctest::Approx(18 * 0.9));
  CHECK(f.nvidia_smi / kGiB == doctest::Approx(22.5));
  CHECK(f.nvidia_smi_range.hi / kGiB == doctest::Approx(26.5));
  nlohmann::json j;
  add_peak_figures_json(j, "step_", f);
  CHECK(j["step_peak_vram_quantity"] == "reserved");
  CHECK(j["step_peak_nvidia_smi_gib_range"][0].get<double>() == doctest::Approx(18.5));
}

TEST_CASE("Windows: over the card, the sysmem fallback spills instead of failing") {
  TrainingSetup s;
  const GpuSpec g = custom_gpu(12);  // Gen4 x16 from the A6000 it is built on: 32 GB/s one way
  const double usable = 11 * kGiB, headroom = 0.5 * kGiB;
  CHECK_FALSE(sysmem_fallback(s, g, 12 * kGiB, 13 * kGiB, usable, headroom).applies);  // Linux: no fallback
  s.host_os = "windows";
  s.host_os_from = "--os windows";
  CHECK_FALSE(sysmem_fallback(s, g, 9 * kGiB, 10.5 * kGiB, usable, headroom).applies);  // fits with confidence
  const SysmemFallback f = sysmem_fallback(s, g, 12 * kGiB, 13 * kGiB, usable, headroom);
  REQUIRE(f.applies);
  CHECK(f.spill_bytes / kGiB == doctest::Approx(1.5));
  CHECK(f.spill_hi_bytes / kGiB == doctest::Approx(2.5));
  CHECK(f.extra_s_at_least == doctest::Approx(2 * 1.5 * kGiB / g.pcie_bytes_per_s));
  CHECK(sysmem_fallback_text(f).find("Prefer No Sysmem Fallback") != std::string::npos);
}
