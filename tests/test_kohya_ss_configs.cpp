// The kohya_ss GUI's saved JSON translated into the sd-scripts run its train button launches
// (trainers/kohya_ss/kohya_gui.hpp), on the GUI's own presets and test configs (tests/fixtures/trainers/
// kohya_ss/, copied from kohya_ss 45088f04). Every expected flag is derived by hand from the GUI's
// source: the tab's script choice, config_toml_data and its filter, update_my_data's migrations.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "segadvise/io/error.hpp"
#include "segadvise/trainers/kohya_gui.hpp"
#include "test_util.hpp"

using namespace segadvise;
using segadvise::test::any_has;
using segadvise::test::input_error_of;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/trainers/kohya_ss/";

kohya::GuiRun gui(const std::string& name) { return kohya::translate_gui_file(kDir + name); }

// a JSON written for one test
kohya::GuiRun gui_text(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / "segadvise-kohya-configs";
  fs::create_directories(dir);
  std::ofstream(dir / name) << text;
  return kohya::translate_gui_file((dir / name).string());
}

std::string flag(const kohya::GuiRun& r, const std::string& k) {
  const auto it = r.cl.values.find(k);
  return it == r.cl.values.end() ? "<unset>" : it->second;
}

}  // namespace

TEST_CASE("kohya_ss GUI: the FLUX.1 LoRA preset launches flux_train_network.py with its checkboxes as flags") {
  const auto r = gui("presets/lora/flux1D - adamw8bit fp8.json");
  CHECK(r.tab == "lora");
  CHECK_FALSE(r.tab_guessed);
  // flux1_checkbox true, sdxl false (lora_gui.py:1779-1792)
  CHECK(r.cl.script == "flux_train_network.py");
  // LoRA_type Flux1 -> networks.lora_flux; no truthy LoRA var, split_mode false, dropouts 0: no network_args
  CHECK(flag(r, "network_module") == "networks.lora_flux");
  CHECK(flag(r, "network_args") == "<unset>");
  // flux1_checkbox and flux1_cache_text_encoder_outputs[_to_disk] (lora_gui.py:2158-2181)
  CHECK(flag(r, "cache_text_encoder_outputs") == "true");
  CHECK(flag(r, "cache_text_encoder_outputs_to_disk") == "true");
  CHECK(flag(r, "fp8_base") == "true");
  CHECK(flag(r, "full_bf16") == "true");
  CHECK(flag(r, "gradient_checkpointing") == "true");
  CHECK(flag(r, "cache_latents") == "true");
  CHECK(flag(r, "cache_latents_to_disk") == "true");
  // xformers "sdpa" -> --sdpa, no --xformers
  CHECK(flag(r, "sdpa") == "true");
  CHECK(flag(r, "xformers") == "<unset>");
  CHECK(flag(r, "mixed_precision") == "bf16");
  CHECK(flag(r, "optimizer_type") == "AdamW8bit");
  CHECK(flag(r, "resolution") == "512,512");
  CHECK(flag(r, "network_dim") == "16");
  // text_encoder_lr 0, unet_lr 0.0003: UNet only (lora_gui.py:909-923)
  CHECK(flag(r, "unet_lr") == "0.0003");
  CHECK(flag(r, "text_encoder_lr") == "<unset>");
  CHECK(flag(r, "network_train_unet_only") == "true");
  CHECK(flag(r, "network_train_text_encoder_only") == "<unset>");
  CHECK(flag(r, "max_train_steps") == "1000");
  // blocks_to_swap not in the file: the panel's 0, which the LoRA tab's filter drops (0 == False)
  CHECK(flag(r, "blocks_to_swap") == "<unset>");
  // lr_warmup 0: lr_warmup_steps 0, dropped
  CHECK(flag(r, "lr_warmup_steps") == "<unset>");
  CHECK(flag(r, "sample_prompts") == "put the full path to output folder here/sample/prompt.txt");
  CHECK(flag(r, "max_data_loader_n_workers") == "0");
  CHECK(r.num_processes == 1);
  CHECK(r.refusals.empty());
  // the key the plan's knob is written back under
  CHECK(r.flag_key.at("cache_text_encoder_outputs") == "flux1_cache_text_encoder_outputs");
  CHECK(r.cl.lines.at("fp8_base") > 0);
}

TEST_CASE("kohya_ss GUI: an SDXL DreamBooth test config launches sdxl_train.py, training the text encoders by their rates") {
  const auto r = gui("test/config/SDXL-Standard-AdamW.json");
  CHECK(r.tab == "dreambooth");  // no_token_padding: the DreamBooth tab's key
  CHECK(r.cl.script == "sdxl_train.py");
  // sdxl and learning_rate_te1 1e-05 > 0 (dreambooth_gui.py:928-931)
  CHECK(flag(r, "train_text_encoder") == "true");
  CHECK(flag(r, "learning_rate_te1") == "1e-05");
  CHECK(flag(r, "learning_rate_te") == "<unset>");  // SD1.5's only
  CHECK(flag(r, "no_half_vae") == "true");          // sdxl and sdxl_no_half_vae
  CHECK(flag(r, "xformers") == "true");
  CHECK(flag(r, "mixed_precision") == "fp16");
  CHECK(flag(r, "resolution") == "1024,1024");
  CHECK(flag(r, "gradient_checkpointing") == "true");
  // blocks_to_swap only with FLUX.1 or SD3 in this tab
  CHECK(flag(r, "blocks_to_swap") == "<unset>");
  // the DreamBooth filter keeps 0 (value is False): lr_warmup_steps 0 is written
  CHECK(flag(r, "lr_warmup_steps") == "0");
  CHECK(flag(r, "max_train_steps") == "1600");
  CHECK(flag(r, "network_module") == "<unset>");
}

TEST_CASE("kohya_ss GUI: the SD3 DreamBooth preset takes the SD3 panel's keys") {
  const auto r = gui("presets/dreambooth/sd3_bdsqlsz_v1.json");
  CHECK(r.tab == "dreambooth");
  CHECK(r.cl.script == "sd3_train.py");
  CHECK(flag(r, "cache_text_encoder_outputs") == "true");
  CHECK(flag(r, "cache_text_encoder_outputs_to_disk") == "true");
  CHECK(r.flag_key.at("cache_text_encoder_outputs") == "sd3_cache_text_encoder_outputs");
  // sd3: sd3_fused_backward_pass, not in the file: no flag even though fused_backward_pass is false too
  CHECK(flag(r, "fused_backward_pass") == "<unset>");
  CHECK(flag(r, "clip_l") == "H:/ComfyUI2/models/clip/clip_l.safetensors");
  CHECK(flag(r, "t5xxl") == "H:/ComfyUI2/models/clip/t5xxl_fp8_e4m3fn.safetensors");
  // lr_warmup 10 % without lr_warmup_steps: 0.1 (a fraction of the steps)
  CHECK(flag(r, "lr_warmup_steps") == "0.1");
  CHECK(flag(r, "optimizer_type") == "PagedAdamW8bit");
}

TEST_CASE("kohya_ss GUI: Kohya LoCon's network_args and the learning rates of a test config") {
  const auto r = gui("test/config/locon-AdamW.json");
  CHECK(r.tab == "lora");
  CHECK(r.cl.script == "train_network.py");
  CHECK(flag(r, "network_module") == "networks.lora");
  // conv_dim="16" conv_alpha="8" with the quotes removed, then the truthy dropouts (lora_gui.py:1974-2000)
  CHECK(flag(r, "network_args") == "conv_dim=16 conv_alpha=8 rank_dropout=0.1 module_dropout=0.1");
  // both rates > 0: both trained, text_encoder_lr [te, te]
  CHECK(flag(r, "text_encoder_lr") == "0.0001 0.0001");
  CHECK(flag(r, "unet_lr") == "0.0001");
  CHECK(flag(r, "network_train_unet_only") == "<unset>");
  // max_train_steps "" loads as 0 (update_my_data), dropped; max_data_loader_n_workers "0" loads as 0
  CHECK(flag(r, "max_train_steps") == "<unset>");
  CHECK(any_has(r.notes, "the GUI counts the images"));
  CHECK(flag(r, "max_data_loader_n_workers") == "0");
  CHECK(flag(r, "max_grad_norm") == "1");
}

TEST_CASE("kohya_ss GUI: a partial LoRA preset keeps the GUI's defaults for the keys it lacks") {
  const auto r = gui("presets/lora/iA3-Prodigy-sd15.json");
  CHECK(r.tab == "lora");
  CHECK(flag(r, "network_module") == "lycoris.kohya");
  CHECK(flag(r, "network_args").find("algo=ia3") != std::string::npos);
  CHECK(any_has(r.notes, "--network_args without"));
  // not in the file: mixed_precision fp16, xformers "xformers", cache_latents true, 512,512 (the panels' defaults)
  CHECK(flag(r, "mixed_precision") == "fp16");
  CHECK(flag(r, "xformers") == "true");
  CHECK(flag(r, "cache_latents") == "true");
  CHECK(flag(r, "resolution") == "512,512");
  CHECK(any_has(r.notes, "at the GUI's defaults"));
  CHECK(flag(r, "text_encoder_lr") == "1 1");  // an integral float written as an integer
  CHECK(flag(r, "optimizer_type") == "Prodigy");
}

TEST_CASE("kohya_ss GUI: a Finetune preset launches fine_tune.py with update_my_data's conversions") {
  const auto r = gui("presets/finetune/adafactor.json");
  CHECK(r.tab == "finetune");
  CHECK(r.cl.script == "fine_tune.py");
  CHECK(flag(r, "xformers") == "true");  // xformers true loads as "xformers"
  CHECK(any_has(r.notes, "xformers true loads as \"xformers\""));
  CHECK(flag(r, "learning_rate") == "1e-06");  // "1e-6" loads as a float
  CHECK(flag(r, "optimizer_type") == "Adafactor");
  CHECK(flag(r, "enable_bucket") == "true");  // always, in this tab
  CHECK(flag(r, "train_batch_size") == "4");
  // create_buckets / create_caption are not among the Finetune tab's keys
  CHECK(any_has(r.warnings, "create_buckets"));
  CHECK(any_has(r.warnings, "create_caption"));
}

TEST_CASE("kohya_ss GUI: the Finetune test config's in_json from train_dir and the metadata file") {
  const auto r = gui("test/config/finetune-AdamW.json");
  CHECK(r.tab == "finetune");
  CHECK(r.cl.script == "fine_tune.py");
  const auto& j = r.gui;
  const std::string file = j.at("use_latent_files") == "Yes" ? j.at("latent_metadata_filename").get<std::string>()
                                                             : j.at("caption_metadata_filename").get<std::string>();
  CHECK(flag(r, "in_json") == j.at("train_dir").get<std::string>() + "/" + file);
  CHECK(flag(r, "train_data_dir") == j.at("image_folder").get<std::string>());
}

TEST_CASE("kohya_ss GUI: every preset and test config is answered; the metadata file is no GUI config") {
  int n = 0;
  for (const auto& e : fs::recursive_directory_iterator(kDir)) {
    if (e.path().extension() != ".json") continue;
    CAPTURE(e.path().string());
    if (e.path().filename() == "meta-1_lat.json") {
      CHECK(input_error_of([&] { kohya::translate_gui_file(e.path().string()); }).find("no key of a kohya_ss GUI config") != std::string::npos);
      continue;
    }
    const auto r = kohya::translate_gui_file(e.path().string());
    CHECK_FALSE(r.cl.script.empty());
    ++n;
  }
  CHECK(n == 68);
}

TEST_CASE("kohya_ss GUI: a textual-inversion config is read by its keys, its script a guess") {
  const auto r = gui("test/config/TI-AdamW8bit-SDXL.json");
  CHECK(r.tab == "textual_inversion");
  CHECK_FALSE(r.script_in_sources);
  CHECK(r.cl.script == "sdxl_train_textual_inversion.py");
  CHECK(any_has(r.warnings, "is a guess"));
}

TEST_CASE("kohya_ss GUI: migrations, unknown keys, the GUI's refusals and additional parameters") {
  SUBCASE("LoCon loads as LyCORIS/LoCon, lora_network_weights as network_weights, use_8bit_adam picks the optimizer") {
    const auto r = gui_text("old.json", R"({"LoRA_type": "LoCon", "lora_network_weights": "w.safetensors", "use_8bit_adam": true,
      "unet_lr": 0.0001, "text_encoder_lr": 0, "pretrained_model_name_or_path": "m.safetensors", "not_a_gui_key": 1})");
    CHECK(r.gui.at("LoRA_type") == "LyCORIS/LoCon");
    CHECK(flag(r, "network_module") == "lycoris.kohya");
    CHECK(flag(r, "network_weights") == "w.safetensors");
    CHECK(flag(r, "optimizer_type") == "AdamW8bit");
    CHECK(any_has(r.warnings, "has no key not_a_gui_key (line 2)"));
  }
  SUBCASE("FLUX.1 checked with a Standard LoRA type: the GUI stops, quoted") {
    const auto r = gui_text("flux_standard.json", R"({"LoRA_type": "Standard", "flux1_checkbox": true, "unet_lr": 0.0001})");
    CHECK(r.cl.script == "flux_train_network.py");
    REQUIRE(r.refusals.size() == 1);
    CHECK(r.refusals[0].find("LoRA type must be set to 'Flux1', 'Flux1 OFT' or 'LyCORIS' if Flux1 checkbox is checked.") != std::string::npos);
  }
  SUBCASE("no learning rate at all: the GUI stops") {
    const auto r = gui_text("no_lr.json", R"({"LoRA_type": "Standard", "learning_rate": 0, "unet_lr": 0, "text_encoder_lr": 0})");
    CHECK(any_has(r.refusals, "Please input learning rate values."));
  }
  SUBCASE("additional_parameters are flags over the TOML, a nargs flag keeps its words") {
    const auto r = gui_text("extra.json", R"({"LoRA_type": "Flux1", "flux1_checkbox": true, "blocks_to_swap": 4, "unet_lr": 0.0001,
      "additional_parameters": "--blocks_to_swap 18 --network_args \"a=1\" b=2 --cpu_offload_checkpointing"})");
    CHECK(flag(r, "blocks_to_swap") == "18");
    CHECK(flag(r, "network_args") == "a=1 b=2");
    CHECK(flag(r, "cpu_offload_checkpointing") == "true");
    CHECK(r.flag_key.at("blocks_to_swap") == "additional_parameters");
  }
  SUBCASE("blocks_to_swap reaches sd-scripts only with a DiT checkbox") {
    const auto sdxl = gui_text("sdxl_swap.json", R"({"LoRA_type": "Standard", "sdxl": true, "blocks_to_swap": 8, "unet_lr": 0.0001})");
    CHECK(flag(sdxl, "blocks_to_swap") == "<unset>");
    const auto sd3 = gui_text("sd3_swap.json", R"({"LoRA_type": "Standard", "sd3_checkbox": true, "blocks_to_swap": 8, "unet_lr": 0.0001})");
    CHECK(flag(sd3, "blocks_to_swap") == "8");
    CHECK(flag(sd3, "network_module") == "networks.lora_sd3");
  }
  SUBCASE("num_processes 0: accelerate's own config decides, a guess") {
    const auto r = gui_text("np0.json", R"({"LoRA_type": "Standard", "num_processes": 0, "unet_lr": 0.0001})");
    CHECK_FALSE(r.num_processes_set);
    CHECK(any_has(r.warnings, "a guess"));
    const auto two = gui_text("np2.json", R"({"LoRA_type": "Standard", "num_processes": 2, "unet_lr": 0.0001})");
    CHECK(two.num_processes == 2);
  }
  SUBCASE("train_inpainting turns latent caching off, except with a DiT checkbox") {
    const auto r = gui_text("inpaint.json", R"({"LoRA_type": "Standard", "train_inpainting": true, "cache_latents": true, "unet_lr": 0.0001})");
    CHECK(flag(r, "train_inpainting") == "true");
    CHECK(flag(r, "cache_latents") == "<unset>");
    const auto f = gui_text("inpaint_flux.json", R"({"LoRA_type": "Flux1", "flux1_checkbox": true, "train_inpainting": true, "cache_latents": true, "unet_lr": 0.0001})");
    CHECK(flag(f, "train_inpainting") == "<unset>");
    CHECK(flag(f, "cache_latents") == "true");
  }
  SUBCASE("Chroma: --model_type chroma, no CLIP-L, the T5 mask") {
    const auto r = gui_text("chroma.json", R"({"LoRA_type": "Flux1", "flux1_checkbox": true, "model_type": "Chroma", "clip_l": "c.safetensors",
      "guidance_scale": 0, "unet_lr": 0.0001})");
    CHECK(flag(r, "model_type") == "chroma");
    CHECK(flag(r, "clip_l") == "<unset>");
    CHECK(flag(r, "apply_t5_attn_mask") == "true");
    CHECK(flag(r, "guidance_scale") == "0");
  }
  SUBCASE("bad input") {
    CHECK(input_error_of([] { gui_text("list.json", "[1, 2]"); }).find("a JSON object") != std::string::npos);
    CHECK(input_error_of([] { gui_text("broken.json", "{\"LoRA_type\": "); }).find("broken.json") != std::string::npos);
    CHECK(input_error_of([] { gui_text("empty.json", "{}"); }).find("no key of a kohya_ss GUI config") != std::string::npos);
  }
}

// ---- the component: read through sd-scripts' reader, plans written back as GUI JSON ----

#include "segadvise/trainers/trainer.hpp"

namespace {

TrainerReadOptions kss_opts(const std::string& model = "") {
  TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";
  o.model = model;
  return o;
}

// the flags sd-scripts gets from a GUI JSON text
kohya::GuiRun translated(const std::string& text, const std::string& name) { return gui_text(name, text); }

// a plan's value as the flag text ("" : absent, as a count of 0 is)
std::string as_flag(const nlohmann::ordered_json& v) {
  if (v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v.get<double>() == 0)) return "";
  if (v.is_boolean()) return "true";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

TEST_CASE("kohya_ss GUI: a saved JSON is detected as the GUI's and read as the sd-scripts run") {
  const std::string path = kDir + "presets/lora/flux1D - adamw8bit fp8.json";
  CHECK(detect_trainer(path) == "kohya_ss");
  const TrainerRead r = read_trainer_config(path, kss_opts("flux1"));
  CHECK(r.trainer == "kohya_ss");
  CHECK(r.setup.script == "flux_train_network.py");
  CHECK(r.setup.mixed_precision == "bf16");
  CHECK(r.setup.lora_rank == 16);
  CHECK(any_has(r.setup.notes, "kohya_ss GUI lora tab"));
  // a GUI refusal is the run's rejection
  const fs::path dir = fs::temp_directory_path() / "segadvise-kohya-configs";
  fs::create_directories(dir);
  std::ofstream(dir / "refused.json") << R"({"LoRA_type": "Standard", "flux1_checkbox": true, "unet_lr": 0.0001, "max_resolution": "512,512"})";
  const TrainerRead bad = read_trainer_config((dir / "refused.json").string(), kss_opts("flux1"));
  CHECK(any_has(bad.rejections, "LoRA type must be set to 'Flux1'"));
}

TEST_CASE("kohya_ss GUI: every plan written back into the user's JSON reads back as planned") {
  for (const std::string name : {"presets/lora/flux1D - adamw8bit fp8.json", "test/config/SDXL-Standard-AdamW.json", "test/config/locon-AdamW.json"}) {
    CAPTURE(name);
    const std::string model = name.find("flux") != std::string::npos ? "flux1" : name.find("SDXL") != std::string::npos ? "sdxl" : "sd15";
    const TrainerRead r = read_trainer_config(kDir + name, kss_opts(model));
    const Trainer& t = trainer("kohya_ss");
    std::vector<std::string> notes;
    const auto combos = t.knob_space(*r.family, r.setup, notes);
    REQUIRE_FALSE(combos.empty());
    for (const auto& c : combos) {
      const nlohmann::ordered_json k = t.memory_knobs(r, c.knobs);
      const Rewritten w = t.rewrite(r, k);
      const auto back = translated(w.text, "round_trip.json");
      CAPTURE(k.dump());
      CAPTURE(w.notes);
      for (auto it = k.begin(); it != k.end(); ++it) {
        CAPTURE(it.key());
        const auto v = back.cl.values.find(it.key());
        CHECK((v == back.cl.values.end() || v->second == "0" ? "" : v->second) == as_flag(it.value()));
      }
      // only memory keys change: the model path stays
      CHECK(back.gui.at("pretrained_model_name_or_path") == r.raw.at("pretrained_model_name_or_path"));
    }
  }
}

TEST_CASE("kohya_ss GUI: a swap the LoRA tab passes only for DiT models goes into additional_parameters for SDXL") {
  const fs::path dir = fs::temp_directory_path() / "segadvise-kohya-configs";
  fs::create_directories(dir);
  std::ofstream(dir / "sdxl.json") << "{\n  \"LoRA_type\": \"Standard\",\n  \"sdxl\": true,\n  \"blocks_to_swap\": 0,\n  \"unet_lr\": 0.0001,\n"
                                      "  \"additional_parameters\": \"--max_grad_norm 0.5\"\n}\n";
  const TrainerRead r = read_trainer_config((dir / "sdxl.json").string(), kss_opts("sdxl"));
  nlohmann::ordered_json k;
  k["blocks_to_swap"] = 8;
  k["gradient_checkpointing"] = true;
  const Rewritten w = trainer("kohya_ss").rewrite(r, k);
  const auto back = translated(w.text, "sdxl_back.json");
  CHECK(back.gui.at("gradient_checkpointing") == true);
  CHECK(back.gui.at("additional_parameters") == "--max_grad_norm 0.5 --blocks_to_swap 8");
  CHECK(back.cl.values.at("blocks_to_swap") == "8");
  CHECK(any_has(w.notes, "in additional_parameters"));
  CHECK(w.text.find("\n  \"LoRA_type\"") == 1);  // the file's order and indentation
}

TEST_CASE("kohya_ss GUI: an emitted GUI JSON reads back as the plan") {
  for (const char* model : {"flux1", "sdxl"}) {
    CAPTURE(model);
    const Family& fam = find_family(model);
    TrainingSetup s;
    s.model_id = fam.id;
    s.model_type = ModelType::Lora;
    s.lora_rank = 16;
    s.width = s.height = 1024;
    s.batch = 1;
    std::vector<std::string> notes;
    const Trainer& t = trainer("kohya_ss");
    const auto combos = t.knob_space(fam, s, notes);
    REQUIRE_FALSE(combos.empty());
    for (const auto& c : combos) {
      const std::string text = t.config_text(fam, c);
      const auto back = translated(text, "emitted.json");
      CHECK(back.cl.script == c.setup.script);
      CHECK(back.cl.values.at("resolution") == "1024,1024");
      for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it) {
        CAPTURE(it.key());
        const auto v = back.cl.values.find(it.key());
        CHECK((v == back.cl.values.end() || v->second == "0" ? "" : v->second) == as_flag(it.value()));
      }
    }
  }
}
