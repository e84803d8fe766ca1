// kohya-ss sd-scripts' runs as users write them: launch scripts (bash, cmd, PowerShell) running its
// training scripts through `accelerate launch`, a --config_file TOML (with and without a command line),
// the --dataset_config TOML and --train_data_dir's N_name folders. Each fixture
// (tests/fixtures/trainers/sd_scripts/, README.md) is written from sd-scripts@48d368fa's source and
// docs; the expected reading is derived by hand beside each check.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "test_util.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/sd_scripts_reader.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_config.hpp"

using namespace segadvise;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/sd_scripts/";

TrainerReadOptions opts(const std::string& cwd = "/nonexistent-working-directory") {
  TrainerReadOptions o;
  o.cwd = cwd;  // nothing resolves from the shell: beside the file does
  return o;
}

TrainerRead read(const std::string& name, const std::string& cwd = "/nonexistent-working-directory") {
  return read_trainer_config(kDir + name, opts(cwd));
}

bool any_has(const std::vector<std::string>& v, const std::string& what) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(what) != std::string::npos; });
}

}  // namespace

TEST_CASE("sd-scripts: detection by script, not musubi's") {
  CHECK(detect_trainer(kDir + "flux_lora_24gb.sh") == "sd-scripts");
  CHECK(detect_trainer(kDir + "sdxl_lora.bat") == "sd-scripts");
  CHECK(detect_trainer(kDir + "sd15_lora.ps1") == "sd-scripts");
  CHECK(detect_trainer(kDir + "flux_config.toml") == "sd-scripts");  // pretrained_model_name_or_path, no dit
  // musubi's FLUX.1 Kontext script and its --dit TOML stay musubi's
  CHECK(detect_trainer(std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/musubi/flux_train.sh") == "musubi");
  CHECK(detect_trainer(std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/musubi/flux_config.toml") == "musubi");
  // the same script name run from musubi's package, or with --dit, is musubi's
  const fs::path tmp = fs::temp_directory_path() / "segadvise-sds-detect.sh";
  std::ofstream(tmp) << "python src/musubi_tuner/flux_train_network.py --dit x.safetensors\n";
  CHECK(detect_trainer(tmp.string()) == "musubi");
  fs::remove(tmp);
}

TEST_CASE("sd-scripts: FLUX.1 LoRA at the docs' 24 GB shape, --blocks_to_swap 18") {
  const TrainerRead r = read("flux_lora_24gb.sh");
  CHECK(r.trainer == "sd-scripts");
  CHECK(r.family->id == "flux1");  // --model_type unset: flux (library/flux_train_utils.py:684-690)
  CHECK(r.setup.family_guessed_from.empty());
  CHECK(r.setup.model_type == ModelType::Lora);
  CHECK(r.setup.lora_rank == 4);
  CHECK(r.setup.adapter_weight_bytes == 4);  // the network stays float32 without --full_bf16
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.setup.base_precision == "fp8wo-torchao");  // --fp8_base
  CHECK(r.schedule.checkpointing);
  // --blocks_to_swap 18: 18//2 = 9 double and (18 - 9) * 2 = 18 single blocks swapped
  // (library/flux_models.py:972-980): 9 + 18 = 27 chain blocks, 19 - 9 = 10 double and 38 - 18 = 20
  // single blocks resident
  CHECK(r.setup.blocks_to_swap == 27);
  CHECK(r.setup.blocks_to_swap_per_list == std::vector<int>{9, 18});  // predicted where they are, per list
  CHECK(any_has(r.warnings, "10 double and 20 single blocks stay on the GPU"));
  // dataset_1024_bs2.toml: resolution 1024, batch_size 2 in the dataset itself
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.height == 1024);
  CHECK(r.setup.batch == 2);
  REQUIRE(r.datasets.size() == 1);
  CHECK(r.datasets[0].repeats == 10);
  CHECK(r.datasets[0].rule == "area");
  CHECK(r.datasets[0].align == 64);
  // both caches on, the text encoders deleted (untrained, network_train_unet_only), the VAE freed
  CHECK(r.setup.kept_model_bytes == 0);
  CHECK(r.run.other.latent_caching);
  CHECK(r.run.other.text_caching);
  CHECK(r.run.other.caching_processes.empty());  // cached inside the training process
  CHECK(r.rejections.empty());
}

TEST_CASE("sd-scripts: --split_mode is --blocks_to_swap 18; --cpu_offload_checkpointing; refused with block swap") {
  const TrainerRead split = read("flux_split_mode.sh");
  CHECK(split.setup.blocks_to_swap == 27);  // 18: 9 double + 18 single, as above
  CHECK(any_has(split.warnings, "--split_mode (deprecated) sets --blocks_to_swap 18"));
  CHECK(split.setup.optimizer == "adafactor");
  CHECK(split.rejections.empty());
  const TrainerRead off = read("flux_cpu_offload.sh");
  CHECK(off.schedule.checkpointing);
  CHECK(off.schedule.backend == Backend::Unsloth);  // block inputs on the CPU
  CHECK(off.setup.blocks_to_swap == 0);
  CHECK(off.rejections.empty());
  const TrainerRead both = read("flux_cpu_offload_swap.sh");
  CHECK(any_has(both.rejections, "flux_train_network.py:77-79"));
}

TEST_CASE("sd-scripts: Chroma by --model_type; its block-swap maximum 35") {
  const TrainerRead r = read("chroma_lora.sh");
  CHECK(r.family->id == "chroma");
  // 36: 18 double (> 19 - 2 = 17) and 36 single blocks: the assert of library/flux_models.py:977
  CHECK(any_has(r.rejections, "--blocks_to_swap 36 is above"));
  CHECK(any_has(r.rejections, "maximum 35"));
  CHECK(!any_has(r.rejections, "apply_t5_attn_mask"));  // given, as Chroma requires (flux_train_network.py:54)
}

TEST_CASE("sd-scripts: SDXL full fine-tune, Adafactor's fused backward pass, --full_bf16") {
  const TrainerRead r = read("sdxl_full_fused.sh");
  CHECK(r.family->id == "sdxl");
  CHECK(r.setup.model_type == ModelType::Full);
  CHECK(r.setup.fused_back_pass);
  CHECK(r.setup.optimizer == "adafactor");
  CHECK(r.setup.weight_storage_bytes == 0);  // --full_bf16: the U-Net trains in bf16
  CHECK(r.rejections.empty());
  // dataset_sdxl.toml: resolution [1024, 1024], batch 4, steps 32 (a multiple of SDXL's 32), two subsets
  CHECK(r.setup.batch == 4);
  CHECK(r.datasets.size() == 2);
  CHECK(r.datasets[0].repeats == 2);
  // no --cache_text_encoder_outputs: both text encoders stay and encode each batch, in bf16: CLIP-L
  // and OpenCLIP-G's parameters x 2 bytes, no VAE (latents cached)
  CHECK(r.setup.kept_model_bytes > 0);
  CHECK(r.setup.kept_models.find("VAE") == std::string::npos);
  // AdamW8bit with the fused pass and gradient accumulation 2: get_optimizer's two asserts
  const TrainerRead bad = read("sdxl_full_fused_adamw.sh");
  CHECK(any_has(bad.rejections, "library/train_util.py:4848-4851"));
  CHECK(any_has(bad.rejections, "library/train_util.py:4852-4854"));
}

TEST_CASE("sd-scripts: SD 3.5 Large by the checkpoint's file name, a guess; its block-swap maximum 36") {
  const TrainerRead r = read("sd35_large_lora.sh");
  CHECK(r.family->id == "sd3.5-large");
  CHECK(r.setup.family_guessed_from.find("sd3.5_large.safetensors") != std::string::npos);
  // depth 38: at most 38 - 2 = 36 (library/sd3_models.py:1075-1080)
  CHECK(any_has(r.rejections, "--blocks_to_swap 37 is above"));
  CHECK(any_has(r.rejections, "maximum 36"));
}

TEST_CASE("sd-scripts: SD3 checkpoint keys decide the model when the file is there") {
  // a safetensors header with qk_norm and no x_block attn2 layers: SD3.5 Large (library/sd3_utils.py:52-58)
  const fs::path dir = fs::temp_directory_path() / "segadvise-sds-sd3";
  fs::create_directories(dir);
  const std::string header = "{\"joint_blocks.0.context_block.attn.ln_k.weight\":{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":[0,128]}}";
  {
    std::ofstream f(dir / "mystery.safetensors", std::ios::binary);
    const unsigned long long n = header.size();
    for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xff));
    f << header;
  }
  std::ofstream(dir / "run.sh") << "accelerate launch sd3_train_network.py --pretrained_model_name_or_path mystery.safetensors --sdpa "
                                   "--mixed_precision bf16 --network_module networks.lora_sd3 --resolution 1024\n";
  const TrainerRead r = read_trainer_config((dir / "run.sh").string(), opts(dir.string()));
  CHECK(r.family->id == "sd3.5-large");
  CHECK(r.setup.family_guessed_from.empty());  // read from the keys, no guess
  fs::remove_all(dir);
}

TEST_CASE("sd-scripts: Lumina without its dataset TOML; Anima ignores --fp8_base") {
  const TrainerRead l = read("lumina_lora.sh");
  CHECK(l.family->id == "lumina2");
  // missing_dataset.toml is not here: --resolution 768,1024 (W,H) and --train_batch_size 2, said so
  CHECK(l.setup.width == 768);
  CHECK(l.setup.height == 1024);
  CHECK(l.setup.batch == 2);
  CHECK(l.shape_source.find("assumed") != std::string::npos);
  CHECK(l.setup.blocks_to_swap == 24);  // the maximum: 26 layers - 2
  CHECK(l.rejections.empty());
  const TrainerRead a = read("anima_lora.sh");
  CHECK(a.family->id == "anima");
  CHECK(a.setup.base_precision == "no_change");
  CHECK(any_has(a.warnings, "--fp8_base: anima_train_network.py does not apply it"));
  CHECK(a.setup.blocks_to_swap == 26);  // 28 blocks - 2
  CHECK(a.rejections.empty());
}

TEST_CASE("sd-scripts: a Windows .bat on two GPUs, a PowerShell line with --train_data_dir folders") {
  const TrainerRead b = read("sdxl_lora.bat");
  CHECK(b.family->id == "sdxl");
  CHECK(b.setup.multi_gpu.gpus_per_node == 2);  // accelerate launch --num_processes 2
  CHECK(b.setup.lora_rank == 32);
  CHECK(b.setup.batch == 4);
  // not trained unet-only and outputs not cached: the text encoders stay (they encode each batch)
  CHECK(b.setup.kept_models.find("encodes each batch") != std::string::npos);
  const TrainerRead p = read("sd15_lora.ps1");
  CHECK(p.family->id == "sd1x");
  CHECK(p.setup.mixed_precision == "fp16");
  CHECK(p.setup.width == 512);
  CHECK(p.setup.batch == 3);
  // train_data/10_cat and 3_dog are subsets with 10 and 3 repeats; misc has no N_ prefix: ignored
  REQUIRE(p.datasets.size() == 2);
  int repeats = 0;
  for (const auto& d : p.datasets) repeats += d.repeats;
  CHECK(repeats == 13);
  CHECK(any_has(p.warnings, "'misc' has no repeat count"));
  // --max_train_ep: argparse's unique-prefix abbreviation of --max_train_epochs
  CHECK(any_has(p.warnings, "--max_train_ep is argparse's abbreviation of --max_train_epochs"));
}

TEST_CASE("sd-scripts: --config_file under a command line, and alone") {
  const TrainerRead r = read("flux_with_config.sh");
  CHECK(r.family->id == "flux1");
  // the command line's --blocks_to_swap 20 wins over the file's 10: 10 double + 20 single = 30
  CHECK(r.setup.blocks_to_swap == 30);
  CHECK(r.config_file.find("flux_config.toml") != std::string::npos);  // ".toml" added (library/train_util.py:4704)
  CHECK(r.config_file_keys.at("blocks_to_swap") == "10");
  CHECK(r.setup.lora_rank == 16);
  CHECK(any_has(r.warnings, "not_an_sd_scripts_key"));
  CHECK(r.setup.batch == 2);  // its dataset_config, beside the config file
  const TrainerRead alone = read("flux_config.toml");
  CHECK(alone.family->id == "flux1");
  CHECK(!alone.setup.family_guessed_from.empty());  // no script: a guess, said so
  CHECK(alone.setup.blocks_to_swap == 15);  // 10: 5 double + 10 single
  CHECK(any_has(alone.warnings, "names no training script"));
}

TEST_CASE("sd-scripts: the dataset TOML's fallback chain and the bucket asserts") {
  const TrainerRead r = read("sdxl_fallback.sh");
  // datasets[0]: resolution from [general] (1024x768), batch_size its own 4;
  // datasets[1]: resolution its own 512, batch from the command line's --train_batch_size 3.
  // The larger step: 1024 x 768 x 4 > 512 x 512 x 3
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.height == 768);
  CHECK(r.setup.batch == 4);
  REQUIRE(r.datasets.size() == 2);
  CHECK(r.datasets[1].batch == 3);
  CHECK(r.datasets[1].repeats == 5);
  CHECK(r.datasets[0].repeats == 1);  // the default
  const TrainerRead bad = read("sdxl_bad_bucket.sh");
  CHECK(any_has(bad.rejections, "bucket_reso_steps 48 must be divisible by 32"));
  // max_bucket_reso 768 rounded up to a multiple of 48 is 768: below 1024
  CHECK(any_has(bad.rejections, "max_bucket_reso 768 is below"));
}

TEST_CASE("sd-scripts: another script's flag is refused, an unknown one warned") {
  const TrainerRead r = read("sd15_unknown_flags.sh");
  CHECK(std::find(r.refused_keys.begin(), r.refused_keys.end(), "blocks_to_swap") != r.refused_keys.end());
  CHECK(any_has(r.rejections, "unrecognized arguments"));
  CHECK(any_has(r.warnings, "--my_flag: no copied sd-scripts parser defines it"));
}

TEST_CASE("sd-scripts: read_sd_scripts_command reads flags given without a launch script") {
  readers::CommandLine cl;
  cl.script = "flux_train_network.py";
  cl.values = {{"pretrained_model_name_or_path", "flux1-dev.safetensors"}, {"mixed_precision", "bf16"}, {"sdpa", "true"},
               {"network_module", "networks.lora_flux"}, {"network_dim", "8"}, {"blocks_to_swap", "6"},
               {"resolution", "512"}, {"train_batch_size", "1"}, {"dataset_config", kDir + "dataset_1024_bs2.toml"}};
  const TrainerRead r = readers::read_sd_scripts_command(cl, 2, "gui.json", opts());
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.blocks_to_swap == 9);  // 3 double + 6 single
  CHECK(r.setup.multi_gpu.gpus_per_node == 2);
  CHECK(r.setup.batch == 2);  // the dataset's own batch_size over --train_batch_size
}

TEST_CASE("sd-scripts: emitted lines and the rewritten file read back as planned") {
  const Trainer& t = trainer("sd-scripts");
  // LoRA plans of each model, then full fine-tunes (sdxl_train.py with Adafactor's fused pass, flux_train.py)
  const std::vector<std::pair<const char*, bool>> cases = {{"flux1", false}, {"chroma", false}, {"sdxl", false}, {"sd3.5-large", false},
                                                           {"lumina2", false}, {"anima", false}, {"sd1x", false}, {"sdxl", true},
                                                           {"flux1", true}, {"sd1x", true}};
  for (const auto& mc : cases) {
    const char* model = mc.first;
    const Family& fam = find_family(model);
    TrainingSetup s;
    if (mc.second) {
      s.model_type = ModelType::Full;
      s.optimizer = "adafactor";
    }
    std::vector<std::string> notes;
    const auto combos = t.knob_space(fam, s, notes);
    REQUIRE_MESSAGE(!combos.empty(), model);
    const KnobCombo& c = combos.back();
    const fs::path dir = fs::temp_directory_path() / "segadvise-sds-emit";
    fs::create_directories(dir);
    const std::string text = t.config_text(fam, c);
    // the command line and the dataset TOML it names, split at the TOML's comment
    const std::size_t toml_at = text.find("# dataset.toml");
    std::ofstream(dir / "run.sh") << text.substr(0, toml_at);
    std::string toml = text.substr(toml_at);
    toml = toml.substr(toml.find('\n') + 1);
    std::ofstream(dir / "dataset.toml") << toml;
    const TrainerRead back = read_trainer_config((dir / "run.sh").string(), opts(dir.string()));
    CHECK_MESSAGE(back.family->id == fam.id, model << " read back as " << back.family->id);
    CHECK_MESSAGE(back.rejections.empty(), model << ": " << (back.rejections.empty() ? "" : back.rejections[0]));
    CHECK(back.setup.blocks_to_swap == c.setup.blocks_to_swap);
    CHECK(back.schedule.checkpointing == c.schedule.checkpointing);
    CHECK(back.setup.base_precision == c.setup.base_precision);
    CHECK(back.setup.model_type == c.setup.model_type);
    CHECK(back.setup.fused_back_pass == c.setup.fused_back_pass);
    fs::remove_all(dir);
  }
  // the user's own file with only the memory flags changed reads back with the plan's knobs
  const TrainerRead r = read("flux_lora_24gb.sh");
  const nlohmann::ordered_json plan = {{"gradient_checkpointing", true}, {"blocks_to_swap", 8}, {"fp8_base", false}, {"mixed_precision", "bf16"},
                                       {"cache_latents_to_disk", true}, {"cache_text_encoder_outputs", true},
                                       {"cache_text_encoder_outputs_to_disk", true}, {"network_train_unet_only", true}};
  const Rewritten w = t.rewrite(r, t.memory_knobs(r, plan));
  const fs::path out = fs::temp_directory_path() / "segadvise-sds-rewrite" / "run.sh";
  fs::create_directories(out.parent_path());
  fs::copy_file(kDir + "dataset_1024_bs2.toml", out.parent_path() / "dataset_1024_bs2.toml", fs::copy_options::overwrite_existing);
  std::ofstream(out) << w.text;
  const TrainerRead back = read_trainer_config(out.string(), opts());
  CHECK(back.setup.blocks_to_swap == 12);  // 4 double + 8 single
  CHECK(back.setup.base_precision == "no_change");
  CHECK(back.setup.lora_rank == 4);  // not a memory knob: as written
  CHECK(w.text.find("--discrete_flow_shift 3.1582") != std::string::npos);
  fs::remove_all(out.parent_path());
}

TEST_CASE("sd-scripts: HunyuanImage-2.1's script") {
  const fs::path tmp = fs::temp_directory_path() / "segadvise-sds-hunyuan.sh";
  std::ofstream(tmp) << "accelerate launch hunyuan_image_train_network.py --pretrained_model_name_or_path hunyuanimage2.1.safetensors "
                        "--sdpa --mixed_precision bf16 --network_module networks.lora_hunyuan_image --network_dim 16 "
                        "--blocks_to_swap 38 --resolution 2048 --fp8_scaled\n";
  const TrainerRead r = read_trainer_config(tmp.string(), opts());
  CHECK(r.family->id == "hunyuan-image-2.1");
  // 20 double + 40 single blocks: N <= 37 (library/hunyuan_image_models.py:172-180)
  CHECK(any_has(r.rejections, "maximum 37"));
  CHECK(r.setup.base_precision == "fp8wo-torchao");  // --fp8_scaled
  fs::remove(tmp);
}

TEST_CASE("sd-scripts: malformed input is an error naming the file, the field and the value") {
  const fs::path dir = fs::temp_directory_path() / "segadvise-sds-bad";
  fs::create_directories(dir);
  auto error_for = [&](const std::string& flags, const std::string& dataset) {
    std::ofstream(dir / "dataset.toml") << dataset;
    std::ofstream(dir / "run.sh") << "accelerate launch sdxl_train_network.py --pretrained_model_name_or_path sdxl.safetensors --sdpa "
                                     "--mixed_precision bf16 --network_module networks.lora --dataset_config dataset.toml " + flags + "\n";
    return test::input_error_of([&] { read_trainer_config((dir / "run.sh").string(), opts(dir.string())); });
  };
  const std::string ok = "[[datasets]]\nresolution = 1024\n[[datasets.subsets]]\nimage_dir = \"a\"\n";
  CHECK(error_for("--network_dim abc", ok).find("network_dim") != std::string::npos);
  CHECK(error_for("--mixed_precision fp8", ok).find("invalid choice 'fp8'") != std::string::npos);
  CHECK(error_for("", "datasets = 3\n").find("dataset.toml: datasets") != std::string::npos);
  const std::string res = error_for("", "[[datasets]]\nresolution = [1, 2, 3]\n");
  CHECK(res.find("datasets[0].resolution") != std::string::npos);
  CHECK(res.find("[1,2,3]") != std::string::npos);
  CHECK(error_for("", "[[datasets]]\nbatch_size = -1\n").find("datasets[0].batch_size: is -1") != std::string::npos);
  CHECK(error_for("", "[[datasets]]\nresolution = 512\nsubsets = \"x\"\n").find("datasets[0].subsets") != std::string::npos);
  CHECK(error_for("", "[[datasets]\n").find("dataset.toml:1") != std::string::npos);  // not TOML: its line
  CHECK(error_for("--config_file nowhere", ok).find("nowhere.toml") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("sd-scripts: LyCORIS LoKr through lycoris.kohya, the GUI presets' network_dim 100000") {
  // the kohya_ss GUI's LoKr presets pass --network_module lycoris.kohya --network_dim 100000 with
  // --network_args algo=lokr factor=6: a rank reaching every layer's width is LyCORIS's full w2, read as
  // LoKr (not a rank-100000 LoRA, and not refused: argparse's int has no bound)
  const fs::path tmp = fs::temp_directory_path() / "segadvise-sds-lokr.sh";
  std::ofstream(tmp) << "accelerate launch train_network.py --pretrained_model_name_or_path v1-5.safetensors --sdpa --mixed_precision bf16 "
                        "--network_module lycoris.kohya --network_dim 100000 --network_alpha 1 --network_args \"algo=lokr\" \"factor=6\" "
                        "--resolution 512\n";
  const TrainerRead r = read_trainer_config(tmp.string(), opts());
  CHECK(r.family->id == "sd1x");
  CHECK(r.setup.lora_type == LoraType::Lycoris);
  CHECK(any_has(r.setup.notes, "LyCORIS LoKr (lycoris.kohya, --network_args algo=lokr factor=6): a full w2"));
  CHECK(r.rejections.empty());
  fs::remove(tmp);
}
