// segadvise advise --model M --gpu G [...]: every schedule the family's trainer supports, the
// Pareto front, the fastest that fits with headroom, its config keys; when nothing fits, by how much
// and what would. Flags -> request -> advisor (advise_report) -> printer. Exit code (exit_code.hpp): the
// advice's verdict, or with --emit of another trainer its plan's.
#include <iostream>

#include "advise_optimal.hpp"
#include "commands.hpp"
#include "segadvise/io/output_file.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "emitters.hpp"
#include "segadvise/planner/measurements.hpp"
#include "segadvise/report/measured_output.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "runs.hpp"

namespace segadvise::cli {

void setup_advise(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("advise", "recommend the fastest checkpointing schedule that fits (the default command)");
  auto flags = std::make_shared<SetupFlags>();
  auto all = std::make_shared<bool>(false);
  auto emit = std::make_shared<std::string>();
  auto plot = std::make_shared<std::string>(), plan_out = std::make_shared<std::string>();
  auto front = std::make_shared<bool>(false);
  add_setup_flags(cmd, *flags);
  cmd->add_option("--plot", *plot, "write the Pareto front of optimal plans as SVG to FILE")->check(kNonEmpty);
  cmd->add_option("--plan-out", *plan_out, "write the optimal per-block plan as JSON to FILE (for validate --plan)")
      ->check(kNonEmpty);
  cmd->add_flag("--all", *all, "list every supported schedule, not only the Pareto front");
  cmd->add_flag("--front", *front, "also compute the Pareto front of optimal plans (JSON, table)");
  cmd->add_option("--emit", *emit, "print the recommendation as config for: " + emitter_list());
  cmd->callback([flags, all, emit, plot, plan_out, front, &exit_code] {
    check_emit_name(*emit);  // the nearest names when misspelt
    const auto printer = make_printer(flags->format, std::cout);
    AdviceOptions opt;
    opt.keep_all = *all;
    // the front of optimal plans costs ~100 ms (seconds on 192-block chains): only for --plot/--front
    opt.with_front = *front || !plot->empty();
    // --gpus N with neither --strategy nor --context-parallel: every strategy x CP degree is advised
    opt.search_multi_gpu = flags->strategy.empty() && flags->context_parallel == -1;
    // neither file may be one the command reads (the family file, a profile, a log …)
    for (const auto& [flag, file] : {std::pair<const char*, std::string>{"--plot", *plot}, {"--plan-out", *plan_out}})
      if (!file.empty()) check_output_is_not_input(file, input_files(*flags), flag);
    const AdvisorRequest req = make_request(*flags);
    print_remembered(std::cout, req, flags->format);
    const AdviceReport r = advise_report(req, opt);
    write_optimal_files(r.optimal, r.context, r.advice, *plot, *plan_out);
    const bool other_trainer = !emit->empty() && !segadvise::trainer(*emit).plans_are_schedules();
    const TrainerAdvice trainer = other_trainer ? advise_for_trainer(r.context, *emit, r.recommended()) : TrainerAdvice{};
    printer->advice(r, other_trainer ? &trainer : nullptr);
    exit_code = cli::exit_code(r, other_trainer ? std::optional<FitVerdict>(trainer.verdict) : std::nullopt);
  });
}

}  // namespace segadvise::cli
