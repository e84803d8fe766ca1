// check reading every data backend's dataset (cli/dataset_check.hpp): image and video backends of one
// SimpleTuner config, each bucketed by its own rules, the run judged by the bucket with the highest peak.
// The files are written here: images with their headers only, videos with libavformat's muxers
// (video_files.hpp); every bucket is derived by hand in the comments (docs/datasets.md).
#include <doctest/doctest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "check_options.hpp"
#include "commands.hpp"
#include "scratch_dir.hpp"
#include "segadvise/costmodel/types.hpp"

#ifdef SEGADVISE_TEST_VIDEOS
#include "video_files.hpp"
#endif

using namespace segadvise;
using namespace segadvise::cli;
namespace fs = std::filesystem;

namespace {

std::string be32(unsigned v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }
std::string png(unsigned w, unsigned h) {
  return std::string("\x89PNG\r\n\x1a\n", 8) + be32(13) + "IHDR" + be32(w) + be32(h) + std::string("\x08\x02\0\0\0", 5) +
         std::string(4, '\0');
}

std::string le16(unsigned v) { return {char(v), char(v >> 8)}; }
std::string le32(unsigned v) { return {char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; }
std::string be16(unsigned v) { return {char(v >> 8), char(v)}; }
// a JPEG header whose EXIF IFD0 says orientation 6 (stored sideways: shown turned 90 degrees)
std::string jpeg_turned(unsigned w, unsigned h) {
  const std::string tiff = "II" + le16(42) + le32(8) + le16(1) + le16(0x0112) + le16(3) + le32(1) + le16(6) + le16(0) + le32(0);
  const std::string app1 = std::string("Exif\0\0", 6) + tiff;
  return std::string("\xff\xd8\xff\xe1", 4) + be16(app1.size() + 2) + app1 + std::string("\xff\xc0", 2) + be16(17) + "\x08" +
         be16(h) + be16(w) + "\x03" + std::string(9, '\0') + std::string("\xff\xd9", 2);
}

nlohmann::json check_json(const std::string& config, const std::string& gpu) {
  CheckOptions o;
  o.config = config;
  o.flags.gpu = gpu;
  o.flags.format = "json";
  o.flags.no_runs = true;
  std::ostringstream ss;
  run_check(o, ss);
  return nlohmann::json::parse(ss.str());
}

// one SimpleTuner data backend entry of a backend list (its JSON text): a local image or video backend of
// `dir`, `more` its other keys; kEmbeds the text-embed backend every list needs
std::string backend_entry(const std::string& id, const std::string& type, const fs::path& dir, const std::string& more) {
  return "{\"id\": \"" + id + "\", \"type\": \"local\", \"dataset_type\": \"" + type + "\", \"instance_data_dir\": \"" +
         dir.string() + "\", " + more + "}";
}
const std::string kEmbeds = "{\"id\": \"embeds\", \"dataset_type\": \"text_embeds\", \"default\": true}";
// a SimpleTuner config of `fields` whose data_backend_config lists `entries` (and kEmbeds), in `s`
std::string simpletuner_config(test::Scratch& s, const std::vector<std::string>& entries, const std::string& fields) {
  std::string list = "[";
  for (const std::string& e : entries) list += e + ", ";
  s.write("backend.json", list + kEmbeds + "]");
  return s.write("config.json", "{" + fields + ", \"data_backend_config\": \"" + (s.dir / "backend.json").string() + "\"}");
}

// a bucket of check's JSON as (width, height, frames, count)
using Shape = std::tuple<int, int, int, long long>;
Shape shape(const nlohmann::json& b) {
  return {b["width"].get<int>(), b["height"].get<int>(), b["frames"].get<int>(), b["count"].get<long long>()};
}

}  // namespace

TEST_CASE("every image backend is bucketed; the bucket with the highest peak, of whichever backend, sets the run") {
  test::Scratch s("segadvise-dscheck-");
  fs::create_directories(s.dir / "photos");
  fs::create_directories(s.dir / "squares");
  // photos, pixel 1024, batch 1: 1500x1000 -> 1536x1024 (1.57 Mpx a step)
  s.write("photos/a.png", png(1500, 1000));
  // squares, pixel 1024, batch 2: 1024x1024 twice -> 1024x1024 x 2 (2.10 Mpx a step): the higher peak
  s.write("squares/a.png", png(1024, 1024));
  s.write("squares/b.png", png(1024, 1024));
  const std::string config = simpletuner_config(
      s,
      {backend_entry("photos", "image", s.dir / "photos", "\"resolution\": 1024, \"resolution_type\": \"pixel\""),
       backend_entry("squares", "image", s.dir / "squares", "\"resolution\": 1024, \"resolution_type\": \"pixel\", \"train_batch_size\": 2")},
      "\"model_family\": \"flux\", \"model_type\": \"lora\", \"lora_rank\": 16, \"train_batch_size\": 1, \"gradient_checkpointing\": true");
  const nlohmann::json j = check_json(config, "h100");
  REQUIRE(j["buckets"].size() == 2);
  CHECK(j["buckets"][0]["backend"] == "squares");
  CHECK(j["buckets"][0]["batch"] == 2);
  CHECK(j["buckets"][0]["width"] == 1024);
  CHECK(j["buckets"][0]["count"] == 2);
  CHECK(j["buckets"][1]["backend"] == "photos");
  CHECK(j["buckets"][1]["width"] == 1536);
  CHECK(j["buckets"][0]["peak_vram_gib"].get<double>() > j["buckets"][1]["peak_vram_gib"].get<double>());
  CHECK(j["setup"]["width"] == 1024);
  CHECK(j["setup"]["batch"] == 2);
  CHECK(j["dataset"]["backends"].size() == 2);
  CHECK(j["dataset"]["image_files"] == 3);
}

TEST_CASE("a diffusers DreamBooth command line's --instance_data_dir: listed buckets after exif_transpose") {
  test::Scratch s("segadvise-dsdiffusers-");
  fs::create_directories(s.dir / "photos" / "below");
  // a phone photo stored 4032x3024 with orientation 6: 3024x4032 once transposed. Listed (h,w) buckets
  // 1024,1024; 1248,832; 832,1248 are (w x h) 1024x1024, 832x1248, 1248x832; |h bw - w bh| for 3024x4032:
  // 1024x1024 1032192, 832x1248 419328, 1248x832 2515968 -> 832x1248. Two 832x1248 portraits: metric 0.
  s.write("photos/phone.jpg", jpeg_turned(4032, 3024));
  s.write("photos/p1.png", png(832, 1248));
  s.write("photos/p2.png", png(832, 1248));
  s.write("photos/below/not-listed.png", png(1024, 1024));  // Path.iterdir: the directory's own entries
  s.write("train.sh", "accelerate launch train_dreambooth_lora_qwen_image.py \\\n"
                      "  --pretrained_model_name_or_path=Qwen/Qwen-Image --instance_prompt=x \\\n"
                      "  --instance_data_dir=" + (s.dir / "photos").string() + " --repeats 2 \\\n"
                      "  --resolution 1024 --train_batch_size 1 --mixed_precision bf16 --gradient_checkpointing \\\n"
                      "  --use_aspect_ratio_buckets \"--aspect_ratio_buckets=1024,1024;1248,832;832,1248\"\n");
  const nlohmann::json j = check_json((s.dir / "train.sh").string(), "h100");
  REQUIRE(j["buckets"].size() == 1);
  CHECK(j["buckets"][0]["width"] == 832);
  CHECK(j["buckets"][0]["height"] == 1248);
  CHECK(j["buckets"][0]["count"] == 6);  // 3 images x --repeats 2
  CHECK(j["setup"]["width"] == 832);
  CHECK(j["setup"]["height"] == 1248);
  CHECK(j["dataset"]["image_files"] == 3);
}

// three photos of mixed aspect under `dir`, one more in a directory below it
void mixed_photos(test::Scratch& s, const std::string& dir) {
  fs::create_directories(s.dir / dir / "below");
  s.write(dir + "/wide.png", png(1500, 1000));
  s.write(dir + "/tall.png", png(1000, 1500));
  s.write(dir + "/square.png", png(1024, 1024));
  s.write(dir + "/below/small.png", png(640, 480));
}

// an ai-toolkit job (its own YAML format) of one dataset: folder_path `dir`, `dataset` its other keys
// (YAML lines, indented), LoRA of `rank` on the model `model` (a YAML flow mapping)
std::string ai_toolkit_job(test::Scratch& s, const fs::path& dir, const std::string& dataset, int rank, const std::string& model) {
  return s.write("job.yaml", "job: extension\nconfig:\n  name: buckets\n  process:\n    - type: sd_trainer\n"
                             "      network: {type: lora, linear: " + std::to_string(rank) + ", linear_alpha: " + std::to_string(rank) + "}\n"
                             "      datasets:\n        - folder_path: " + dir.string() + "\n" + dataset +
                             "      train: {batch_size: 1, gradient_checkpointing: true, optimizer: adamw8bit, dtype: bf16}\n"
                             "      model: " + model + "\n");
}

TEST_CASE("an ai-toolkit job's folder_path: each resolution its own dataset, every sample at its square") {
  test::Scratch s("segadvise-dsaitk-");
  mixed_photos(s, "photos");
  // resolution [512, 1024]: two datasets of the folder (config_modules.py preprocess_dataset_raw_config);
  // its 4 images (the one below included) x num_repeats 2 = 8 samples at 1024x1024 and 8 at 512x512
  const std::string job = ai_toolkit_job(s, s.dir / "photos", "          resolution: [512, 1024]\n          num_repeats: 2\n", 16,
                                         "{name_or_path: black-forest-labs/FLUX.1-dev, is_flux: true, quantize: true}");
  const nlohmann::json j = check_json(job, "h100");
  REQUIRE(j["buckets"].size() == 2);
  CHECK(shape(j["buckets"][0]) == Shape{1024, 1024, 1, 8});
  CHECK(j["buckets"][0]["backend"] == "datasets[0].folder_path at 1024");
  CHECK(shape(j["buckets"][1]) == Shape{512, 512, 1, 8});
  CHECK(j["setup"]["width"] == 1024);
  CHECK(j["dataset"]["image_files"] == 8);  // the folder's 4 files count in each resolution's dataset
}

TEST_CASE("OneTrainer's concepts: in the config or its concept file; balancing by REPEATS or SAMPLES") {
  test::Scratch s("segadvise-dsonetrainer-");
  mixed_photos(s, "photos");
  const std::string head = "{\"model_type\": \"FLUX_DEV_1\", \"base_model_name\": \"black-forest-labs/FLUX.1-dev\", "
                           "\"training_method\": \"LORA\", \"batch_size\": 2, \"resolution\": \"768\", \"train_dtype\": \"BFLOAT_16\", "
                           "\"transformer\": {\"train\": true, \"weight_dtype\": \"NFLOAT_4\"}, ";
  SUBCASE("concepts in the config: its own entries (include_subdirectories false), 3 x balancing 1.5 = 4.5 -> 5") {
    const std::string config = s.write("config.json", head + "\"concepts\": [{\"path\": \"" + (s.dir / "photos").string() +
                                                              "\", \"balancing\": 1.5, \"balancing_strategy\": \"REPEATS\"}]}");
    const nlohmann::json j = check_json(config, "h100");
    REQUIRE(j["buckets"].size() == 1);
    CHECK(shape(j["buckets"][0]) == Shape{768, 768, 1, 5});
    CHECK(j["buckets"][0]["batch"] == 2);
    CHECK(j["dataset"]["image_files"] == 3);
  }
  SUBCASE("concept_file_name beside the config: SAMPLES 10 over every directory below; disabled and validation concepts left out") {
    s.write("concepts.json", "[{\"path\": \"" + (s.dir / "photos").string() + "\", \"include_subdirectories\": true, "
                             "\"balancing\": 10, \"balancing_strategy\": \"SAMPLES\"},"
                             " {\"path\": \"" + (s.dir / "photos").string() + "\", \"type\": \"VALIDATION\"},"
                             " {\"path\": \"" + (s.dir / "photos").string() + "\", \"enabled\": false}]");
    const std::string config = s.write("config.json", head + "\"concept_file_name\": \"concepts.json\"}");
    const nlohmann::json j = check_json(config, "h100");
    REQUIRE(j["buckets"].size() == 1);
    CHECK(shape(j["buckets"][0]) == Shape{768, 768, 1, 10});
    CHECK(j["dataset"]["image_files"] == 4);
  }
}

TEST_CASE("a musubi-tuner image dataset with enable_bucket and bucket_no_upscale") {
  test::Scratch s("segadvise-dsmusubinoup-");
  fs::create_directories(s.dir / "images");
  // 960x544 (522,240 px): 1280x720 is larger: 960x544; 640x360 (230,400 px) keeps its area: 624x352
  // (test_dataset_buckets derives it); num_repeats 1
  s.write("images/big.png", png(1280, 720));
  s.write("images/a.png", png(640, 360));
  s.write("images/b.png", png(640, 360));
  s.write("dataset.toml", "[general]\nresolution = [960, 544]\nbatch_size = 1\nenable_bucket = true\nbucket_no_upscale = true\n\n"
                          "[[datasets]]\nimage_directory = \"" + (s.dir / "images").string() + "\"\ncache_directory = \"/tmp/none\"\n");
  const std::string sh = s.write("train.sh", "accelerate launch src/musubi_tuner/wan_train_network.py --task t2v-1.3B --dit wan.safetensors "
                                             "--dataset_config " + (s.dir / "dataset.toml").string() +
                                             " --sdpa --mixed_precision bf16 --gradient_checkpointing --network_module networks.lora_wan --network_dim 16\n");
  const nlohmann::json j = check_json(sh, "h100");
  REQUIRE(j["buckets"].size() == 2);
  CHECK(shape(j["buckets"][0]) == Shape{960, 544, 1, 1});
  CHECK(shape(j["buckets"][1]) == Shape{624, 352, 1, 2});
}

TEST_CASE("a diffusers DreamBooth script's on-the-fly buckets: each image at min(--resolution, round(sqrt(h w)))") {
  test::Scratch s("segadvise-dsonthefly-");
  mixed_photos(s, "photos");
  s.write("photos/tiny.png", png(320, 320));
  // own entries: wide, tall, square (>= 1024^2 px: 1024), tiny 320 (320 = 20 x 16); below/small is not
  // listed. --repeats 2: 6 samples at 1024, 2 at 320; batch 1 (drop_last leaves none out)
  const std::string sh = s.write("train.sh", "accelerate launch train_dreambooth_lora_qwen_image.py \\\n"
                                             "  --pretrained_model_name_or_path=Qwen/Qwen-Image --instance_prompt=x \\\n"
                                             "  --instance_data_dir=" + (s.dir / "photos").string() + " --repeats 2 \\\n"
                                             "  --resolution 1024 --train_batch_size 1 --mixed_precision bf16 --gradient_checkpointing \\\n"
                                             "  --use_aspect_ratio_buckets\n");
  const nlohmann::json j = check_json(sh, "h100");
  REQUIRE(j["buckets"].size() == 2);
  CHECK(shape(j["buckets"][0]) == Shape{1024, 1024, 1, 6});
  CHECK(shape(j["buckets"][1]) == Shape{320, 320, 1, 2});
}

#ifdef SEGADVISE_TEST_VIDEOS
TEST_CASE("a video backend's clips and an image backend of the same config, judged by the largest clip") {
  test::Scratch s("segadvise-dsvideo-");
  fs::create_directories(s.dir / "clips");
  fs::create_directories(s.dir / "stills");
  // Wan 2.1 1.3B: 8k+1 frames, alignment 32; num_frames 49, max_frames 80, pixel_area 480 (edge 480)
  REQUIRE(test::write_video((s.dir / "clips/a.mp4").string(), "mp4", 832, 480, 49, 16));    // 640x352, 49
  REQUIRE(test::write_video((s.dir / "clips/b.mkv").string(), "matroska", 480, 832, 60, 16));  // 60 -> 57: 352x640
  REQUIRE(test::write_video((s.dir / "clips/c.webm").string(), "webm", 640, 480, 33, 16));  // 33 < 49: dropped
  REQUIRE(test::write_video((s.dir / "clips/d.mov").string(), "mov", 832, 480, 81, 16));    // 81 > 80: dropped
  // stills, batch 2: 1024x1024 -> 480x480 (aspect 1: edge x edge)
  s.write("stills/a.png", png(1024, 1024));
  s.write("stills/b.png", png(1024, 1024));
  const std::string config = simpletuner_config(
      s,
      {backend_entry("clips", "video", s.dir / "clips",
                     "\"resolution\": 480, \"resolution_type\": \"pixel_area\", \"video\": {\"num_frames\": 49, \"max_frames\": 80}"),
       backend_entry("stills", "image", s.dir / "stills", "\"resolution\": 480, \"resolution_type\": \"pixel_area\", \"train_batch_size\": 2")},
      "\"model_family\": \"wan\", \"model_flavour\": \"t2v-480p-1.3b-2.1\", \"model_type\": \"lora\", \"train_batch_size\": 1");
  const nlohmann::json j = check_json(config, "h100");
  REQUIRE(j["buckets"].size() == 3);
  // 640x352 and 352x640 carry the same tokens (20 x 11 patches x 13 latent frames): the wider is first
  CHECK(j["buckets"][0]["backend"] == "clips");
  CHECK(shape(j["buckets"][0]) == Shape{640, 352, 49, 1});
  CHECK(shape(j["buckets"][1]) == Shape{352, 640, 49, 1});
  CHECK(j["buckets"][2]["backend"] == "stills");
  CHECK(shape(j["buckets"][2]) == Shape{480, 480, 1, 2});
  CHECK(j["buckets"][2]["batch"] == 2);
  CHECK(j["setup"]["width"] == 640);
  CHECK(j["setup"]["frames"] == 49);
  CHECK(j["dataset"]["video_files"] == 4);
  CHECK(j["dataset"]["image_files"] == 2);
  CHECK(j["dataset"]["outside_frame_range"] == 2);
}

TEST_CASE("an ai-toolkit video dataset (num_frames 33): every video one clip of 33 frames at the resolution's square") {
  test::Scratch s("segadvise-dsaitkvideo-");
  fs::create_directories(s.dir / "clips");
  // shrink_video_to_frames: num_frames spread over the whole video, whatever its length; resolution [480]
  REQUIRE(test::write_video((s.dir / "clips/a.mp4").string(), "mp4", 832, 480, 49, 16));
  REQUIRE(test::write_video((s.dir / "clips/b.mkv").string(), "matroska", 480, 832, 81, 16));
  s.write("clips/still.png", png(1024, 1024));  // a video dataset lists its videos only
  const std::string job = ai_toolkit_job(s, s.dir / "clips", "          resolution: [480]\n          num_frames: 33\n", 32,
                                         "{name_or_path: Wan-AI/Wan2.1-T2V-1.3B-Diffusers, arch: wan21}");
  const nlohmann::json j = check_json(job, "h100");
  REQUIRE(j["buckets"].size() == 1);
  CHECK(shape(j["buckets"][0]) == Shape{480, 480, 33, 2});
  CHECK(j["setup"]["frames"] == 33);
  CHECK(j["dataset"]["video_files"] == 2);
}

TEST_CASE("a musubi-tuner dataset TOML's video_directory: clips by target_frames at the resolution") {
  test::Scratch s("segadvise-dsmusubi-");
  fs::create_directories(s.dir / "clips");
  // head, target_frames [1, 25, 45]: 50 frames give clips of 1, 25 and 45; 30 frames 1 and 25; 10 only 1
  REQUIRE(test::write_video((s.dir / "clips/a.mp4").string(), "mp4", 1280, 720, 50, 16));
  REQUIRE(test::write_video((s.dir / "clips/b.mkv").string(), "matroska", 720, 1280, 30, 16));
  REQUIRE(test::write_video((s.dir / "clips/c.webm").string(), "webm", 640, 480, 10, 16));
  s.write("dataset.toml", "[general]\nresolution = [832, 480]\nbatch_size = 1\n\n[[datasets]]\nvideo_directory = \"" +
                              (s.dir / "clips").string() + "\"\ncache_directory = \"/tmp/none\"\ntarget_frames = [1, 25, 45]\n"
                              "frame_extraction = \"head\"\nnum_repeats = 2\n");
  s.write("train.sh", "accelerate launch src/musubi_tuner/wan_train_network.py --task t2v-1.3B --dit wan.safetensors "
                      "--dataset_config " + (s.dir / "dataset.toml").string() +
                      " --sdpa --mixed_precision bf16 --gradient_checkpointing --network_module networks.lora_wan --network_dim 16\n");
  const nlohmann::json j = check_json((s.dir / "train.sh").string(), "h100");
  REQUIRE(j["buckets"].size() == 3);
  // one clip of 45 (num_repeats 2), two of 25, three of 1, each twice; every one at the resolution
  CHECK(shape(j["buckets"][0]) == Shape{832, 480, 45, 2});
  CHECK(shape(j["buckets"][1]) == Shape{832, 480, 25, 4});
  CHECK(shape(j["buckets"][2]) == Shape{832, 480, 1, 6});
  CHECK(j["setup"]["frames"] == 45);
  CHECK(j["dataset"]["video_files"] == 3);
}
#endif
