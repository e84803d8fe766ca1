// The trainers library through the advisor: one component per trainer behind one interface, one rule
// for what SimpleTuner stops on answers predict, advise and check alike, and a trainer's plan within
// its own knobs is judged by advise's verdict.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "advisor_request.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/trainers/setup_rules.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_plans.hpp"
#include "test_util.hpp"

using namespace segadvise;
namespace fs = std::filesystem;

namespace {

const std::string kBackends = std::string(SEGADVISE_FIXTURES_DIR) + "/check/backends/";

// `keys` written as a SimpleTuner config.json in a folder of its own; returns its path.
std::string write_config(const std::string& name, const nlohmann::json& keys) {
  const fs::path dir = fs::temp_directory_path() / ("segadvise-trainer-rules-" + name);
  fs::create_directories(dir);
  const fs::path path = dir / "config.json";
  std::ofstream(path) << keys.dump(2);
  return path.string();
}

// check of the config: its setup and schedule through the advisor, with advice, as `segadvise check --advise`
CheckReport check_of(const TrainerRead& cr, const std::string& gpu) {
  CheckRequest req;
  req.run = test::request_for(cr.family->id, gpu);
  req.run.setup = cr.setup;
  req.schedule = cr.schedule;
  req.rejections = cr.rejections;
  req.warnings = cr.warnings;
  req.advise = true;
  return check_report(req);
}

}  // namespace

TEST_CASE("predict, advise and check all say SimpleTuner stops on fp8-quanto on Wan") {
  const std::string why = "base_model_precision fp8-quanto on wan: the trainer stops";
  const TrainerRead cr = read_simpletuner_config(
      write_config("wan-fp8-quanto", {{"model_family", "wan"},
                                      {"model_flavour", "t2v-480p-1.3b-2.1"},
                                      {"model_type", "lora"},
                                      {"base_model_precision", "fp8-quanto"},
                                      {"train_batch_size", 1},
                                      {"data_backend_config", kBackends + "video-81f.json"}}),
      TrainerReadOptions{});
  REQUIRE(cr.rejections.size() == 1);
  CHECK(cr.rejections[0] == why);
  // check
  const CheckReport ck = check_of(cr, "h100");
  CHECK(!ck.candidate.prediction.supported);
  CHECK(ck.candidate.prediction.reason == why);
  REQUIRE(ck.advice);
  CHECK(ck.advice->recommended() == nullptr);
  CHECK(ck.advice->advice.supported_count == 0);
  // predict and advise of the same precision from flags (wan14b's example setup on an H100)
  AdvisorRequest r = test::request_for("wan14b", "h100");
  r.setup.base_precision = "fp8-quanto";
  const PredictionReport p = predict_report(r, Schedule::parse("layer"));
  CHECK(!p.candidate.prediction.supported);
  CHECK(p.candidate.prediction.reason == why);
  CHECK(p.verdict() == FitVerdict::DoesNotFit);
  const AdviceReport a = advise_report(r, AdviceOptions{});
  CHECK(a.recommended() == nullptr);
  CHECK(a.advice.supported_count == 0);
  // the rule is Wan's and LTX-Video's: FLUX.1 on fp8-quanto runs
  AdvisorRequest f = test::request_for("flux", "h100");
  f.setup.base_precision = "fp8-quanto";
  CHECK(predict_report(f, Schedule::parse("layer")).candidate.prediction.supported);
  CHECK(setup_rejections(find_family("ltxvideo"), [] {
          TrainingSetup s;
          s.base_precision = "fp8-quanto";
          return s;
        }()).size() == 1);
}

TEST_CASE("a full fine-tune of a quantized base stops in predict, advise and check unless i_know_what_i_am_doing") {
  const std::string why =
      "base_model_precision int8-quanto with model_type full: the trainer stops (quantized bases train only "
      "LoRA/LyCORIS unless i_know_what_i_am_doing is set)";
  nlohmann::json keys = {{"model_family", "flux"},
                         {"model_type", "full"},
                         {"base_model_precision", "int8-quanto"},
                         {"train_batch_size", 1},
                         {"data_backend_config", kBackends + "pixel-area-480-square.json"}};
  const TrainerRead cr = read_simpletuner_config(write_config("flux-full-int8", keys), TrainerReadOptions{});
  REQUIRE(cr.rejections.size() == 1);
  CHECK(cr.rejections[0] == why);
  const CheckReport ck = check_of(cr, "h200");
  CHECK(ck.candidate.prediction.reason == why);
  REQUIRE(ck.advice);
  CHECK(ck.advice->advice.supported_count == 0);
  AdvisorRequest r = test::request_for("flux", "h200");
  r.setup.model_type = ModelType::Full;
  r.setup.base_precision = "int8-quanto";
  const PredictionReport p = predict_report(r, Schedule::parse("layer"));
  CHECK(p.candidate.prediction.reason == why);
  CHECK(advise_report(r, AdviceOptions{}).advice.supported_count == 0);

  // i_know_what_i_am_doing lifts it, in the config and in the setup the advisor judges
  keys["i_know_what_i_am_doing"] = true;
  const TrainerRead lifted = read_simpletuner_config(write_config("flux-full-int8-iknow", keys), TrainerReadOptions{});
  CHECK(lifted.rejections.empty());
  CHECK(lifted.setup.quantized_full_allowed);
  CHECK(check_of(lifted, "h200").candidate.prediction.supported);
  r.setup.quantized_full_allowed = true;
  CHECK(predict_report(r, Schedule::parse("layer")).candidate.prediction.supported);
}

TEST_CASE("another trainer's plan is not judged by SimpleTuner's rules") {
  // ai-toolkit quantizes with qfloat8 (fp8-quanto) without layer offloading: SimpleTuner would stop on
  // Wan, ai-toolkit does not
  TrainingSetup s;
  s.trainer = "ai-toolkit";
  s.base_precision = "fp8-quanto";
  CHECK(setup_rejections(find_family("wan14b"), s).empty());
  s.trainer = "simpletuner";
  CHECK(setup_rejections(find_family("wan14b"), s).size() == 1);
}

TEST_CASE("a trainer's plan is picked by advise's verdict: a confident fit, else the fastest borderline one") {
  // a stand-in cost model: checkpointing halves the peak (40 -> 20 GiB) and costs 25% time; the verdict
  // is "fits" at 20 GiB, "borderline" at 40 GiB (whose point value would fit)
  const auto model = [](FitVerdict without_checkpointing) {
    return [without_checkpointing](const TrainingSetup&, const Schedule& sc) {
      PlanPrediction p;
      p.prediction.peak_vram_bytes = (sc.checkpointing ? 20 : 40) * kGiB;
      p.prediction.step_time_s = sc.checkpointing ? 1.25 : 1.0;
      p.prediction.fits = true;
      p.verdict = sc.checkpointing ? FitVerdict::Fits : without_checkpointing;
      return p;
    };
  };
  const Family& flux = find_family("flux");
  // diffusers has two plans: no checkpointing (1.0 s) and --gradient_checkpointing (1.25 s)
  const TrainerAdvice confident = trainer("diffusers").plan(flux, TrainingSetup{}, model(FitVerdict::Borderline), "1.0 GiB");
  REQUIRE(confident.plans.size() == 2);
  CHECK(confident.best == 1);  // the slower confident fit, not the faster borderline one
  CHECK(confident.verdict == FitVerdict::Fits);
  CHECK(confident.plans[0].verdict == FitVerdict::Borderline);

  // nothing confident: the fastest borderline plan, reported as borderline
  const auto none_fit = [](const TrainingSetup&, const Schedule& sc) {
    PlanPrediction p;
    p.prediction.peak_vram_bytes = (sc.checkpointing ? 20 : 40) * kGiB;
    p.prediction.step_time_s = sc.checkpointing ? 1.25 : 1.0;
    p.verdict = sc.checkpointing ? FitVerdict::Borderline : FitVerdict::DoesNotFit;
    return p;
  };
  // (nothing confident: the script's --use_8bit_adam plans are searched too, timed alike here, so the
  // four run in order no checkpointing, the same with --use_8bit_adam, checkpointing, the same with it)
  const TrainerAdvice borderline = trainer("diffusers").plan(flux, TrainingSetup{}, none_fit, "1.0 GiB");
  REQUIRE(borderline.plans.size() == 4);
  CHECK(borderline.best == 2);
  CHECK(!borderline.plans[2].knobs.contains("use_8bit_adam"));
  CHECK(borderline.verdict == FitVerdict::Borderline);
  CHECK(borderline.config_text.find("--gradient_checkpointing") != std::string::npos);

  // neither: no best, does not fit, the smallest plan's lines
  const auto nothing = [](const TrainingSetup&, const Schedule& sc) {
    PlanPrediction p;
    p.prediction.peak_vram_bytes = (sc.checkpointing ? 20 : 40) * kGiB;
    p.prediction.step_time_s = 1.0;
    return p;  // does-not-fit
  };
  const TrainerAdvice no = trainer("diffusers").plan(flux, TrainingSetup{}, nothing, "1.0 GiB");
  CHECK(no.best == -1);
  CHECK(no.verdict == FitVerdict::DoesNotFit);
  CHECK(no.plans[no.smallest].schedule.checkpointing);
}

TEST_CASE("the registry holds one component per trainer; each detects and reads its own files") {
  std::vector<std::string> ids;
  for (const Trainer* t : all_trainers()) ids.push_back(t->id());
  CHECK(ids == std::vector<std::string>{"simpletuner", "diffusion-pipe", "sd-scripts", "musubi", "ai-toolkit", "onetrainer", "diffusers", "kohya_ss"});
  CHECK(ids == emitter_names());
  CHECK(trainer("musubi").name() == "musubi-tuner");
  CHECK(trainer("simpletuner").facts() == nullptr);
  CHECK(trainer("onetrainer").facts() == &trainer_facts("onetrainer"));
  CHECK(test::input_error_of([] { trainer("kohya"); }).find("--trainer: 'kohya' is not one of") != std::string::npos);

  const std::string fixtures = std::string(SEGADVISE_FIXTURES_DIR);
  const std::vector<std::pair<std::string, std::string>> files = {
      {"simpletuner", fixtures + "/check/flux-480-square.json"},
      {"musubi", fixtures + "/trainers/musubi/wan14b_train.sh"},
      {"musubi", fixtures + "/trainers/musubi/flux_config.toml"},
      {"ai-toolkit", fixtures + "/trainers/ai-toolkit/train_lora_flux_24gb.yaml"},
      {"onetrainer", fixtures + "/trainers/onetrainer/flux_lora.json"},
      {"diffusers", fixtures + "/trainers/diffusers/flux_lora.sh"},
      {"diffusion-pipe", fixtures + "/trainers/diffusion_pipe/main_example.toml"},
      {"diffusion-pipe", fixtures + "/trainers/diffusion_pipe/launch_pipeline.sh"}};
  for (const auto& entry : files) {
    const std::string id = entry.first, path = entry.second;  // no structured binding: clang rejects capturing one
    int detected = 0;
    for (const Trainer* t : all_trainers())
      if (t->detects(path)) {
        CHECK_MESSAGE(t->id() == id, path);
        ++detected;
      }
    CHECK_MESSAGE(detected == 1, path);
    CHECK(detect_trainer(path) == id);
  }
  TrainerReadOptions o;
  o.model = "wan14b";
  o.cwd = "/nonexistent-working-directory";
  const TrainerRead m = trainer("musubi").read(fixtures + "/trainers/musubi/wan14b_train.sh", o);
  CHECK(m.trainer == "musubi");
  CHECK(m.setup.trainer == "musubi");  // musubi's rules judge it, not SimpleTuner's
  const TrainerRead st = trainer("simpletuner").read(fixtures + "/check/flux-480-square.json", TrainerReadOptions{});
  CHECK(st.trainer == "simpletuner");
  CHECK(st.family == &find_family("flux"));
  CHECK(st.setup.base_precision == "int8-quanto");
  CHECK(st.rejections.empty());
}

TEST_CASE("each component answers for its own setup rules") {
  TrainingSetup s;
  s.base_precision = "fp8-quanto";
  const Family& wan = find_family("wan14b");
  CHECK(trainer("simpletuner").setup_rejections(wan, s) ==
        std::vector<std::string>{"base_model_precision fp8-quanto on wan: the trainer stops"});
  for (const char* other : {"musubi", "ai-toolkit", "onetrainer", "diffusers"})
    CHECK(trainer(other).setup_rejections(wan, s).empty());
}

TEST_CASE("a component names the memory knobs of its plan that go into the user's own file") {
  const nlohmann::ordered_json plan = {{"sdpa", true}, {"mixed_precision", "bf16"}, {"gradient_checkpointing", true},
                                       {"blocks_to_swap", 9}, {"network_dim", 32}};
  TrainerRead r;
  const nlohmann::ordered_json k = trainer("musubi").memory_knobs(r, plan);
  // the memory knobs only, a knob the plan leaves out is removed (null); the shape and the LoRA rank stay the user's
  CHECK(k == nlohmann::ordered_json{{"gradient_checkpointing", true}, {"gradient_checkpointing_cpu_offload", nullptr},
                                    {"blocks_to_swap", 9}, {"fp8_base", nullptr}, {"fp8_scaled", nullptr},
                                    {"offload_inactive_dit", nullptr}, {"fused_backward_pass", nullptr}});
  r.rejections.push_back("no attention flag (--sdpa, ...): the trainer stops");
  CHECK(trainer("musubi").memory_knobs(r, plan)["sdpa"] == true);
  // an attention flag musubi refuses for training goes (rewrite_trainer_config), the plan's in its place
  TrainerRead sage;
  sage.refused_keys = {"sage_attn"};
  CHECK(trainer("musubi").memory_knobs(sage, plan)["sdpa"] == true);
  CHECK(trainer("diffusers").memory_knobs(r, plan) == nlohmann::ordered_json{{"gradient_checkpointing", true}});
  // diffusers: --cache_latents / --offload are added when the plan sets them, never removed
  nlohmann::ordered_json cached = plan;
  cached["cache_latents"] = true;
  CHECK(trainer("diffusers").memory_knobs(r, cached) ==
        nlohmann::ordered_json{{"gradient_checkpointing", true}, {"cache_latents", true}});
  // the plan's --mixed_precision where the file trains in another (a line without it: float32, accelerate's
  // default 'no'), in both command-line trainers
  TrainerRead fp32;
  fp32.setup.mixed_precision = "no";
  CHECK(trainer("diffusers").memory_knobs(fp32, plan).value("mixed_precision", std::string()) == "bf16");
  CHECK(trainer("musubi").memory_knobs(fp32, plan).value("mixed_precision", std::string()) == "bf16");
  CHECK(trainer("onetrainer").memory_knobs(r, plan) == plan);
}
