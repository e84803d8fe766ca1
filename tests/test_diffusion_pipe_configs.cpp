// diffusion-pipe's configs: its own examples (main_example.toml and the dataset TOMLs) and configs
// written from its source at 8f83dbf (tests/fixtures/trainers/diffusion_pipe/README.md). Each expected
// value is derived by hand from the rule the comment beside it names.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_config.hpp"
#include "segadvise/trainers/trainer_writer.hpp"

using namespace segadvise;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/diffusion_pipe/";

TrainerReadOptions opts() {
  TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";  // nothing resolves from the shell: beside the file does
  return o;
}

TrainerRead read(const std::string& name) { return read_trainer_config(kDir + name, opts()); }

bool has(const std::vector<std::string>& v, const std::string& part) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(part) != std::string::npos; });
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("diffusion-pipe: main_example.toml (HunyuanVideo, float8, examples/dataset.toml)") {
  CHECK(detect_trainer(kDir + "main_example.toml") == "diffusion-pipe");
  const TrainerRead r = read("main_example.toml");
  CHECK(r.trainer == "diffusion-pipe");
  CHECK(r.family->id == "hunyuanvideo-13b");     // [model] type 'hunyuan-video' (train.py:318-320)
  CHECK(r.setup.family_guessed_from.empty());
  CHECK(r.setup.base_precision == "fp8wo-torchao");  // transformer_dtype 'float8' = float8_e4m3fn weights
  CHECK(r.schedule.checkpointing);
  CHECK(r.schedule.backend == Backend::Torch);  // activation_checkpointing = true
  CHECK(r.setup.lora_rank == 32);
  CHECK(r.setup.optimizer == "optimi-adamw");   // adamw_optimi
  // examples/dataset.toml: resolutions [512], enable_ar_bucket with geomspace(0.5, 2.0, 7), frame_buckets
  // [1, 33]. Area 512^2 = 262144; ar 0.7937: w = sqrt(262144 * 0.7937) = 456.1 -> 464, h = 574.7 -> 576:
  // 267264 px, the largest (ar 1: 262144; ar 0.5: 368 x 720 = 264960); its mirror 576 x 464 ties and
  // comes later. HunyuanVideo trains video: the 33-frame bucket.
  CHECK(r.setup.width == 464);
  CHECK(r.setup.height == 576);
  CHECK(r.setup.frames == 33);
  CHECK(r.setup.batch == 1);
  CHECK(r.rejections.empty());
  // the caching runs in the training process, before the model loads
  CHECK(r.run.other.trainer == "diffusion-pipe");
  CHECK(r.run.other.latent_caching);
  CHECK(r.run.other.caching_processes.empty());
}

TEST_CASE("diffusion-pipe: its test/config.toml names no dataset: train.py's own KeyError") {
  CHECK(detect_trainer(kDir + "test_config.toml") == "diffusion-pipe");
  try {
    read("test_config.toml");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("dataset: missing (train.py:393") != std::string::npos);
  }
}

TEST_CASE("diffusion-pipe: every example dataset TOML alone is refused naming the main config") {
  for (const char* f : {"examples/dataset.toml", "examples/cosmos_dataset.toml", "examples/flux_kontext_dataset.toml",
                        "examples/minimax_h3_dataset.toml", "examples/recommended_lumina_dataset_config.toml", "wan_dataset.toml"}) {
    CAPTURE(f);
    CHECK(detect_trainer(kDir + f) == "diffusion-pipe");
    try {
      read(f);
      FAIL("no error");
    } catch (const InputError& e) {
      CHECK(std::string(e.what()).find("dataset config") != std::string::npos);
      CHECK(std::string(e.what()).find("pass the main config") != std::string::npos);
    }
  }
}

TEST_CASE("diffusion-pipe: Wan 2.1 14B LoRA, float8, unsloth, block swap; the variant guessed from ckpt_path") {
  const TrainerRead r = read("wan14b_lora.toml");
  CHECK(r.family->id == "wan2.1-14b");  // '14b' in the path: config.json is not on this machine
  CHECK_FALSE(r.setup.family_guessed_from.empty());
  CHECK(r.setup.blocks_to_swap == 20);  // last_n: the last 20 of 40 blocks
  CHECK(r.setup.base_precision == "fp8wo-torchao");
  CHECK(r.schedule.backend == Backend::Unsloth);
  // wan_dataset.toml: [[832, 480]] is a side of sqrt(832 * 480) = 631.9; no aspect buckets: square,
  // 631.9 / 16 = 39.5 -> 39 -> 624; the 81-frame bucket
  CHECK(r.setup.width == 624);
  CHECK(r.setup.height == 624);
  CHECK(r.setup.frames == 81);
  CHECK(r.setup.adapter_weight_bytes == 2);
  CHECK(r.rejections.empty());
  REQUIRE(r.datasets.size() == 1);
  CHECK(r.datasets[0].repeats == 2);
  CHECK(r.datasets[0].listed == std::vector<std::pair<int, int>>{{624, 624}});
}

TEST_CASE("diffusion-pipe: pipeline_stages 2 holds half the Wan 14B blocks per GPU, two micro-batches in flight") {
  const TrainerRead r = read("wan14b_pipeline.toml");
  CHECK(r.rejections.empty());
  CHECK(r.setup.pipeline_stages == 2);
  CHECK(r.setup.pipeline_micro_batches == 4);
  CHECK(r.setup.optimizer == "adamw_bf16");  // torch AdamW on bfloat16 LoRA weights ([adapter] dtype = [model] dtype)
  // 40 blocks over 2 stages: the first GPU holds ceil(40 / 2) = 20; min(2 stages, 4 micro-batches) = 2 in flight
  const BlockChain one = [&] {
    TrainingSetup s = r.setup;
    s.pipeline_stages = 1;
    return analyze(*r.family, s);
  }();
  const BlockChain staged = analyze(*r.family, r.setup);
  CHECK(one.blocks.size() == 40);
  CHECK(staged.blocks.size() == 20);
  CHECK(staged.blocks[0].boundary_bytes == doctest::Approx(2 * one.blocks[0].boundary_bytes));
  CHECK(has(r.setup.notes, "first stage holding 20"));
  // bubble: 4 micro-batches in 4 + 2 - 1 = 5 slots, 1/5 idle
  CHECK(has(r.setup.notes, "20% of them idle"));
}

TEST_CASE("diffusion-pipe: a deepspeed launch script is read through its --config TOML") {
  CHECK(detect_trainer(kDir + "launch_pipeline.sh") == "diffusion-pipe");
  const TrainerRead r = read("launch_pipeline.sh");
  CHECK(r.config_file == kDir + "wan14b_pipeline.toml");
  CHECK(r.setup.pipeline_stages == 2);  // --num_gpus=2 and 2 stages: one pipeline, no data-parallel copy
  CHECK(r.rejections.empty());
  CHECK_FALSE(has(r.setup.notes, "data-parallel copies"));
}

TEST_CASE("diffusion-pipe: the asserts and refusals it stops on") {
  const TrainerRead over = read("wan13b_swap_over.toml");
  CHECK(over.family->id == "wan2.1-1.3b");  // '1.3b' in the path
  CHECK(has(over.rejections, "maximum 28"));  // 30 blocks - 2
  CHECK(over.setup.optimizer == "adamw8bit");  // AdamW8bitKahan: its shift buffer not counted, said
  CHECK(has(over.warnings, "AdamW8bitKahan"));
  const TrainerRead ltx = read("ltx_video_swap.toml");
  CHECK(ltx.family->id == "ltxvideo-0.9.5");
  CHECK(has(ltx.rejections, "Block swapping is not implemented for this model"));
  const TrainerRead chroma = read("chroma_unsloth.toml");
  CHECK(std::find(chroma.refused_keys.begin(), chroma.refused_keys.end(), "adapter.alpha") != chroma.refused_keys.end());
  CHECK(has(chroma.warnings, "learning_rate (line 6)"));  // not a key train.py reads
  CHECK(chroma.setup.optimizer == "prodigy");
  CHECK(chroma.schedule.backend == Backend::Unsloth);
}

TEST_CASE("diffusion-pipe: FLUX float8 with block swap; a dataset of two resolutions and listed aspect buckets") {
  const TrainerRead r = read("flux_float8.toml");
  CHECK(r.family->id == "flux1");
  // blocks_to_swap 10: 10 // 2 = 5 double and (10 - 5) * 2 + 1 = 11 single blocks (models/flux.py:413-415)
  CHECK(r.setup.blocks_to_swap == 16);
  CHECK(r.setup.base_precision == "fp8wo-torchao");
  // image_dataset.toml: resolutions [768, 1024], ars 3:4, 1:1, 4:3. At 1024: 3:4 is w = sqrt(1024^2 * 0.75)
  // = 886.8 -> 880, h = 1182.4 -> 1184 (1041920 px) < 1024 x 1024: the square wins; micro-batch 2
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.height == 1024);
  CHECK(r.setup.batch == 2);
  REQUIRE(r.datasets.size() == 1);
  CHECK(r.datasets[0].listed == std::vector<std::pair<int, int>>{{880, 1184}, {1024, 1024}, {1184, 880}});
  const TrainerRead q = read("qwen_image_swap.toml");
  CHECK(q.family->id == "qwen-image");
  CHECK(q.setup.blocks_to_swap == 58);  // at its maximum, 60 - 2
  CHECK(q.rejections.empty());
  const TrainerRead hv = read("hunyuan_video.toml");
  // images at micro-batch 4: 624 x 624 x 4 < the 81-frame clip at micro-batch 1
  CHECK(hv.setup.frames == 81);
  CHECK(hv.setup.batch == 1);
}

TEST_CASE("diffusion-pipe: set_toml_key inside a table") {
  const std::string text = "a = 1\n\n[model]\ntype = 'wan'\n\n[adapter]\nrank = 4\nalpha = 4\n";
  CHECK(set_toml_key(text, "model.transformer_dtype", "float8") == "a = 1\n\n[model]\ntype = 'wan'\ntransformer_dtype = \"float8\"\n\n[adapter]\nrank = 4\nalpha = 4\n");
  CHECK(set_toml_key(text, "adapter.alpha", nullptr) == "a = 1\n\n[model]\ntype = 'wan'\n\n[adapter]\nrank = 4\n");
  // a top-level key goes right before the first table header
  CHECK(set_toml_key(text, "blocks_to_swap", 8) == "a = 1\n\nblocks_to_swap = 8\n[model]\ntype = 'wan'\n\n[adapter]\nrank = 4\nalpha = 4\n");
}

TEST_CASE("diffusion-pipe: the written file reads back as planned (rewrite and emit)") {
  const Trainer& t = trainer("diffusion-pipe");
  const TrainerRead r = read("chroma_unsloth.toml");
  std::vector<std::string> notes;
  const std::vector<KnobCombo> combos = t.knob_space(*r.family, r.setup, notes);
  // 3 checkpointing values x blocks_to_swap at quarters of 34 (0, 8, 17, 25, 34)
  REQUIRE(combos.size() == 15);
  const KnobCombo& c = combos[2 * 5 + 3];  // 'unsloth', blocks_to_swap 25
  CHECK(c.knobs.at("blocks_to_swap") == 25);
  const Rewritten w = t.rewrite(r, t.memory_knobs(r, c.knobs));
  const fs::path dir = fs::temp_directory_path() / "segadvise-diffusion-pipe";
  fs::create_directories(dir);
  fs::copy_file(kDir + "image_dataset.toml", dir / "image_dataset.toml", fs::copy_options::overwrite_existing);
  {
    std::ofstream(dir / "chroma.toml") << w.text;
  }
  TrainerReadOptions o = opts();
  const TrainerRead back = read_trainer_config((dir / "chroma.toml").string(), o);
  CHECK(back.setup.blocks_to_swap == c.setup.blocks_to_swap);  // 25: 12 double + 27 single = 39 chain blocks
  CHECK(back.setup.blocks_to_swap == 39);
  CHECK(back.schedule.backend == Backend::Unsloth);
  CHECK(back.refused_keys.empty());  // alpha removed
  CHECK(back.rejections.empty());
  // emit: the config text for a plan, split into its two files, reads back the same
  const std::string text = t.config_text(*r.family, c);
  const std::size_t cut = text.find("# dataset.toml");
  REQUIRE(cut != std::string::npos);
  {
    std::ofstream(dir / "main.toml") << text.substr(0, cut);
    std::ofstream(dir / "dataset.toml") << text.substr(cut);
  }
  const TrainerRead emitted = read_trainer_config((dir / "main.toml").string(), o);
  CHECK(emitted.family->id == "chroma");
  CHECK(emitted.setup.blocks_to_swap == 39);
  CHECK(emitted.schedule.backend == Backend::Unsloth);
  CHECK(emitted.setup.width == r.setup.width);
  CHECK(emitted.setup.height == r.setup.height);
  CHECK(emitted.rejections.empty());
  fs::remove_all(dir);
}

TEST_CASE("diffusion-pipe: --num_gpus beyond the stages is data parallel; gradient release refuses it; bad values name the line") {
  const fs::path dir = fs::temp_directory_path() / "segadvise-diffusion-pipe-dp";
  fs::create_directories(dir);
  fs::copy_file(kDir + "wan_dataset.toml", dir / "wan_dataset.toml", fs::copy_options::overwrite_existing);
  std::string main = slurp(kDir + "wan14b_pipeline.toml");
  main.replace(main.find("[optimizer]\ntype = 'adamw'"), 26, "[optimizer]\ntype = 'adamw'\ngradient_release = true");
  {
    std::ofstream(dir / "pp.toml") << main;
    std::ofstream(dir / "run.sh") << "deepspeed --num_gpus 4 train.py --deepspeed --config pp.toml\n";
  }
  const TrainerRead r = read_trainer_config((dir / "run.sh").string(), opts());
  // 4 GPUs / 2 stages = 2 data-parallel copies (train.py:632); gradient release needs 1 (train.py:714)
  CHECK(has(r.setup.notes, "2 data-parallel copies"));
  CHECK(has(r.rejections, "data parallel world size must be 1"));
  CHECK(r.setup.fused_back_pass);
  // a dtype DTYPE_MAP lacks: train.py's KeyError, named with the file, line and value
  std::string bad = slurp(kDir + "wan14b_pipeline.toml");
  bad.replace(bad.find("dtype = 'bfloat16'"), 18, "dtype = 'bf16'");
  {
    std::ofstream(dir / "bad.toml") << bad;
  }
  try {
    read_trainer_config((dir / "bad.toml").string(), opts());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("bad.toml:14: model.dtype: 'bf16'") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("diffusion-pipe: Wan's variant from ckpt_path's config.json, where it is on this machine") {
  const fs::path dir = fs::temp_directory_path() / "segadvise-diffusion-pipe-wan";
  fs::create_directories(dir / "ckpt");
  fs::copy_file(kDir + "wan_dataset.toml", dir / "wan_dataset.toml", fs::copy_options::overwrite_existing);
  std::string main = slurp(kDir + "wan14b_lora.toml");
  main.replace(main.find("/models/Wan2.1-T2V-14B"), 22, (dir / "ckpt").string());
  {
    std::ofstream(dir / "wan.toml") << main;
    std::ofstream(dir / "ckpt" / "config.json") << R"({"model_type": "ti2v", "dim": 3072})";
  }
  const TrainerRead r = read_trainer_config((dir / "wan.toml").string(), opts());
  // models/wan/wan.py:164-168: ti2v with dim 3072 is Wan 2.2 TI2V 5B, its sizes rounded to 32
  CHECK(r.family->id == "wan2.2-ti2v-5b");
  CHECK(r.setup.family_guessed_from.empty());
  CHECK(r.setup.width == 640);  // sqrt(832 * 480) = 631.9; / 32 = 19.75 -> 20 -> 640
  CHECK(r.setup.height == 640);
  CHECK(r.setup.blocks_to_swap == 20);  // within its 30 - 2 = 28
  {
    std::ofstream(dir / "ckpt" / "config.json") << R"({"model_type": "t2v", "dim": 4096})";
  }
  try {
    read_trainer_config((dir / "wan.toml").string(), opts());
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("Could not autodetect model variant") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("diffusion-pipe: a config whose dataset file is not here answers at an assumed shape, said so") {
  // a Wan 2.1 14B LoRA shared without its dataset TOML (train.py:393 would open it from the working
  // directory): the family's usual shape at the file's micro-batch, never a silent one
  const fs::path dir = fs::temp_directory_path() / "segadvise-dp-nodataset";
  fs::create_directories(dir);
  std::ifstream in(kDir + "wan14b_lora.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("dataset = 'wan_dataset.toml'"), 28, "dataset = '/home/user/dp/examples/my_dataset.toml'");
  text.replace(text.find("micro_batch_size_per_gpu = 1"), 28, "micro_batch_size_per_gpu = 2");
  std::ofstream(dir / "wan.toml") << text;
  const TrainerRead r = read_trainer_config((dir / "wan.toml").string(), opts());
  REQUIRE(r.family != nullptr);
  CHECK(r.family->id == "wan2.1-14b");
  CHECK(r.shape_source.rfind("assumed", 0) == 0);
  CHECK(r.setup.shape_assumed_from.find("my_dataset.toml") != std::string::npos);  // never the family's confidence alone
  CHECK(r.setup.batch == 2);
  CHECK(r.setup.width == r.family->example.width);
  CHECK(std::any_of(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("my_dataset.toml") != std::string::npos && w.find("the shape is assumed") != std::string::npos;
  }));
  fs::remove_all(dir);
}
