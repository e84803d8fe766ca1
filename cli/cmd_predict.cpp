// segadvise predict --model M --gpu G --schedule S [--backend B]: one schedule, with its breakdown.
// Flags -> request -> advisor (predict_report) -> printer.
#include <iostream>

#include "commands.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/measured_output.hpp"
#include "runs.hpp"

namespace segadvise::cli {

void setup_predict(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("predict", "peak VRAM and sec/step of one schedule, with breakdowns");
  auto flags = std::make_shared<SetupFlags>();
  auto schedule = std::make_shared<std::string>();
  auto backend = std::make_shared<std::string>();
  auto offload = std::make_shared<bool>(false);
  add_setup_flags(cmd, *flags);
  cmd->add_option("--schedule,-s", *schedule,
                  "none, layer, intervalK, segK-strideS, activation-offload, segK-strideS-offload")
      ->required();
  cmd->add_option("--backend,-b", *backend, "torch | torch-ffn | unsloth | unsloth-ffn")
      ->check(CLI::IsMember({"torch", "torch-ffn", "unsloth", "unsloth-ffn"}));
  cmd->add_flag("--offload-attention", *offload, "gradient_checkpointing_offload_attention");
  cmd->callback([=, &exit_code] {
    const auto printer = make_printer(flags->format, std::cout);
    Schedule s = Schedule::parse(*schedule);
    if (!backend->empty()) {
      if (!s.checkpointing) throw InputError("--backend " + *backend + ": schedule '" + *schedule + "' has checkpointing off");
      s.backend = parse_backend(*backend);
    }
    if (*offload) s.offload_attention = true;
    SetupFlags f = *flags;  // --measured-from: the logged run used --schedule unless told otherwise
    if (!f.measured_from.empty() && f.measured_from_schedule.empty()) f.measured_from_schedule = s.name();
    const AdvisorRequest req = make_request(f);
    print_remembered(std::cout, req, f.format);
    const PredictionReport r = predict_report(req, s);
    printer->prediction(r);
    exit_code = cli::exit_code(r);
  });
}

}  // namespace segadvise::cli
