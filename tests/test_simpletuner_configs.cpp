// SimpleTuner configs as users write them, read as SimpleTuner bc8e6ab (and the legacy train.sh of
// c1d20f5b) reads them: paths resolved from the trainer's working directory, an author's path whose file
// sits beside the config, config.env (current and legacy), config.json.txt, a config without
// model_family, the multi-GPU examples, and every shipped example fixture.
// Fixtures: tests/fixtures/check/simpletuner/ (written from the loaders' source; each test states the
// reading expected, derived by hand) and tests/fixtures/examples/simpletuner/examples/.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "check_options.hpp"
#include "commands.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "scratch_dir.hpp"
#include "test_util.hpp"

using namespace segadvise;
using namespace segadvise::cli;
namespace fs = std::filesystem;

namespace {

const std::string kSt = std::string(SEGADVISE_FIXTURES_DIR) + "/check/simpletuner/";
const std::string kExamples = std::string(SEGADVISE_FIXTURES_DIR) + "/examples/simpletuner/examples/";

TrainerReadOptions at(const std::string& cwd = "/nonexistent-working-directory") {
  TrainerReadOptions o;
  o.cwd = cwd;
  return o;
}

TrainerRead read(const std::string& config, const TrainerReadOptions& o = at()) {
  return read_trainer_config(kSt + config, o);
}

bool any_has(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines)
    if (l.find(part) != std::string::npos) return true;
  return false;
}

std::string normal(const std::string& p) { return fs::path(p).lexically_normal().string(); }

// runs check like main() (InputError -> 2), JSON output
int check(const std::string& config, nlohmann::json& j, std::string& err, const std::string& model = "") {
  CheckOptions o;
  o.config = config;
  o.flags.gpu = "h100";
  o.flags.format = "json";
  o.flags.model = model;
  o.read = at();
  std::ostringstream out;
  try {
    const int rc = run_check(o, out);
    j = nlohmann::json::parse(out.str());
    return rc;
  } catch (const InputError& e) {
    err = e.what();
    return 2;
  }
}

}  // namespace

TEST_CASE("a repository's config/config.json: config/multidatabackend.json is the repository root's, from any folder") {
  // train.sh runs from the repository root (the folder holding config/), and factory.py opens
  // data_backend_config relative to it: repo/config/multidatabackend.json, never the decoy
  // repo/config/config/multidatabackend.json (256 px) a lookup beside the config would find first.
  // Its training backend: 768 px square crop, its own batch 2 (the text-embed backend is skipped).
  for (const std::string& cwd : {std::string("/nonexistent-working-directory"), kSt + "repo/config", kSt + "repo"}) {
    CAPTURE(cwd);
    const TrainerRead r = read("repo/config/config.json", at(cwd));
    CHECK(r.trainer == "simpletuner");
    CHECK(r.family->id == "flux1");
    CHECK(normal(r.data_backend_path) == normal(kSt + "repo/config/multidatabackend.json"));
    CHECK(r.setup.width == 768);
    CHECK(r.setup.height == 768);
    CHECK(r.setup.batch == 2);
    CHECK(r.setup.family_guessed_from.empty());
    CHECK_FALSE(any_has(r.warnings, "does not exist here"));
  }
  CHECK(implied_repo_root(kSt + "repo/config/lycoris/config.json") == normal(kSt + "repo"));
  CHECK(implied_repo_root(kSt + "author/config-posix.json").empty());
}

TEST_CASE("config/<ENV>/config.json: lycoris_config through resolve_config_path, the data backend from the root") {
  // lycoris_config 'config/lycoris/lycoris_config.json': the config dir (repo/config/lycoris) + value and
  // + the value with `config/` trimmed do not exist; the working directory (repo) + value does
  // (paths.py:180-211). Flux.2 klein 9B, LoKr factor 16 on its attention classes, 8 on Flux2FeedForward;
  // the backend: pixel_area 1024 square crop.
  const TrainerRead r = read("repo/config/lycoris/config.json");
  CHECK(r.family->id == "flux2-klein-9b");
  CHECK(normal(r.data_backend_path) == normal(kSt + "repo/config/lycoris/multidatabackend.json"));
  CHECK(any_has(r.setup.notes, "LyCORIS lokr: attention factor 16, FFN factor 8"));
  CHECK(any_has(r.setup.notes, normal(kSt + "repo/config/lycoris/lycoris_config.json")));
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.height == 1024);
  CHECK(r.setup.batch == 1);
  const auto c = candidate_paths("config/lycoris/lycoris_config.json", kSt + "repo/config/lycoris/config.json", "/w",
                                 "lycoris_config");
  REQUIRE(c.size() >= 3);
  CHECK(c[0] == normal(kSt + "repo/config/lycoris/config/lycoris/lycoris_config.json"));
  CHECK(c[1] == normal(kSt + "repo/config/lycoris/lycoris/lycoris_config.json"));
  CHECK(c[2] == normal(kSt + "repo/config/lycoris/lycoris_config.json"));
}

TEST_CASE("a data backend path from the author's machine: the file of that name beside the config, said in a warning") {
  // /workspace/SimpleTuner/config/sdxl/multidatabackend.json and C:\Users\me\SimpleTuner\config\
  // multidatabackend.json exist nowhere here; author/multidatabackend.json (1024 px square crop) is used,
  // with the config's batch 3
  for (const std::string& config : {std::string("author/config-posix.json"), std::string("author/config-windows.json")}) {
    CAPTURE(config);
    const TrainerRead r = read(config);
    CHECK(r.family->id == "sdxl");
    CHECK(normal(r.data_backend_path) == normal(kSt + "author/multidatabackend.json"));
    CHECK(any_has(r.warnings, "does not exist here (a path on the author's machine"));
    CHECK(any_has(r.warnings, "using " + normal(kSt + "author/multidatabackend.json")));
    CHECK(r.setup.width == 1024);
    CHECK(r.setup.batch == 3);
  }
  // an accelerate config at the author's /root/.cache/huggingface/accelerate/default_config.yaml: the one
  // beside the config (MULTI_GPU, 2 processes) is used, said in a warning
  const TrainerRead acc = read("author/config-accelerate.json");
  CHECK(acc.setup.multi_gpu.world() == 2);
  CHECK(acc.setup.multi_gpu.strategy == Strategy::ddp);
  CHECK(any_has(acc.warnings, "accelerate_config '/root/.cache/huggingface/accelerate/default_config.yaml' does not exist here"));
  // nothing of that name anywhere: the shape is assumed, and the warning lists every path tried, the
  // lookups beside the config too
  const TrainerRead miss = read("author/config-missing.json");
  CHECK(miss.shape_source.rfind("assumed: ", 0) == 0);
  CHECK(any_has(miss.warnings, "data_backend_config 'G:/training/config/nowhere-to-be-found.json' not found"));
  CHECK(any_has(miss.warnings, normal(kSt + "author/nowhere-to-be-found.json")));
  CHECK(any_has(miss.warnings, normal(kSt + "author/config/nowhere-to-be-found.json")));
}

TEST_CASE("config.env as the current env loader maps it") {
  // env_file.py: MODEL_FAMILY -> --model_family flux, TRAIN_BATCH_SIZE 1, RESOLUTION 1024 pixel_area,
  // BASE_MODEL_PRECISION int8-quanto, DATALOADER_CONFIG config/multidatabackend.json (from the root:
  // envrepo/config/multidatabackend.json, no crop: a square source at 1024x1024),
  // TRAINER_EXTRA_ARGS --model_flavour=dev --lora_rank=32; USE_EMA=false passes nothing; FLUX (a legacy
  // variable) and PURE_BF16 are not in env_to_args_map
  const TrainerRead r = read("envrepo/config/config.env");
  CHECK(r.trainer == "simpletuner");
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.lora_rank == 32);
  CHECK(r.setup.base_precision == "int8-quanto");
  CHECK(r.setup.model_type == ModelType::Lora);
  CHECK(normal(r.data_backend_path) == normal(kSt + "envrepo/config/multidatabackend.json"));
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.height == 1024);
  CHECK(r.setup.batch == 1);
  CHECK(r.setup.family_guessed_from.empty());
  CHECK(any_has(r.warnings, "FLUX: legacy train.sh variables the current env loader ignores"));
  CHECK(any_has(r.warnings, "PURE_BF16: not read by SimpleTuner's env loader"));
  CHECK(any_has(r.warnings, "USE_EMA =false: the env loader passes no flag for false"));
}

TEST_CASE("a legacy config.env as the old train.sh passed it: FLUX=true names the family") {
  // no MODEL_FAMILY: train.sh (c1d20f5b) sources it with bash; FLUX=true -> --flux -> flux
  // (set_model_family); RESOLUTION 512 with train.sh's default RESOLUTION_TYPE pixel, the backend's square
  // crop -> 512x512; TRAIN_BATCH_SIZE 2; LORA_RANK=64 is passed after TRAINER_EXTRA_ARGS (train.sh:397-402),
  // so it wins over --lora_rank=4; MINIMUM_RESOLUTION=$RESOLUTION expands to 512
  const TrainerRead r = read("legacyrepo/config/config.env");
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.lora_rank == 64);
  CHECK(r.setup.width == 512);
  CHECK(r.setup.height == 512);
  CHECK(r.setup.batch == 2);
  CHECK(r.raw["minimum_image_size"] == "512");
  CHECK(r.raw["resolution_type"] == "pixel");
  CHECK(r.setup.family_guessed_from.empty());
  CHECK(any_has(r.warnings, "the family from FLUX=true"));
  CHECK(any_has(r.warnings, "MY_OWN_SETTING: not read by the legacy train.sh"));
  CHECK(r.rejections.empty());
}

TEST_CASE("a legacy config.env that names no family: SDXL, labelled a guess; --model names it") {
  // set_model_family: no flag set -> sdxl (trainer.py:262-263); USE_GRADIENT_CHECKPOINTING=false turns it
  // off (train.sh:330-333); 1024 px square crop, batch 4
  const TrainerRead r = read("legacy-sdxl/config/config.env");
  CHECK(r.family->id == "sdxl");
  CHECK(r.setup.family_guessed_from.find("legacy train.sh's default sdxl") != std::string::npos);
  CHECK_FALSE(r.schedule.checkpointing);
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.batch == 4);
  TrainerReadOptions o = at();
  o.model = "flux1";
  const TrainerRead named = read("legacy-sdxl/config/config.env", o);
  CHECK(named.family->id == "flux1");
  CHECK(named.setup.family_guessed_from.empty());
  CHECK_FALSE(any_has(named.warnings, "overridden by --model"));
  nlohmann::json j;
  std::string err;
  const int rc = check(kSt + "legacy-sdxl/config/config.env", j, err);
  CHECK(rc != 2);
  CHECK(j["setup"]["family_guessed_from"].get<std::string>().find("sdxl") != std::string::npos);
}

TEST_CASE("a JSON config saved as config.json.txt is detected and read as config.json") {
  // data_backend_config 'config/multidatabackend.json' with no config/ folder around: the config's folder
  // with `config/` trimmed (paths.py:187-203) finds jsontxt/multidatabackend.json; 1024 px square, batch 2
  CHECK(detect_trainer(kSt + "jsontxt/config.json.txt") == "simpletuner");
  const TrainerRead r = read("jsontxt/config.json.txt");
  CHECK(r.family->id == "sdxl");
  CHECK(r.setup.lora_rank == 32);
  CHECK(normal(r.data_backend_path) == normal(kSt + "jsontxt/multidatabackend.json"));
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.batch == 2);
}

TEST_CASE("config.toml with model_family is SimpleTuner's, read as its TOML loader maps it") {
  // toml_file.py + cli_utils.py mapping_to_cli_args: top-level keys as flags (sdxl LoRA rank 8, batch 2,
  // pixel_area 1024 with the backend's square crop -> 1024x1024), validation_prompt's list as its last
  // item, the [webhook] table passed to no flag; config/multidatabackend.json from the repository root
  CHECK(detect_trainer(kSt + "tomlrepo/config/config.toml") == "simpletuner");
  const TrainerRead r = read("tomlrepo/config/config.toml");
  CHECK(r.family->id == "sdxl");
  CHECK(r.setup.lora_rank == 8);
  CHECK(r.setup.batch == 2);
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.height == 1024);
  CHECK(normal(r.data_backend_path) == normal(kSt + "tomlrepo/config/multidatabackend.json"));
  CHECK(r.raw["validation_prompt"] == "a painting of a teddy bear");
  CHECK(any_has(r.warnings, "[webhook]: a table is passed to no flag"));
  // musubi's TOMLs name no model_family: still musubi's
  CHECK(detect_trainer(std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/musubi/flux_config.toml") == "musubi");
}

TEST_CASE("a config without model_family: refused, naming --model; --model names its family") {
  const std::string e = test::input_error_of([] { read("no-family.json"); });
  CHECK(e.find("model_family: missing (SimpleTuner requires it") != std::string::npos);
  CHECK(e.find("pass --model") != std::string::npos);
  // with --model sdxl: the backend's square crop at the config's 512 px, batch 1
  TrainerReadOptions o = at();
  o.model = "sdxl";
  const TrainerRead r = read("no-family.json", o);
  CHECK(r.family->id == "sdxl");
  CHECK(r.setup.width == 512);
  CHECK(r.setup.batch == 1);
  CHECK(r.setup.family_guessed_from.empty());
  // --model over a model_family it differs from: used, said in a warning
  TrainerReadOptions over = at();
  over.model = "flux1";
  CHECK(any_has(read("jsontxt/config.json.txt", over).warnings, "'sdxl' overridden by --model flux1"));
}

TEST_CASE("maximum_image_size without target_downsample_size is a rejection; the other way round a warning") {
  nlohmann::json j;
  std::string err;
  CHECK(check(kSt + "max-image-size.json", j, err) == 1);
  CHECK(j["prediction"]["supported"] == false);
  CHECK(j["prediction"]["reason"].get<std::string>().find("validators.py:65-68") != std::string::npos);
  const TrainerRead t = read("target-size.json");
  CHECK(t.rejections.empty());
  CHECK(any_has(t.warnings, "target_downsample_size: not used without maximum_image_size"));
}

TEST_CASE("a file no trainer reads: the error says what each trainer's files look like") {
  const fs::path f = fs::temp_directory_path() / "segadvise-unknown-config.cfg";
  std::ofstream(f) << "resolution = 1024\n";
  const std::string e = test::input_error_of([&] { detect_trainer(f.string()); });
  CHECK(e.find("SimpleTuner a config.json with model_family") != std::string::npos);
  CHECK(e.find("config.env") != std::string::npos);
  CHECK(e.find("ai-toolkit a job YAML") != std::string::npos);
  CHECK(e.find("OneTrainer") != std::string::npos);
  fs::remove(f);
}

TEST_CASE("SimpleTuner's 8xH100 context-parallel examples: the world their context_parallel_size needs, per rank") {
  // context_parallel_size 2, no num_processes: the smallest world it divides is 2 (context_parallel.py:61-88)
  for (const char* ex : {"wan2.1-t2v-14b-480p-8xh100.peft-lora+cp-fa3", "wan2.1-i2v-14b-480p-8xh100.peft-lora+cp-fa3",
                         "wan2.1-i2v-14b-720p-8xh100.peft-lora+cp-fa3", "ltxvideo2-2.3-dev-720p-8xh100.peft-lora+cp-fa3",
                         "ltxvideo2-2.3-dev-1080p-8xh100.peft-lora+cp-fa3"}) {
    CAPTURE(ex);
    const TrainerRead r = read_trainer_config(kExamples + ex + "/config.json", at());
    CHECK(r.setup.multi_gpu.context_parallel == 2);
    CHECK(r.setup.multi_gpu.world() == 2);
    CHECK(any_has(r.setup.notes, "world size 2 taken from context_parallel_size 2"));
    nlohmann::json j;
    std::string err;
    const int rc = check(kExamples + ex + "/config.json", j, err);
    CHECK(err == "");
    CHECK(rc != 2);
    CHECK(j["prediction"]["supported"] == true);
  }
}

TEST_CASE("every shipped SimpleTuner example is answered, at an assumed shape where its repository lacks its data backend") {
  int answered = 0;
  for (const auto& e : fs::directory_iterator(kExamples)) {
    const fs::path config = e.path() / "config.json";
    if (!fs::is_regular_file(config)) continue;
    CAPTURE(config.string());
    nlohmann::json j;
    std::string err;
    const int rc = check(config.string(), j, err);
    CHECK(err == "");
    if (rc == 2) continue;
    ++answered;
    CHECK(j["prediction"]["supported"] == true);
  }
  CHECK(answered == 47);  // every example the fixtures hold, the five 8xH100 ones among them
}

TEST_CASE("a config whose data-backend file is not on this machine answers at an assumed shape, said so") {
  // mageflow-image-12g: resolution 512 (pixel), train_batch_size 2, its backend file not shipped. One image
  // backend with no size keys of its own falls back to the config's (data_backend/config/image.py:130-131):
  // a square 512 px source at pixel resolution 512 -> 512x512, batch 2
  const std::string cfg = kSt + "unshipped/mageflow-image-12g/config.json";
  const TrainerRead r = read_trainer_config(cfg, at());
  CHECK(r.setup.width == 512);
  CHECK(r.setup.height == 512);
  CHECK(r.setup.frames == 1);
  CHECK(r.setup.batch == 2);
  CHECK(r.shape_source.rfind("assumed: ", 0) == 0);
  CHECK(r.setup.shape_assumed_from.find("config/examples/multidatabackend-mageflow-512-square.json") != std::string::npos);
  CHECK(r.inputs == std::vector<std::string>{cfg});  // nothing else was read
  // the warning names the path, what SimpleTuner does without it, and the shape with where it comes from
  CHECK(any_has(r.warnings, "data_backend_config 'config/examples/multidatabackend-mageflow-512-square.json' not found"));
  CHECK(any_has(r.warnings, "SimpleTuner stops at start without it (FileNotFoundError"));
  CHECK(any_has(r.warnings, "factory.py:1839-1840"));
  CHECK(any_has(r.warnings, "the shape is assumed, 512x512 (one image backend with no size keys of its own: the config's "
                            "resolution and resolution_type), batch 2 (the config's train_batch_size)"));
  // check answers, labelled an assumption rather than the family's model confidence
  nlohmann::json j;
  std::string err;
  const int rc = check(cfg, j, err);
  CHECK(err == "");
  CHECK(rc != 2);
  CHECK(j["setup"]["confidence"] == "assumed shape");
  CHECK(j["setup"]["shape_assumed_from"].get<std::string>().find("multidatabackend-mageflow-512-square.json") != std::string::npos);
}

TEST_CASE("a video config whose data-backend file is not on this machine takes the family's example frames") {
  // wan2.1 1.3B (example: 81 frames, families/data/wan2.1-1.3b.json), resolution 512 (pixel), batch 1
  const TrainerRead r = read_trainer_config(kSt + "unshipped/wan-video-141g/config.json", at());
  REQUIRE(r.family != nullptr);
  CHECK(r.family->id == "wan2.1-1.3b");
  CHECK(r.setup.frames == 81);  // 81 = 4 x 20 + 1 keeps Wan's 4n+1 rule
  CHECK(r.setup.batch == 1);
  // pixel 512 on the assumed 16:9 video source: the shorter edge 512, the longer 512 x 16/9 = 910.2, down
  // to the alignment's multiple 896 (56 x 16)
  CHECK(r.setup.width == 896);
  CHECK(r.setup.height == 512);
  CHECK(any_has(r.warnings, "Wan 2.1 T2V 1.3B's example 81 frames"));
  CHECK(any_has(r.warnings, "the shape is assumed, "));
  CHECK(any_has(r.warnings, "x81 frames (one video backend"));
}

TEST_CASE("a SimpleTuner data-backend list checked by itself says what it is and which config names it") {
  // backends-24g.json is a list of backends (factory.py loads it as a list): it names no model
  const std::string list = kSt + "unshipped/backends-24g.json";
  const std::string e = test::input_error_of([&] { read_trainer_config(list, at()); });
  CHECK(e.find(list + ": a SimpleTuner data-backend list (2 backend(s); training: 'songs-24g' (audio))") != std::string::npos);
  CHECK(e.find("not a training config") != std::string::npos);
  CHECK(e.find("(named by " + normal(kSt + "unshipped/music-24g/config.json") + ")") != std::string::npos);
  // a JSON list of anything else is still no config
  const fs::path other = fs::temp_directory_path() / "segadvise-list-of-numbers.json";
  std::ofstream(other) << "[1, 2, 3]\n";
  const std::string e2 = test::input_error_of([&] { read_trainer_config(other.string(), at()); });
  CHECK(e2.find("a JSON config must be an object") != std::string::npos);
  fs::remove(other);
}

TEST_CASE("Kontext's reference_strict set linked by conditioning_data joins the image tokens; other flavours say it is not counted") {
  // the quickstart's edit set (1024 px) names one reference_strict set: 1 reference image
  const TrainerRead r = read("kontext-reference.json");
  CHECK(r.setup.reference_images == 1);
  CHECK(r.setup.width == 1024);
  CHECK(any_has(r.setup.notes, "1 reference conditioning set (conditioning_data): flux:kontext appends"));
  nlohmann::json j;
  std::string err;
  REQUIRE(check(kSt + "kontext-reference.json", j, err) != 2);
  // 1024 px / (VAE 8 x patch 2) = 64 per side: 4096 tokens, twice with the reference's
  CHECK(j["setup"]["image_tokens"].get<double>() == 8192);

  static const test::Scratch dir("segadvise-kontext-");
  auto config = [&](const std::string& flavour, const std::string& backends) {
    dir.write("db.json", backends);
    return dir.write("c.json", R"({"model_family": "flux", "model_flavour": ")" + flavour +
                                   R"(", "model_type": "lora", "data_backend_config": "db.json"})");
  };
  const std::string two = R"([{"id": "edits", "resolution": 512, "conditioning_data": ["a", "m", "b"]},
    {"id": "a", "conditioning_type": "reference_strict"}, {"id": "b", "conditioning_type": "reference_loose"},
    {"id": "m", "conditioning_type": "mask"}])";
  // a mask set provides no latents: two reference sets
  CHECK(read_trainer_config(config("kontext", two), at()).setup.reference_images == 2);
  // dev is not a flavour whose reference latents join the sequence here: 0, said in a note
  const TrainerRead dev = read_trainer_config(config("dev", two), at());
  CHECK(dev.setup.reference_images == 0);
  CHECK(any_has(dev.setup.notes, "not counted in flux:dev's sequence"));
  // an id no backend has is a warning; a number is refused, naming the key
  const TrainerRead missing = read_trainer_config(
      config("kontext", R"([{"id": "edits", "conditioning_data": "nowhere"}])"), at());
  CHECK(missing.setup.reference_images == 0);
  // null links nothing (the trainer's backend.get)
  CHECK(read_trainer_config(config("kontext", R"([{"id": "edits", "conditioning_data": null}])"), at()).setup.reference_images == 0);
  CHECK(any_has(missing.warnings, "conditioning_data: 'nowhere' names no backend of the file"));
  const std::string bad = test::input_error_of(
      [&] { read_trainer_config(config("kontext", R"([{"id": "edits", "conditioning_data": 3}])"), at()); });
  CHECK(bad.find("backend 'edits'") != std::string::npos);
  CHECK(bad.find("conditioning_data") != std::string::npos);
}
