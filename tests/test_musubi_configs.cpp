// musubi-tuner's configs as users write them: a --config_file TOML alone, whose model is
// named by network_module, --model_version or the DiT file's name; FLUX.2 klein's and Qwen-Image's
// model versions; fp8 checkpoints; optimizers given as a module.Class; caching in processes of its
// own. Each fixture is written from musubi-tuner@30c658c's source (its header names the lines); the
// expected reading is derived by hand beside each check.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "test_util.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_config.hpp"

using namespace segadvise;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/musubi/";
const std::string kShared = std::string(SEGADVISE_FIXTURES_DIR) + "/../../../shared/reference/trainer-examples/";

TrainerReadOptions opts(const std::string& model = "") {
  TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";  // nothing resolves from the shell: beside the file does
  o.model = model;
  return o;
}

TrainerRead read(const std::string& name, const std::string& model = "") { return read_trainer_config(kDir + name, opts(model)); }

// a TOML written next to the fixtures' dataset TOMLs (a copy of them beside it), read as musubi reads it
TrainerRead read_toml(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "segadvise-musubi-configs";
  fs::create_directories(dir);
  fs::copy_file(kDir + "dataset_image.toml", dir / "dataset_image.toml", fs::copy_options::overwrite_existing);
  std::ofstream(dir / name) << text;
  return read_trainer_config((dir / name).string(), opts());
}

bool any_has(const std::vector<std::string>& v, const std::string& what) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(what) != std::string::npos; });
}

// the run's phases for a read, with a step of `step_gib` (all of it weights: the phases' sums by hand)
RunPhases phases_for(const TrainerRead& r, double step_gib) {
  Prediction step;
  step.memory.weights_bytes = step_gib * kGiB;
  step.peak_vram_bytes = step_gib * kGiB;
  return predict_phases(*r.family, r.setup, analyze(*r.family, r.setup), step, trainer("musubi").run_setup(r), 0);
}

const std::string kRun = "dataset_config = \"dataset_image.toml\"\nsdpa = true\nmixed_precision = \"bf16\"\nnetwork_dim = 8\n";

}  // namespace

TEST_CASE("musubi: a Krea 2 run described by its TOML alone is named by network_module") {
  CHECK(detect_trainer(kDir + "krea2_toml_only.toml") == "musubi");
  const TrainerRead r = read("krea2_toml_only.toml");
  REQUIRE(r.family->id == "krea2");  // networks.lora_krea2 -> krea2_train_network.py
  CHECK(r.setup.family_guessed_from.empty());  // named, not guessed
  CHECK(any_has(r.setup.notes, "network_module 'networks.lora_krea2'"));
  CHECK(r.rejections.empty());
  // fp8_base + fp8_scaled: fp8 weights (trainer_base.py:1474-1475), weight-only fp8
  CHECK(r.setup.base_precision == "fp8wo-torchao");
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.setup.model_type == ModelType::Lora);
  CHECK(r.setup.lora_rank == 16);
  CHECK(r.setup.blocks_to_swap == 20);  // Krea 2 swaps the last N blocks
  // caption_extension is a dataset key (line 30): no training parser has it, argparse keeps it unread
  CHECK(any_has(r.warnings, "caption_extension (line 30)"));
  CHECK(!any_has(r.warnings, "network_dim"));
  // dataset_config is opened from the working directory; it is beside the TOML: read there, said so
  CHECK(any_has(r.warnings, "dataset_config 'dataset_image.toml' is not at /nonexistent-working-directory/dataset_image.toml"));
  CHECK(r.setup.width == 960);
  CHECK(r.setup.height == 544);
  // caching runs in musubi's own cache scripts, before training: the run does not carry it
  const RunSetup run = trainer("musubi").run_setup(r);
  CHECK(!run.other.caching_processes.empty());
  CHECK(!run.other.samples);  // no sample_prompts
}

TEST_CASE("musubi: a script that caches first and runs the package's module reads the training command") {
  CHECK(detect_trainer(kDir + "krea2_module.sh") == "musubi");
  const TrainerRead r = read("krea2_module.sh");
  REQUIRE(r.family->id == "krea2");  // -m musubi_tuner.krea2_train_network, not the caching commands
  // --config_file krea2_toml_only (".toml" appended, parser_common.py:784), found beside the script
  CHECK(r.config_file == kDir + "krea2_toml_only.toml");
  CHECK(r.setup.blocks_to_swap == 24);  // the command line wins over the TOML's 20
  CHECK(r.setup.base_precision == "fp8wo-torchao");  // from the TOML
  CHECK(r.setup.batch == 1);  // the training dataset's batch, not the text caching's --batch_size 4
  CHECK(any_has(r.warnings, "caption_extension (line 30)"));  // the TOML's key musubi does not have
  // the training command's --sample_prompts turns sampling on, not the caching commands before it
  const TrainerRead s = read_toml("module_samples.sh", "python -m musubi_tuner.zimage_cache_latents --dataset_config dataset_image.toml --vae v\n"
                                                       "python -m musubi_tuner.zimage_train_network --dataset_config dataset_image.toml --sdpa "
                                                       "--network_module networks.lora_zimage --sample_prompts p.txt\n");
  CHECK(s.family->id == "z-image-turbo");
  CHECK(trainer("musubi").run_setup(s).other.samples);
  CHECK(!trainer("musubi").run_setup(r).other.samples);
}

TEST_CASE("musubi: a flag no training parser defines stops argparse; the file written back drops it") {
  // sd-scripts' --cache_latents is no musubi flag (musubi caches with its own scripts)
  const TrainerRead r = read_toml("cache_flag.sh", "accelerate launch src/musubi_tuner/zimage_train_network.py --dataset_config dataset_image.toml "
                                                   "--sdpa --mixed_precision bf16 --network_module networks.lora_zimage --network_dim 8 --cache_latents\n");
  CHECK(any_has(r.rejections, "--cache_latents: no musubi-tuner training script defines it"));
  CHECK(std::find(r.refused_keys.begin(), r.refused_keys.end(), "cache_latents") != r.refused_keys.end());
}

TEST_CASE("musubi: FLUX.2 model_version picks klein 4B or 9B, and its Qwen3 text encoder") {
  const TrainerRead r = read("flux2_klein_base_4b.toml");
  REQUIRE(r.family->id == "flux2-klein-4b");  // klein-base-4b: Klein4BParams (flux2_utils.py:68-113)
  CHECK(any_has(r.setup.notes, "--model_version klein-base-4b"));
  CHECK(r.rejections.empty());
  CHECK(r.setup.optimizer == "adamw");  // "AdamW" lower-cased is torch's AdamW (trainer_base.py:226)
  // the 4B's text encoder is Qwen3 4B (flux2_utils.py:801-815), the 9B's Qwen3 8B
  CHECK(phase_data(*r.family).text_encoders.front().id == "qwen3-4b");
  CHECK(phase_data(find_family("flux2-klein-9b")).text_encoders.front().id == "qwen3-8b");
  const std::string head = "network_module = \"networks.lora_flux_2\"\ndit = \"/m/flux-2-klein-9b.safetensors\"\n";
  CHECK(read_toml("klein9.toml", head + "model_version = \"klein-9b\"\n" + kRun).family->id == "flux2-klein-9b");
  CHECK(!any_has(r.warnings, "named as another Qwen3"));  // qwen_3_4b for klein-base-4b
  const TrainerRead wrong = read_toml("klein9te.toml", head + "model_version = \"klein-9b\"\ntext_encoder = \"/m/qwen_3_4b.safetensors\"\n" + kRun);
  CHECK(any_has(wrong.warnings, "text_encoder 'qwen_3_4b.safetensors' is named as another Qwen3, but klein-9b loads Qwen3 8B"));
  // no model_version: flux_2_train_network.py's default dev, FLUX.2 [dev], which segadvise does not describe
  const std::string dev = test::input_error_of([&] { read_toml("dev.toml", head + kRun); });
  CHECK(dev.find("default dev") != std::string::npos);
  CHECK(dev.find("--model") != std::string::npos);
  // a version argparse refuses (choices): the file, the key and the value
  const std::string bad = test::input_error_of([&] { read_toml("bad.toml", head + "model_version = \"klein-2b\"\n" + kRun); });
  CHECK(bad.find("bad.toml:3: model_version: 'klein-2b' is not one of") != std::string::npos);
  // the plans write --model_version, or musubi would train FLUX.2 [dev]
  std::vector<std::string> notes;
  TrainingSetup s = r.setup;
  for (const auto& c : trainer("musubi").knob_space(*r.family, s, notes)) CHECK(c.knobs.value("model_version", "") == "klein-base-4b");
}

TEST_CASE("musubi: a Qwen-Image TOML named only by its DiT file is a guess, said so") {
  const TrainerRead r = read("qwen_image_dit_only.toml");
  REQUIRE(r.family->id == "qwen-image");
  CHECK(r.setup.family_guessed_from == "the DiT file name 'qwen_image_bf16.safetensors' (dit)");
  CHECK(any_has(r.warnings, "network_module 'networks.lokr' does not name a model"));
  CHECK(any_has(r.warnings, "is guessed from the DiT file name"));
  CHECK(r.setup.model_type == ModelType::Lora);
  CHECK(r.setup.blocks_to_swap == 30);
  CHECK(r.setup.base_precision == "no_change");  // a bf16 file, no --fp8_base
  // --model names it: nothing guessed
  CHECK(read("qwen_image_dit_only.toml", "qwen-image").setup.family_guessed_from.empty());
  // Qwen-Image's model_version (qwen_image_utils.py:1565-1583): edit-2509 is Qwen-Image-Edit, its
  // control image's latents in the sequence; --edit_plus is edit-2509
  const std::string lora = "network_module = \"networks.lora_qwen_image\"\ndit = \"/m/qwen_image_edit_2509_bf16.safetensors\"\n";
  const TrainerRead edit = read_toml("edit.toml", lora + "model_version = \"Edit-2509\"\n" + kRun);
  CHECK(edit.family->id == "qwen-image-edit");
  CHECK(edit.setup.reference_images == 1);
  CHECK(read_toml("plus.toml", lora + "edit_plus = true\n" + kRun).family->id == "qwen-image-edit");
  CHECK(read_toml("orig.toml", lora + kRun).family->id == "qwen-image");  // unset: original
  // the module decides, and a DiT name that says otherwise is pointed out
  const TrainerRead mixed = read_toml("mixed.toml", "network_module = \"networks.lora_zimage\"\ndit = \"/m/qwen_image_bf16.safetensors\"\n" + kRun);
  CHECK(mixed.family->id == "z-image-turbo");
  CHECK(any_has(mixed.warnings, "looks like Qwen-Image"));
  // Kandinsky 5: --task names the model (kandinsky5/configs.py TASK_CONFIGS): lite t2i is the 6B image
  // model (2560 wide, 50 blocks), lite t2v the 2B video model (1792, 32); pro (4096, 60) is not described
  const std::string k5 = "network_module = \"networks.lora_kandinsky\"\n" + kRun;
  CHECK(read_toml("k5i.toml", k5 + "task = \"k5-lite-t2i-hd\"\n").family->id == "kandinsky5-image-lite");
  CHECK(read_toml("k5v.toml", k5 + "task = \"k5-lite-t2v-5s-sd\"\n").family->id == "kandinsky5-video-lite");
  CHECK(test::input_error_of([&] { read_toml("k5p.toml", k5 + "task = \"k5-pro-t2v-5s-sd\"\n"); }).find("k5-pro-t2v-5s-sd") != std::string::npos);
  // a module whose model segadvise does not describe: the refusal names it
  CHECK(test::input_error_of([&] { read_toml("ho1.toml", "network_module = \"networks.lora_hidream_o1\"\n" + kRun); }).find("HiDream-O1") !=
        std::string::npos);
  // nothing names it: the refusal says what was looked for
  const std::string none = test::input_error_of([&] { read_toml("none.toml", "dit = \"/m/model.safetensors\"\n" + kRun); });
  CHECK(none.find("network_module") != std::string::npos);
}

TEST_CASE("musubi: fp8 checkpoints as each loader takes them") {
  // Ideogram 4 keeps a pre-quantized fp8 file as it is (ideogram4_utils.py:211-249), no flag needed
  const TrainerRead ideo = read("ideogram4_fp8_checkpoint.sh");
  REQUIRE(ideo.family->id == "ideogram4");
  CHECK(ideo.setup.base_precision == "fp8wo-torchao");
  CHECK(any_has(ideo.warnings, "loads it as it is"));
  // Wan: --fp8_scaled quantizes each weight and stops on one already in fp8 (fp8_optimization_utils.py:322-336)
  const TrainerRead wan = read("wan14b_fp8_scaled.sh");
  REQUIRE(wan.family->id == "wan2.1-14b");
  CHECK(any_has(wan.rejections, "stops on one already in fp8"));
  // --fp8_base alone: float8_e4m3fn weights; neither: cast to bfloat16 (trainer_base.py:1474-1475)
  const std::string q = "network_module = \"networks.lora_qwen_image\"\ndit = \"/m/qwen_image_fp8_e4m3fn.safetensors\"\n" + kRun;
  const TrainerRead fp8 = read_toml("q8.toml", q + "fp8_base = true\n");
  CHECK(fp8.setup.base_precision == "fp8wo-torchao");
  CHECK(any_has(fp8.warnings, "keeps its weights in float8_e4m3fn"));
  const TrainerRead bf16 = read_toml("q16.toml", q);
  CHECK(bf16.setup.base_precision == "no_change");
  CHECK(any_has(bf16.warnings, "cast to bfloat16"));
}

TEST_CASE("musubi: --optimizer_type as get_optimizer imports it, sized by its own state") {
  const TrainerRead r = read("zimage_prodigy.toml");
  REQUIRE(r.family->id == "z-image-turbo");
  CHECK(r.setup.optimizer == "prodigy");  // prodigyopt.Prodigy (trainer_base.py:232-243)
  // exp_avg, exp_avg_sq, s and p0 in float32 (the LoRA's network_dtype, trainer_base.py:1681): 16 B, AdamW's 8 B
  CHECK(optimizer_info("prodigy").state_bytes_per_param == 16);
  CHECK(optimizer_info("adamw").state_bytes_per_param == 8);
  CHECK(!any_has(r.warnings, "no segadvise equivalent"));
  // sample_prompts: sampling on, its prompts encoded before the DiT loads (trainer_base.py:1319-1320)
  const RunSetup run = trainer("musubi").run_setup(r);
  CHECK(run.other.samples);
  CHECK(run.other.sample_prompts_before_load);
  CHECK(!run.other.sample_loads_text_encoders);
  const std::string z = "network_module = \"networks.lora_zimage\"\n" + kRun;
  CHECK(read_toml("came.toml", z + "optimizer_type = \"came_pytorch.CAME\"\n").setup.optimizer == "came");
  CHECK(read_toml("sgd.toml", z + "optimizer_type = \"SGD\"\n").setup.optimizer == "sgd");
  // a bare name is looked up in torch.optim, which has no Prodigy: musubi stops
  CHECK(any_has(read_toml("bare.toml", z + "optimizer_type = \"Prodigy\"\n").rejections, "torch.optim has no such class"));
  // a class segadvise does not know: AdamW's state, said so
  CHECK(any_has(read_toml("ademamix.toml", z + "optimizer_type = \"bitsandbytes.optim.AdEMAMix8bit\"\n").warnings, "no segadvise equivalent"));
  // the plans write the class musubi imports
  TrainingSetup s = r.setup;
  std::vector<std::string> notes;
  for (const auto& c : trainer("musubi").knob_space(*r.family, s, notes)) CHECK(c.knobs.value("optimizer_type", "") == "prodigyopt.Prodigy");
}

TEST_CASE("musubi: a dataset path from the author's machine is read beside the config") {
  const TrainerRead r = read_toml("abs.toml", "network_module = \"networks.lora_zimage\"\ndataset_config = \"G:/training/z/dataset_image.toml\"\n"
                                              "sdpa = true\nmixed_precision = \"bf16\"\nnetwork_dim = 8\n");
  CHECK(r.family->id == "z-image-turbo");
  CHECK(any_has(r.warnings, "dataset_config 'G:/training/z/dataset_image.toml' is not at"));
  const std::string err = test::input_error_of(
      [&] { read_toml("gone.toml", "network_module = \"networks.lora_zimage\"\ndataset_config = \"/workspace/missing_dataset.toml\"\nsdpa = true\n"); });
  INFO(err);
  CHECK(err.find("dataset_config '/workspace/missing_dataset.toml': no such file") != std::string::npos);
}

TEST_CASE("musubi's list of its training parsers' keys is its source's") {
  if (!fs::exists(kShared)) {
    MESSAGE("../shared/reference/trainer-examples absent: skipped");
    return;
  }
  std::string all;
  for (const auto& e : fs::recursive_directory_iterator(kShared + "musubi-tuner/src/musubi_tuner"))
    if (e.path().extension() == ".py") all += test::slurp(e.path().string());
  const auto& names = trainer_facts("musubi").raw.at("argparse_keys").at("names");
  CHECK(std::is_sorted(names.begin(), names.end()));  // looked up by binary search
  for (const auto& n : names) CHECK_MESSAGE(all.find("\"--" + n.get<std::string>() + "\"") != std::string::npos, n);
}

TEST_CASE("musubi: caching runs in its own processes, never in the training run's peak or verdict") {
  // Krea 2's caching scripts: Qwen3-VL-4B 4e9 x 2 B = 8,000,000,000 B + its hidden states at 512 tokens
  // 1 x 512 x 2560 x 37 x 2 = 96,993,280 B = 7.54 GiB; the training TOML names no text encoder
  const TrainerRead k = read("krea2_toml_only.toml");
  const RunPhases run = phases_for(k, 5);
  const PhaseResult& caching = run.at(Phase::StartupCaching);
  CHECK(!caching.runs);
  CHECK(caching.set_by.find("separate processes") != std::string::npos);
  CHECK(caching.set_by.find("text encoder 7.5 GiB") != std::string::npos);
  CHECK(run.peak_phase != Phase::StartupCaching);
  CHECK(run.peak_vram_bytes < 6 * kGiB);  // the 5 GiB step (and the model at load), not the 7.5 GiB encoder
  // a 7 GiB budget: the encoder's process would be over it, the training run is not
  CHECK(run.verdict(7 * kGiB) == FitVerdict::Fits);
  // FLUX.2 klein base 4B: Qwen3-4B 4,022,468,096 x 2 + 96,993,280 = 8,141,929,472 B = 7.58 GiB (the
  // 9B's Qwen3-8B would be 16.4e9 B)
  const RunPhases klein = phases_for(read("flux2_klein_base_4b.toml"), 5);
  CHECK(klein.at(Phase::StartupCaching).set_by.find("text encoder 7.6 GiB") != std::string::npos);
  // sampling: the prompts' encoder alone before the DiT loads (a model-load moment), not beside it
  const RunPhases z = phases_for(read("zimage_prodigy.toml"), 20);
  CHECK(z.at(Phase::Validation).runs);
  for (const auto& part : z.at(Phase::Validation).resident) CHECK(part.what.find("text encoder") == std::string::npos);
}

namespace {

// a command TOML and a dataset TOML of the fixtures written side by side, read as musubi reads them
TrainerRead read_with_dataset(const std::string& name, const std::string& text, const std::string& dataset) {
  const fs::path dir = fs::temp_directory_path() / "segadvise-musubi-framepack";
  fs::create_directories(dir);
  fs::copy_file(kDir + dataset, dir / dataset, fs::copy_options::overwrite_existing);
  std::ofstream(dir / name) << text << "dataset_config = \"" << dataset << "\"\n";
  return read_trainer_config((dir / name).string(), opts());
}

const std::string kFramePack = "network_module = \"networks.lora_framepack\"\nsdpa = true\nmixed_precision = \"bf16\"\nnetwork_dim = 8\n";

}  // namespace

TEST_CASE("musubi: FramePack trains one section of fp_latent_window_size latent frames beside its packed context") {
  CHECK(detect_trainer(kDir + "framepack_train.sh") == "musubi");
  const TrainerRead r = read("framepack_train.sh");
  REQUIRE(r.family->id == "framepack");  // fpack_train_network.py, no longer a script without a family
  CHECK(r.setup.family_guessed_from.empty());
  CHECK(r.rejections.empty());
  CHECK(r.refused_keys.empty());  // every flag is one fpack_train_network.py's parser defines
  // frame_extraction "full", max_frames 361: still one section per sample, 9 x 4 - 3 = 33 frames' worth
  // ((33 - 1) / 4 + 1 = 9 latent frames)
  CHECK(r.setup.frames == 33);
  CHECK(r.setup.width == 960);
  CHECK(r.setup.height == 544);
  CHECK(r.setup.batch == 1);
  CHECK(any_has(r.setup.notes, "fp_latent_window_size 9 latent frames (33 frames' worth)"));
  // --blocks_to_swap 20 as HunyuanVideo's stack splits it: 20 // 2 = 10 double, (20 - 10) x 2 + 1 = 21 single
  CHECK(r.setup.blocks_to_swap == 31);
  CHECK(r.setup.blocks_to_swap_per_list == std::vector<int>{10, 21});  // the trailing blocks of each list
  CHECK(any_has(r.warnings, "--blocks_to_swap 20 on FramePack"));
  CHECK(any_has(r.warnings, "swaps 10 double and 21 single blocks"));
  CHECK(r.setup.base_precision == "fp8wo-torchao");  // --fp8_base --fp8_scaled
  CHECK(r.setup.lora_rank == 32);
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.schedule.checkpointing);
  // tokens: 960 x 544 px / 8 (VAE) / 2 (patch) = 60 x 34 = 2040 per latent frame; 9 trained latent frames
  // + 2.5 of clean context (start and 1 history frame, 2 at 2x and 16 at 4x, a quarter each) = 11.5
  // -> 23,460 image tokens; text 512 LLaMA + 729 SigLIP = 1241. Blocks: 2 refiner + 20 double + 40 single.
  const BlockChain c = analyze(*r.family, r.setup);
  CHECK(c.tokens_image == doctest::Approx(23460));
  CHECK(c.tokens_text == doctest::Approx(1241));
  CHECK(c.blocks.size() == 62);
  const TrainerFamily* tf = trainer_facts("musubi").find(*r.family);
  REQUIRE(tf != nullptr);
  CHECK(tf->blocks_to_swap_max == 38);  // 38 // 2 = 19 <= 20 - 1 double, 19 x 2 + 1 = 39 <= 40 - 1 single
  CHECK(tf->blocks_to_swap_meaning == "flux_double_single");
  CHECK(musubi_swapped_chain_blocks(*tf, 38) == 58);
}

TEST_CASE("musubi: FramePack's one-frame training from a TOML alone: one target frame, the same context") {
  const TrainerRead r = read("framepack_1f.toml");
  REQUIRE(r.family->id == "framepack");
  CHECK(any_has(r.setup.notes, "network_module 'networks.lora_framepack'"));
  CHECK(r.rejections.empty());
  CHECK(r.warnings.size() >= 1);
  CHECK(!any_has(r.warnings, "one_frame"));  // a key fpack_train_network.py defines (:616)
  CHECK(r.setup.frames == 1);
  CHECK(r.setup.batch == 2);
  CHECK(r.setup.lora_rank == 16);
  CHECK(any_has(r.setup.notes, "FramePack one-frame training"));
  // 1 target latent frame + 2.5 context (the control image, the zero post frame, the 2x and 4x inputs)
  // = 3.5 x 2040 = 7140 image tokens
  CHECK(analyze(*r.family, r.setup).tokens_image == doctest::Approx(7140));
}

TEST_CASE("musubi: FramePack datasets its caching stops on are refused") {
  // dataset_video.toml's first dataset takes 1-, 25- and 45-frame clips: 1 < 9 x 4 + 1 = 37
  const TrainerRead v = read_with_dataset("fp_video.toml", kFramePack, "dataset_video.toml");
  REQUIRE(v.family->id == "framepack");
  CHECK(any_has(v.rejections, "datasets[0]: a clip of 1 frame(s), below the 37"));
  CHECK(any_has(v.rejections, "Not enough frames for FramePack"));
  CHECK(!any_has(v.rejections, "datasets[1]"));  // "full" with max_frames 45 holds one section
  CHECK(v.setup.frames == 33);
  // an image dataset is one-frame training, whose caching reads control images: none here
  const TrainerRead i = read_with_dataset("fp_image.toml", kFramePack, "dataset_image.toml");
  CHECK(any_has(i.rejections, "no control_directory"));
  CHECK(i.setup.frames == 1);
  // a window of 5: 5 x 4 - 3 = 17 frames' worth, clips of at least 21 frames
  const fs::path dir = fs::temp_directory_path() / "segadvise-musubi-framepack";
  fs::create_directories(dir);
  std::ofstream(dir / "dataset_w5.toml") << "[[datasets]]\nvideo_directory = \"/v\"\ntarget_frames = [21, 41]\nfp_latent_window_size = 5\n";
  // the fixture's dataset (window 9, whole videos up to 361 frames) under a TOML alone: 33, as from the command line
  CHECK(read_with_dataset("fp_full.toml", kFramePack, "dataset_framepack.toml").setup.frames == 33);
  std::ofstream(dir / "fp_w5b.toml") << kFramePack << "dataset_config = \"dataset_w5.toml\"\n";
  const TrainerRead w5 = read_trainer_config((dir / "fp_w5b.toml").string(), opts());
  CHECK(w5.rejections.empty());
  CHECK(w5.setup.frames == 17);
  // a window that is not a positive integer is bad input naming the key
  std::ofstream(dir / "dataset_w0.toml") << "[[datasets]]\nvideo_directory = \"/v\"\ntarget_frames = [41]\nfp_latent_window_size = 0\n";
  std::ofstream(dir / "fp_w0.toml") << kFramePack << "dataset_config = \"dataset_w0.toml\"\n";
  CHECK_THROWS_WITH_AS(read_trainer_config((dir / "fp_w0.toml").string(), opts()),
                       doctest::Contains("datasets[0].fp_latent_window_size"), InputError);
}

TEST_CASE("musubi: FramePack's plans write a dataset that holds one section, and name its caching scripts") {
  const Family& fam = find_family("framepack");
  const Trainer& t = trainer("musubi");
  KnobCombo c;
  c.setup = default_setup(fam);  // 960 x 544, 33 frames: one section of 9
  c.knobs["sdpa"] = true;
  const std::string video = t.config_text(fam, c);
  CHECK(video.find("python fpack_train_network.py") != std::string::npos);
  CHECK(video.find("target_frames = [37]") != std::string::npos);  // 9 x 4 + 1: the shortest clip holding a section
  CHECK(video.find("fp_latent_window_size") == std::string::npos);  // the default 9 is not written
  c.setup.frames = 17;  // a window of 5
  const std::string w5 = t.config_text(fam, c);
  CHECK(w5.find("target_frames = [21]") != std::string::npos);
  CHECK(w5.find("fp_latent_window_size = 5") != std::string::npos);
  c.setup.frames = 1;  // one-frame training: images with their control images (docs/dataset_config.md:483-492)
  const std::string one = t.config_text(fam, c);
  CHECK(one.find("control_directory") != std::string::npos);
  CHECK(one.find("fp_1f_clean_indices = [0]") != std::string::npos);
  CHECK(one.find("fp_1f_target_index = 9") != std::string::npos);
  CHECK(one.find("fp_1f_no_post = false") != std::string::npos);
  const auto steps = t.manual_steps(fam);
  CHECK(any_has(steps, "fpack_cache_latents.py and fpack_cache_text_encoder_outputs.py"));
  // the text encoders and VAE its caching and sampling load (trainers/common/phases/run-phases.json)
  const FamilyPhaseData pd = phase_data(fam);
  REQUIRE(pd.text_encoders.size() == 3);
  CHECK(pd.text_encoders[0].id == "llava-llama-3-8b-text");
  CHECK(pd.text_encoders[0].params == doctest::Approx(7505186816.0));
  CHECK(pd.text_encoders[2].id == "siglip-so400m-vision");
  CHECK(pd.latent_channels == 16);
}
