// The phases of a whole SimpleTuner run (trainers/phases.hpp): every number below is derived by hand
// from trainers/common/phases/run-phases.json and the step breakdown the test sets up.
#include <doctest/doctest.h>

#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/phases.hpp"

using namespace segadvise;

namespace {

// A step prediction with a chosen breakdown (GiB) and no allocator slack (fragmentation 0), so the
// phases' sums can be checked by hand.
Prediction step_of(double weights_gib, double trainable_gib, double grads_gib, double optimizer_gib, double act_gib) {
  Prediction p;
  p.memory.weights_bytes = weights_gib * kGiB;
  p.memory.trainable_bytes = trainable_gib * kGiB;
  p.memory.gradient_bytes = grads_gib * kGiB;
  p.memory.optimizer_bytes = optimizer_gib * kGiB;
  p.memory.activation_peak_bytes = act_gib * kGiB;
  p.memory.fragmentation_bytes = 0;
  p.peak_vram_bytes = (weights_gib + trainable_gib + grads_gib + optimizer_gib + act_gib) * kGiB;
  return p;
}

TrainingSetup qwen_setup() {
  TrainingSetup s = default_setup(find_family("qwen_image"));
  s.width = s.height = 1024;
  s.frames = 1;
  s.batch = 1;
  s.base_precision = "no_change";
  s.ramtorch = false;
  s.model_type = ModelType::Lora;
  return s;
}

// Qwen-Image figures used throughout:
//   text encoder Qwen2.5-VL-7B 8.292e9 x 2 B = 16.584e9 B; its hidden states at 512 tokens:
//   512 x 3584 x (28 + 1) x 2 B = 106,430,464 B
//   VAE (Wan-style) 127e6 x 2 B = 254e6 B; encode 3201 B/px, decode 5799 B/px (InvokeAI #9427)
constexpr double kQwenTe = 16.584e9, kQwenTeAct = 106430464, kQwenVae = 254e6;

}  // namespace

TEST_CASE("a text encoder weighs its parameters times its precision's bytes") {
  const FamilyPhaseData flux = phase_data(find_family("flux"));
  REQUIRE(flux.text_encoders.size() == 2);
  const TextEncoderSpec& t5 = flux.text_encoders[1];
  CHECK(t5.params == doctest::Approx(4762310656));
  CHECK(text_encoder_bytes(t5, "no_change") == doctest::Approx(9524621312.0));  // x 2 B (bf16)
  CHECK(text_encoder_bytes(t5, "int8-quanto") == doctest::Approx(4762310656 * 1.01));  // int8 + scales
  // all hidden states of Qwen2.5-VL-7B at 1024 tokens: 1024 x 3584 x 29 x 2 = 212,860,928 B ("about 0.2 GB", §D)
  const FamilyPhaseData qwen = phase_data(find_family("qwen_image"));
  CHECK(text_encoder_activation_bytes(qwen.text_encoders[0], 1, 1024) == doctest::Approx(212860928.0));
}

TEST_CASE("FLUX.2 dev caches with Mistral 24B, klein with its own Qwen3") {
  const Family& flux2 = find_family("flux2");
  CHECK(phase_data(flux2, "dev").text_encoders[0].params == doctest::Approx(24e9));  // ~48 GB bf16 (FLUX2.md)
  CHECK(phase_data(flux2, "klein-9b").text_encoders[0].id == "qwen3-8b");
  CHECK(phase_data(flux2).vae.tiling_ignored);  // flux2/model.py:417-440 ignores the flags
}

TEST_CASE("HunyuanImage-2.1 encodes with Qwen2.5-VL-7B and ByT5 into a 64-channel 32x latent") {
  // ByT5 (configs/hunyuan_image/byt5-small/config.json), the encoder alone: 1510 x 1472 embeddings +
  // 12 x (4 x 1472 x 384 attention + 3 x 1472 x 3584 gated FFN + 2 x 1472 norms) + 32 x 6 bias + 1472
  // = 219,314,944; x 2 B (bf16) = 438,629,888 B
  const FamilyPhaseData hy = phase_data(find_family("hunyuan-image-2.1"));
  REQUIRE(hy.text_encoders.size() == 2);
  CHECK(hy.text_encoders[0].id == "qwen2.5-vl-7b");
  CHECK(text_encoder_bytes(hy.text_encoders[1], "no_change") == doctest::Approx(438629888.0));
  CHECK(hy.latent_channels == 64);
  CHECK(hy.vae.name.find("HYVAE2D") != std::string::npos);
  CHECK(hy.max_tokens == 1000);
}

TEST_CASE("VAE working sets follow the measured per-pixel costs, tiled and untiled") {
  const VaeSpec wan = phase_data(find_family("qwen_image")).vae;
  // 2560 x 1440 = 3,686,400 px x 5799 B = 21,377,433,600 B = 19.91 GiB, InvokeAI's untiled decode
  CHECK(vae_activation_bytes(wan, true, 2560, 1440, 1, 1, false, false) == doctest::Approx(21377433600.0));
  CHECK(vae_activation_bytes(wan, true, 2560, 1440, 1, 1, true, false) == doctest::Approx(590558003.0));  // 0.55 GiB tiled
  CHECK(vae_activation_bytes(wan, false, 2560, 1440, 1, 1, true, false) == doctest::Approx(279172874.0));  // 0.26 GiB
  // video: the decoder streams 4 frames at a time: 832 x 480 = 399,360 px x 5799 x 4 = 9,263,554,560 B
  CHECK(vae_activation_bytes(wan, true, 832, 480, 81, 1, false, false) == doctest::Approx(9263554560.0));
  // two clips: at once without slicing (x2), one at a time with it
  CHECK(vae_activation_bytes(wan, true, 832, 480, 81, 2, false, false) == doctest::Approx(2 * 9263554560.0));
  CHECK(vae_activation_bytes(wan, true, 832, 480, 81, 2, false, true) == doctest::Approx(9263554560.0));

  const VaeSpec kl = phase_data(find_family("flux")).vae;
  // AutoencoderKL tiles only above 1024 px: at 1024² tiling changes nothing, 1536 x 1,048,576 B
  CHECK(vae_activation_bytes(kl, true, 1024, 1024, 1, 1, true, false) == doctest::Approx(1610612736.0));
  // at 2048² one 1024² tile plus 25% overlap: 1536 x 1,310,720 = 2,013,265,920 B (untiled: 4x 1.61e9)
  CHECK(vae_activation_bytes(kl, true, 2048, 2048, 1, 1, true, false) == doctest::Approx(2013265920.0));
  CHECK(vae_activation_bytes(kl, true, 2048, 2048, 1, 1, false, false) == doctest::Approx(4 * 1610612736.0));

  const VaeSpec ltx = phase_data(find_family("ltxvideo")).vae;
  // LTX decode: 1 GB + 350 B per pixel-frame: 768 x 512 x 49 = 19,267,584 px-frames -> 7,743,654,400 B
  CHECK(vae_activation_bytes(ltx, true, 768, 512, 49, 1, false, false) == doctest::Approx(7743654400.0));
}

TEST_CASE("validation renders the family's frame count, capped by its hook") {
  const Family& wan = find_family("wan14b");
  const FamilyPhaseData d = phase_data(wan);
  RunSetup run;
  CHECK(validation_frames(d, wan, run, 33) == 81);  // min(81, v or 81)
  run.validation_num_video_frames = 49;
  CHECK(validation_frames(d, wan, run, 33) == 49);
  run.validation_num_video_frames = 120;
  CHECK(validation_frames(d, wan, run, 33) == 81);  // capped at 81
  CHECK(validation_frames(phase_data(find_family("flux")), find_family("flux"), run, 1) == 1);
}

TEST_CASE("startup caching: the VAE pass holds the text encoder unless offload_during_startup") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(20, 0.5, 0.5, 1, 1);
  RunSetup run;
  run.vae_batch_size = 1;
  // VAE cache: VAE 254e6 + TE 16.584e9 + encode of one 1024² image 3201 x 1,048,576 = 3,356,491,776
  //   = 20,194,491,776 B; the text cache: 254e6 + 16.584e9 + 106,430,464 = 16,944,430,464 B
  const double enc = 3201.0 * 1048576;
  RunPhases r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::StartupCaching).peak_vram_bytes == doctest::Approx(kQwenVae + kQwenTe + enc));
  CHECK(r.at(Phase::StartupCaching).set_by.find("VAE latent cache") == 0);
  run.offload_during_startup = true;  // the VAE pass drops to 254e6 + 3.356e9: the text cache sets it
  r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::StartupCaching).peak_vram_bytes == doctest::Approx(kQwenVae + kQwenTe + kQwenTeAct));
  CHECK(r.at(Phase::StartupCaching).set_by.find("text-embed cache") == 0);
  // default vae_batch_size for images is 4: the encode is 4 x 3,356,491,776 B
  run = RunSetup();
  r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::StartupCaching).peak_vram_bytes == doctest::Approx(kQwenVae + kQwenTe + 4 * enc));
}

TEST_CASE("model load: quantizing on the accelerator puts the whole bf16 base on the GPU") {
  const Family& fam = find_family("flux");
  TrainingSetup setup = default_setup(fam);
  setup.base_precision = "int8-quanto";
  setup.model_type = ModelType::Lora;
  setup.ramtorch = false;
  const BlockChain chain = analyze(fam, setup);
  double params = chain.outside_params;
  for (const auto& b : chain.blocks) params += b.params;
  // Flux's transformer: ~11.9B params x 2 B = ~23.8 GB
  CHECK(params * 2 == doctest::Approx(23.8e9).epsilon(0.03));
  const Prediction step = step_of(11, 0.1, 0.1, 0.2, 4);
  RunSetup run;  // quantize_via accelerator: the registry default
  RunPhases r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::ModelLoad).peak_vram_bytes == doctest::Approx(params * 2));
  CHECK(r.peak_phase == Phase::ModelLoad);  // 23.8e9 B = 22.2 GiB > the step's 15.4 GiB
  // the fix on a 16 GiB budget is quantize_via cpu: then move_models, 11 + 0.1 GiB
  r = predict_phases(fam, setup, chain, step, run, 16 * kGiB);
  bool found = false;
  for (const auto& f : r.fixes)
    if (f.phase == Phase::ModelLoad) {
      found = true;
      CHECK(f.key == "quantize_via");
      CHECK(f.value_json == "\"cpu\"");
      CHECK(f.peak_after_bytes == doctest::Approx(11.1 * kGiB));
      CHECK(f.fits_after);
    }
  CHECK(found);
  // quantizing on the CPU: the host holds the bf16 base twice (FLUX.md: ~50 GB for Flux)
  run.quantize_via = "cpu";
  r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::ModelLoad).peak_vram_bytes == doctest::Approx(11.1 * kGiB));
  CHECK(r.host.peak_bytes == doctest::Approx(4 * params));
}

TEST_CASE("the training step adds what the run keeps loaded and the EMA round trip") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(20, 0.5, 0.5, 1, 1);  // 23 GiB
  RunSetup run;
  RunPhases r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::TrainingStep).peak_vram_bytes == doctest::Approx(23 * kGiB));
  run.keep_vae_loaded = true;  // + 254e6 B of VAE weights
  r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::TrainingStep).peak_vram_bytes == doctest::Approx(23 * kGiB + kQwenVae));
  // EMA on the CPU: shadow (= gradient bytes, 0.5 GiB) moved in plus its temporary: 2 x 0.5 = 1 GiB,
  // after the optimizer step (activations freed): it ties the 1 GiB of activations, no change
  run = RunSetup();
  run.use_ema = true;
  const Prediction big_lora = step_of(20, 2, 2, 4, 1);  // EMA: 2 x 2 = 4 GiB > 1 GiB of activations
  r = predict_phases(fam, setup, chain, big_lora, run, 0);
  CHECK(r.at(Phase::TrainingStep).peak_vram_bytes == doctest::Approx((20 + 2 + 2 + 4 + 4) * kGiB));
  CHECK(r.at(Phase::TrainingStep).set_by.find("EMA") == 0);
  run.ema_device = "accelerator";  // the shadow lives on the GPU (the cost model counts it): no round trip
  r = predict_phases(fam, setup, chain, big_lora, run, 0);
  CHECK(r.at(Phase::TrainingStep).peak_vram_bytes == doctest::Approx(29 * kGiB));
}

TEST_CASE("validation keeps the optimizer and gradients and decodes with the VAE reloaded") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(20, 0.5, 0.5, 1, 1);
  RunSetup run;
  run.validation_width = run.validation_height = 1024;
  run.vae_batch_size = 1;
  // resident 20 + 0.5 + 1 + 0.5 GiB (gradients kept: set_grads_to_none off) + VAE 254e6 B; the decode of
  // one 1024² image, 5799 x 1,048,576 = 6,080,692,224 B, is larger than the denoising forward
  const double decode = 5799.0 * 1048576;
  RunPhases r = predict_phases(fam, setup, chain, step, run, 0);
  const PhaseResult& v = r.at(Phase::Validation);
  CHECK(v.peak_vram_bytes == doctest::Approx(22 * kGiB + kQwenVae + decode));
  CHECK(v.set_by.find("validation: VAE decode of 1 x 1024x1024") == 0);
  CHECK(r.peak_phase == Phase::Validation);  // 28.4 GiB against a 23 GiB step
  run.set_grads_to_none = true;  // - 0.5 GiB of gradients
  r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::Validation).peak_vram_bytes == doctest::Approx(21.5 * kGiB + kQwenVae + decode));
  run.validation_disable = true;
  r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK_FALSE(r.at(Phase::Validation).runs);
  CHECK(r.peak_phase == Phase::TrainingStep);
}

TEST_CASE("the step-0 benchmark alone runs without optimizer state and gradients") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(20, 0.5, 0.5, 1, 1);
  RunSetup run;
  run.validation_width = run.validation_height = 1024;
  run.validation_step_interval = 999999;
  run.max_train_steps = 1000;  // no validation within the run: only the benchmark (20 + 0.5 GiB resident)
  RunPhases r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK(r.at(Phase::Validation).peak_vram_bytes == doctest::Approx(20.5 * kGiB + kQwenVae + 5799.0 * 1048576));
  CHECK(r.at(Phase::Validation).set_by.find("step-0 benchmark") == 0);
  run.disable_benchmark = true;
  r = predict_phases(fam, setup, chain, step, run, 0);
  CHECK_FALSE(r.at(Phase::Validation).runs);
}

TEST_CASE("saving holds the training state; offload_during_save moves the model off") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(20, 0.5, 0.5, 1, 1);
  RunSetup run;
  CHECK(predict_phases(fam, setup, chain, step, run, 0).at(Phase::Save).peak_vram_bytes == doctest::Approx(22 * kGiB));
  run.offload_during_save = true;  // gradients 0.5 + optimizer 1 GiB stay
  CHECK(predict_phases(fam, setup, chain, step, run, 0).at(Phase::Save).peak_vram_bytes == doctest::Approx(1.5 * kGiB));
}

TEST_CASE("advice names the cheapest key that brings a phase under the budget") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(20, 0.5, 0.5, 1, 1);  // 23 GiB step
  RunSetup run;
  run.validation_width = run.validation_height = 1024;
  run.vae_batch_size = 1;
  // validation 22 GiB + 254e6 + 6.08e9 B = 28.4 GiB over a 24 GiB budget (25,769,803,776 B). A key must
  // bring the phase's upper end under it (bands: resident x1.05, the VAE's assumed size x2, the
  // measured decode x1.33). Alone none does: tiling's point is 22.79 GiB but its upper end
  // 22 GiB x 1.05 + 508e6 + 590,558,003 x 1.33 = 26,096,878,278 B; a 256x256 validation's
  // 24,803,436,134 + 508e6 + 380,043,264 x 1.33 = 25,816,893,675 B. Stacked: set_grads_to_none (upper
  // end 21.5 GiB x 1.05 + 508e6 + 6,080,692,224 x 1.33 = 32,835,042,335 B, lower than 33.4e9), then
  // tiling on top: 24,239,721,677 + 508e6 + 785,442,144 = 25,533,163,821 B: fits
  RunPhases r = predict_phases(fam, setup, chain, step, run, 24 * kGiB);
  REQUIRE(r.fixes.size() == 2);
  CHECK(r.fixes[0].phase == Phase::Validation);
  CHECK(r.fixes[0].key == "set_grads_to_none");
  CHECK(r.fixes[0].fit_after == FitVerdict::DoesNotFit);  // lower end 21.5 GiB + 127e6 + 4.56e9 > 24 GiB
  CHECK(r.fixes[1].key == "vae_enable_tiling");
  CHECK(r.fixes[1].peak_after_bytes == doctest::Approx(21.5 * kGiB + kQwenVae + 590558003.0));
  CHECK(r.fixes[1].peak_after_hi_bytes == doctest::Approx(25533163820.8));
  CHECK(r.fixes[1].fit_after == FitVerdict::Fits);

  // startup on a 14 GiB budget (15.03e9 B): the VAE cache is 20.19e9 B; offload_during_startup leaves the
  // text cache at 16.94e9; tiling leaves 17.12e9; an int8 text encoder: 8.292e9 x 1.01 = 8.375e9 ->
  // 254e6 + 8.375e9 + 3.356e9 = 11.985e9 B: the cheapest single key that fits
  const Prediction small = step_of(10, 0.5, 0.5, 1, 1);
  r = predict_phases(fam, setup, chain, small, run, 14 * kGiB);
  std::vector<PhaseFix> startup;
  for (const auto& f : r.fixes)
    if (f.phase == Phase::StartupCaching) startup.push_back(f);
  REQUIRE(startup.size() == 1);
  CHECK(startup[0].key == "text_encoder_1_precision");
  CHECK(startup[0].value_json == "\"int8-quanto\"");
  CHECK(startup[0].peak_after_bytes == doctest::Approx(kQwenVae + 8.292e9 * 1.01 + 3201.0 * 1048576));

  // on 8 GiB (8.59e9 B) no single key fits: offload first (text cache 16.94e9), then the int8 encoder
  // on top: 254e6 + 8.375e9 + 106e6 = 8.735e9 B, still over (fits_after false); tiling lowers nothing
  // once the text cache sets the phase, so it is left out
  r = predict_phases(fam, setup, chain, step_of(4, 0.1, 0.1, 0.2, 1), run, 8 * kGiB);
  startup.clear();
  for (const auto& f : r.fixes)
    if (f.phase == Phase::StartupCaching) startup.push_back(f);
  REQUIRE(startup.size() == 2);
  CHECK(startup[0].key == "offload_during_startup");
  CHECK(startup[0].peak_after_bytes == doctest::Approx(kQwenVae + kQwenTe + kQwenTeAct));
  CHECK(startup[1].key == "text_encoder_1_precision");
  CHECK(startup[1].peak_after_bytes == doctest::Approx(kQwenVae + 8.292e9 * 1.01 + kQwenTeAct));
  CHECK_FALSE(startup[1].fits_after);
}

TEST_CASE("a family without phase data counts the transformer only, and says so") {
  Family own = find_family("flux");
  own.trainer_family = "my_own_model";
  TrainingSetup setup = default_setup(own);
  setup.base_precision = "no_change";  // a bf16 base: no quantization at load
  const BlockChain chain = analyze(own, setup);
  RunPhases r = predict_phases(own, setup, chain, step_of(10, 0.1, 0.1, 0.2, 2), RunSetup(), 0);
  CHECK(r.at(Phase::StartupCaching).peak_vram_bytes == doctest::Approx(0));
  CHECK(r.peak_phase == Phase::TrainingStep);
  REQUIRE(!r.warnings.empty());
  CHECK(r.warnings[0].find("my_own_model") != std::string::npos);
}

TEST_CASE("with RamTorch only the weights outside the streamed blocks reach the GPU to be quantized") {
  const Family& fam = find_family("flux");
  TrainingSetup setup = default_setup(fam);
  setup.base_precision = "int8-quanto";
  setup.model_type = ModelType::Lora;
  setup.ramtorch = true;
  setup.ramtorch_percent = 100;
  const BlockChain chain = analyze(fam, setup);
  RunSetup run;  // quantize_via accelerator
  // every block streams: only the embedders and heads outside the blocks, x 2 B (131.5e6 B, more than
  // the quantized model the step holds here, 0.05 + 0.01 GiB, once move_models has run)
  RunPhases r = predict_phases(fam, setup, chain, step_of(0.05, 0.01, 0.01, 0.02, 4), run, 0);
  CHECK(r.at(Phase::ModelLoad).peak_vram_bytes == doctest::Approx(chain.outside_params * 2));
  CHECK(r.at(Phase::ModelLoad).set_by.find("quantize_via accelerator") == 0);
  setup.ramtorch_percent = 50;  // half the block weights too
  double blocks = 0;
  for (const auto& b : chain.blocks) blocks += b.params;
  r = predict_phases(fam, setup, chain, step_of(1, 0.1, 0.1, 0.2, 4), run, 0);
  CHECK(r.at(Phase::ModelLoad).peak_vram_bytes == doctest::Approx((chain.outside_params + blocks / 2) * 2));
  // ramtorch_text_encoder: the caching holds no encoder weights on the GPU; the host holds them next to
  // the streamed transformer weights (30 GiB here, more than the 23.8e9 B bf16 base loaded at startup):
  // CLIP-L 123,060,480 + T5-XXL 4,762,310,656 params x 2 B = 9,770,742,272 B
  run.ramtorch_text_encoder = true;
  Prediction streamed = step_of(1, 0.1, 0.1, 0.2, 4);
  streamed.memory.streamed_weights_bytes = 30 * kGiB;
  r = predict_phases(fam, setup, chain, streamed, run, 0);
  for (const auto& x : r.at(Phase::StartupCaching).resident) CHECK(x.what.find("text encoders") == std::string::npos);
  CHECK(r.host.peak_bytes == doctest::Approx(30 * kGiB + 9770742272.0));
  // it names what is on the host, not an EMA this run does not have
  CHECK(r.host.set_by == "training: RamTorch/block-swap weights (pinned), text encoders streamed by RamTorch (pinned)");
}

TEST_CASE("no phase advice while the step itself is over the budget") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();
  const BlockChain chain = analyze(fam, setup);
  RunSetup run;
  run.validation_width = run.validation_height = 1024;
  // a 30 GiB step on a 24 GiB budget: validation (29.4+ GiB) is over too, but the schedule comes first
  const RunPhases r = predict_phases(fam, setup, chain, step_of(25, 0.5, 0.5, 1, 3), run, 24 * kGiB);
  CHECK(r.at(Phase::Validation).peak_vram_bytes > 24 * kGiB);
  CHECK(r.fixes.empty());
}

TEST_CASE("the parts of a phase carry the bands of what they are made of") {
  // run-phases.json "bands": the step's fixed part and counted weights tight, assumed sizes and
  // unmeasured working sets wide, a documented spike from none to its size
  CHECK(part_band("resident").lo == 1.0);
  CHECK(part_band("resident").hi == doctest::Approx(1.05));
  CHECK(weights_band("C").hi == doctest::Approx(1.05));  // counted
  CHECK(weights_band("R").hi == doctest::Approx(1.05));
  CHECK(weights_band("I").lo == doctest::Approx(0.8));   // inferred
  CHECK(weights_band("I").hi == doctest::Approx(1.25));
  CHECK(weights_band("U").lo == doctest::Approx(0.5));   // assumed
  CHECK(weights_band("U").hi == doctest::Approx(2.0));
  CHECK(part_band("measured").hi == doctest::Approx(1.33));
  CHECK(part_band("estimate").hi == doctest::Approx(2.0));
  CHECK(part_band("spike").lo == 0.0);
  CHECK(save_spike_copies() == doctest::Approx(1.0));
}

TEST_CASE("a phase's range adds its parts' ends; the training step keeps the step's own range") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(20, 0.5, 0.5, 1, 1);  // 23 GiB
  const Range step_range{15 * kGiB, 40 * kGiB};
  RunSetup run;
  run.validation_width = run.validation_height = 1024;
  RunPhases r = predict_phases(fam, setup, chain, step, run, 0, step_range);
  CHECK(r.at(Phase::TrainingStep).peak_lo_bytes == doctest::Approx(15 * kGiB));
  CHECK(r.at(Phase::TrainingStep).peak_hi_bytes == doctest::Approx(40 * kGiB));
  // validation: resident 22 GiB x [1, 1.05] + the reloaded VAE 254e6 x [0.5, 2] (its size assumed, U)
  //   + the decode 6,080,692,224 x [0.75, 1.33] (measured by InvokeAI, M):
  //   lo = 23,622,320,128 + 127e6 + 4,560,519,168 = 28,309,839,296 B
  //   hi = 24,803,436,134.4 + 508e6 + 8,087,320,657.92 = 33,398,756,792.32 B
  const PhaseResult& v = r.at(Phase::Validation);
  CHECK(v.peak_vram_bytes == doctest::Approx(22 * kGiB + kQwenVae + 5799.0 * 1048576));
  CHECK(v.peak_lo_bytes == doctest::Approx(28309839296.0));
  CHECK(v.peak_hi_bytes == doctest::Approx(33398756792.32));
  // the verdict's rule: fits when the upper end fits, does not when even the lower end does not
  CHECK(v.verdict(32 * kGiB) == FitVerdict::Fits);         // 34.36e9 >= 33.40e9
  CHECK(v.verdict(30 * kGiB) == FitVerdict::Borderline);   // 28.31e9 <= 32.21e9 < 33.40e9
  CHECK(v.verdict(26 * kGiB) == FitVerdict::DoesNotFit);   // 27.92e9 < 28.31e9
  // the run's verdict is the worst phase's: at 30 GiB the step [15, 40] and validation are borderline;
  // at 26 GiB validation does not fit whatever the step's range says; at 45 GiB everything fits
  CHECK(r.verdict(30 * kGiB) == FitVerdict::Borderline);
  CHECK(r.verdict(26 * kGiB) == FitVerdict::DoesNotFit);
  CHECK(r.verdict(45 * kGiB) == FitVerdict::Fits);
  CHECK(r.peak_hi_bytes == doctest::Approx(40 * kGiB));  // the largest upper end: the step's
  // a VAE kept loaded joins the step with its own band: [15 GiB + 127e6, 40 GiB + 508e6]
  run.keep_vae_loaded = true;
  r = predict_phases(fam, setup, chain, step, run, 0, step_range);
  CHECK(r.at(Phase::TrainingStep).peak_lo_bytes == doctest::Approx(15 * kGiB + 127e6));
  CHECK(r.at(Phase::TrainingStep).peak_hi_bytes == doctest::Approx(40 * kGiB + 508e6));
  // without a range the step's point is its range
  r = predict_phases(fam, setup, chain, step, RunSetup(), 0);
  CHECK(r.at(Phase::TrainingStep).peak_lo_bytes == doctest::Approx(23 * kGiB));
  CHECK(r.at(Phase::TrainingStep).peak_hi_bytes == doctest::Approx(23 * kGiB));
}

TEST_CASE("creating the EMA clones the trainable parameters on the GPU before placing them") {
  const Family& fam = find_family("qwen_image");
  const TrainingSetup setup = qwen_setup();  // bf16 base: no quantization at load
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(20, 2, 2, 4, 1);
  RunSetup run;
  // move_models: weights 20 + adapters 2 GiB
  CHECK(predict_phases(fam, setup, chain, step, run, 0).at(Phase::ModelLoad).peak_vram_bytes == doctest::Approx(22 * kGiB));
  // use_ema: the shadow (trainable params x weight dtype = the gradients' 2 GiB) is cloned on the GPU
  // next to them, before the optimizer has state (ema.py:132): 20 + 2 + 2 = 24 GiB, wherever it then lives
  run.use_ema = true;
  for (const char* device : {"cpu", "accelerator"}) {
    run.ema_device = device;
    const PhaseResult m = predict_phases(fam, setup, chain, step, run, 0).at(Phase::ModelLoad);
    CHECK(m.peak_vram_bytes == doctest::Approx(24 * kGiB));
    CHECK(m.set_by.find("EMA creation") == 0);
    CHECK(m.peak_hi_bytes == doctest::Approx(24 * kGiB * 1.05));  // all of it the step's fixed part
  }
}

TEST_CASE("saving fp8-quanto weights spikes by up to one copy of them; offload_during_save avoids it") {
  const Family& fam = find_family("flux");
  TrainingSetup setup = default_setup(fam);
  setup.base_precision = "fp8-quanto";
  setup.model_type = ModelType::Lora;
  setup.ramtorch = false;
  const BlockChain chain = analyze(fam, setup);
  const Prediction step = step_of(11, 0.1, 0.1, 0.2, 4);
  RunSetup run;
  run.quantize_via = "cpu";
  // resident 11 + 0.1 + 0.1 + 0.2 = 11.4 GiB, + the spike: one more copy of the 11 GiB of weights = 22.4 GiB;
  // its band runs from no spike: lo = 11.4 GiB, hi = 11.4 x 1.05 + 11 = 22.97 GiB
  RunPhases r = predict_phases(fam, setup, chain, step, run, 16 * kGiB);
  const PhaseResult& s = r.at(Phase::Save);
  CHECK(s.peak_vram_bytes == doctest::Approx(22.4 * kGiB));
  CHECK(s.peak_lo_bytes == doctest::Approx(11.4 * kGiB));
  CHECK(s.peak_hi_bytes == doctest::Approx(22.97 * kGiB));
  CHECK(s.verdict(16 * kGiB) == FitVerdict::Borderline);
  CHECK(r.peak_phase == Phase::Save);
  // the fix: offload_during_save leaves gradients and optimizer state, 0.3 GiB, and no spike on the GPU
  REQUIRE(r.fixes.size() == 1);
  CHECK(r.fixes[0].key == "offload_during_save");
  CHECK(r.fixes[0].peak_after_bytes == doctest::Approx(0.3 * kGiB));
  CHECK(r.fixes[0].fit_after == FitVerdict::Fits);
  // int8-quanto has no documented spike
  setup.base_precision = "int8-quanto";
  r = predict_phases(fam, setup, analyze(fam, setup), step, run, 16 * kGiB);
  CHECK(r.at(Phase::Save).peak_vram_bytes == doctest::Approx(11.4 * kGiB));
}

namespace {

double resident_bytes(const PhaseResult& p, const std::string& what) {
  double b = 0;
  for (const auto& x : p.resident)
    if (x.what.find(what) != std::string::npos) b += x.bytes;
  return b;
}

}  // namespace

TEST_CASE("validation loads what the family's pipeline needs: Stable Cascade's decoder, LTX-2's audio models") {
  RunSetup run;
  run.validation_width = run.validation_height = 1024;
  // Stable Cascade's combined pipeline: stage B 1.5e9 x 2 B = 3e9 B and the stage A VQGAN 20e6 x 2 B = 40e6 B,
  // their sizes assumed (band 0.5-2x: lo 1.51e9, hi 6.04e9 of the phase's range come from them)
  const Family& sc = find_family("stable_cascade");
  TrainingSetup s = default_setup(sc);
  RunPhases r = predict_phases(sc, s, analyze(sc, s), step_of(8, 0.5, 0.5, 1, 4), run, 0);
  const PhaseResult& v = r.at(Phase::Validation);
  CHECK(resident_bytes(v, "stage B decoder") == doctest::Approx(3e9));
  CHECK(resident_bytes(v, "stage A VQGAN") == doctest::Approx(40e6));
  // LTX-2: the audio VAE and the vocoder, 100e6 params each x 2 B
  const Family& ltx2 = find_family("ltxvideo2");
  s = default_setup(ltx2);
  r = predict_phases(ltx2, s, analyze(ltx2, s), step_of(20, 0.5, 0.5, 1, 4), run, 0);
  CHECK(resident_bytes(r.at(Phase::Validation), "LTX-2 audio VAE") == doctest::Approx(200e6));
  CHECK(resident_bytes(r.at(Phase::Validation), "LTX-2 vocoder") == doctest::Approx(200e6));
}

TEST_CASE("Ideogram and MiniMax Music load their language model back for validation") {
  RunSetup run;
  // Ideogram's Qwen3-VL-8B (~8.8e9, bf16: 17.6e9 B) comes back for get_pipeline (ideogram/model.py:197)
  const Family& ideo = find_family("ideogram");
  TrainingSetup s = default_setup(ideo);
  const BlockChain chain = analyze(ideo, s);
  const Prediction step = step_of(10, 0.5, 0.5, 1, 4);
  RunPhases r = predict_phases(ideo, s, chain, step, run, 0);
  CHECK(resident_bytes(r.at(Phase::Validation), "reloaded for validation") == doctest::Approx(17.6e9));
  // at its text_encoder_1_precision: int8-quanto 8.8e9 x 1.01 = 8.888e9 B
  run.text_encoder_precision = {"int8-quanto"};
  r = predict_phases(ideo, s, chain, step, run, 0);
  CHECK(resident_bytes(r.at(Phase::Validation), "reloaded for validation") == doctest::Approx(8.888e9));
  // a text cache on demand keeps it loaded all along: counted once, not reloaded
  run = RunSetup();
  run.text_cache_ondemand = true;
  r = predict_phases(ideo, s, chain, step, run, 0);
  CHECK(resident_bytes(r.at(Phase::Validation), "reloaded for validation") == 0);
  CHECK(resident_bytes(r.at(Phase::Validation), "text cache on demand") == doctest::Approx(17.6e9));

  // MiniMax Music's 8B LM (minimaxmusic/model.py:1677-1683): 8e9 x 2 B = 16e9 B; on a 24 GiB budget the
  // validation (10 + 0.5 + 1 + 0.5 GiB + 16e9 B + its VAE 100e6 x 4 B = 29.3e9 B) does not fit;
  // the int8 LM is the advice (MINIMAX_MUSIC.md: "use an int8 TE"): 8e9 x 1.01 = 8.08e9 B instead
  const Family& mm = find_family("minimaxmusic");
  s = default_setup(mm);
  run = RunSetup();
  r = predict_phases(mm, s, analyze(mm, s), step, run, 24 * kGiB);
  const PhaseResult& v = r.at(Phase::Validation);
  CHECK(resident_bytes(v, "reloaded for validation") == doctest::Approx(16e9));
  CHECK(resident_bytes(v, "VAE") == doctest::Approx(400e6));
  bool int8 = false;
  for (const auto& f : r.fixes)
    if (f.phase == Phase::Validation && f.key == "text_encoder_1_precision") int8 = true;
  CHECK(int8);
}

TEST_CASE("MiniMax H3 caches with Qwen3-VL-32B and always tiles its video VAE") {
  const Family& h3 = find_family("minimax-h3");
  const FamilyPhaseData d = phase_data(h3);
  REQUIRE(d.text_encoders.size() == 1);
  const TextEncoderSpec& te = d.text_encoders[0];
  CHECK(te.id == "qwen3-vl-32b");
  // 32e9 parameters (MiniMax H3's text encoder, Qwen3-VL-32B) x 2 B in bf16 = 64e9 B
  CHECK(text_encoder_bytes(te, "no_change") == doctest::Approx(64e9));
  // its hidden states at the family's 512 tokens: 512 x 5120 x (64 + 1) x 2 B = 340,787,200 B
  CHECK(text_encoder_activation_bytes(te, 1, 512) == doctest::Approx(340787200.0));
  CHECK(d.tiling_forced);  // run-phases §C: MiniMax-H3 forces tiling
  // and the run does not warn that the family has no phase data
  TrainingSetup setup = default_setup(h3);
  setup.base_precision = "no_change";
  const BlockChain chain = analyze(h3, setup);
  const RunPhases r = predict_phases(h3, setup, chain, step_of(62, 0.1, 0.1, 0.2, 4), RunSetup(), 0);
  for (const auto& w : r.warnings) CHECK(w.find("minimaxh3") == std::string::npos);
  CHECK(r.at(Phase::StartupCaching).peak_vram_bytes >= 64e9);
}
