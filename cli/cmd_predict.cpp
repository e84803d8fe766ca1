// segadvise predict --model M --gpu G --schedule S [--backend B]: one schedule, with its breakdown.
#include <iostream>

#include "commands.hpp"
#include "output.hpp"
#include "segadvise/costmodel/json_io.hpp"

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
  cmd->add_option("--backend,-b", *backend, "torch | torch-ffn | unsloth | unsloth-ffn");
  cmd->add_flag("--offload-attention", *offload, "gradient_checkpointing_offload_attention");
  cmd->callback([=, &exit_code] {
    Schedule s = Schedule::parse(*schedule);
    if (!backend->empty()) {
      if (!s.checkpointing) throw InputError("--backend " + *backend + ": schedule '" + *schedule + "' has checkpointing off");
      s.backend = parse_backend(*backend);
    }
    if (*offload) s.offload_attention = true;
    Context ctx = build_context(*flags);
    const Candidate c = evaluate(ctx, s);
    if (flags->format == "json") {
      nlohmann::json j = {{"setup", setup_json(ctx)},
                          {"gpu", ctx.gpu.id},
                          {"schedule", to_json(s)},
                          {"plan", c.plan.supported ? nlohmann::json(describe(c.plan.plan, ctx.chain)) : nlohmann::json(nullptr)},
                          {"prediction", to_json(c.prediction)}};
      if (c.prediction.supported) j["config"] = simpletuner_keys(s);
      std::cout << j.dump(2) << "\n";
    } else {
      const bool md = flags->format == "markdown";
      print_setup(std::cout, ctx, md);
      std::cout << (md ? "### " : "") << "Schedule " << s.name() << (md ? "\n\n" : ": ")
                << (c.plan.supported ? describe(c.plan.plan, ctx.chain) : std::string("—")) << "\n\n";
      print_prediction(std::cout, c.prediction, md);
    }
    exit_code = (c.prediction.supported && c.prediction.fits) ? kOk : kDoesNotFit;
  });
}

}  // namespace segadvise::cli
