// `segadvise accuracy`: how well the model predicts measured runs, in-sample or leaving each family out
// (calibration/calibrate.hpp), with the 90% ranges and verdicts (calibration/bands.hpp); printed by the
// printers (printer.hpp).
#include <iostream>

#include "commands.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "progress.hpp"
#include "segadvise/calibration/bands.hpp"
#include "segadvise/calibration/calibrate.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/report/json_io.hpp"

namespace segadvise::cli {

namespace {

struct AccuracyFlags {
  std::vector<std::string> cases;
  std::string start;  // coefficients to evaluate (with --leave-family-out: to start from)
  std::string format = "table";
  double headroom_gib = 1.0;
  bool leave_family_out = false;
  bool runs = false;  // print every run's prediction
  int max_iterations = 60;
  double prior_weight = FitOptions{}.prior_weight;  // pull of activation scales towards the analyzer
  std::vector<std::string> anchors;  // accuracy --anchor SCHEDULE (repeatable)
  std::string write_ranges;          // accuracy --write-ranges FILE
  double coverage = 0.9;
  std::vector<double> anchor_sigmas;  // fixed, activation, compute, host, transfer (AnchorOptions)
  std::string by;                     // accuracy --by family: signed errors per family x precision x schedule
  int threads = 1;                    // accuracy --leave-family-out --threads N
};

AnchorOptions anchor_options(const AccuracyFlags& f) {
  AnchorOptions ao;
  if (f.anchor_sigmas.empty()) return ao;
  for (double x : f.anchor_sigmas)
    if (!(x > 0)) throw InputError("--anchor-sigmas: every value must be > 0");
  ao.fixed_sigma = f.anchor_sigmas[0];
  ao.activation_sigma = f.anchor_sigmas[1];
  ao.compute_sigma = f.anchor_sigmas[2];
  ao.host_sigma = f.anchor_sigmas[3];
  ao.transfer_sigma = f.anchor_sigmas[4];
  return ao;
}

}  // namespace

void setup_accuracy(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<AccuracyFlags>();
  auto* cmd = app.add_subcommand("accuracy", "accuracy against measured runs");
  cmd->add_option("--cases", f->cases, "measured runs, .json or .csv (repeatable; default: the shipped sweep)");
  cmd->add_flag("--leave-family-out", f->leave_family_out,
                "predict each family with coefficients fitted without it (the honest figure)");
  cmd->add_option("--calibration", f->start,
                  "coefficients to evaluate (default: the shipped calibration); with --leave-family-out, to start from");
  cmd->add_option("--headroom-gib", f->headroom_gib, "memory kept free when deciding fit (default 1)")
      ->check(headroom_gib());
  cmd->add_option("--max-iterations", f->max_iterations, "iterations per leave-out fit (default 60)")->check(kNonNegative);
  cmd->add_option("--prior-weight", f->prior_weight,
                  "with --leave-family-out: pull of activation scales towards 1.0 (default 3)")
      ->check(kNonNegative);
  cmd->add_flag("--runs", f->runs, "also print every run's measured and predicted figures");
  cmd->add_option("--threads", f->threads, "with --leave-family-out: fits run side by side (default 1)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--by", f->by,
                  "family: also print the signed median error of peak and step time per family x precision x "
                  "schedule and the breakdown component carrying it")
      ->check(CLI::IsMember({"family"}));
  cmd->add_option("--anchor", f->anchors,
                  "predict every cell of each family x precision x GPU group from its measured cell of this schedule "
                  "(repeatable: layer and none), as --measured would");
  cmd->add_option("--write-ranges", f->write_ranges,
                  "with --leave-family-out: write the 90% range bands (unanchored, and anchored on --anchor or "
                  "layer) to this file (calibration/data/ranges.json ships them)");
  cmd->add_option("--coverage", f->coverage, "coverage of the ranges (default 0.9)")
      ->check(number_in(0, 1, true, "must be in (0, 1)"));
  cmd->add_option("--anchor-sigmas", f->anchor_sigmas,
                  "relative uncertainty of the fixed, activation, compute, host and transfer parts that shares one "
                  "measurement's surprise (5 numbers; default: AnchorOptions)")
      ->expected(5)
      ->delimiter(',');
  cmd->add_option("--format", f->format, "table | json | markdown")->check(kFormat);
  cmd->callback([f, &exit_code] {
    if (!(f->coverage > 0 && f->coverage < 1)) throw InputError("--coverage: must be in (0, 1)");
    if (!f->write_ranges.empty() && !f->leave_family_out)
      throw InputError("--write-ranges: needs --leave-family-out (ranges come from residuals on unseen families)");
    std::vector<Schedule> anchors;
    for (const auto& a : f->anchors) {
      try {
        anchors.push_back(Schedule::parse(a));
      } catch (const InputError& e) {
        throw InputError("--anchor '" + a + "': " + e.what());
      }
    }
    const PreparedSet set = prepare(dataset_for(f->cases));
    AccuracyReport rep;
    Progress progress(std::cerr, Progress::stderr_is_terminal());
    if (f->leave_family_out) {
      FitOptions opt;
      opt.headroom_bytes = f->headroom_gib * kGiB;
      opt.max_iterations = f->max_iterations;
      opt.prior_weight = f->prior_weight;
      opt.threads = f->threads;
      opt.on_family = [&](const std::string& family, std::size_t started, std::size_t total) {
        progress.update("accuracy --leave-family-out: fitting without " + family + " (" + std::to_string(started) +
                        "/" + std::to_string(total) + ")");
      };
      rep = accuracy_leave_family_out(set, starting_coefficients(f->start), opt);
    } else {
      rep = accuracy_in_sample(set, coefficients_for(f->start), f->headroom_gib * kGiB);
    }
    BandOptions bo;
    bo.headroom_bytes = f->headroom_gib * kGiB;
    bo.coverage = f->coverage;
    bo.anchor = anchor_options(*f);
    bo.anchors = anchors;
    bo.bands_from_every_family = !f->write_ranges.empty();
    progress.update("accuracy: 90% ranges and verdicts");
    const BandedAccuracy banded = banded_accuracy(set, rep, bo);
    progress.finish();
    if (banded.bands) {
      write_file_atomically(f->write_ranges, to_json(*banded.bands).dump(2) + "\n");
      std::cerr << "wrote " << f->write_ranges << "; fitted sigmas:";
      for (RangeKind k : {RangeKind::Peak, RangeKind::Time, RangeKind::PeakAnchored, RangeKind::TimeAnchored}) {
        const ScoreModel& sm = banded.bands->of(k);
        std::cerr << "\n  " << to_string(k) << ":";
        for (std::size_t i = 0; i < sm.sigma.size(); ++i)
          std::cerr << " " << range_part_names(k)[i] << " " << sm.sigma[i];
        std::cerr << " (" << sm.strata.size() << " strata of their own)";
      }
      std::cerr << "\n";
    }
    make_printer(f->format, std::cout)
        ->accuracy(AccuracyView{&banded.report, &set, &banded.summary, f->by == "family", f->runs});
    exit_code = kOk;
  });
}

}  // namespace segadvise::cli
