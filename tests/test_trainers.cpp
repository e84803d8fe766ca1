// The other trainers: their limits and per-family support as data (trainers/*/), reading their
// own configs with their semantics, their knob combinations and config lines (the trainers library,
// no CLI). Fixtures: tests/fixtures/trainers/ (README there
// names the source of each); the real example folder ../shared/reference/trainer-examples/ is read
// too when present (those cases skip cleanly when it is not).
#include <doctest/doctest.h>
#include <yaml-cpp/yaml.h>

#include <toml.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "advisor_request.hpp"
#include "scratch_dir.hpp"
#include "test_util.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/trainer_plans.hpp"
#include "segadvise/trainers/trainer_config.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/trainer_writer.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/phases.hpp"

using namespace segadvise;
namespace fs = std::filesystem;

namespace {

// The facts of every registered trainer that has them (musubi, ai-toolkit, onetrainer, diffusers)
const std::vector<TrainerFacts>& trainers_with_facts() {
  static const std::vector<TrainerFacts> all = [] {
    std::vector<TrainerFacts> v;
    for (const Trainer* t : all_trainers())
      if (t->facts()) v.push_back(*t->facts());
    return v;
  }();
  return all;
}

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/";
const std::string kShared = std::string(SEGADVISE_FIXTURES_DIR) + "/../../../shared/reference/trainer-examples/";

TrainerRead read(const std::string& rel, const std::string& model = "") {
  TrainerReadOptions o;
  o.model = model;
  o.cwd = "/nonexistent-working-directory";
  return read_trainer_config(kDir + rel, o);
}

std::string error_of(const std::string& rel, const std::string& model = "") {
  return test::input_error_of([&] { read(rel, model); });
}

bool any_contains(const std::vector<std::string>& v, const std::string& what) {
  for (const auto& s : v)
    if (s.find(what) != std::string::npos) return true;
  return false;
}

using test::slurp;

// a command line with `flag` added at the end of its last line
std::string with_flag(std::string line, const std::string& flag) {
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line + " " + flag + "\n";
}

// reads `text` written as `name` into this process's scratch folder
TrainerRead read_text(const std::string& name, const std::string& text) {
  static const test::Scratch scratch("segadvise-trainers-");
  TrainerReadOptions o;
  o.cwd = scratch.dir.string();
  return read_trainer_config(scratch.write(name, text), o);
}

// predicts a read config on an H100 the way `check` does; throws InputError for bad input
Prediction predict(const TrainerRead& r) {
  AdvisorRequest req = test::request_for(r.family->id, "h100");
  req.setup = r.setup;
  const Context ctx(req);
  return evaluate(ctx, r.schedule).prediction;
}

}  // namespace

TEST_CASE("musubi's block-swap maximum and what N swaps are data with their source line") {
  const TrainerFacts& m = trainer_facts("musubi");
  // FLUX.1's swap rule, on musubi's one FLUX.1 script (flux_kontext_train_network.py; FLUX.1 dev's
  // flux_train_network.py is sd-scripts', not musubi's)
  const TrainerFamily* flux = m.find(find_family("flux1-kontext"));
  REQUIRE(flux);
  CHECK(flux->blocks_to_swap_max == 34);
  CHECK(flux->source.find("flux_models.py:956-961") != std::string::npos);
  // N = 34 swaps 34/2 = 17 double blocks and (34 - 17)*2 + 1 = 35 single blocks: 52 chain blocks
  CHECK(musubi_swapped_chain_blocks(*flux, 34) == 52);
  // N = 5: 2 double + 3*2+1 = 7 single = 9
  CHECK(musubi_swapped_chain_blocks(*flux, 5) == 9);
  const TrainerFamily* wan = m.find(find_family("wan14b"));
  REQUIRE(wan);
  CHECK(wan->blocks_to_swap_max == 39);
  CHECK(musubi_swapped_chain_blocks(*wan, 20) == 20);
  CHECK(m.find(find_family("sdxl")) == nullptr);  // no musubi script trains SDXL
}

TEST_CASE("ai-toolkit's layer_offloading is marked as doing nothing where no model class attaches it") {
  const TrainerFacts& a = trainer_facts("ai-toolkit");
  for (const char* id : {"flux", "chroma", "sdxl", "sd1x", "hidream", "lumina2"}) {
    const TrainerFamily* tf = a.find(find_family(id));
    REQUIRE_MESSAGE(tf, id);
    CHECK_MESSAGE(!tf->layer_offloading, id);
  }
  for (const char* id : {"wan14b", "qwen-image", "z-image", "flux2"}) CHECK(a.find(find_family(id))->layer_offloading);
  CHECK(a.key("train.dtype")->source.find(":395") != std::string::npos);
}

TEST_CASE("OneTrainer's unet and prior parts have no offloading; its keys are per part") {
  const TrainerFacts& t = trainer_facts("onetrainer");
  CHECK(t.find(find_family("sdxl"))->part == "unet");
  CHECK(!t.find(find_family("sdxl"))->part_offloading);
  CHECK(!t.find(find_family("sd1x"))->part_offloading);
  CHECK(t.find(find_family("cascade"))->part == "prior");
  CHECK(!t.find(find_family("cascade"))->part_offloading);
  CHECK(t.find(find_family("flux"))->part_offloading);
  CHECK(t.key("<part>.offload_fraction") != nullptr);
  CHECK(t.key("async_offloading") != nullptr);
  CHECK(t.key("layer_offload_fraction") == nullptr);  // removed on 2026-07-05
}

TEST_CASE("a value is checked against the type the trainer's key accepts") {
  const TrainerFacts& t = trainer_facts("onetrainer");
  std::string why;
  CHECK(trainer_value_ok(*t.key("<part>.offload_fraction"), 0.5, why));
  CHECK(!trainer_value_ok(*t.key("<part>.offload_fraction"), 1.5, why));
  CHECK(!trainer_value_ok(*t.key("<part>.gradient_checkpointing"), "ON", why));
  CHECK(why.find("is not a bool") != std::string::npos);
  CHECK(!trainer_value_ok(*trainer_facts("musubi").key("mixed_precision"), "fp8", why));
}

TEST_CASE("every key in the trainer data exists in that trainer's own source") {
  if (!fs::exists(kShared)) {
    MESSAGE("../shared/reference/trainer-examples absent: skipped");
    return;
  }
  const std::string ot = slurp(kShared + "onetrainer/modules/util/config/TrainConfig.py");
  for (const auto& k : trainer_facts("onetrainer").keys) {
    std::string leaf = k.name.substr(k.name.rfind('.') + 1);
    if (leaf == "__version") continue;  // written by BaseConfig, checked by config_version=11
    CHECK_MESSAGE(ot.find("(\"" + leaf + "\",") != std::string::npos, k.name);
  }
  const std::string at = slurp(kShared + "ai-toolkit/toolkit/config_modules.py");
  for (const auto& k : trainer_facts("ai-toolkit").keys) {
    const std::string leaf = k.name.substr(k.name.rfind('.') + 1);
    CHECK_MESSAGE((at.find("get('" + leaf + "'") != std::string::npos || at.find("get(\"" + leaf + "\"") != std::string::npos), k.name);
  }
  const std::string mp = slurp(kShared + "musubi-tuner/src/musubi_tuner/training/parser_common.py");
  for (const auto& k : trainer_facts("musubi").keys) {
    if (k.source.rfind("parser_common.py", 0) != 0) continue;  // per training script (its source names it), not parser_common
    CHECK_MESSAGE(mp.find("\"--" + k.name + "\"") != std::string::npos, k.name);
  }
  const std::string ds = slurp(kShared + "musubi-tuner/src/musubi_tuner/dataset/config_utils.py");
  for (const auto& k : trainer_facts("musubi").raw.at("dataset_keys"))
    CHECK_MESSAGE(ds.find("\"" + k.at("name").get<std::string>() + "\":") != std::string::npos, k.at("name").get<std::string>());
}

TEST_CASE("the trainer is detected from the file") {
  CHECK(detect_trainer(kDir + "ai-toolkit/train_lora_flux_24gb.yaml") == "ai-toolkit");
  CHECK(detect_trainer(kDir + "onetrainer/flux_lora.json") == "onetrainer");
  CHECK(detect_trainer(kDir + "musubi/flux_config.toml") == "musubi");
  CHECK(detect_trainer(kDir + "musubi/wan14b_train.sh") == "musubi");
  CHECK(detect_trainer(kDir + "diffusers/flux_lora.sh") == "diffusers");
  CHECK(detect_trainer(std::string(SEGADVISE_FIXTURES_DIR) + "/check/flux-480-square.json") == "simpletuner");
}

TEST_CASE("ai-toolkit's FLUX.1 example: quanto fp8, the largest bucket, EMA, bf16") {
  const TrainerRead r = read("ai-toolkit/train_lora_flux_24gb.yaml");
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.model_type == ModelType::Lora);
  CHECK(r.setup.lora_rank == 16);
  CHECK(r.setup.base_precision == "fp8-quanto");  // quantize: true, qtype default qfloat8 (quanto)
  CHECK(r.setup.mixed_precision == "bf16");
  CHECK(r.setup.width == 1024);  // resolution [512, 768, 1024]: each size is a dataset, 1024 is the peak
  CHECK(r.setup.height == 1024);
  CHECK(r.setup.batch == 1);
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.setup.use_ema);
  CHECK(r.schedule.checkpointing);
  CHECK(!r.setup.ramtorch);
  CHECK(r.rejections.empty());
}

TEST_CASE("ai-toolkit's layer_offloading on Chroma is ignored, but it still turns qfloat8 into torchao fp8") {
  const TrainerRead r = read("ai-toolkit/chroma_offload.yaml");
  CHECK(r.family->id == "chroma");
  CHECK(!r.setup.ramtorch);  // no MemoryManager.attach on Chroma: nothing is offloaded
  CHECK(any_contains(r.warnings, "does nothing on"));
  CHECK(r.setup.base_precision == "fp8wo-torchao");  // config_modules.py:714-715 rewrites it anyway
  CHECK(r.setup.mixed_precision == "no");  // train.dtype unset: fp32
  CHECK(any_contains(r.warnings, "train.dtype is unset"));
}

TEST_CASE("ai-toolkit's Wan 1.3B and SD3.5 Large examples: a family by name, or a clear error") {
  const TrainerRead w = read("ai-toolkit/train_lora_wan21_1b_24gb.yaml");
  CHECK(w.family->id == "wan2.1-1.3b");
  CHECK(w.setup.lora_rank == 32);
  CHECK(w.setup.width == 632);
  // arch sd3 with a name_or_path containing "large": SD 3.5 Large (its own family, not Medium)
  const TrainerRead l = read("ai-toolkit/train_lora_sd35_large_24gb.yaml");
  CHECK(l.family->id == "sd3.5-large");
}

TEST_CASE("a malformed ai-toolkit job names the file, the line and the key") {
  const std::string indent = error_of("ai-toolkit/bad_indent.yaml");
  CHECK(indent.find("bad_indent.yaml:7:") != std::string::npos);
  const std::string batch = error_of("ai-toolkit/bad_batch.yaml");
  CHECK(batch.find("bad_batch.yaml:9: train.batch_size") != std::string::npos);
  CHECK(batch.find("not an integer") != std::string::npos);
}

TEST_CASE("OneTrainer's FLUX LoRA preset: nf4, its resolution string, defaults laid under it") {
  const TrainerRead r = read("onetrainer/flux_lora.json");
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.base_precision == "nf4-bnb");  // transformer.weight_dtype NFLOAT_4
  CHECK(r.setup.lora_rank == 16);              // lora_rank default (TrainConfig.py:1231)
  CHECK(r.setup.batch == 4);
  CHECK(r.setup.width == 768);
  CHECK(r.setup.mixed_precision == "bf16");
  CHECK(r.schedule.checkpointing);  // part default true
}

TEST_CASE("OneTrainer user configs below version 11 lose their offload fraction to __migration_10") {
  // the HiDream preset copied under a name without '#' and without __version: a user config, migrated from
  // version 0, and __migration_9 reads the weight_dtype of every part, which its unet (made empty by
  // __migration_1) lacks: KeyError (TrainConfig.py:811-812), OneTrainer loads nothing. Read as written.
  const TrainerRead r = read("onetrainer/hidream_lora.json");
  CHECK(r.family->id == "hidream-i1");
  CHECK(any_contains(r.warnings, "OneTrainer cannot load this file: __migration_9"));
  CHECK(r.setup.layer_offload_fraction == doctest::Approx(0.5));  // transformer.offload_fraction as written
  // at __version 10 only __migration_10 runs: the fraction is reset to 0 from the old top-level keys
  auto j = nlohmann::json::parse(slurp(kDir + "onetrainer/hidream_lora.json"));
  j["__version"] = 10;
  const fs::path f = fs::temp_directory_path() / "segadvise-hidream-v10.json";
  std::ofstream(f) << j.dump(4);
  const TrainerRead v10 = read_trainer_config(f.string(), TrainerReadOptions{});
  CHECK(v10.setup.layer_offload_fraction == 0);  // transformer.offload_fraction 0.5 reset to 0 by __migration_10
  CHECK(any_contains(v10.warnings, "__migration_10 overwrites transformer.offload_fraction"));
  fs::remove(f);
}

TEST_CASE("a version-10 OneTrainer config is migrated from its old top-level keys") {
  // gradient_checkpointing CPU_OFFLOADED, layer_offload_fraction 0.5, enable_activation_offloading unset
  // (true): __migration_10 gives transformer checkpointing on, activation offloading on, fraction 0.5
  const TrainerRead r = read("onetrainer/v10_cpu_offloaded.json");
  CHECK(r.schedule.checkpointing);
  CHECK(r.schedule.backend == Backend::Unsloth);
  CHECK(r.setup.layer_offload_fraction == doctest::Approx(0.5));
}

TEST_CASE("OneTrainer's removed top-level keys are dropped, and say so") {
  const TrainerRead r = read("onetrainer/flux_old_keys.json");
  CHECK(any_contains(r.warnings, "layer_offload_fraction no longer exists"));
  CHECK(any_contains(r.warnings, "gradient_checkpointing no longer exists"));
  CHECK(r.setup.layer_offload_fraction == 0);  // the part's own offload_fraction (default 0) is what runs
  CHECK(r.schedule.backend == Backend::Torch);
}

TEST_CASE("OneTrainer rejects a full fine-tune with offloading and no fused back pass") {
  const TrainerRead r = read("onetrainer/flux_full_offload.json");
  CHECK(r.setup.layer_offload_fraction == doctest::Approx(0.5));
  REQUIRE(r.rejections.size() == 1);
  CHECK(r.rejections[0].find("fused_back_pass") != std::string::npos);
}

TEST_CASE("OneTrainer's SDXL, Stable Cascade and HunyuanVideo presets predict") {
  const TrainerRead x = read("onetrainer/sdxl_lora.json");
  CHECK(x.family->id == "sdxl");
  CHECK(x.setup.mixed_precision == "fp16");  // train_dtype default FLOAT_16
  const TrainerRead c = read("onetrainer/stable_cascade.json");
  CHECK(c.family->id == "stable-cascade-c");
  CHECK(c.setup.model_type == ModelType::Full);
  CHECK(c.setup.optimizer == "adafactor");
  // OneTrainer's HUNYUAN_VIDEO is the original HunyuanVideo (13B), not 1.5
  CHECK(read("onetrainer/hunyuan_video_lora.json").family->id == "hunyuanvideo-13b");
  CHECK(error_of("onetrainer/bad_comma.json").find("line 3") != std::string::npos);
}

TEST_CASE("a built-in '#' OneTrainer preset is not migrated: its offload fraction stands") {
  // TopBarController.py load_config_from_file: from_dict(migrate=not is_built_in_preset)
  const TrainerRead r = read("onetrainer/#qwen_lora_24gb.json");
  CHECK(r.family->id == "qwen-image");
  CHECK(r.setup.layer_offload_fraction == doctest::Approx(0.1));  // transformer.offload_fraction 0.1
  CHECK(!r.setup.ramtorch);                                        // by bytes, not RamTorch's blocks
  CHECK(r.setup.quantize_all_block_linears);                       // FLOAT_8, quantization filter "blocks"
  CHECK(r.setup.kept_model_bytes == 0);  // text_encoder.train false, latent_caching default true
  CHECK(!any_contains(r.warnings, "__migration_10"));
  CHECK(any_contains(r.warnings, "built-in preset"));
  // the same preset under a user config's name (no __version) does not pass __migration_9 (its parts lack
  // weight_dtype): OneTrainer does not load it; read as written, said so
  const TrainerRead user = read("onetrainer/qwen_lora_24gb.json");
  CHECK(user.setup.layer_offload_fraction == doctest::Approx(0.1));
  CHECK(any_contains(user.warnings, "OneTrainer cannot load this file"));
  // the phases by OneTrainer's keys
  const RunSetup run = trainer("onetrainer").run_setup(r);
  CHECK(run.other.trainer == "onetrainer");
  CHECK(run.other.latent_caching);
  CHECK(run.other.latent_caching_key == "latent_caching");
  CHECK(run.other.samples);
  REQUIRE(run.other.text_encoder_bytes_per_param.size() == 1);
  CHECK(run.other.text_encoder_bytes_per_param[0] == 1);  // text_encoder.weight_dtype FLOAT_8
  CHECK(run.other.vae_bytes_per_param == 4);              // vae.weight_dtype FLOAT_32
}

TEST_CASE("OneTrainer's fused back pass is read from optimizer_defaults, as its UI loads it") {
  // #anima Finetune: optimizer ADAFACTOR, optimizer_defaults.ADAFACTOR.fused_back_pass true
  const TrainerRead r = read("onetrainer/#anima_finetune.json");
  CHECK(r.family->id == "anima");
  CHECK(r.setup.model_type == ModelType::Full);
  CHECK(r.setup.fused_back_pass);
  CHECK(r.setup.optimizer == "adafactor");
  CHECK(r.setup.weight_storage_bytes == 0);  // transformer BFLOAT_16
}

TEST_CASE("OneTrainer's SD 2.1 fine-tune: FLOAT_32 unet weights with fp16 compute, the text encoder trains") {
  const TrainerRead r = read("onetrainer/#sd_2.1.json");
  CHECK(r.family->id == "sd2x");
  CHECK(r.setup.model_type == ModelType::Full);
  CHECK(r.setup.weight_storage_bytes == 4);     // unet.weight_dtype unset: FLOAT_32 (TrainConfig.py:305)
  CHECK(r.setup.mixed_precision == "fp16");     // train_dtype unset: FLOAT_16, activations 2 bytes
  // text_encoder.train defaults to true: OpenCLIP-H (340M, FLOAT_32) fine-tuned on the GPU with
  // fp32 gradients and AdamW's state: 340e6 x (4 weights + 4 gradients + AdamW state)
  const double state = optimizer_info("adamw").state_bytes_per_param;
  CHECK(r.setup.kept_model_bytes == doctest::Approx(340e6 * (4 + 4 + state)));
  CHECK(r.setup.kept_models.find("text_encoder FLOAT_32, trained") != std::string::npos);
  CHECK(any_contains(r.warnings, "text_encoder.train is true by default"));
}

TEST_CASE("OneTrainer's embedding training: the VAE and the text encoder stay, one token vector trains") {
  // #sd 1.5 embedding: latent_caching false, unet and text_encoder FLOAT_16, vae FLOAT_32
  const TrainerRead r = read("onetrainer/sd15_embedding.json");
  CHECK(r.family->id == "sd1x");
  CHECK(r.setup.embedding_params == 768);  // token_count 1 x CLIP-L's 768
  const FamilyPhaseData pd = phase_data(*r.family);
  // CLIP-L at 2 bytes (not trained: the embedding's gradient runs through it) + the VAE at 4 bytes
  CHECK(r.setup.kept_model_bytes == doctest::Approx(pd.text_encoders[0].params * 2 + pd.vae.params * 4));
  CHECK(!trainer("onetrainer").run_setup(r).other.latent_caching);
}

TEST_CASE("OneTrainer refuses offloading without gradient checkpointing") {
  const TrainerRead r = read("onetrainer/offload_without_checkpointing.json");
  REQUIRE(r.rejections.size() == 1);
  CHECK(r.rejections[0].find("NotImplementedError") != std::string::npos);
  CHECK(r.rejections[0].find("checkpointing_util.py") != std::string::npos);
}

TEST_CASE("ai-toolkit's and musubi's run phases come from their data files") {
  const TrainerRead a = read("ai-toolkit/train_lora_flux_24gb.yaml");
  const RunSetup ra = trainer("ai-toolkit").run_setup(a);
  CHECK(ra.other.trainer == "ai-toolkit");
  CHECK(ra.other.latent_caching);  // datasets[0].cache_latents_to_disk: true
  CHECK(ra.other.latent_caching_key == "config.process.0.datasets.0.cache_latents_to_disk");
  const TrainerRead m = read("musubi/wan14b_train.sh");
  const RunSetup rm = trainer("musubi").run_setup(m);
  CHECK(rm.other.trainer == "musubi");
  CHECK(rm.other.latent_caching);  // cached by cache_latents.py before training
}

TEST_CASE("diffusers scripts: their own argparse defaults, prior preservation, the model path, fp8 training") {
  // train_text_to_image_sdxl.py: --train_batch_size default 16, --resolution default 1024
  const TrainerRead x = read("diffusers/sdxl_t2i_defaults.sh");
  CHECK(x.family->id == "sdxl");
  CHECK(x.setup.batch == 16);
  CHECK(x.setup.width == 1024);
  CHECK(x.setup.model_type == ModelType::Full);
  // the sd3 script with a 3.5 Large path trains Large; prior preservation doubles the batch (2 -> 4)
  const TrainerRead l = read("diffusers/sd35_large_prior.sh");
  CHECK(l.family->id == "sd3.5-large");
  CHECK(l.setup.batch == 4);
  CHECK(any_contains(l.warnings, "with_prior_preservation"));
  CHECK(l.setup.kept_model_bytes == 0);  // --cache_latents, one instance prompt: text encoders and VAE freed
  // krea2: --rank default 32; fp8 training keeps bf16 weights; per-image prompts keep the text encoder
  // and, without --cache_latents, the VAE on the GPU at bf16
  const TrainerRead k = read("diffusers/krea2_fp8_captions.sh");
  CHECK(k.family->id == "krea2");
  CHECK(k.setup.lora_rank == 32);
  CHECK(k.setup.base_precision == "no_change");
  const FamilyPhaseData pd = phase_data(*k.family);
  double te = 0;
  for (const auto& e : pd.text_encoders) te += e.params * 2;
  CHECK(k.setup.kept_model_bytes == doctest::Approx(te + pd.vae.params * 2));
  // the run: no latent caching, text kept (per-image prompts), no validation prompt
  const RunSetup run = trainer("diffusers").run_setup(k);
  CHECK(!run.other.latent_caching);
  CHECK(!run.other.text_caching);
  CHECK(!run.other.samples);
}

TEST_CASE("diffusers: each script's memory flags as it has them and runs them") {
  const FamilyPhaseData sdxl = phase_data(find_family("sdxl"));
  double sdxl_te = 0;
  for (const auto& e : sdxl.text_encoders) sdxl_te += e.params * 2;
  // train_text_to_image_sdxl.py precomputes latents and prompt embeddings and deletes the VAE and the
  // text encoders (train_text_to_image_sdxl.py:927-950): nothing beside the UNet
  CHECK(read("diffusers/sdxl_t2i_defaults.sh").setup.kept_model_bytes == 0);
  // train_text_to_image_lora_sdxl.py encodes the prompts every step (:1151) and keeps the VAE in float32
  // (:670-673): both text encoders at bf16 (2 bytes) + the VAE at 4 bytes a weight
  const TrainerRead l = read("diffusers/sdxl_t2i_lora.sh");
  CHECK(l.rejections.empty());
  CHECK(l.setup.kept_model_bytes == doctest::Approx(sdxl_te + sdxl.vae.params * 4));
  // train_dreambooth_lora_sdxl.py has no --cache_latents: argparse stops; its VAE stays in float32
  const TrainerRead d = read("diffusers/sdxl_dreambooth_cache_latents.sh");
  REQUIRE(d.rejections.size() == 1);
  CHECK(d.rejections[0].find("--cache_latents: train_dreambooth_lora_sdxl.py has no such flag") != std::string::npos);
  CHECK(d.setup.kept_model_bytes == doctest::Approx(sdxl.vae.params * 4));
  CHECK(d.setup.mixed_precision == "fp16");
  // the Qwen script's --offload: the VAE and the text encoder come to the GPU only to encode
  // (offload_models), so even per-image prompts keep nothing there through the step; --use_8bit_adam
  // is bitsandbytes AdamW8bit (1 byte per moment)
  const TrainerRead q = read("diffusers/qwen_offload_captions.sh");
  CHECK(q.rejections.empty());
  CHECK(q.setup.kept_model_bytes == 0);
  CHECK(any_contains(q.warnings, "--offload"));
  CHECK(q.setup.optimizer == "adamw8bit");
  CHECK(q.schedule.checkpointing);
  CHECK(q.setup.mixed_precision == "bf16");
}

TEST_CASE("a diffusers full fine-tune trains float32 weights under autocast, with --use_ema's float32 copy on the GPU") {
  // train_text_to_image_sdxl.py never casts the U-Net it trains (only the VAE and the text encoders go to
  // weight_dtype, :718-728): with --mixed_precision bf16 its P parameters are float32, their gradients too
  // (4 B each) and AdamW keeps two float32 moments (8 B); --use_ema adds a float32 copy on the GPU (4 B,
  // :731-735, 1000-1001). So weights 4P, gradients 4P, optimizer state 8P + 4P.
  const TrainerRead r = read("diffusers/sdxl_t2i_defaults.sh");
  REQUIRE(r.setup.model_type == ModelType::Full);
  CHECK(r.setup.mixed_precision == "bf16");
  CHECK(r.setup.weight_storage_bytes == 4);
  CHECK(!r.setup.use_ema);
  const BlockChain chain = analyze(*r.family, r.setup);
  double params = chain.outside_params;
  for (const auto& b : chain.blocks) params += b.params;
  const Prediction p = predict(r);
  CHECK(p.memory.gradient_bytes == doctest::Approx(4 * params));
  CHECK(p.memory.optimizer_bytes == doctest::Approx(8 * params));
  TrainerRead ema = read_text("sdxl_t2i_ema.sh", with_flag(slurp(kDir + "diffusers/sdxl_t2i_defaults.sh"), "--use_ema"));
  CHECK(ema.rejections.empty());
  CHECK(ema.setup.use_ema);
  CHECK(ema.setup.ema_on_gpu);
  CHECK(predict(ema).memory.optimizer_bytes == doctest::Approx(12 * params));
  CHECK(ema.run_keys.value("use_ema", false));  // a printed plan carries it
  // the plans run the same float32 training and keep --use_ema where the script has it
  const Trainer& t = trainer("diffusers");
  std::vector<std::string> notes;
  for (const auto& c : t.knob_space(*ema.family, ema.setup, notes)) {
    CHECK(c.setup.weight_storage_bytes == 4);
    CHECK(c.knobs.value("use_ema", false));
  }
  // a LoRA script has no --use_ema: argparse stops on it; its frozen base stays at weight_dtype
  const TrainerRead l = read_text("sdxl_lora_ema.sh", with_flag(slurp(kDir + "diffusers/sdxl_t2i_lora.sh"), "--use_ema"));
  CHECK(any_contains(l.rejections, "--use_ema"));
  CHECK(l.setup.weight_storage_bytes == 0);
  CHECK(!l.setup.use_ema);
  // a LoRA setup with an EMA on the GPU (a SimpleTuner config's): no LoRA script has --use_ema, so no plan
  // counts one, and it says so
  TrainingSetup lora_ema = l.setup;
  lora_ema.use_ema = lora_ema.ema_on_gpu = true;
  notes.clear();
  for (const auto& c : t.knob_space(*l.family, lora_ema, notes)) {
    CHECK(!c.setup.use_ema);
    CHECK(!c.knobs.contains("use_ema"));
  }
  CHECK(any_contains(notes, "no EMA is planned"));
  // --mixed_precision no trains float32 already: nothing to add
  TrainerRead no = r;
  no.setup.mixed_precision = "no";
  no.setup.weight_storage_bytes = 0;
  readers::diffusers_full_finetune(trainer_facts("diffusers"), no.setup, false);
  CHECK(no.setup.weight_storage_bytes == 0);
  CHECK(predict(no).memory.gradient_bytes == doctest::Approx(4 * params));
}

TEST_CASE("diffusers plans search the script's --cache_latents and --offload") {
  // krea2 with per-image prompts and no --cache_latents keeps the text encoder and the VAE (bf16):
  // --cache_latents frees the VAE's bytes, --offload all of them; both flags are krea2's (script_flags)
  const TrainerRead k = read("diffusers/krea2_fp8_captions.sh");
  std::vector<std::string> notes;
  const auto combos = trainer("diffusers").knob_space(*k.family, k.setup, notes);
  const FamilyPhaseData pd = phase_data(*k.family);
  int cached = 0, offloaded = 0;
  for (const auto& c : combos) {
    if (c.knobs.contains("cache_latents")) {
      ++cached;
      CHECK(c.setup.kept_model_bytes == doctest::Approx(k.setup.kept_model_bytes - pd.vae.params * 2));
    }
    if (c.knobs.contains("offload")) {
      ++offloaded;
      CHECK(c.setup.kept_model_bytes == 0);
    }
  }
  CHECK(cached == 2);  // with and without --gradient_checkpointing
  CHECK(offloaded == 2);
  // the SDXL dreambooth script has neither flag: no such plan
  const TrainerRead d = read("diffusers/sdxl_dreambooth_cache_latents.sh");
  for (const auto& c : trainer("diffusers").knob_space(*d.family, d.setup, notes)) {
    CHECK(!c.knobs.contains("cache_latents"));
    CHECK(!c.knobs.contains("offload"));
  }
}

TEST_CASE("musubi: a Wan 14B command line with its dataset TOML") {
  const TrainerRead r = read("musubi/wan14b_train.sh");
  CHECK(r.family->id == "wan2.1-14b");  // --task t2v-14B
  CHECK(r.inputs.size() == 2);
  CHECK(r.setup.blocks_to_swap == 20);
  CHECK(r.setup.base_precision == "fp8wo-torchao");
  CHECK(r.setup.lora_rank == 32);
  CHECK(r.schedule.checkpointing);
  // dataset_video.toml: [960, 544]; target_frames [1, 25, 45] and a "full" dataset with max_frames 45
  CHECK(r.setup.width == 960);
  CHECK(r.setup.height == 544);
  CHECK(r.setup.frames == 45);
  CHECK(r.rejections.empty());
}

TEST_CASE("musubi: blocks_to_swap above FLUX.1's maximum and no attention flag are rejections") {
  const TrainerRead cl = read("musubi/flux_train.sh");
  CHECK(cl.family->id == "flux1-kontext");  // flux_kontext_train_network.py trains FLUX.1 Kontext
  REQUIRE(cl.rejections.size() == 1);  // --sdpa is on the command line; 56 > 34
  CHECK(cl.rejections[0].find("maximum 34") != std::string::npos);
  const TrainerRead toml = read("musubi/flux_config.toml", "flux1-kontext");  // musubi's FLUX.1 is Kontext
  CHECK(toml.rejections.size() == 2);
  CHECK(any_contains(toml.rejections, "no attention flag"));
  CHECK(error_of("musubi/flux_config.toml").find("--model") != std::string::npos);
  const std::string bad = error_of("musubi/bad_dataset.toml", "wan14b");
  CHECK(bad.find("bad_dataset.toml:3:") != std::string::npos);
  CHECK(bad.find("batch_size") != std::string::npos);
}

TEST_CASE("diffusers: --resolution is a square, and a WxH value stops the script") {
  const TrainerRead r = read("diffusers/flux_lora.sh");
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.height == 1024);
  CHECK(r.setup.batch == 1);
  CHECK(r.setup.lora_rank == 16);
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.schedule.checkpointing);
  const TrainerRead wxh = read("diffusers/flux_lora_wxh.sh");
  REQUIRE(!wxh.rejections.empty());
  CHECK(wxh.rejections[0].find("not an int") != std::string::npos);
}

TEST_CASE("every real example file gets a prediction or a clear input error") {
  // the trainers' shipped examples, copied into the fixtures (fixtures/trainers/README.md)
  const std::string shipped = kDir + "shipped/";
  int predicted = 0, refused = 0;
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(shipped)) {
    const std::string ext = e.path().extension().string();
    const std::string p = e.path().string();
    if ((ext == ".yaml" && p.find("/config/examples/") != std::string::npos) ||
        (ext == ".json" && p.find("/training_presets/") != std::string::npos))
      files.push_back(p);
  }
  // musubi's dataset configs are the TOML samples of its documentation
  const fs::path tmp = fs::temp_directory_path() / "segadvise-musubi-doc";
  const std::vector<std::string> samples = test::musubi_doc_samples(shipped + "musubi-tuner/docs/dataset_config.md", tmp);
  files.insert(files.end(), samples.begin(), samples.end());
  const int n = static_cast<int>(samples.size());
  CHECK(n == 13);
  for (const auto& f : files) {
    TrainerReadOptions o;
    if (f.find("segadvise-musubi-doc") != std::string::npos) o.model = "wan14b";
    try {
      const TrainerRead r = read_trainer_config(f, o);
      const Prediction p = predict(r);
      CHECK_MESSAGE(p.peak_vram_bytes > 0, f);
      ++predicted;
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK_MESSAGE(what.find(fs::path(f).filename().string()) != std::string::npos, f << ": " << what);
      ++refused;
    }
  }
  // ai-toolkit: all 6 jobs (SD3.5 Large by its name). OneTrainer: 32 presets, refused: Wuerstchen x3
  // (no family) -> 29 (SD 2.x, PixArt 600M, HunyuanVideo and the EMBEDDING presets predict). musubi: all
  // 13 documented dataset samples. 6 + 29 + 13 = 48; 3.
  CHECK(predicted == 48);
  CHECK(refused == 3);
  // the three refusals are OneTrainer's Wuerstchen v2 presets, and the error says why
  const std::string w = test::input_error_of([&] {
    read_trainer_config(shipped + "onetrainer/training_presets/Wuerstchen v2/#wuerstchen 2.0 LoRA.json", TrainerReadOptions{});
  });
  CHECK(w.find("#wuerstchen 2.0 LoRA.json") != std::string::npos);
  CHECK(w.find("Würstchen v2 is not modelled: no architecture facts") != std::string::npos);
  CHECK(w.find("--model") != std::string::npos);
}

// ---- emitting for the other trainers ----------------------------------------------------------

namespace {

std::vector<KnobCombo> combos_for(const std::string& trainer, const std::string& model, TrainingSetup s = {},
                                  std::vector<std::string>* notes_out = nullptr) {
  const Family& fam = find_family(model);
  s.model_id = fam.id;
  std::vector<std::string> notes;
  auto c = segadvise::trainer(trainer).knob_space(fam, s, notes);
  if (notes_out) *notes_out = notes;
  return c;
}

// the trainer's key for an emitted knob: OneTrainer's part keys are listed as "<part>.x"
const TrainerKey* key_for(const TrainerFacts& t, const std::string& knob) {
  if (const TrainerKey* k = t.key(knob)) return k;
  const auto dot = knob.find('.');
  if (dot == std::string::npos) return nullptr;
  return t.key("<part>" + knob.substr(dot));
}

}  // namespace

TEST_CASE("musubi is never offered more blocks to swap than the model's maximum, and always an attention flag") {
  const auto combos = combos_for("musubi", "flux1-kontext");  // musubi's FLUX.1 script
  REQUIRE(!combos.empty());
  int largest = 0;
  for (const auto& c : combos) {
    CHECK(c.knobs.value("sdpa", false));
    largest = std::max(largest, c.knobs.value("blocks_to_swap", 0));
    CHECK(c.schedule.interval == 0);
  }
  CHECK(largest == 34);  // FLUX.1's asserted maximum (the old emitter offered 56 = 57 blocks - 1)
  for (const auto& c : combos)
    if (c.knobs.value("blocks_to_swap", 0) == 34) CHECK(c.setup.blocks_to_swap == 52);  // 17 double + 35 single
  // a model without a recorded maximum is offered no block swap at all
  for (const auto& c : combos_for("musubi", "kandinsky5-video-lite")) CHECK(!c.knobs.contains("blocks_to_swap"));
}

TEST_CASE("musubi's lines carry the shape in the dataset TOML, not as flags") {
  TrainingSetup s;
  s.width = 832;
  s.height = 480;
  s.frames = 81;
  s.batch = 2;
  const auto combos = combos_for("musubi", "wan14b", s);
  const std::string text = trainer("musubi").config_text(find_family("wan14b"), combos.front());
  CHECK(text.find("resolution = [832, 480]") != std::string::npos);
  CHECK(text.find("batch_size = 2") != std::string::npos);
  CHECK(text.find("target_frames = [81]") != std::string::npos);
  CHECK(text.find("--dataset_config dataset.toml") != std::string::npos);
  CHECK(text.find("--sdpa") != std::string::npos);
  CHECK(text.find("--resolution") == std::string::npos);
  CHECK(text.find("--batch") == std::string::npos);
}

TEST_CASE("ai-toolkit never offers layer_offloading where it does nothing, and always writes train.dtype") {
  for (const char* model : {"chroma", "flux", "sdxl", "sd1x", "hidream", "lumina2"})
    for (const auto& c : combos_for("ai-toolkit", model)) {
      CHECK_MESSAGE(!c.knobs.contains("model.layer_offloading"), model);
      CHECK(!c.setup.ramtorch);
      CHECK(c.knobs.at("train.dtype") == "bf16");
    }
  TrainingSetup q;
  q.base_precision = "fp8-quanto";  // qfloat8, which layer offloading turns into torchao float8
  std::vector<std::string> notes;
  bool offloaded = false;
  for (const auto& c : combos_for("ai-toolkit", "wan14b", q, &notes))
    if (c.knobs.value("model.layer_offloading", false)) {
      offloaded = true;
      CHECK(c.knobs.at("model.qtype") == "float8");  // what ai-toolkit really runs with offloading
      CHECK(c.setup.base_precision == "fp8wo-torchao");
    } else {
      CHECK(c.setup.base_precision == "fp8-quanto");
    }
  CHECK(offloaded);
  CHECK(any_contains(notes, "Float8WeightOnlyConfig"));
}

TEST_CASE("OneTrainer gets per-part keys and __version, and no offloading for a unet or a prior") {
  for (const char* model : {"sdxl", "sd1x", "cascade"}) {
    const auto combos = combos_for("onetrainer", model);
    REQUIRE(!combos.empty());
    const std::string part = std::string(model) == "cascade" ? "prior" : "unet";
    for (const auto& c : combos) {
      CHECK(c.knobs.at("__version") == 11);
      CHECK(c.knobs.at(part + ".offload_fraction") == 0.0);
      CHECK(c.knobs.at(part + ".activation_offloading") == false);
      CHECK(!c.setup.ramtorch);
      CHECK(!c.knobs.contains("gradient_checkpointing"));  // the removed top-level key
      CHECK(!c.knobs.contains("layer_offload_fraction"));
    }
  }
  // `advise --model sdxl --gpu 3090 --batch 8 --vram-gib 9.5 --emit onetrainer` once recommended 100% offload
  const auto flux = combos_for("onetrainer", "flux");
  bool full = false;
  for (const auto& c : flux) full |= c.knobs.at("transformer.offload_fraction") == 1.0;
  CHECK(full);
}

TEST_CASE("diffusers plans for the square the script trains") {
  TrainingSetup s;
  s.width = 1024;
  s.height = 576;
  std::vector<std::string> notes;
  const auto combos = combos_for("diffusers", "flux", s, &notes);
  REQUIRE(combos.size() == 2);
  for (const auto& c : combos) {
    CHECK(c.setup.width == 1024);
    CHECK(c.setup.height == 1024);
  }
  // 1024*1024 / (1024*576) = 1.78
  CHECK(any_contains(notes, "1.78x the tokens of 1024x576"));
  const std::string text = trainer("diffusers").config_text(find_family("flux"), combos[1]);
  CHECK(text.find("--resolution 1024 ") != std::string::npos);
  CHECK(text.find("train_dreambooth_lora_flux.py") != std::string::npos);
}

TEST_CASE("every emitted key exists in its trainer's key list with a value of the accepted type") {
  int checked = 0;
  for (const auto& t : trainers_with_facts())
    for (const auto& tf : t.families) {
      // a family the trainer's facts wait for (family_may_be_absent) and families/data does not have yet
      if (std::none_of(builtin_families().begin(), builtin_families().end(), [&](const Family& f) { return f.id == tf.family; })) continue;
      TrainingSetup s;
      s.base_precision = "int8-quanto";
      s.model_type = ModelType::Full;
      for (const auto& c : combos_for(t.id, tf.family, s))
        for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it) {
          const TrainerKey* k = key_for(t, it.key());
          REQUIRE_MESSAGE(k, t.id << ": " << it.key());
          std::string why;
          CHECK_MESSAGE(trainer_value_ok(*k, it.value(), why), t.id << ": " << why);
          ++checked;
        }
    }
  CHECK(checked > 500);
}

TEST_CASE("the square edge for an area is a multiple of 64") {
  CHECK(square_edge_for_area(1024, 1024) == 1024);
  CHECK(square_edge_for_area(1024, 576) == 768);  // sqrt(589824) = 768
  CHECK(square_edge_for_area(832, 480) == 640);   // sqrt(399360) = 632 -> 640
}

// ---- writing the user's own file back ---------------------------------------------------------

TEST_CASE("command-line flags are replaced, added after the script, or removed") {
  const std::string cl = "accelerate launch wan_train_network.py --sdpa \\\n  --blocks_to_swap 20 --gradient_checkpointing --lr 1e-4\n";
  CHECK(set_command_line_flag(cl, "blocks_to_swap", 30).find("--blocks_to_swap 30 --gradient") != std::string::npos);
  const std::string off = set_command_line_flag(cl, "gradient_checkpointing", false);
  CHECK(off.find("gradient_checkpointing") == std::string::npos);
  CHECK(off.find("--lr 1e-4") != std::string::npos);
  CHECK(set_command_line_flag(cl, "fp8_base", true).find("wan_train_network.py --fp8_base --sdpa") != std::string::npos);
  CHECK(set_command_line_flag("x.py --blocks_to_swap=20", "blocks_to_swap", 10) == "x.py --blocks_to_swap 10");
  // a new flag follows the script on the command, not a script named in a comment above it
  CHECK(set_command_line_flag("# runs y.py (a note)\n  # and z.py too\npython y.py --rank 4\n", "cache_latents", true) ==
        "# runs y.py (a note)\n  # and z.py too\npython y.py --cache_latents --rank 4\n");
  // a flag named in a comment (a line's or a trailing one) is not on the command: it is added, and the
  // comment stays as written; a '#' inside quotes starts no comment
  CHECK(set_command_line_flag("# no --mixed_precision here\npython y.py --rank 4\n", "mixed_precision", "bf16") ==
        "# no --mixed_precision here\npython y.py --mixed_precision bf16 --rank 4\n");
  CHECK(set_command_line_flag("python y.py --rank 4  # try --rank 8\n", "rank", 16) == "python y.py --rank 16  # try --rank 8\n");
  CHECK(set_command_line_flag("python y.py --p \"a #1\" --rank 4\n", "rank", 16) == "python y.py --p \"a #1\" --rank 16\n");
}

TEST_CASE("TOML keys keep their line and comment; a new key goes before the first section") {
  const std::string t = "# cfg\n[training]\nblocks_to_swap = 56 # too many\nmixed_precision = \"bf16\"\n";
  const std::string a = set_toml_key(t, "blocks_to_swap", 34);
  CHECK(a.find("blocks_to_swap = 34 # too many\n") != std::string::npos);
  const std::string b = set_toml_key(t, "gradient_checkpointing", true);
  CHECK(b.find("# cfg\ngradient_checkpointing = true\n[training]") != std::string::npos);
}

TEST_CASE("flags and keys are rewritten exactly, on 30,000-character lines too") {
  // a value ends at a space; `--key --next` and `--key \` (continuation) are a flag with no value
  CHECK(set_command_line_flag("x.py --rank --lr 1", "rank", 8) == "x.py --rank 8 --lr 1");
  CHECK(set_command_line_flag("x.py --rank \\\n --lr 1", "rank", 8) == "x.py --rank 8 \\\n --lr 1");
  CHECK(set_command_line_flag("x.py --rank_dropout 1", "rank", 8) == "x.py --rank 8 --rank_dropout 1");
  CHECK(set_command_line_flag("--rank 4 y.py", "rank", nullptr) == " y.py");
  const std::string long_value(30000, '7');
  CHECK(set_command_line_flag("x.py --lr " + long_value + "\n", "lr", 1) == "x.py --lr 1\n");
  CHECK(set_toml_key("a = 1\nlr = " + long_value + "   # c\n", "lr", 2) == "a = 1\nlr = 2   # c\n");
  CHECK(set_toml_key("a = 1\nlr = " + long_value + "\nb = 2\n", "lr", nullptr) == "a = 1\nb = 2\n");
  CHECK(set_toml_key("lr2 = 5\n", "lr", 1) == "lr2 = 5\nlr = 1\n");
}

TEST_CASE("a OneTrainer config is written back with the per-part keys and without the removed ones") {
  TrainerReadOptions o;
  const TrainerRead r = read_trainer_config(kDir + "onetrainer/flux_old_keys.json", o);
  nlohmann::ordered_json knobs;
  knobs["__version"] = 11;
  knobs["transformer.gradient_checkpointing"] = true;
  knobs["transformer.offload_fraction"] = 0.25;
  const Rewritten w = trainer(r.trainer).rewrite(r, knobs);
  const auto j = nlohmann::json::parse(w.text);
  CHECK(!j.contains("layer_offload_fraction"));
  CHECK(!j.contains("gradient_checkpointing"));
  CHECK(j["transformer"]["offload_fraction"] == 0.25);
  CHECK(j["transformer"]["weight_dtype"] == "BFLOAT_16");  // kept
  CHECK(j["resolution"] == "1024");
  CHECK(any_contains(w.notes, "removed layer_offload_fraction"));
}

TEST_CASE("an ai-toolkit job is written back, saying that comments are lost") {
  TrainerReadOptions o;
  const TrainerRead r = read_trainer_config(kDir + "ai-toolkit/train_lora_flux_24gb.yaml", o);
  nlohmann::ordered_json knobs;
  knobs["train.gradient_checkpointing"] = false;
  knobs["train.dtype"] = "bf16";
  const Rewritten w = trainer(r.trainer).rewrite(r, knobs);
  CHECK(any_contains(w.notes, "does not keep comments"));
  CHECK(w.text.find("gradient_checkpointing: false") != std::string::npos);
  CHECK(w.text.find("black-forest-labs/FLUX.1-dev") != std::string::npos);
  CHECK(w.text.find("# this name") == std::string::npos);
}

TEST_CASE("the trainer's fastest plan that fits is chosen from its own combinations only") {
  // a stand-in cost model: checkpointing costs 25% time and saves 20 GiB; streamed weights save 10 GiB
  // per 100% and cost 0.5 s; "fits" below 24 GiB. Without checkpointing 30 GiB (does not fit), with it 10 GiB.
  const PredictFn fake = [](const TrainingSetup& s, const Schedule& sc) {
    Prediction p;
    p.peak_vram_bytes = (sc.checkpointing ? 10 : 30) * kGiB - (s.ramtorch ? s.ramtorch_percent / 10 : 0) * kGiB;
    p.step_time_s = (sc.checkpointing ? 1.25 : 1.0) + (s.ramtorch ? 0.5 * s.ramtorch_percent / 100 : 0);
    p.fits = p.peak_vram_bytes < 24 * kGiB;
    return PlanPrediction{p, p.fits ? FitVerdict::Fits : FitVerdict::DoesNotFit};
  };
  const TrainerAdvice d = trainer("diffusers").plan(find_family("flux"), TrainingSetup{}, fake, "1.0 GiB");
  REQUIRE(d.plans.size() == 2);
  REQUIRE(d.best == 1);  // sorted by time: 1.0 s (30 GiB, does not fit), then 1.25 s (10 GiB, fits)
  CHECK(d.plans[d.best].schedule.checkpointing);
  CHECK(d.config_text.find("--gradient_checkpointing") != std::string::npos);
  CHECK(!d.manual.empty());
  // SDXL in OneTrainer: its unet has no offloading, so no plan streams weights even where that would fit
  const TrainerAdvice x = trainer("onetrainer").plan(find_family("sdxl"), TrainingSetup{}, fake, "1.0 GiB");
  for (const auto& p : x.plans) CHECK(!p.setup.ramtorch);
  CHECK(nlohmann::json::parse(x.config_text)["unet"]["offload_fraction"] == 0.0);
  // a family the trainer does not train: no lines at all
  const TrainerAdvice m = trainer("musubi").plan(find_family("sdxl"), TrainingSetup{}, fake, "1.0 GiB");
  CHECK(!m.family_supported);
  CHECK(m.plans.empty());
  CHECK(m.config_text.empty());
}

TEST_CASE("every key of the emitted files exists in its trainer's key list with a value of the accepted type") {
  // OneTrainer JSON, ai-toolkit YAML, musubi flags + dataset TOML, diffusers flags: parsed back and each
  // key looked up (the key lists themselves are checked against the trainers' sources above)
  int checked = 0;
  auto expect = [&](const TrainerFacts& t, const std::string& key, const nlohmann::json& v) {
    const TrainerKey* k = key_for(t, key);
    REQUIRE_MESSAGE(k, t.id << ": " << key);
    std::string why;
    CHECK_MESSAGE(trainer_value_ok(*k, v, why), t.id << ": " << why);
    ++checked;
  };
  TrainingSetup s;
  s.width = 832;
  s.height = 480;
  s.frames = 33;
  s.base_precision = "nf4-bnb";
  for (const char* model : {"wan14b", "flux", "sdxl"}) {
    const Family& fam = find_family(model);
    TrainingSetup fs_ = s;
    if (fam.modality != "video") fs_.frames = 1;
    for (const auto& t : trainers_with_facts()) {
      const auto combos = combos_for(t.id, model, fs_);
      if (combos.empty()) continue;
      const std::string text = trainer(t.id).config_text(fam, combos.back());
      if (t.id == "onetrainer") {
        const auto j = nlohmann::json::parse(text);
        for (auto it = j.begin(); it != j.end(); ++it) {
          if (it.value().is_object())
            for (auto in = it.value().begin(); in != it.value().end(); ++in) {
              if (in.value().is_object())  // optimizer_defaults.<optimizer>.<key>
                for (auto k = in.value().begin(); k != in.value().end(); ++k)
                  expect(t, it.key() + "." + in.key() + "." + k.key(), k.value());
              else
                expect(t, it.key() + "." + in.key(), in.value());
            }
          else if (it.key() != "__version")
            expect(t, it.key(), it.value());
        }
      } else if (t.id == "ai-toolkit") {
        const YAML::Node p = YAML::Load(text)["config"]["process"][0];
        for (const char* section : {"model", "train", "network"})
          for (const auto& kv : p[section]) {
            const std::string key = std::string(section) + "." + kv.first.as<std::string>();
            const std::string v = kv.second.as<std::string>();
            const nlohmann::json jv = v == "true" || v == "false" ? nlohmann::json(v == "true")
                                      : std::isdigit(static_cast<unsigned char>(v[0])) ? nlohmann::json::parse(v) : nlohmann::json(v);
            expect(t, key, jv);
          }
        for (const auto& kv : p["datasets"][0]) {
          const std::string key = "datasets[]." + kv.first.as<std::string>();
          if (key == "datasets[].folder_path") continue;  // the user's, listed under "set by hand"
          const std::string v = kv.second.IsScalar() ? kv.second.as<std::string>() : "";
          expect(t, key, kv.first.as<std::string>() == "resolution" ? nlohmann::json(kv.second.as<std::vector<int>>())
                         : v == "true" || v == "false"               ? nlohmann::json(v == "true")
                         : std::isdigit(static_cast<unsigned char>(v[0])) ? nlohmann::json(kv.second.as<int>())
                                                                          : nlohmann::json(v));
        }
      } else {
        const std::string flags = t.id == "musubi" ? text.substr(text.find('\n') + 1, text.find('\n', text.find('\n') + 1) - text.find('\n') - 1) : text;
        const auto cl = readers::parse_command_line(flags, "emitted", t);
        for (const auto& kv : cl.values) {
          const TrainerKey* k = t.key(kv.first);
          REQUIRE_MESSAGE(k, t.id << ": --" << kv.first);
          nlohmann::json v = kv.second;
          if (k->type == "bool") v = kv.second == "true";
          else if (k->type == "int") v = std::stoi(kv.second);
          expect(t, kv.first, v);
        }
        if (t.id == "musubi") {
          std::istringstream in(text.substr(text.find("[general]")));
          const toml::value d = toml::parse(in, "dataset.toml");
          for (const auto& kv : d.at("general").as_table()) {
            const std::string& key = kv.first;
            nlohmann::json v = kv.second.is_boolean() ? nlohmann::json(kv.second.as_boolean())
                               : kv.second.is_integer() ? nlohmann::json(kv.second.as_integer())
                                                        : nlohmann::json(toml::get<std::vector<int>>(kv.second));
            bool found = false;
            for (const auto& dk : t.raw.at("dataset_keys"))
              if (dk.at("name") == key) {
                TrainerKey k{key, dk.at("type"), {}, dk.at("source")};
                std::string why;
                CHECK_MESSAGE(trainer_value_ok(k, v, why), why);
                found = true;
                ++checked;
              }
            CHECK_MESSAGE(found, "dataset key " << key);
          }
        }
      }
    }
  }
  CHECK(checked > 60);
}

TEST_CASE("another trainer's phase advice names its own key, or says it has none") {
  // ai-toolkit's 24 GB FLUX job samples (no train.disable_sampling): its sampling phase (the VAE decode
  // at 1024 beside the model) reaches higher than the step's point. A budget just over the step's point
  // leaves sampling over it: the advice is ai-toolkit's own key, and sampling then does not run.
  const TrainerRead r = read("ai-toolkit/train_lora_flux_24gb.yaml");
  AdvisorRequest req = test::request_for(r.family->id, "h100");
  req.setup = r.setup;
  const Context ctx(req);
  const Candidate step = evaluate(ctx, r.schedule);
  const RunSetup run = trainer("ai-toolkit").run_setup(r);
  REQUIRE(run.other.phase_knobs.size() == 1);
  CHECK(run.other.phase_knobs[0].key == "config.process.0.train.disable_sampling");
  const RunPhases all = predict_phases(*r.family, r.setup, ctx.chain, step.prediction, run, 1e15);
  REQUIRE(all.at(Phase::Validation).runs);
  const double budget = step.prediction.peak_vram_bytes + 1;
  REQUIRE(all.at(Phase::Validation).peak_hi_bytes > budget);
  const RunPhases ph = predict_phases(*r.family, r.setup, ctx.chain, step.prediction, run, budget);
  bool named = false;
  for (const auto& f : ph.fixes) {
    if (f.phase != Phase::Validation) continue;
    named = true;
    CHECK(f.key == "config.process.0.train.disable_sampling");
    CHECK(f.value_json == "true");
    CHECK(f.fit_after == FitVerdict::Fits);  // sampling off: the phase does not run
  }
  CHECK(named);
  for (const auto& f : ph.fixes) CHECK(f.key.find("quantize_via") == std::string::npos);
  // a phase none of the trainer's keys lowers says so: the same run without its sampling key
  RunSetup keyless = run;
  keyless.other.phase_knobs.clear();
  const RunPhases none = predict_phases(*r.family, r.setup, ctx.chain, step.prediction, keyless, budget);
  bool said = false;
  for (const auto& f : none.fixes)
    if (f.phase == Phase::Validation) {
      said = true;
      CHECK(f.key.empty());
      CHECK(f.note == "ai-toolkit has no key that lowers this phase");
      CHECK(f.fit_after != FitVerdict::Fits);
    }
  CHECK(said);
}

TEST_CASE("OneTrainer's shipped fine-tune with the fused back pass holds one layer's gradients") {
  // #anima Finetune: FINE_TUNE, transformer BFLOAT_16, optimizer ADAFACTOR with
  // optimizer_defaults.ADAFACTOR.fused_back_pass true. GenericTrainer.py: with the fused back pass each
  // parameter's gradient is applied by the optimizer and freed in its backward hook, so the step holds the
  // gradients of one layer at a time: the largest block's parameters x 2 bytes (bf16), against every
  // trainable parameter (the blocks and the rest) x 2 bytes without it
  const TrainerRead r = read("onetrainer/#anima_finetune.json");
  REQUIRE(r.setup.fused_back_pass);
  REQUIRE(r.setup.model_type == ModelType::Full);
  const BlockChain chain = analyze(*r.family, r.setup);
  double largest = 0, all = chain.outside_params;
  for (const auto& b : chain.blocks) {
    largest = std::max(largest, b.params);
    all += b.params;
  }
  REQUIRE(chain.blocks.size() > 1);
  const Prediction fused = predict(r);
  CHECK(fused.memory.gradient_bytes == doctest::Approx(largest * 2));
  TrainerRead plain = r;
  plain.setup.fused_back_pass = false;
  CHECK(predict(plain).memory.gradient_bytes == doctest::Approx(all * 2));
}

TEST_CASE("OneTrainer's LoRA adapters live in lora_weight_dtype: FLOAT_32 by default, their gradients too") {
  // TrainConfig.py:1236: lora_weight_dtype FLOAT_32 unless set. The adapters' L parameters then take
  // 4 B each and so do their gradients (8L bytes), against 2 + 2 B with BFLOAT_16 (4L bytes); AdamW's two
  // float32 moments are 8 B either way.
  const TrainerRead r = read("onetrainer/flux_lora.json");
  REQUIRE(r.setup.model_type == ModelType::Lora);
  CHECK(r.setup.adapter_weight_bytes == 4);
  const BlockChain chain = analyze(*r.family, r.setup);
  double lora = 0;
  for (const auto& b : chain.blocks) lora += b.lora_params;
  REQUIRE(lora > 0);
  const Prediction p = predict(r);
  CHECK(p.memory.trainable_bytes == doctest::Approx(4 * lora));
  CHECK(p.memory.gradient_bytes == doctest::Approx(4 * lora));
  std::string text = slurp(kDir + "onetrainer/flux_lora.json");
  text.replace(text.find("\"training_method\""), 0, "\"lora_weight_dtype\": \"BFLOAT_16\", \"peft_type\": \"LOKR\",\n    ");
  const TrainerRead b = read_text("flux_lora_bf16.json", text);
  CHECK(b.setup.adapter_weight_bytes == 2);
  CHECK(b.run_keys.value("lora_weight_dtype", std::string()) == "BFLOAT_16");  // a printed plan carries it
  const Prediction q = predict(b);
  CHECK(q.memory.trainable_bytes == doctest::Approx(2 * lora));
  CHECK(q.memory.gradient_bytes == doctest::Approx(2 * lora));
  CHECK(p.peak_vram_bytes - q.peak_vram_bytes == doctest::Approx(4 * lora));
  // a LoKr (or LoHa, OFT) is said to be predicted as a LoRA of its rank
  CHECK(any_contains(b.warnings, "peft_type LOKR: predicted as a LoRA of lora_rank 16"));
  std::string dora = slurp(kDir + "onetrainer/flux_lora.json");
  dora.replace(dora.find("\"training_method\""), 0, "\"lora_decompose\": true,\n    ");
  CHECK(any_contains(read_text("flux_dora.json", dora).warnings, "lora_decompose true (DoRA): predicted as a plain LoRA"));
  CHECK(!any_contains(r.warnings, "DoRA"));
  // the plans run what their file says: the FLOAT_32 default, or the config's own dtype
  const Trainer& t = trainer("onetrainer");
  std::vector<std::string> notes;
  for (const auto& c : t.knob_space(*r.family, r.setup, notes)) CHECK(c.setup.adapter_weight_bytes == 4);
  for (const auto& c : t.knob_space(*b.family, b.setup, notes)) CHECK(c.setup.adapter_weight_bytes == 2);
  // a setup from elsewhere (advise, another trainer's config: bf16 adapters) runs the default the file leaves
  TrainingSetup elsewhere = r.setup;
  elsewhere.adapter_weight_bytes = 0;
  for (const auto& c : t.knob_space(*r.family, elsewhere, notes)) CHECK(c.setup.adapter_weight_bytes == 4);
  // another trainer's plan for the same setup does not inherit it
  for (const auto& c : trainer("ai-toolkit").knob_space(*r.family, r.setup, notes)) CHECK(c.setup.adapter_weight_bytes == 0);
}

TEST_CASE("a OneTrainer config's offload fraction 0.6 keeps 60% of the blocks' weight bytes on the host") {
  // the built-in #qwen LoRA 24GB preset with transformer.offload_fraction 0.6 (a '#' file: read
  // unmigrated, so the fraction stands). LayerOffloadStrategy offloads by bytes: target_loaded_bytes =
  // total x (1 - 0.6), so 60% of the blocks' FLOAT_8 weight bytes wait on the host and stream in;
  // 60 blocks, so 40% of them is more than the two-layer minimum
  auto j = nlohmann::json::parse(slurp(kDir + "onetrainer/#qwen_lora_24gb.json"));
  j["transformer"]["offload_fraction"] = 0.6;
  const fs::path dir = fs::temp_directory_path() / "segadvise-onetrainer-fraction";
  fs::create_directories(dir);
  const fs::path f = dir / "#qwen_offload_0.6.json";
  std::ofstream(f) << j.dump(4);
  TrainerReadOptions o;
  const TrainerRead r = read_trainer_config(f.string(), o);
  REQUIRE(r.rejections.empty());
  CHECK(r.setup.layer_offload_fraction == doctest::Approx(0.6));
  const BlockChain chain = analyze(*r.family, r.setup);
  double blocks = 0;
  for (const auto& b : chain.blocks) blocks += block_weight_bytes(b, r.setup);
  const StaticMemory m = static_memory(chain, r.setup);
  CHECK(m.streamed_weights_bytes == doctest::Approx(0.6 * blocks));
  CHECK(predict(r).memory.streamed_weights_bytes == doctest::Approx(0.6 * blocks));
  fs::remove_all(dir);
}
