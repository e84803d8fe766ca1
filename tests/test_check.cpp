// segadvise check: reading SimpleTuner configs and data backends as the trainer does.
// Fixtures: tests/fixtures/check/ (small configs written for these tests; nothing from ../shared).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <vector>

#include "test_util.hpp"
#include "commands.hpp"
#include "check_options.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/trainer.hpp"

using namespace segadvise;
using namespace segadvise::cli;
namespace fs = std::filesystem;

namespace {

const std::string kDir = std::string(SEGADVISE_FIXTURES_DIR) + "/check/";

// an unrelated working directory, so that only the config-relative lookups can find a file
TrainerReadOptions away() {
  TrainerReadOptions o;
  o.cwd = "/nonexistent-working-directory";
  return o;
}

CheckOptions check_opts(const std::string& config, const std::string& gpu = "h100") {
  CheckOptions o;
  o.config = kDir + config;
  o.flags.gpu = gpu;
  o.flags.format = "json";
  o.read = away();
  return o;
}

// runs check like main(): InputError -> exit code 2
int run_like_main(const CheckOptions& o, std::string& out, std::string& err) {
  std::ostringstream ss;
  try {
    const int rc = run_check(o, ss);
    out = ss.str();
    return rc;
  } catch (const InputError& e) {
    err = e.what();
    out = ss.str();
    return 2;
  }
}

std::string error_of(const std::string& config) {
  return test::input_error_of([&] { read_simpletuner_config(kDir + config, away()); });
}

}  // namespace

TEST_CASE("a relative data_backend_config is tried in the working directory first, then beside the config and in its parents") {
  const auto c = candidate_paths("db/x.json", "/a/b/config.json", "/work");
  REQUIRE(c.size() == 4);
  CHECK(c[0] == "/work/db/x.json");
  CHECK(c[1] == "/a/b/db/x.json");
  CHECK(c[2] == "/a/db/x.json");
  CHECK(c[3] == "/db/x.json");
}

TEST_CASE("a config/examples path is tried as the packaged simpletuner/examples file before the literal path") {
  const auto c = candidate_paths("config/examples/d.json", "/r/c.json", "/w");
  REQUIRE(c.size() >= 4);
  CHECK(c[0] == "/w/simpletuner/examples/d.json");
  CHECK(c[1] == "/w/config/examples/d.json");
  CHECK(c[2] == "/r/simpletuner/examples/d.json");
  CHECK(c[3] == "/r/config/examples/d.json");
}

TEST_CASE("an absolute data_backend_config is the only path tried") {
  const auto c = candidate_paths("/abs/d.json", "/r/c.json", "/w");
  REQUIRE(c.size() == 1);
  CHECK(c[0] == "/abs/d.json");
}

TEST_CASE("a config/examples data backend is found through the config's parent folders") {
  // nested/example/config.json names config/examples/found-through-parents.json, which exists as
  // fixtures/check/simpletuner/examples/found-through-parents.json two folders up: 768 px square crop
  const TrainerRead r = read_simpletuner_config(kDir + "nested/example/config.json", away());
  CHECK(fs::path(r.data_backend_path).filename() == "found-through-parents.json");
  CHECK(r.setup.width == 768);
  CHECK(r.setup.height == 768);
}

TEST_CASE("a data backend that cannot be found names every path tried, and the shape is assumed") {
  // flux, no resolution, no train_batch_size: the trainer's defaults (1024 pixel_area, a square source)
  const TrainerRead r = read_simpletuner_config(kDir + "missing-backend.json", away());
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.height == 1024);
  CHECK(r.shape_source.rfind("assumed: ", 0) == 0);
  std::string w;
  for (const auto& x : r.warnings)
    if (x.find("the shape is assumed") != std::string::npos) w = x;
  CHECK(w.find("data_backend_config 'backends/does-not-exist.json' not found") != std::string::npos);
  CHECK(w.find("; tried: ") != std::string::npos);
  CHECK(w.find("/nonexistent-working-directory/backends/does-not-exist.json") != std::string::npos);
  CHECK(r.setup.shape_assumed_from.find("tried") == std::string::npos);  // the setup names the file alone
  CHECK(w.find(kDir + "backends/does-not-exist.json") != std::string::npos);
  CHECK(w.find("\n") == std::string::npos);  // one line
}

TEST_CASE("an example naming a data backend its repository does not ship says so") {
  // repo/simpletuner/examples/ex-24g/config.json names config/examples/missing.json (a path relative to
  // the trainer's repository root, whose config/examples is simpletuner/examples): neither exists
  const fs::path repo = fs::temp_directory_path() / "segadvise-unshipped-backend";
  fs::create_directories(repo / "simpletuner" / "examples" / "ex-24g");
  const fs::path cfg = repo / "simpletuner" / "examples" / "ex-24g" / "config.json";
  std::ofstream(cfg) << "{\"model_family\": \"flux\", \"model_type\": \"lora\", \"data_backend_config\": "
                        "\"config/examples/missing.json\"}\n";
  const TrainerRead r = read_simpletuner_config(cfg.string(), away());
  bool said = false, tried = false;
  for (const auto& w : r.warnings) {
    said = said || w.find("data_backend_config 'config/examples/missing.json' not found: the trainer's repository (" +
                          repo.lexically_normal().string() + ") does not ship it (config/examples/ is its simpletuner/examples/); "
                          "pass --data-backend FILE with your own") != std::string::npos;
    tried = tried || w.find((repo / "simpletuner" / "examples" / "missing.json").string()) != std::string::npos;  // among the paths tried
  }
  CHECK(said);
  CHECK(tried);
  fs::remove_all(repo);
}

TEST_CASE("--data-backend overrides the config's data_backend_config") {
  TrainerReadOptions o = away();
  o.data_backend_override = kDir + "backends/own-512-pixel.json";
  const TrainerRead r = read_simpletuner_config(kDir + "flux-480-square.json", o);
  CHECK(r.setup.width == 512);
  CHECK(r.setup.batch == 3);
}

TEST_CASE("pixel_area 480 with a square crop trains at 512x512") {
  // 480 px -> 0.2304 MP, within 0.05 of 0.25 MP -> remapped to 512^2 -> round_64(512) = 512
  const TrainerRead r = read_simpletuner_config(kDir + "flux-480-square.json", away());
  CHECK(r.setup.width == 512);
  CHECK(r.setup.height == 512);
  CHECK(r.setup.batch == 1);
  CHECK(r.family->trainer_family == "flux");
}

TEST_CASE("pixel_area without a crop buckets by area and the source aspect") {
  // 1024 px -> 1.048576 MP; edge = round_64(int(sqrt(1048576))) = 1024.
  TrainerReadOptions o = away();
  TrainerRead r = read_simpletuner_config(kDir + "flux-pixel-area-1024.json", o);
  CHECK(r.setup.width == 1024);  // square source: edge x edge
  CHECK(r.setup.height == 1024);
  // a 3:2 source: W = round_64(1024 * sqrt(1.5) = 1254.1) = 1280, H = round_64(1024 / 1.2247 = 836.1) = 832
  o.source_aspect = 1.5;
  r = read_simpletuner_config(kDir + "flux-pixel-area-1024.json", o);
  CHECK(r.setup.width == 1280);
  CHECK(r.setup.height == 832);
}

TEST_CASE("a backend's own resolution and batch win over the config's") {
  // config: 1024 pixel_area, batch 1; backend: 512 pixel square crop, batch 3
  const TrainerRead r = read_simpletuner_config(kDir + "flux-backend-wins.json", away());
  CHECK(r.setup.width == 512);
  CHECK(r.setup.height == 512);
  CHECK(r.setup.batch == 3);
}

TEST_CASE("text-embed and disabled backends are skipped") {
  // pixel-area-480-square.json: a text_embeds entry, a disabled 2048 px entry, the 480 px squares
  const TrainerRead r = read_simpletuner_config(kDir + "flux-480-square.json", away());
  REQUIRE(r.backends.size() == 1);
  CHECK(r.backends[0].id == "squares");
}

TEST_CASE("keys with a leading -- read like plain keys, and a backend without resolution uses the config's") {
  // --resolution 1024 pixel_area with a square crop: 1.048576 MP is within 0.05 of 1.0 -> 1024^2
  const TrainerRead r = read_simpletuner_config(kDir + "flux-dashed-keys.json", away());
  CHECK(r.family->trainer_family == "flux");
  CHECK(r.setup.batch == 2);
  CHECK(r.setup.width == 1024);
  CHECK(r.setup.base_precision == "int8-quanto");
  CHECK(r.schedule.interval == 2);
}

TEST_CASE("video backends take num_frames through the family's frame rule") {
  // wan: 81 = 8*10+1 is kept; 480 pixel_area with a 16:9 source at alignment 32: edge 480,
  // W = round_32(480 * sqrt(1.78) = 640.4) = 640, H = round_32(480 / 1.3342 = 359.8) = 352
  const TrainerRead r = read_simpletuner_config(kDir + "wan-video.json", away());
  CHECK(r.setup.frames == 81);
  CHECK(r.setup.width == 640);
  CHECK(r.setup.height == 352);
}

TEST_CASE("model_type defaults to a full fine-tune, as in the trainer") {
  // unknown-family.json aside, every fixture sets model_type; write one without it
  const std::string path = (fs::temp_directory_path() / "segadvise-test-no-model-type.json").string();
  {
    std::ofstream f(path);
    f << R"({"model_family": "flux", "data_backend_config": ")" << kDir << R"(backends/pixel-area-1024.json"})";
  }
  const TrainerRead r = read_simpletuner_config(path, away());
  CHECK(r.setup.model_type == ModelType::Full);
  CHECK(r.setup.batch == 4);  // train_batch_size default 4
  fs::remove(path);
}

TEST_CASE("malformed JSON is reported with its line and column") {
  // line 3 is `  "model_type": "lora",,`: the second comma is column 24
  const std::string e = error_of("malformed.json");
  CHECK(e.find("malformed.json") != std::string::npos);
  CHECK(e.find("line 3, column 24") != std::string::npos);
}

TEST_CASE("a key of the wrong type names the file, the key and the value") {
  const std::string e = error_of("wrong-type.json");
  CHECK(e.find("wrong-type.json: train_batch_size: expected an integer, got string \"two\"") != std::string::npos);
}

TEST_CASE("an unknown model_family names the nearest families") {
  const std::string e = error_of("unknown-family.json");
  CHECK(e.find("model_family 'fluxx' is not modelled") != std::string::npos);
  CHECK(e.find("flux") != std::string::npos);
}

TEST_CASE("stride smaller than interval is unsupported with the trainer's reason and exit code 1") {
  std::string out, err;
  const int rc = run_like_main(check_opts("flux-stride-below-interval.json"), out, err);
  CHECK(rc == 1);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["prediction"]["supported"] == false);
  CHECK(j["prediction"]["reason"].get<std::string>().find("smaller than gradient_checkpointing_interval 4") != std::string::npos);
}

TEST_CASE("interval on a family that ignores it is unsupported, with what the trainer runs instead") {
  std::string out, err;
  const int rc = run_like_main(check_opts("sdxl-interval.json"), out, err);
  CHECK(rc == 1);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["prediction"]["supported"] == false);
  bool as_run = false;
  for (const auto& w : j["warnings"]) as_run |= w.get<std::string>().find("runs this config as 'layer'") != std::string::npos;
  CHECK(as_run);
}

TEST_CASE("check exits 0 when the config fits, 1 when it does not, 2 for bad input") {
  std::string out, err;
  CHECK(run_like_main(check_opts("flux-480-square.json"), out, err) == 0);
  const auto j = nlohmann::json::parse(out);
  CHECK(j["prediction"]["supported"] == true);
  CHECK(j["prediction"]["fits"] == true);
  CHECK(j["setup"]["width"] == 512);
  CHECK(j["schedule"]["name"] == "layer");
  CHECK(j["prediction"]["breakdown"].contains("memory_gib"));

  CheckOptions small = check_opts("flux-480-square.json");
  small.flags.gpu.clear();
  small.flags.vram_gib = 8;  // the int8 Flux base alone is ~12 GiB
  CHECK(run_like_main(small, out, err) == 1);

  CHECK(run_like_main(check_opts("malformed.json"), out, err) == 2);
  CHECK(out.empty());
  // a data-backend file not on this machine is answered at an assumed shape, not refused
  CHECK(run_like_main(check_opts("missing-backend.json"), out, err) != 2);
  CHECK(out.find("assumed shape") != std::string::npos);
  CheckOptions bad_emit = check_opts("flux-480-square.json");
  bad_emit.emit = "kohya";
  CHECK(run_like_main(bad_emit, out, err) == 2);
  CHECK(err.find("--emit: 'kohya'") != std::string::npos);
}

TEST_CASE("the emitted SimpleTuner config differs only in checkpointing keys and the phase advice's, in the same order") {
  const std::string dest = (fs::temp_directory_path() / "segadvise-test-emitted.json").string();
  fs::remove(dest);
  CheckOptions o = check_opts("flux-480-square.json");
  o.flags.gpu.clear();
  o.flags.vram_gib = 20;  // tight enough that the schedule matters, roomy enough that something fits
  // this test is about the keys written back: ranges pinned to the point prediction (the shipped
  // 90% bands leave Flux only borderline on 20 GiB without a measurement)
  o.flags.ranges = kDir + "point-ranges.json";
  o.advise = true;
  o.emit = "simpletuner";
  o.output = dest;
  std::string out, err;
  const int rc = run_like_main(o, out, err);
  REQUIRE(rc == 0);
  REQUIRE(fs::exists(dest));
  const auto before = read_json_file(kDir + "flux-480-square.json", "test");
  const auto after = read_json_file(dest, "test");
  // int8-quanto Flux quantized on the accelerator (the default) puts its 23.8 GB bf16 base on the
  // 20 GiB card: the model-load phase's advice, quantize_via cpu, is written too
  CHECK(after.value("quantize_via", "") == "cpu");
  std::vector<std::string> changed = checkpointing_keys();
  changed.push_back("quantize_via");
  std::vector<std::string> kb, ka;
  for (auto it = before.begin(); it != before.end(); ++it)
    if (std::find(changed.begin(), changed.end(), it.key()) == changed.end()) {
      kb.push_back(it.key());
      CHECK(after.contains(it.key()));
      if (after.contains(it.key())) CHECK(after[it.key()] == it.value());
    }
  for (auto it = after.begin(); it != after.end(); ++it)
    if (std::find(changed.begin(), changed.end(), it.key()) == changed.end()) ka.push_back(it.key());
  CHECK(ka == kb);
  fs::remove(dest);
}

TEST_CASE("with_schedule keeps key order and spelling and only touches checkpointing keys") {
  const nlohmann::ordered_json raw = nlohmann::ordered_json::parse(
      R"({"--seed": 1, "--gradient_checkpointing_interval": 2, "--model_family": "wan", "--lr": 0.1})");
  Schedule s;  // layer: interval unset, torch, no offload -> the interval key goes, nothing is added
  nlohmann::ordered_json out = with_schedule(raw, s);
  CHECK(out.dump() == R"({"--seed":1,"--model_family":"wan","--lr":0.1})");
  s.interval = 4;
  s.stride = 6;
  s.backend = Backend::Unsloth;
  out = with_schedule(raw, s);
  // the interval stays in place; stride and backend are appended with the file's `--` spelling
  CHECK(out.dump() ==
        R"({"--seed":1,"--gradient_checkpointing_interval":4,"--model_family":"wan","--lr":0.1,)"
        R"("--gradient_checkpointing_segment_stride":6,"--gradient_checkpointing_backend":"unsloth"})");
  Schedule none;
  none.checkpointing = false;
  out = with_schedule(nlohmann::ordered_json::parse(R"({"a": 1})"), none);
  CHECK(out.dump() == R"({"a":1,"gradient_checkpointing":false})");
}

TEST_CASE("with_keys sets a phase's key in the spelling the file has and the checkpointing keys as with_schedule does") {
  const nlohmann::ordered_json raw =
      nlohmann::ordered_json::parse(R"({"--seed": 1, "--validation_resolution": "1024x1024", "--lr": 0.1})");
  Schedule s;
  s.interval = 2;
  nlohmann::ordered_json knobs = nlohmann::ordered_json::parse(schedule_keys(s).dump());
  knobs["validation_resolution"] = "512x512";  // only the dashed spelling is in the file: it is kept
  knobs["vae_enable_tiling"] = true;          // a new key: added plain, at the end
  const nlohmann::ordered_json out = with_keys(raw, knobs);
  // the three dashed keys stay in place; the interval is appended dashed (most keys are), then the new key
  CHECK(out.dump() == R"({"--seed":1,"--validation_resolution":"512x512","--lr":0.1,)"
                      R"("--gradient_checkpointing_interval":2,"vae_enable_tiling":true})");
  CHECK(with_keys(raw, nlohmann::ordered_json::object()) == raw);
}

TEST_CASE("a SimpleTuner config is read through the one read path: trainer, files read, data backends, the file as written") {
  TrainerReadOptions o = away();
  const TrainerRead r = read_trainer_config(kDir + "flux-480-square.json", o);
  CHECK(r.trainer == "simpletuner");
  REQUIRE(r.inputs.size() == 2);
  CHECK(r.inputs[0] == kDir + "flux-480-square.json");
  CHECK(r.inputs[1] == r.data_backend_path);
  REQUIRE(!r.backends.empty());
  CHECK(r.shape_source == r.backends.front().note);
  CHECK(r.raw.is_object());
  CHECK(r.raw.contains("model_family"));
  // the same as the trainer's own read
  CHECK(trainer("simpletuner").read(kDir + "flux-480-square.json", o).setup.width == r.setup.width);
  CHECK(trainer("simpletuner").plans_are_schedules());
  CHECK(!trainer("musubi").plans_are_schedules());
}

TEST_CASE("a failed write leaves no partial output file") {
  // the output path is a non-empty directory: the temporary file is written beside it, the rename
  // over it fails, and the temporary file must be gone again (the folder holds only what it held)
  const fs::path dir = fs::temp_directory_path() / ("segadvise-test-write-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "out.json");
  std::ofstream(dir / "out.json" / "keep.txt") << "x";
  CheckOptions o = check_opts("flux-480-square.json");
  o.advise = true;
  o.emit = "simpletuner";
  o.output = (dir / "out.json").string();
  std::string out, err;
  const int rc = run_like_main(o, out, err);
  CHECK(rc == 2);
  CHECK(err.find("cannot write") != std::string::npos);
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
  CHECK(left == std::vector<std::string>{"out.json"});
  CHECK(fs::is_directory(dir / "out.json"));
  fs::remove_all(dir);
}

TEST_CASE("read_run_setup reads every key that moves a phase, with the trainer's defaults") {
  using nlohmann::ordered_json;
  const RunSetup d = read_run_setup(ordered_json::object(), "cfg.json");
  CHECK(d.quantize_via == "accelerator");  // registry/model.py:578
  CHECK(d.validation_width == 256);        // validation_resolution "256"
  CHECK(d.validation_step_interval == 100);
  CHECK(d.validation_guidance == doctest::Approx(7.5));
  CHECK_FALSE(d.set_grads_to_none);
  CHECK(d.ema_device == "cpu");
  const RunSetup r = read_run_setup(ordered_json::parse(R"({
    "--offload_during_startup": true, "validation_resolution": "512x512, 1280x720", "validation_steps": 0,
    "quantize_via": "cpu", "text_encoder_2_precision": "int8-quanto", "vae_batch_size": 2,
    "validation_num_video_frames": 49, "set_grads_to_none": "true", "ema_device": "accelerator",
    "ramtorch": true, "ramtorch_text_encoder": true, "max_train_steps": 1000})"), "cfg.json");
  CHECK(r.offload_during_startup);
  CHECK(r.validation_width == 1280);  // the largest by area: 1280 x 720 = 921,600 > 512 x 512 = 262,144
  CHECK(r.validation_height == 720);
  CHECK(r.validation_step_interval == 0);  // validation_steps: the older spelling
  CHECK(r.quantize_via == "cpu");
  REQUIRE(r.text_encoder_precision.size() == 4);
  CHECK(r.text_encoder_precision[0] == "no_change");
  CHECK(r.text_encoder_precision[1] == "int8-quanto");
  CHECK(r.vae_batch_size == 2);
  CHECK(r.validation_num_video_frames == 49);
  CHECK(r.set_grads_to_none);
  CHECK(r.ema_device == "accelerator");
  CHECK(r.ramtorch_text_encoder);
  CHECK(r.max_train_steps == 1000);
  // values under 128 are megapixels: 1.0 -> sqrt(1e6) = 1000 px a side
  CHECK(read_run_setup(ordered_json::parse(R"({"validation_resolution": "1.0"})"), "c").validation_width == 1000);
  CHECK_THROWS_WITH_AS(read_run_setup(ordered_json::parse(R"({"quantize_via": "gpu"})"), "cfg.json"),
                       doctest::Contains("quantize_via: 'gpu'"), InputError);
  CHECK_THROWS_AS(read_run_setup(ordered_json::parse(R"({"validation_resolution": "big"})"), "cfg.json"), InputError);
  CHECK_THROWS_AS(read_run_setup(ordered_json::parse(R"({"text_encoder_1_precision": "int9"})"), "cfg.json"), InputError);
}

TEST_CASE("a stride equal to the interval is the plain interval on a segmented family, a stride on a per-block one") {
  // Wan checkpoints contiguous segments: blocks [kS, kS+2) with S = 2 is interval 2, and reads back as
  // advise writes it; Chroma checkpoints block i where i % S < N: a stride there is its own schedule
  const fs::path dir = fs::temp_directory_path() / ("segadvise-test-stride-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto read = [&](const std::string& family, const std::string& flavour) {
    const fs::path p = dir / (family + ".json");
    std::ofstream(p) << R"({"model_family": ")" << family << R"(", "model_flavour": ")" << flavour
                     << R"(", "model_type": "lora", "gradient_checkpointing": true,
                           "gradient_checkpointing_interval": 2, "gradient_checkpointing_segment_stride": 2})";
    return read_simpletuner_config(p.string(), away()).schedule.name();
  };
  CHECK(read("wan", "t2v-480p-1.3b-2.1") == "interval2");
  CHECK(read("chroma", "base") == "seg2-stride2");
  fs::remove_all(dir);
}
