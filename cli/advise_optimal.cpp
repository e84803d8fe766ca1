#include "advise_optimal.hpp"

#include <iostream>

#include "segadvise/report/json_report.hpp"
#include "segadvise/io/output_file.hpp"
#include "segadvise/planner/plan_json.hpp"
#include "segadvise/planner/front_svg.hpp"

namespace segadvise::cli {

void write_optimal_files(const OptimalView& v, const Context& ctx, const Advice& advice, const std::string& plot_file,
                         const std::string& plan_file) {
  OutputTransaction files;  // both files or neither
  if (!plan_file.empty()) {
    if (v.optimal.found)
      files.stage(plan_file, plan_segments_json(v.optimal.plan).dump(2) + "\n");
    else  // nothing to write; the advice itself (and its exit code) still says why
      std::cerr << "segadvise: warning: --plan-out " << plan_file << " not written: " << v.optimal.reason << "\n";
  }
  if (plot_file.empty()) return files.commit();
  FrontPlot plot;
  plot.title = ctx.family->name + " on " + ctx.gpu.name + ": step time vs peak VRAM";
  plot.front = v.front;
  for (const auto& c : advice.candidates) plot.uniform.push_back({c.prediction.peak_vram_bytes, c.prediction.step_time_s, ""});
  if (v.uniform >= 0) {
    const auto& c = advice.candidates[v.uniform];
    plot.marked.push_back({c.prediction.peak_vram_bytes, c.prediction.step_time_s, "recommended: " + c.schedule.name()});
  }
  if (v.optimal.found)
    plot.marked.push_back({v.optimal.prediction.peak_vram_bytes, v.optimal.prediction.step_time_s, "optimal per-block plan"});
  plot.limit_bytes = usable_vram_bytes(ctx.gpu, ctx.coef) - ctx.headroom_bytes;
  files.stage(plot_file, front_svg(plot));
  files.commit();
}

}  // namespace segadvise::cli
