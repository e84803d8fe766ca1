// Users' configs as their trainers read them: OneTrainer files from its own UI (the
// migration chain, weight_dtype NONE, the optimizers its enum holds), ai-toolkit jobs without an arch,
// and SD 3 Medium told from SD 3.5 Medium. Every fixture is written from the trainer's source; the
// expected readings are derived by hand in the comments.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "check_options.hpp"
#include "commands.hpp"
#include "test_util.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_config.hpp"

using namespace segadvise;
using namespace segadvise::cli;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/";

TrainerRead read(const std::string& path) { return read_trainer_config(path, TrainerReadOptions{}); }

bool any_contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x.find(s) != std::string::npos) return true;
  return false;
}

// the fixture with each {from, to} replaced once, written to a scratch file named `name` (its path)
std::string variant(const std::string& fixture, const std::vector<std::pair<std::string, std::string>>& edits, const std::string& name) {
  std::string text = test::slurp(kDir + fixture);
  for (const auto& edit : edits) {
    const std::string& from = edit.first;  // a named reference: doctest's macro is a lambda (no structured binding before C++20)
    const std::string& to = edit.second;
    const auto at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    text.replace(at, from.size(), to);
  }
  const fs::path dir = fs::temp_directory_path() / "segadvise-user-configs";
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return (dir / name).string();
}

std::string variant(const std::string& fixture, const std::string& from, const std::string& to, const std::string& name) {
  return variant(fixture, {{from, to}}, name);
}

// `check PATH --gpu GPU --format json` with the point bands (the reader is judged, not the ranges)
nlohmann::json check(const std::string& path, const std::string& gpu = "4090") {
  CheckOptions o;
  o.config = path;
  o.flags.gpu = gpu;
  o.flags.format = "json";
  o.flags.ranges = std::string(SEGADVISE_FIXTURES_DIR) + "/check/point-ranges.json";
  o.read.cwd = "/nonexistent-working-directory";
  std::ostringstream out;
  run_check(o, out);
  return nlohmann::json::parse(out.str());
}

}  // namespace

TEST_CASE("an old OneTrainer FLUX LoRA (version 8): prior moved to transformer, NONE filled from weight_dtype") {
  // v8_flux_lora_prior.json: __version 8, no transformer, prior and the text encoders weight_dtype NONE,
  // top-level weight_dtype BFLOAT_16. __migration_8 (TrainConfig.py:800-806): transformer = prior;
  // __migration_9 (:808-828): every NONE becomes BFLOAT_16. So the transformer is bf16 (2 bytes a weight),
  // not the FLOAT_32 a missing transformer would default to (TrainConfig.py:305).
  const TrainerRead r = read(kDir + "onetrainer/v8_flux_lora_prior.json");
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.base_precision == "no_change");
  CHECK(r.setup.weight_storage_bytes == 0);  // not 4: no FLOAT_32 storage
  CHECK(r.setup.mixed_precision == "bf16");
  CHECK(r.setup.batch == 2);
  CHECK(any_contains(r.warnings, "__migration_8 moves prior to transformer"));
  CHECK(any_contains(r.warnings, "__migration_9 gives the weight_dtype NONE of"));
  CHECK(!any_contains(r.warnings, "cannot load"));
  const RunSetup run = trainer("onetrainer").run_setup(r);
  REQUIRE(run.other.text_encoder_bytes_per_param.size() == 2);
  CHECK(run.other.text_encoder_bytes_per_param[0] == 2);  // text_encoder NONE -> BFLOAT_16
  CHECK(run.other.text_encoder_bytes_per_param[1] == 2);  // text_encoder_2 NONE -> BFLOAT_16
  CHECK(run.other.vae_bytes_per_param == 4);              // vae FLOAT_32 as written

  // the peak: the same run with a FLOAT_32 transformer (what the file read without migration 8 gave)
  // stores 12B weights in 4 bytes instead of 2: about 22 GiB more
  const double peak = check(kDir + "onetrainer/v8_flux_lora_prior.json", "h100")["prediction"]["peak_vram_gib"].get<double>();
  const std::string fp32 = variant("onetrainer/v8_flux_lora_prior.json", "\"prior\": {\"train\": true, \"weight_dtype\": \"NONE\"}",
                                   "\"prior\": {\"train\": true, \"weight_dtype\": \"FLOAT_32\"}", "v8_flux_fp32.json");
  const double peak32 = check(fp32, "h100")["prediction"]["peak_vram_gib"].get<double>();
  MESSAGE("v8 FLUX LoRA peak " << peak << " GiB; with a FLOAT_32 transformer " << peak32 << " GiB");
  CHECK(peak < peak32 - 15);
}

TEST_CASE("an old OneTrainer file written back by --emit onetrainer is written migrated") {
  // __version 11 in the written file skips the migrations, so the file is written as OneTrainer migrated
  // it: transformer from prior, NONE filled, the top-level weight_dtype gone (popped by __migration_9)
  const fs::path out = fs::temp_directory_path() / "segadvise-user-configs-v8-out.json";
  fs::remove(out);
  CheckOptions o;
  o.config = kDir + "onetrainer/v8_flux_lora_prior.json";
  o.flags.gpu = "4090";
  o.flags.format = "json";
  o.read.cwd = "/nonexistent-working-directory";
  o.emit = "onetrainer";
  o.output = out.string();
  o.advise = true;
  std::ostringstream text;
  run_check(o, text);
  const auto w = nlohmann::json::parse(test::slurp(out.string()));
  CHECK(w["__version"] == 11);
  CHECK(w["transformer"]["weight_dtype"] == "BFLOAT_16");
  CHECK(w["text_encoder"]["weight_dtype"] == "BFLOAT_16");
  CHECK(!w.contains("weight_dtype"));
  const TrainerRead back = read(out.string());
  CHECK(back.setup.base_precision == "no_change");
  CHECK(!any_contains(back.warnings, "NONE"));
  fs::remove(out);
}

TEST_CASE("a version-9 OneTrainer file: per-part NONE takes the top-level weight_dtype; at version 11 NONE loads in bf16") {
  // v9_flux_lora_none.json: transformer NONE, text_encoder NONE, text_encoder_2 NFLOAT_4, top-level BFLOAT_16
  const TrainerRead r = read(kDir + "onetrainer/v9_flux_lora_none.json");
  CHECK(r.family->id == "flux1");
  CHECK(r.setup.base_precision == "no_change");  // NONE -> BFLOAT_16 (__migration_9)
  CHECK(r.setup.weight_storage_bytes == 0);
  CHECK(!any_contains(r.warnings, "__migration_8"));  // a v9 file has passed migration 8
  CHECK(any_contains(r.warnings, "NONE of unet, prior, transformer, text_encoder, text_encoder_3"));
  const RunSetup run = trainer("onetrainer").run_setup(r);
  REQUIRE(run.other.text_encoder_bytes_per_param.size() == 2);
  CHECK(run.other.text_encoder_bytes_per_param[0] == 2);    // NONE -> BFLOAT_16
  CHECK(run.other.text_encoder_bytes_per_param[1] == 0.5);  // NFLOAT_4 as written
  CHECK(run.other.vae_bytes_per_param == 2);                // NONE -> BFLOAT_16

  // the same parts at __version 11: not migrated, so NONE stays; the loaders load such a part in bf16
  // (FluxModelLoader.py:125, :167)
  const TrainerRead v11 = read(variant("onetrainer/v9_flux_lora_none.json", "\"__version\": 9", "\"__version\": 11", "v11_none.json"));
  CHECK(v11.setup.base_precision == "no_change");
  CHECK(v11.setup.weight_storage_bytes == 0);
  CHECK(any_contains(v11.warnings, "transformer.weight_dtype NONE has no torch dtype"));
  CHECK(any_contains(v11.warnings, "text_encoder.weight_dtype NONE has no torch dtype"));
}

TEST_CASE("a OneTrainer file that a migration cannot pass is said to be one OneTrainer does not load") {
  // v9 without the top-level weight_dtype: __migration_9 pops it (KeyError, TrainConfig.py:826)
  const TrainerRead r = read(variant("onetrainer/v9_flux_lora_none.json", "\"weight_dtype\": \"BFLOAT_16\",\n", "", "v9_no_top_dtype.json"));
  CHECK(any_contains(r.warnings, "OneTrainer cannot load this file: __migration_9"));
  CHECK(any_contains(r.warnings, "KeyError"));
  CHECK(r.setup.base_precision == "no_change");  // the parts as written: NONE, which loads in bf16
}

TEST_CASE("OneTrainer's optimizers are sized by the state of what create.py builds") {
  // ADAMW_8BIT: bnb.optim.AdamW8bit (create.py:249-263), two 8-bit moments + block scales
  const TrainerRead r = read(kDir + "onetrainer/adamw_8bit_lora.json");
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(optimizer_info(r.setup.optimizer).state_bytes_per_param == doctest::Approx(2.1));
  CHECK(r.setup.lora_rank == 32);
  // "ADAMW8BIT" is not in enum/Optimizer.py: BaseConfig.from_dict keeps the default ADAMW
  const TrainerRead typo = read(variant("onetrainer/adamw_8bit_lora.json", "{\"optimizer\": \"ADAMW_8BIT\"", "{\"optimizer\": \"ADAMW8BIT\"", "typo.json"));
  CHECK(typo.setup.optimizer == "adamw");
  CHECK(any_contains(typo.warnings, "'ADAMW8BIT' is not one of OneTrainer's optimizers"));
  // ADAM_8BIT builds bnb.optim.Adam with its default optim_bits 32 (create.py:233-247): AdamW's 8 bytes
  const TrainerRead adam8 = read(variant("onetrainer/adamw_8bit_lora.json", "{\"optimizer\": \"ADAMW_8BIT\"", "{\"optimizer\": \"ADAM_8BIT\"", "adam8.json"));
  CHECK(adam8.setup.optimizer == "adamw");
  CHECK(any_contains(adam8.setup.notes, "optimizer ADAM_8BIT sized as adamw"));
  // RMSPROP_8BIT: bnb.optim.RMSprop8bit (create.py:338-352), one 8-bit state
  const TrainerRead rms = read(variant("onetrainer/adamw_8bit_lora.json", "{\"optimizer\": \"ADAMW_8BIT\"", "{\"optimizer\": \"RMSPROP_8BIT\"", "rms8.json"));
  CHECK(rms.setup.optimizer == "bnb-rmsprop8bit");
  CHECK(optimizer_info(rms.setup.optimizer).state_bytes_per_param == doctest::Approx(1.1));
}

TEST_CASE("an old OneTrainer file whose optimizer is a top-level string: __migration_0 makes it the optimizer object") {
  // the v8 FLUX LoRA without __version (version 0) and with the optimizer written as before the optimizer
  // object: "optimizer": "ADAMW_8BIT" and optimizer_weight_decay. __migration_0 (TrainConfig.py:612-630)
  // builds optimizer {optimizer: ADAMW_8BIT, weight_decay: 0.01}; migrations 1, 8 and 9 pass (every part
  // has its weight_dtype), so the transformer is the prior's, BFLOAT_16
  const TrainerRead r = read(variant("onetrainer/v8_flux_lora_prior.json",
                                     {{"\"__version\": 8,", ""},
                                      {"\"optimizer\": {\"optimizer\": \"ADAMW\", \"weight_decay\": 0.01},\n    \"optimizer_defaults\": {\"ADAMW\": {\"optimizer\": \"ADAMW\", \"weight_decay\": 0.01}},",
                                       "\"optimizer\": \"ADAMW_8BIT\", \"optimizer_weight_decay\": 0.01,"}},
                                     "v0_string_optimizer.json"));
  CHECK(r.setup.optimizer == "adamw8bit");
  CHECK(r.setup.base_precision == "no_change");
  CHECK(!any_contains(r.warnings, "cannot load"));
}

TEST_CASE("ai-toolkit: a job without arch whose path names Qwen-Image-Edit is predicted as that model, as a guess") {
  // qwen_edit_no_arch.yaml: no arch, no is_* flag ai-toolkit has (is_qwen is not one): ai-toolkit runs
  // sd1 (config_modules.py:799-821); the path names Qwen-Image-Edit-2509, whose arch in ai-toolkit's UI
  // is qwen_image_edit_plus (options.tsx:475-480)
  const TrainerRead r = read(kDir + "ai-toolkit/qwen_edit_no_arch.yaml");
  CHECK(r.family->id == "qwen-image-edit");
  CHECK(r.setup.family_guessed_from.find("Qwen/Qwen-Image-Edit-2509") != std::string::npos);
  CHECK(any_contains(r.warnings, "runs arch sd1"));
  CHECK(any_contains(r.warnings, "arch: qwen_image_edit_plus"));
  CHECK(any_contains(r.warnings, "model.is_qwen (line 33)"));
  CHECK(any_contains(r.warnings, "model.quantize_dtype (line 35)"));
  CHECK(!any_contains(r.warnings, "model.quantize (line"));  // quantize is read (config_modules.py:685)
  CHECK(!any_contains(r.warnings, "train.steps"));          // read (TrainConfig)
  CHECK(r.setup.base_precision == "fp8-quanto");            // quantize true, qtype default qfloat8
  CHECK(r.setup.optimizer == "adamw8bit");
  const nlohmann::json j = check(kDir + "ai-toolkit/qwen_edit_no_arch.yaml");
  CHECK(j["setup"]["confidence"] == "guessed");
  // with the arch written, nothing is guessed
  const TrainerRead named = read(variant("ai-toolkit/qwen_edit_no_arch.yaml", "is_qwen: true", "arch: \"qwen_image_edit_plus\"", "named.yaml"));
  CHECK(named.family->id == "qwen-image-edit");
  CHECK(named.setup.family_guessed_from.empty());
}

TEST_CASE("ai-toolkit: a job that names no model is SD 1.x, labelled as ai-toolkit's default") {
  const TrainerRead r = read(kDir + "ai-toolkit/no_arch_local_model.yaml");
  CHECK(r.family->id == "sd1x");
  CHECK(r.setup.family_guessed_from.find("default arch sd1") != std::string::npos);
  CHECK(any_contains(r.warnings, "predicted as SD 1.x, ai-toolkit's default"));
  CHECK(!any_contains(r.warnings, "does not have"));  // every key is one ai-toolkit reads
}

TEST_CASE("SD 3 Medium is told from SD 3.5 Medium in every trainer that trains SD3") {
  const Family& m = find_family("sd3-medium");
  CHECK(m.id == "sd3-medium");
  CHECK(m.params_published == doctest::Approx(2.0e9));
  CHECK(find_family("sd3.5-medium").id == "sd3.5-medium");
  // ai-toolkit: is_v3 -> arch sd3; the path names SD3 Medium
  const TrainerRead a = read(kDir + "ai-toolkit/sd3_medium.yaml");
  CHECK(a.family->id == "sd3-medium");
  CHECK(a.setup.family_guessed_from.empty());
  // OneTrainer's own SD3 presets train stabilityai/stable-diffusion-3-medium-diffusers
  CHECK(read(kDir + "shipped/onetrainer/training_presets/SD3/#sd 3 LoRA.json").family->id == "sd3-medium");
  // diffusers' train_dreambooth_lora_sd3.py with an SD3 Medium path
  CHECK(read(kDir + "diffusers/sd3_medium_lora.sh").family->id == "sd3-medium");
  // SD 3.5 stays SD 3.5
  CHECK(read(kDir + "diffusers/sd35_large_prior.sh").family->id == "sd3.5-large");
  CHECK(read(kDir + "diffusers/sd3_medium_lora.sh").setup.family_guessed_from.empty());  // the path names it
  // the same script with a local model folder: the path names none of the three sizes the script trains
  // alike (diffusers.json: sd3-medium, sd3.5-large, sd3.5-medium), so the fallback is a guess, said so
  const TrainerRead local = read(kDir + "diffusers/sd3_local_model.sh");
  CHECK(local.family->id == "sd3.5-medium");
  CHECK(local.setup.family_guessed_from.find("/data/models/my-merge") != std::string::npos);
  TrainerReadOptions named;
  named.model = "sd3-medium";  // --model names it: no guess
  const TrainerRead by_flag = read_trainer_config(kDir + "diffusers/sd3_local_model.sh", named);
  CHECK(by_flag.family->id == "sd3-medium");
  CHECK(by_flag.setup.family_guessed_from.empty());
}
