// Emitters for other trainers: only their own knobs, the best plan within them, and what
// SimpleTuner's schedule space would gain.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "commands.hpp"
#include "emitters.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/report/printer.hpp"
#include "segadvise/report/trainer_advice_output.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_config.hpp"
#include "segadvise/trainers/trainer_plans.hpp"

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

bool any_of_contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x.find(s) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("an unknown --emit name is bad input naming the nearest trainers") {
  CHECK_THROWS_WITH_AS(check_emit_name("onetrainr"), doctest::Contains("nearest: onetrainer"), InputError);
  CHECK_NOTHROW(check_emit_name(""));
  for (const auto& n : emitter_names()) CHECK_NOTHROW(check_emit_name(n));
}

TEST_CASE("the diffusers scripts only switch checkpointing on or off") {
  // two plans: no checkpointing and --gradient_checkpointing, both at the --mixed_precision they are
  // predicted with; nothing else is invented
  const Context ctx = context_for("sdxl", 80);
  const TrainerAdvice a = advise_for_trainer(ctx, "diffusers", nullptr);
  REQUIRE(a.plans.size() == 2);
  for (const auto& p : a.plans) {
    CHECK(p.knobs.size() == 2);
    CHECK(has_knob(p, "gradient_checkpointing"));
    CHECK(p.knobs.value("mixed_precision", std::string()) == p.setup.mixed_precision);
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
  CHECK(a.config_text.find("--sdpa") != std::string::npos);  // one attention flag is required
  for (const auto& p : a.plans) {
    CHECK(p.schedule.interval == 0);  // musubi has no interval or stride
    CHECK(p.schedule.stride == 0);
    CHECK(!p.setup.ramtorch);
  }
}

TEST_CASE("OneTrainer's plans use its per-part keys and offload fraction") {
  const Context ctx = context_for("flux", 24);
  const TrainerAdvice a = advise_for_trainer(ctx, "onetrainer", nullptr);
  REQUIRE(!a.plans.empty());
  for (const auto& p : a.plans) {
    CHECK(!has_knob(p, "gradient_checkpointing"));  // the top-level key OneTrainer dropped on 2026-07-05
    CHECK(p.knobs["transformer.gradient_checkpointing"].is_boolean());
    // the fraction is the share of the blocks' weight bytes kept on the host (LayerOffloadConductor)
    const double frac = p.knobs["transformer.offload_fraction"].get<double>();
    CHECK(p.setup.layer_offload_fraction == doctest::Approx(frac));
    CHECK(!p.setup.ramtorch);
    if (frac > 0) CHECK(p.knobs["transformer.gradient_checkpointing"].get<bool>());  // checkpointing_util.py:154
    CHECK(p.knobs["text_encoder.train"] == false);
    CHECK(p.knobs["text_encoder_2.train"] == false);
  }
  CHECK(a.config_format == "json");
  const auto j = nlohmann::json::parse(a.config_text);
  CHECK(j["__version"] == 11);
  CHECK(j["transformer"].contains("gradient_checkpointing"));
}

namespace fs = std::filesystem;

TEST_CASE("every emitted OneTrainer config reads back through its reader and runs as OneTrainer runs it") {
  const fs::path dir = fs::temp_directory_path() / "segadvise-onetrainer-emit";
  fs::create_directories(dir);
  for (const auto& [model, full] : std::vector<std::pair<std::string, bool>>{{"flux", false}, {"qwen-image", false}, {"flux", true}, {"sdxl", true}}) {
    SetupFlags fl;
    fl.model = model;
    fl.vram_gib = 24;
    if (full) fl.model_type = "full";
    const Context ctx(make_request(fl));
    const TrainerAdvice a = advise_for_trainer(ctx, "onetrainer", nullptr);
    REQUIRE(!a.plans.empty());
    int i = 0;
    for (const auto& p : a.plans) {
      KnobCombo c;
      c.knobs = p.knobs;
      c.setup = p.setup;
      c.schedule = p.schedule;
      c.label = p.label;
      const fs::path f = dir / (model + (full ? "-full-" : "-lora-") + std::to_string(i++) + ".json");  // no '#': migrated unless __version 11
      std::ofstream(f) << trainer("onetrainer").config_text(*ctx.family, c);
      TrainerReadOptions o;
      const TrainerRead r = read_trainer_config(f.string(), o);
      INFO(f.string() << ": " << p.label);
      CHECK(r.rejections.empty());                 // no offload without checkpointing, fused back pass where needed
      CHECK(r.setup.kept_model_bytes == 0);         // no text encoder left trainable, latents cached
      CHECK(r.setup.layer_offload_fraction == doctest::Approx(p.setup.layer_offload_fraction));
      CHECK(r.setup.fused_back_pass == p.setup.fused_back_pass);
      CHECK(r.schedule.checkpointing == p.schedule.checkpointing);
      CHECK(r.setup.base_precision == p.setup.base_precision);
      CHECK(!any_of_contains(r.warnings, "__migration_10"));
    }
  }
}

TEST_CASE("ai-toolkit config is YAML under config.process with its own keys") {
  const Context ctx = context_for("flux", 48);
  const TrainerAdvice a = advise_for_trainer(ctx, "ai-toolkit", nullptr);
  REQUIRE(!a.config_text.empty());
  CHECK(a.config_text.find("config:\n  name: \"segadvise_plan\"\n  process:\n") != std::string::npos);
  CHECK(a.config_text.find("dtype: \"bf16\"") != std::string::npos);
  CHECK(a.config_text.find("gradient_checkpointing: ") != std::string::npos);
  CHECK(a.config_text.find("batch_size: ") != std::string::npos);
}

TEST_CASE("an unquantized ai-toolkit job that does not fit: model.quantize is searched, in its own keys") {
  // FLUX.1 dev at bf16 on a 24 GB card: its ~23.8 GB of bf16 weights alone leave no room, and
  // layer_offloading does nothing on FLUX.1 in ai-toolkit; quantized (qfloat8, 1 byte a weight) it fits
  SetupFlags f;
  f.model = "flux";
  f.vram_gib = 24;
  f.precision = "no_change";  // a bf16 base
  const Context ctx(make_request(f));
  REQUIRE(!precision_info(ctx.setup.base_precision).quantized);
  const TrainerAdvice a = advise_for_trainer(ctx, "ai-toolkit", nullptr);
  REQUIRE(a.best >= 0);
  const TrainerPlan& best = a.plans[a.best];
  CHECK(best.knobs.value("model.quantize", false));
  CHECK(best.knobs.value("model.qtype", std::string()) == "qfloat8");
  CHECK(best.label.rfind("model.quantize (qfloat8)", 0) == 0);
  CHECK(any_of_contains(a.notes, "model.quantize (qtype qfloat8"));
  CHECK(a.config_text.find("quantize: true") != std::string::npos);
  // every unquantized plan was tried first, and none fits with confidence
  for (const auto& p : a.plans)
    if (!p.knobs.contains("model.quantize")) CHECK(p.verdict != FitVerdict::Fits);
  // an 80 GB card fits unquantized: no quantized plan is offered
  f.vram_gib = 80;
  const TrainerAdvice big = advise_for_trainer(Context(make_request(f)), "ai-toolkit", nullptr);
  for (const auto& p : big.plans) CHECK(!p.knobs.contains("model.quantize"));
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
