// `segadvise calibrate`: fit the cost model's coefficients to measured runs (calibration/calibrate.hpp),
// write them, print the fit (printer.hpp).
#include <chrono>
#include <cstdio>
#include <iostream>

#include "commands.hpp"
#include "segadvise/io/output_file.hpp"
#include "segadvise/report/json_report.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "progress.hpp"
#include "segadvise/calibration/calibrate.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/report/json_io.hpp"

namespace segadvise::cli {

namespace {

struct CalibrateFlags {
  std::vector<std::string> cases;
  std::string output;
  std::string start;  // coefficients to start from
  std::string format = "table";
  double headroom_gib = 1.0;
  int max_iterations = 60;
  double prior_weight = FitOptions{}.prior_weight;  // pull of activation scales towards the analyzer
};

}  // namespace

void setup_calibrate(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<CalibrateFlags>();
  auto* cmd = app.add_subcommand("calibrate", "fit the cost model's coefficients to measured runs");
  cmd->add_option("--cases", f->cases, "measured runs, .json or .csv (repeatable; default: the shipped sweep)");
  cmd->add_option("--output,-o", f->output, "write the coefficients here (atomically); default: print them")
      ->check(kNonEmpty);
  cmd->add_option("--calibration", f->start, "coefficients to start from (default: built-in starting values)");
  cmd->add_option("--headroom-gib", f->headroom_gib, "headroom used for fit decisions (default 1)")
      ->check(headroom_gib());
  cmd->add_option("--max-iterations", f->max_iterations, "Levenberg-Marquardt iterations (default 60)")->check(kNonNegative);
  cmd->add_option("--prior-weight", f->prior_weight,
                  "pull of each activation scale towards the static analyzer's 1.0 (default 3)")
      ->check(kNonNegative);
  cmd->add_option("--format", f->format, "table | json | markdown (the summary)")->check(kFormat);
  cmd->callback([f, &exit_code] {
    if (!f->output.empty()) {  // never over the cases it fits, nor the coefficients it starts from
      std::vector<std::string> inputs = f->cases;
      if (!f->start.empty()) inputs.push_back(f->start);
      check_output_is_not_input(f->output, inputs, "--output");
    }
    const auto t0 = std::chrono::steady_clock::now();
    const PreparedSet set = prepare(dataset_for(f->cases));
    FitOptions opt;
    opt.headroom_bytes = f->headroom_gib * kGiB;
    opt.max_iterations = f->max_iterations;
    opt.prior_weight = f->prior_weight;
    Progress progress(std::cerr, Progress::stderr_is_terminal());
    opt.on_iteration = [&](int iteration, double cost) {
      char cost_text[32];
      std::snprintf(cost_text, sizeof cost_text, "%.4g", cost);
      progress.update("calibrate: iteration " + std::to_string(iteration) + " of at most " +
                      std::to_string(f->max_iterations) + ", cost " + cost_text);
    };
    FitResult fr = fit_coefficients(set, starting_coefficients(f->start), opt);
    progress.finish();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    fr.coef.source = "fitted by `segadvise calibrate` on " + std::to_string(fr.runs_used) + " runs of " +
                     (set.data.source.empty() ? set.data.origin : set.data.source);
    const std::string text = coefficients_file_json(fr).dump(2) + "\n";
    if (f->output.empty()) {
      std::cout << text;
    } else {
      write_file_atomically(f->output, text);
    }
    // the summary: on stderr when the coefficients went to stdout (there as a table, JSON being the file)
    std::ostream& out = f->output.empty() ? std::cerr : std::cout;
    const std::string format = f->format == "json" && f->output.empty() ? "table" : f->format;
    make_printer(format, out)->calibration(CalibrationView{&fr, secs, f->output});
    exit_code = kOk;
  });
}

}  // namespace segadvise::cli
