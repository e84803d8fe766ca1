// `segadvise check FILE` of the other trainers' configs: detection, prediction, and the round trip
// that writes the user's own file back with only the memory knobs changed.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "check_options.hpp"
#include "scratch_dir.hpp"
#include "commands.hpp"
#include "test_util.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_config.hpp"

using namespace segadvise;
using namespace segadvise::cli;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/";

using test::slurp;

}  // namespace

// ---- check FILE for the other trainers ---------------------------------------------------------

namespace {

// `check PATH --gpu GPU` as JSON (advise with --emit EMIT and --output OUT where given), relative
// paths in the file resolved from `cwd`, with the bands of `ranges` ("" the shipped ones)
int check_file_json(const std::string& path, const std::string& cwd, const std::string& gpu, nlohmann::json& j,
                    const std::string& emit = "", const std::string& output = "", const std::string& ranges = "") {
  CheckOptions o;
  o.config = path;
  o.flags.gpu = gpu;
  o.flags.format = "json";
  if (!ranges.empty()) o.flags.ranges = ranges;
  o.read.cwd = cwd;
  o.emit = emit;
  o.output = output;
  o.advise = !emit.empty();
  std::ostringstream out;
  const int rc = run_check(o, out);
  j = nlohmann::json::parse(out.str());
  return rc;
}

int check_json(const std::string& rel, nlohmann::json& j, const std::string& emit = "", const std::string& output = "",
               const std::string& gpu = "4090") {
  // zero-width bands: these cases judge the readers, not the ranges (the point verdict decides)
  return check_file_json(kDir + rel, "/nonexistent-working-directory", gpu, j, emit, output,
                         std::string(SEGADVISE_FIXTURES_DIR) + "/check/point-ranges.json");
}

}  // namespace

TEST_CASE("check detects the trainer and predicts its config; a rejection is supported: false") {
  nlohmann::json j;
  // its own "24gb" job: the step fits; the whole run's sampling (T5 quantized with the model, the VAE
  // decode at 1024) is within the range, so the verdict is fits or borderline, never does-not-fit
  const int rc = check_json("ai-toolkit/train_lora_flux_24gb.yaml", j);
  CHECK((rc == 0 || rc == 3));
  CHECK(j["prediction"]["step_fit"] == "fits");
  CHECK(j["trainer"] == "ai-toolkit");
  CHECK(j["prediction"]["supported"] == true);
  CHECK(j["prediction"]["peak_vram_gib"].get<double>() > 0);
  CHECK(check_json("musubi/flux_train.sh", j) == 1);
  CHECK(j["prediction"]["supported"] == false);
  CHECK(j["prediction"]["reason"].get<std::string>().find("maximum 34") != std::string::npos);
}

TEST_CASE("check of a musubi TOML alone: a guessed family is said so, its caching is no phase of the run") {
  nlohmann::json j;
  check_json("musubi/qwen_image_dit_only.toml", j);
  CHECK(j["trainer"] == "musubi");
  CHECK(j["setup"]["confidence"] == "guessed");  // from the DiT file's name, never "high"
  CHECK(j["setup"]["family_guessed_from"] == "the DiT file name 'qwen_image_bf16.safetensors' (dit)");
  // musubi caches in its own scripts: the phase says their peaks and is not the run's
  const auto& caching = j["prediction"]["phases"]["startup_caching"];
  CHECK(caching["runs"] == false);
  CHECK(caching["peak_vram_gib"].is_null());
  CHECK(caching["set_by"].get<std::string>().find("separate processes") != std::string::npos);
  CHECK(j["prediction"]["peak_phase"] != "startup_caching");
  check_json("musubi/krea2_toml_only.toml", j);
  CHECK(j["setup"]["confidence"] != "guessed");  // named by network_module
  CHECK(j["prediction"]["phases"]["startup_caching"]["runs"] == false);
}

TEST_CASE("check --advise --emit SAME --output writes the user's file back with only the memory knobs changed") {
  const fs::path out = fs::temp_directory_path() / "segadvise-roundtrip-wan.sh";
  fs::remove(out);
  nlohmann::json j;
  check_json("musubi/wan14b_train.sh", j, "musubi", out.string());
  REQUIRE(j["emitted"].is_object());
  const std::string written = slurp(out.string());
  const std::string original = slurp(kDir + "musubi/wan14b_train.sh");
  CHECK(written.find("--dit /models/wan2.1_t2v_14B_bf16.safetensors") != std::string::npos);
  CHECK(written.find("--output_dir out --output_name wan14b-lora") != std::string::npos);
  CHECK(written.find("# A musubi-tuner Wan 2.1 14B LoRA run") == 0);  // the comment is kept
  // the written file reads back as the plan that was chosen (its dataset_config is relative, so it is
  // read with the fixtures folder as the working directory)
  TrainerReadOptions ro;
  ro.cwd = kDir + "musubi";
  const TrainerRead back = read_trainer_config(out.string(), ro);
  const std::string plan = j["emitted"]["plan"];
  const auto swap_at = plan.find("--blocks_to_swap ");
  const int n = swap_at == std::string::npos ? 0 : std::stoi(plan.substr(swap_at + 17));
  CHECK(back.setup.blocks_to_swap == n);
  CHECK(back.setup.lora_rank == 32);  // not a memory knob: as written
  CHECK(written != original);
  fs::remove(out);
}

TEST_CASE("round trip of a OneTrainer config and an ai-toolkit job") {
  const fs::path ot = fs::temp_directory_path() / "segadvise-roundtrip-ot.json";
  const fs::path at = fs::temp_directory_path() / "segadvise-roundtrip-at.yaml";
  nlohmann::json j;
  check_json("onetrainer/flux_old_keys.json", j, "onetrainer", ot.string(), "h100");
  REQUIRE(j["emitted"].is_object());
  const auto w = nlohmann::json::parse(slurp(ot.string()));
  CHECK(w["__version"] == 11);
  CHECK(!w.contains("layer_offload_fraction"));
  CHECK(w["transformer"].contains("offload_fraction"));
  CHECK(w["base_model_name"] == "black-forest-labs/FLUX.1-dev");
  check_json("ai-toolkit/train_lora_flux_24gb.yaml", j, "ai-toolkit", at.string());
  REQUIRE(j["emitted"].is_object());
  bool said = false;
  for (const auto& n : j["emitted"]["notes"]) said |= n.get<std::string>().find("does not keep comments") != std::string::npos;
  CHECK(said);
  TrainerReadOptions ro;
  const TrainerRead back = read_trainer_config(at.string(), ro);
  CHECK(back.family->id == "flux1");
  CHECK(back.setup.mixed_precision == "bf16");
  // the plan keeps neither the T5 nor the VAE on the GPU: the written job caches both, as planned
  const std::string written = slurp(at.string());
  CHECK(written.find("cache_text_embeddings: true") != std::string::npos);
  CHECK(written.find("cache_latents_to_disk: true") != std::string::npos);
  CHECK(back.setup.kept_model_bytes == 0);
  fs::remove(ot);
  fs::remove(at);
}

TEST_CASE("--output with another trainer's --emit is bad input") {
  nlohmann::json j;
  CHECK_THROWS_WITH_AS(check_json("musubi/wan14b_train.sh", j, "onetrainer", "/tmp/x.json"),
                       doctest::Contains("only with --emit musubi"), InputError);
}


// ---- advice in the trainer's own keys ------------------------------------------------------------

namespace {

// SimpleTuner's own keys (its checkpointing keys, the keys its phase advice names, its precision and
// streaming keys): none may appear in what check prints for another trainer's config
const std::vector<std::string> kSimpleTunerKeys = {
    "SimpleTuner config keys", "gradient_checkpointing_interval", "gradient_checkpointing_segment_stride",
    "gradient_checkpointing_backend", "gradient_checkpointing_offload_attention", "base_model_precision",
    "quantize_via", "offload_during_startup", "offload_during_save", "vae_enable_tiling", "vae_batch_size",
    "set_grads_to_none", "validation_resolution", "validation_num_video_frames", "text_encoder_1_precision",
    "text_encoder_2_precision", "ramtorch", "musubi_blocks_to_swap", "enable_group_offload", "data_backend_config"};

std::string check_text(const std::string& path, const std::string& gpu, const std::string& model = "") {
  CheckOptions o;
  o.config = path;
  o.flags.gpu = gpu;
  o.flags.model = model;
  o.read.cwd = "/nonexistent-working-directory";
  o.advise = true;
  std::ostringstream out;
  run_check(o, out);
  return out.str();
}

}  // namespace

TEST_CASE("another trainer's config: its check and advice name only that trainer's keys") {
  // every shipped example of the other trainers (fixtures/trainers/shipped) and every fixture written
  // for them, on a 24 GB and an 80 GB card
  std::vector<std::pair<std::string, std::string>> files;  // path, --model
  for (const auto& e : fs::recursive_directory_iterator(kDir)) {
    if (!e.is_regular_file()) continue;
    const std::string p = e.path().string(), name = e.path().filename().string(), ext = e.path().extension().string();
    if (name.rfind("bad_", 0) == 0 || name == "README.md" || name == "dataset_config.md") continue;
    if (ext == ".toml") files.push_back({p, "wan14b"});  // a dataset TOML does not name the model
    else if (ext == ".json" || ext == ".yaml" || ext == ".sh") files.push_back({p, ""});
  }
  // musubi's dataset TOML samples of its documentation
  const fs::path tmp = fs::temp_directory_path() / "segadvise-musubi-doc-keys";
  for (const auto& f : test::musubi_doc_samples(kDir + "shipped/musubi-tuner/docs/dataset_config.md", tmp)) files.push_back({f, "wan14b"});
  int checked = 0;
  for (const auto& entry : files)
    for (const std::string gpu : {"4090", "h100"}) {
      const std::string& f = entry.first;  // not a structured binding: CHECK_MESSAGE's lambda captures it
      const std::string& model = entry.second;
      std::string text;
      try {
        text = check_text(f, gpu, model);
      } catch (const InputError&) {
        continue;  // refused with a clear error (test_trainers.cpp counts those)
      }
      ++checked;
      for (const auto& k : kSimpleTunerKeys) CHECK_MESSAGE(text.find(k) == std::string::npos, f << " on " << gpu << ": " << k);
      // the advice is the config's own trainer's plan
      CHECK_MESSAGE(text.find("Advice for this config") != std::string::npos, f);
    }
  // 38 shipped configs (35 read: Wuerstchen x3 refused) + 13 musubi samples + the written fixtures
  CHECK(checked >= 2 * (35 + 13));
  fs::remove_all(tmp);
}

TEST_CASE("a OneTrainer plan whose sampling is over the card sets sample_after_unit NEVER, written and read back") {
  // the built-in #pixart alpha 1.0 preset on a 14.5 GiB card (13.6 GiB usable, 13.1 after the 0.5 GiB
  // headroom): its step fits (9.8 GiB), but sampling (every sample_after minutes, GenericTrainer.py) brings
  // the text encoder to the GPU (13.4 GiB); OneTrainer's own key for that phase is sample_after_unit NEVER (onetrainer.json
  // phases.fixes), so the plan sets it, and the file written back samples no more
  const fs::path out = fs::temp_directory_path() / "segadvise-onetrainer-samples.json";
  CheckOptions o;
  o.config = kDir + "shipped/onetrainer/training_presets/PixArt Alpha/#pixart alpha 1.0.json";
  o.flags.vram_gib = 14.5;
  o.flags.format = "json";
  o.flags.ranges = std::string(SEGADVISE_FIXTURES_DIR) + "/check/point-ranges.json";
  o.read.cwd = "/nonexistent-working-directory";
  o.emit = "onetrainer";
  o.output = out.string();
  o.advise = true;
  std::ostringstream text;
  run_check(o, text);
  const auto w = nlohmann::json::parse(slurp(out.string()));
  CHECK(w["sample_after_unit"] == "NEVER");
  TrainerReadOptions ro;
  const TrainerRead back = read_trainer_config(out.string(), ro);
  CHECK(!trainer("onetrainer").run_setup(back).other.samples);
  // the original samples (sample_after_unit unset: its default MINUTE)
  CHECK(trainer("onetrainer").run_setup(read_trainer_config(o.config, ro)).other.samples);
  // on an 80 GiB card sampling fits: the plan leaves the key alone
  o.flags.vram_gib = 80;
  std::ostringstream text80;
  run_check(o, text80);
  CHECK(!nlohmann::json::parse(slurp(out.string())).contains("sample_after_unit"));
  fs::remove(out);
}

TEST_CASE("a OneTrainer plan printed for a preset carries the parts' precisions its whole run is predicted with") {
  nlohmann::json j;
  check_json("shipped/onetrainer/training_presets/QwenImage/#qwen LoRA 24GB.json", j, "onetrainer");
  const auto& e = j["advice"]["emit"];
  REQUIRE(e.is_object());
  const auto c = nlohmann::json::parse(e["config"].get<std::string>());
  // the preset keeps Qwen2.5-VL at FLOAT_8 and the VAE at FLOAT_32; OneTrainer's default for an unset
  // part is FLOAT_32, which would make the caching phase 8 GiB -> 31 GiB
  CHECK(c["text_encoder"]["weight_dtype"] == "FLOAT_8");
  CHECK(c["vae"]["weight_dtype"] == "FLOAT_32");
  CHECK(c["text_encoder"]["train"] == false);
}

TEST_CASE("an ai-toolkit plan keeps the job's optimizer and text-encoder quantization, which its run is predicted with") {
  // Lumina's full fine-tune runs adafactor (AdamW's default state would be 4x); its LoRA quantizes Gemma
  // a pair, not a structured binding: INFO captures it, which C++17 does not allow of a binding (clang)
  for (const auto& rel_line : std::vector<std::pair<std::string, std::string>>{
           {"ai-toolkit/train_full_fine_tune_lumina.yaml", "optimizer: \"adafactor\""}, {"ai-toolkit/train_lora_lumina.yaml", "quantize_te: true"}}) {
    const std::string& rel = rel_line.first;
    nlohmann::json j;
    check_json(rel, j, "ai-toolkit");
    const auto& e = j["advice"]["emit"];
    REQUIRE(e.is_object());
    INFO(rel);
    CHECK(e["config"].get<std::string>().find(rel_line.second) != std::string::npos);
  }
}

// ---- every written and every printed plan reads back as predicted --------------------------------

namespace {

// The trainer fixtures (their own repositories' shipped configs among them): path and trainer
std::vector<std::pair<std::string, std::string>> trainer_fixture_files() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& e : fs::recursive_directory_iterator(kDir)) {
    if (!e.is_regular_file()) continue;
    const std::string p = e.path().string();
    const std::string ext = e.path().extension().string();
    const std::string name = e.path().filename().string();
    const std::string rel = p.substr(kDir.size());
    const bool dp_toml = rel.rfind("diffusion_pipe/", 0) == 0 && ext == ".toml";  // diffusion-pipe's main TOMLs
    if (name.rfind("bad_", 0) == 0 || (ext != ".json" && ext != ".yaml" && ext != ".sh" && !dp_toml)) continue;
    const std::string t = dp_toml                                            ? "diffusion-pipe"
                          : rel.find("diffusion_pipe") != std::string::npos ? ""
                          : rel.find("ai-toolkit") != std::string::npos   ? "ai-toolkit"
                          : rel.find("onetrainer") != std::string::npos ? "onetrainer"
                          : rel.find("musubi") != std::string::npos     ? "musubi"
                          : rel.find("diffusers") != std::string::npos  ? "diffusers"
                                                                        : "";
    if (!t.empty()) out.emplace_back(p, t);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("every config --advise --emit SAME --output writes reads back through its reader as the plan was predicted") {
  const test::Scratch scratch("segadvise-roundtrip-all-");  // per process: never shared with another run
  const fs::path dir = scratch.dir;
  int written = 0, pinned = 0;
  for (const auto& file : trainer_fixture_files())
    for (const char* gpu : {"4090", "h100"}) {
      const std::string path = file.first, t = file.second, card = gpu;  // not a structured binding: INFO captures them
      const std::string cwd = fs::path(path).parent_path().string();
      const fs::path out = dir / (std::to_string(written + pinned) + fs::path(path).extension().string());
      fs::remove(out);
      nlohmann::json j;
      int rc = 2;
      try {
        rc = check_file_json(path, cwd, gpu, j, t, out.string());
      } catch (const InputError&) {
        continue;  // a file segadvise cannot check (a generation job, a family without sourced facts): exit 2
      }
      INFO(path << " on " << card << " (rc " << rc << ")");
      if (!j.contains("emitted") || !j["emitted"].is_object()) {
        CHECK(!fs::exists(out));  // nothing fits: nothing written
        continue;
      }
      // a store_true key of a musubi --config_file a plan turns off cannot be switched off from the
      // command line: such a plan is not chosen where another fits (none here is left without one)
      bool by_hand = false;
      for (const auto& n : j["emitted"]["notes"]) by_hand |= n.get<std::string>().find("cannot switch it off") != std::string::npos;
      if (by_hand) {
        ++pinned;
        continue;
      }
      const auto& emit = j["advice"]["emit"];
      const auto& plan = emit["plans"][emit["best"].get<int>()];
      nlohmann::json back;
      check_file_json(out.string(), cwd, gpu, back);
      const auto& p = back["prediction"];
      REQUIRE(p["supported"] == true);
      CHECK(p["step_peak_vram_gib"].get<double>() == doctest::Approx(plan["peak_vram_gib"].get<double>()));
      CHECK(p["step_time_s"].get<double>() == doctest::Approx(plan["step_time_s"].get<double>()));
      CHECK(p["phases"] == emit["phases"]);  // the whole run printed for the plan is the written file's
      ++written;
    }
  CHECK(written >= 100);
  CHECK(pinned == 0);
}

TEST_CASE("every plan --advise --emit SAME prints reads back through its reader as the plan was predicted") {
  const test::Scratch scratch("segadvise-printed-all-");
  const fs::path dir = scratch.dir;
  int printed = 0;
  for (const auto& file : trainer_fixture_files())
    for (const char* gpu : {"4090", "h100"}) {
      const std::string path = file.first, t = file.second, card = gpu;  // not a structured binding: INFO captures them
      nlohmann::json j;
      try {
        check_file_json(path, fs::path(path).parent_path().string(), gpu, j, t);
      } catch (const InputError&) {
        continue;
      }
      INFO(path << " on " << card);
      const auto& emit = j["advice"]["emit"];
      if (emit["best"].is_null()) continue;
      const auto& plan = emit["plans"][emit["best"].get<int>()];
      const std::string text = emit["config"];
      const std::string ext = t == "ai-toolkit" ? ".yaml" : t == "onetrainer" ? ".json" : t == "diffusion-pipe" ? ".toml" : ".sh";
      const fs::path out = dir / (std::to_string(printed) + ext);
      if (t == "diffusion-pipe") {
        // the main TOML, then the dataset.toml it names (after its "# dataset.toml" comment)
        const std::size_t cut = text.find("# dataset.toml");
        REQUIRE(cut != std::string::npos);
        std::ofstream(out) << text.substr(0, cut);
        std::ofstream(dir / "dataset.toml") << text.substr(cut);
      } else if (t == "musubi") {
        // the flags line, then the dataset.toml it names (its "# dataset.toml" comment and the file)
        const std::size_t nl1 = text.find('\n'), nl2 = text.find('\n', nl1 + 1), nl3 = text.find('\n', nl2 + 1);
        REQUIRE(nl3 != std::string::npos);
        std::ofstream(out) << text.substr(nl1 + 1, nl2 - nl1);
        std::ofstream(dir / "dataset.toml") << text.substr(nl3 + 1);
      } else {
        std::ofstream(out) << text;
      }
      nlohmann::json back;
      check_file_json(out.string(), dir.string(), gpu, back);
      const auto& p = back["prediction"];
      REQUIRE(p["supported"] == true);
      CHECK(p["step_peak_vram_gib"].get<double>() == doctest::Approx(plan["peak_vram_gib"].get<double>()));
      CHECK(p["step_time_s"].get<double>() == doctest::Approx(plan["step_time_s"].get<double>()));
      CHECK(p["phases"] == emit["phases"]);
      ++printed;
    }
  CHECK(printed >= 100);
}

TEST_CASE("musubi: a full fine-tune is planned on its full fine-tune script, Wan 2.2's idle DiT offload never with block swap") {
  nlohmann::json j;
  check_file_json(kDir + "musubi/qwen_full_bf16.sh", kDir + "musubi", "4090", j, "musubi");
  const auto& emit = j["advice"]["emit"];
  REQUIRE(emit["best"].is_number());
  const auto& best = emit["plans"][emit["best"].get<int>()];
  // qwen_image_train.py with the user's --full_bf16, Adafactor and its fused backward pass
  CHECK(emit["config"].get<std::string>().find("python qwen_image_train.py ") != std::string::npos);
  CHECK(best["knobs"]["full_bf16"] == true);
  CHECK(best["knobs"]["fused_backward_pass"] == true);
  CHECK(best["knobs"]["optimizer_type"] == "adafactor");
  CHECK(!best["knobs"].contains("network_dim"));
  check_file_json(kDir + "musubi/wan22_high_low.sh", kDir + "musubi", "h100", j, "musubi");
  int idle_offloaded = 0;
  for (const auto& p : j["advice"]["emit"]["plans"])
    if (p["knobs"].value("offload_inactive_dit", false)) {
      ++idle_offloaded;
      CHECK(!p["knobs"].contains("blocks_to_swap"));  // wan_train_network.py:82-86
    }
  CHECK(idle_offloaded == 3);  // no checkpointing, checkpointing, checkpointing + CPU offload
}

TEST_CASE("the file written back drops what the trainer stops on: --sage_attn, a flag the script lacks, a WxH --resolution") {
  const test::Scratch scratch("segadvise-refused-");
  const fs::path out = scratch.dir / "refused.sh";
  nlohmann::json j;
  // the file --advise --emit TRAINER --output writes for fixture `rel` (one must be written)
  const auto written = [&](const std::string& rel, const std::string& gpu) {
    const std::string t = rel.substr(0, rel.find('/'));
    check_file_json(kDir + rel, kDir + t, gpu, j, t, out.string());
    REQUIRE(j["emitted"].is_object());
    return slurp(out.string());
  };
  std::string w = written("musubi/wan13b_sage.sh", "4090");
  CHECK(w.find("--sage_attn") == std::string::npos);
  CHECK(w.find("--sdpa") != std::string::npos);
  CHECK(written("diffusers/sdxl_dreambooth_cache_latents.sh", "4090").find("--cache_latents") == std::string::npos);  // the script has none
  // 1024x576 is predicted at the square of its larger edge, which the file then asks for
  w = written("diffusers/flux_lora_wxh.sh", "h100");
  CHECK(w.find("--resolution 1024 ") != std::string::npos);
  CHECK(w.find("1024x576") == std::string::npos);
  // flux_config.toml's blocks_to_swap 56 (over FLUX.1's 34) is overridden on the command line by the plan's
  // (--blocks_to_swap 17 moves the last 8 double and 19 single blocks, flux/flux_models.py:956-961)
  CHECK(written("musubi/flux_train.sh", "4090").find("flux_kontext_train_network.py --blocks_to_swap 17 ") != std::string::npos);
  // (23.0 GiB of the 4090's 24.0 left for the reserved peak: checkpointing without CPU offload fits)
  CHECK(j["emitted"]["plan"] == "gradient checkpointing, --blocks_to_swap 17");
  // on 80 GB no checkpointing is fastest and swaps nothing (--blocks_to_swap 0 overrides the TOML's), but
  // flux_config.toml's gradient_checkpointing = true cannot be switched off from the command line: the
  // plan is the fastest one that keeps it
  CHECK(written("musubi/flux_train.sh", "h100").find("--blocks_to_swap 0 ") != std::string::npos);
  CHECK(j["emitted"]["plan"] == "gradient checkpointing");
  bool said = false;
  for (const auto& n : j["advice"]["emit"]["notes"]) said |= n.get<std::string>().find("'no checkpointing' would need flux_config.toml") == 0;
  CHECK(said);
}

TEST_CASE("ai-toolkit: the job written back keeps quoted strings quoted; EMA is printed nested, as ai-toolkit reads it") {
  const test::Scratch scratch("segadvise-quoted-");
  const fs::path out = scratch.dir / "quoted.yaml";
  nlohmann::json j;
  check_file_json(kDir + "ai-toolkit/train_lora_flux_24gb.yaml", kDir + "ai-toolkit", "4090", j, "ai-toolkit", out.string());
  REQUIRE(j["emitted"].is_object());
  const YAML::Node back = YAML::LoadFile(out.string());
  CHECK(back["meta"]["version"].Tag() == "!");  // '1.0' stays a string, not the float 1.0
  CHECK(back["meta"]["version"].as<std::string>() == "1.0");
  // the same job with EMA on: its plan says so in train.ema_config.use_ema
  std::string text = slurp(kDir + "ai-toolkit/train_lora_flux_24gb.yaml");
  const std::size_t at = text.find("      train:\n");
  REQUIRE(at != std::string::npos);
  text.insert(at + 13, "        ema_config:\n          use_ema: true\n");
  const fs::path ema = scratch.dir / "ema.yaml";
  std::ofstream(ema) << text;
  check_file_json(ema.string(), kDir + "ai-toolkit", "4090", j, "ai-toolkit");
  const std::string printed = j["advice"]["emit"]["config"];
  CHECK(printed.find("\n        ema_config:\n          use_ema: true\n") != std::string::npos);
  // samples at the sample section's size (832x480, 40 frames), not the training shape (632x632, 1 frame)
  check_file_json(kDir + "ai-toolkit/train_lora_wan21_1b_24gb.yaml", kDir + "ai-toolkit", "4090", j, "ai-toolkit");
  CHECK(j["prediction"]["phases"]["validation"]["set_by"].get<std::string>().find("1 x 832x480x40f") != std::string::npos);
  CHECK(j["advice"]["emit"]["config"].get<std::string>().find("      sample:\n        width: 832\n        height: 480\n        num_frames: 40\n") !=
        std::string::npos);
}

TEST_CASE("OneTrainer: an embedding plan prints EMBEDDING; a full fine-tune's plan writes its fused back pass on or off") {
  nlohmann::json j;
  check_file_json(kDir + "onetrainer/sd15_embedding.json", kDir + "onetrainer", "4090", j, "onetrainer");
  const auto cfg = nlohmann::json::parse(j["advice"]["emit"]["config"].get<std::string>());
  CHECK(cfg["training_method"] == "EMBEDDING");
  CHECK(!cfg.contains("lora_rank"));
  // #anima_finetune.json's optimizer_defaults switch the fused back pass on: every plan says which it runs
  check_file_json(kDir + "onetrainer/#anima_finetune.json", kDir + "onetrainer", "4090", j, "onetrainer");
  for (const auto& p : j["advice"]["emit"]["plans"]) {
    INFO(p["label"].get<std::string>());
    const bool fused = p["label"].get<std::string>().find("fused back pass") != std::string::npos;
    CHECK(p["knobs"]["optimizer.fused_back_pass"] == fused);
  }
}
