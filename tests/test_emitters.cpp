// Emitters for other trainers: only their own knobs, the best plan within them, and what
// SimpleTuner's schedule space would gain.
#include <doctest/doctest.h>

#include "commands.hpp"
#include "emitters.hpp"
#include "printer.hpp"

using namespace segadvise;
using namespace segadvise::cli;

namespace {

Context context_for(const std::string& model, double vram_gib) {
  SetupFlags f;
  f.model = model;
  f.vram_gib = vram_gib;
  return Context(make_request(f));
}

bool has_knob(const TrainerPlan& p, const std::string& key) { return p.knobs.contains(key); }

}  // namespace

TEST_CASE("an unknown --emit name is bad input naming the nearest trainers") {
  CHECK_THROWS_WITH_AS(check_emit_name("onetrainr"), doctest::Contains("nearest: onetrainer"), InputError);
  CHECK_NOTHROW(check_emit_name(""));
  for (const auto& n : emitter_names()) CHECK_NOTHROW(check_emit_name(n));
}

TEST_CASE("the diffusers scripts only switch checkpointing on or off") {
  // two plans: no checkpointing and --gradient_checkpointing; nothing else is invented
  const Context ctx = context_for("sdxl", 80);
  const TrainerAdvice a = advise_for_trainer(ctx, "diffusers", nullptr);
  REQUIRE(a.plans.size() == 2);
  for (const auto& p : a.plans) {
    CHECK(p.knobs.size() == 1);
    CHECK(has_knob(p, "gradient_checkpointing"));
    CHECK(!p.setup.ramtorch);
    CHECK(p.setup.blocks_to_swap == 0);
  }
  // on 80 GiB SDXL fits without checkpointing, which is faster
  REQUIRE(a.best >= 0);
  CHECK(a.plans[a.best].schedule.checkpointing == false);
  CHECK(a.config_text.find("--gradient_checkpointing") == std::string::npos);
  CHECK(a.config_text.find("--mixed_precision bf16") != std::string::npos);
}

TEST_CASE("musubi-tuner reaches for block swap when the card is small") {
  // Wan 14B's bf16 base is ~26 GiB: on a 24 GiB card only a plan with blocks swapped can fit
  const Context ctx = context_for("wan14b", 24);
  const TrainerAdvice a = advise_for_trainer(ctx, "musubi", nullptr);
  CHECK(a.family_supported);
  REQUIRE(a.best >= 0);
  const TrainerPlan& best = a.plans[a.best];
  CHECK(best.setup.blocks_to_swap > 0);
  CHECK(a.config_text.find("--blocks_to_swap " + std::to_string(best.setup.blocks_to_swap)) != std::string::npos);
  CHECK(a.config_text.find("blocks_to_swap = " + std::to_string(best.setup.blocks_to_swap)) != std::string::npos);
  for (const auto& p : a.plans) {
    CHECK(p.schedule.interval == 0);  // musubi has no interval or stride
    CHECK(p.schedule.stride == 0);
    CHECK(!p.setup.ramtorch);
  }
}

TEST_CASE("OneTrainer's plans use its gradient_checkpointing modes and offload fraction") {
  const Context ctx = context_for("flux", 24);
  const TrainerAdvice a = advise_for_trainer(ctx, "onetrainer", nullptr);
  REQUIRE(!a.plans.empty());
  for (const auto& p : a.plans) {
    const std::string mode = p.knobs["gradient_checkpointing"].get<std::string>();
    CHECK((mode == "OFF" || mode == "ON" || mode == "CPU_OFFLOADED"));
    if (mode != "CPU_OFFLOADED") CHECK(!has_knob(p, "layer_offload_fraction"));
    // the fraction is the share of block weights streamed from the host
    if (has_knob(p, "layer_offload_fraction") && p.knobs["layer_offload_fraction"].get<double>() > 0)
      CHECK(p.setup.ramtorch_percent == doctest::Approx(100 * p.knobs["layer_offload_fraction"].get<double>()));
  }
  CHECK(a.config_format == "json");
  CHECK(nlohmann::json::parse(a.config_text).contains("gradient_checkpointing"));
}

TEST_CASE("ai-toolkit config is YAML under config.process with its own keys") {
  const Context ctx = context_for("flux", 48);
  const TrainerAdvice a = advise_for_trainer(ctx, "ai-toolkit", nullptr);
  REQUIRE(!a.config_text.empty());
  CHECK(a.config_text.rfind("config:\n  process:\n", 0) == 0);
  CHECK(a.config_text.find("gradient_checkpointing: ") != std::string::npos);
  CHECK(a.config_text.find("batch_size: ") != std::string::npos);
}

TEST_CASE("the SimpleTuner gain is stated against the trainer's best plan") {
  const Context ctx = context_for("flux", 80);
  Candidate st;
  st.schedule = Schedule::parse("none");
  st.prediction.step_time_s = 0.5;
  st.prediction.peak_vram_bytes = 30 * kGiB;
  const TrainerAdvice a = advise_for_trainer(ctx, "diffusers", &st);
  bool stated = false;
  for (const auto& n : a.notes) stated |= n.find("SimpleTuner's plan none") != std::string::npos;
  CHECK(stated);
}

TEST_CASE("a family the trainer does not train is said so") {
  const Context ctx = context_for("sd1x", 24);
  const TrainerAdvice a = advise_for_trainer(ctx, "musubi", nullptr);
  CHECK(!a.family_supported);
  CHECK(a.notes.front().find("does not train") != std::string::npos);
}

TEST_CASE("advise --emit prints the trainer's section, and JSON carries it") {
  const AdviceReport r = advise_report(context_for("flux", 48), AdviceOptions{});
  REQUIRE(r.recommended() != nullptr);
  std::ostringstream out;
  const TrainerAdvice musubi = advise_for_trainer(r.context, "musubi", r.recommended());
  JsonPrinter(out).advice(r, &musubi);
  const auto j = nlohmann::json::parse(out.str());
  REQUIRE(j.contains("emit"));
  CHECK(j["emit"]["trainer"] == "musubi");
  std::ostringstream table;
  const TrainerAdvice diffusers = advise_for_trainer(r.context, "diffusers", r.recommended());
  TablePrinter(table).advice(r, &diffusers);
  CHECK(table.str().find("diffusers example scripts") != std::string::npos);
}
