// Image headers and SimpleTuner's buckets (trainers/dataset_buckets.hpp). The images are written here with
// their headers only (what the reader reads; no pixel data is needed or decoded), and every bucket is
// derived by hand from SimpleTuner's rules (docs/datasets.md).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <vector>

#include "scratch_dir.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/dataset_buckets.hpp"
#include "segadvise/trainers/video_probe.hpp"

using namespace segadvise;

namespace {

std::string be32(unsigned v) { return {char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; }
std::string be16(unsigned v) { return {char(v >> 8), char(v)}; }
std::string le16(unsigned v) { return {char(v), char(v >> 8)}; }
std::string le24(unsigned v) { return {char(v), char(v >> 8), char(v >> 16)}; }
std::string le32(unsigned v) { return {char(v), char(v >> 8), char(v >> 16), char(v >> 24)}; }

// signature, IHDR (13 bytes: width, height, depth 8, colour 2, compression, filter, interlace), its CRC
std::string png(unsigned w, unsigned h) {
  return std::string("\x89PNG\r\n\x1a\n", 8) + be32(13) + "IHDR" + be32(w) + be32(h) + std::string("\x08\x02\0\0\0", 5) +
         std::string(4, '\0');
}
// SOI, an APP1 (EXIF) segment of 100 bytes and a DQT-like segment to skip, then SOF2 (progressive)
std::string jpeg(unsigned w, unsigned h) {
  const std::string app1 = "Exif" + std::string(2, '\0') + std::string(94, 'x');
  return std::string("\xff\xd8\xff\xe1", 4) + be16(app1.size() + 2) + app1 + std::string("\xff\xdb", 2) + be16(5) +
         "abc" + std::string("\xff\xff\xc2", 3) + be16(17) + "\x08" + be16(h) + be16(w) + "\x03" + std::string(9, '\0') +
         std::string("\xff\xd9", 2);
}
// SOI, an APP1 EXIF segment whose IFD0 holds one entry, the orientation (tag 0x0112, SHORT, count 1), in
// Intel (II) or Motorola (MM) byte order, then SOF0
std::string jpeg_oriented(unsigned w, unsigned h, unsigned orientation, bool intel) {
  auto u16 = [&](unsigned v) { return intel ? le16(v) : be16(v); };
  auto u32 = [&](unsigned v) { return intel ? le32(v) : be32(v); };
  const std::string tiff = std::string(intel ? "II" : "MM") + u16(42) + u32(8) + u16(1) + u16(0x0112) + u16(3) + u32(1) +
                           u16(orientation) + u16(0) + u32(0);
  const std::string app1 = std::string("Exif\0\0", 6) + tiff;
  return std::string("\xff\xd8\xff\xe1", 4) + be16(app1.size() + 2) + app1 + std::string("\xff\xc0", 2) + be16(17) + "\x08" +
         be16(h) + be16(w) + "\x03" + std::string(9, '\0') + std::string("\xff\xd9", 2);
}
std::string riff(const std::string& chunk, const std::string& data) {
  return "RIFF" + le32(4 + 8 + data.size()) + "WEBP" + chunk + le32(data.size()) + data;
}
std::string webp_lossy(unsigned w, unsigned h) { return riff("VP8 ", std::string(3, '\0') + "\x9d\x01\x2a" + le16(w) + le16(h)); }
std::string webp_lossless(unsigned w, unsigned h) {
  const unsigned bits = (w - 1) | ((h - 1) << 14);
  return riff("VP8L", "\x2f" + le32(bits));
}
std::string webp_extended(unsigned w, unsigned h) { return riff("VP8X", std::string(4, '\0') + le24(w - 1) + le24(h - 1)); }

// the buckets as (width, height, frames, count), largest first as formed
using Shape = std::tuple<int, int, int, long long>;
std::vector<Shape> shapes(const BucketResult& r) {
  std::vector<Shape> out;
  for (const DatasetBucket& b : r.buckets) out.emplace_back(b.width, b.height, b.frames, b.count);
  return out;
}

BackendShape backend(double res, const std::string& type, bool crop = false, const std::string& crop_aspect = "square") {
  BackendShape b;
  b.id = "photos";
  b.dataset_type = "image";
  b.width = b.height = 1024;
  b.rules.resolution = res;
  b.rules.resolution_type = type;
  b.rules.alignment = 64;
  b.rules.crop = crop;
  b.rules.crop_aspect = crop_aspect;
  return b;
}

// bucket i of r: its edges and, where given (>= 0), how many samples it holds
void check_bucket(const BucketResult& r, std::size_t i, int width, int height, int count = -1) {
  CAPTURE(i);
  REQUIRE(i < r.buckets.size());
  CHECK(r.buckets[i].width == width);
  CHECK(r.buckets[i].height == height);
  if (count >= 0) CHECK(r.buckets[i].count == count);
}

}  // namespace

TEST_CASE("image sizes come from the PNG, JPEG and WebP headers") {
  test::Scratch s("segadvise-headers-");
  auto size = [&](const std::string& name, const std::string& bytes) {
    const auto m = read_image_header(s.write(name, bytes));
    REQUIRE(m);
    return std::pair<int, int>(m->width, m->height);
  };
  CHECK(size("a.png", png(1500, 1000)) == std::pair(1500, 1000));
  CHECK(size("b.jpg", jpeg(4032, 3024)) == std::pair(4032, 3024));  // after EXIF and a fill byte
  CHECK(size("c.webp", webp_lossy(768, 1024)) == std::pair(768, 1024));
  CHECK(size("d.webp", webp_lossless(300, 200)) == std::pair(300, 200));
  CHECK(size("e.webp", webp_extended(5000, 70000)) == std::pair(5000, 70000));
  CHECK_FALSE(read_image_header(s.write("cut.png", png(10, 10).substr(0, 18))));
  CHECK_FALSE(read_image_header(s.write("cut.jpg", jpeg(10, 10).substr(0, 50))));
  CHECK_FALSE(read_image_header(s.write("text.png", "not an image")));
  CHECK_FALSE(read_image_header(s.write("zero.png", png(0, 10))));
  CHECK_FALSE(read_image_header((s.dir / "absent.png").string()));
}

TEST_CASE("a dataset directory is scanned recursively for images") {
  test::Scratch s("segadvise-scan-");
  std::filesystem::create_directories(s.dir / "sub" / "deeper");
  s.write("a.png", png(1024, 1024));
  s.write("sub/b.JPG", jpeg(1500, 1000));
  s.write("sub/deeper/c.webp", webp_lossy(768, 1024));
  s.write("caption.txt", "a photo");
  s.write("broken.jpeg", "\xff\xd8");
  const DatasetScan d = scan_image_dataset(s.dir.string());
  CHECK(d.files == 4);  // the .txt is not an image
  CHECK(d.unreadable == 1);
  CHECK(d.media.size() == 3);
  CHECK_THROWS_AS(scan_image_dataset((s.dir / "a.png").string()), InputError);
}

TEST_CASE("SimpleTuner's buckets: pixel, pixel_area and square crops, minimum_image_size and repeats") {
  const std::vector<MediaSize> media = {{1024, 1024}, {1024, 1024}, {1500, 1000}, {768, 1024}, {400, 400}};
  SUBCASE("pixel 1024: the shorter side to 1024, the other int(1024 x aspect), both to 64") {
    BackendShape b = backend(1024, "pixel");
    b.rules.minimum_image_size = 512;  // 400x400: shorter side under 512, dropped
    b.rules.repeats = 1;               // every sample twice an epoch
    const BucketResult r = simpletuner_buckets(b, media);
    CHECK(r.too_small == 1);
    REQUIRE(r.buckets.size() == 3);
    // 1500x1000: aspect 1.5 -> height 1024, width int(1536) = 1536
    check_bucket(r, 0, 1536, 1024, 2);
    // 768x1024: aspect 0.75 -> width 1024, height int(1024 / 0.75) = 1365 -> round(21.33) x 64 = 1344
    check_bucket(r, 1, 1024, 1344, 2);
    check_bucket(r, 2, 1024, 1024, 4);
  }
  SUBCASE("pixel_area 1024 (1.048576 MP): edge 1024, W = round64(1024 sqrt(ar)), H = round64(1024 / sqrt(ar))") {
    const BucketResult r = simpletuner_buckets(backend(1024, "pixel_area"), media);
    REQUIRE(r.buckets.size() == 3);
    // 1.5: 1024 * 1.2247 = 1254.1 -> 1280; 1024 / 1.2247 = 836.1 -> 832
    check_bucket(r, 0, 1280, 832);
    // 0.75: 1024 * 0.8660 = 886.8 -> 896; 1024 / 0.8660 = 1182.4 -> 1152
    check_bucket(r, 2, 896, 1152);
    // the square ones, and 400x400 (no minimum given) upscaled into the same bucket: 3
    check_bucket(r, 1, 1024, 1024, 3);
  }
  SUBCASE("a square crop puts every image in one bucket; pixel_area's minimum is in area and short side") {
    BackendShape b = backend(1024, "pixel_area", true, "square");
    b.rules.minimum_image_size = 800;  // 0.64 MP and a shorter side of 800: 768x1024 (0.79 MP, side 768) dropped
    const BucketResult r = simpletuner_buckets(b, media);
    CHECK(r.too_small == 2);  // 768x1024 and 400x400
    REQUIRE(r.buckets.size() == 1);
    check_bucket(r, 0, 1024, 1024, 3);
  }
  SUBCASE("crop_aspect closest: the crop bucket nearest each image's aspect") {
    BackendShape b = backend(1024, "pixel_area", true, "closest");
    b.rules.crop_aspect_buckets = {1.0, 1.5};
    const BucketResult r = simpletuner_buckets(b, media);
    REQUIRE(r.buckets.size() == 2);
    check_bucket(r, 0, 1280, 832, 1);   // 1.5: the 1500x1000 photo (pixel_area's 1.5 bucket)
    check_bucket(r, 1, 1024, 1024, 4);  // 1.0: the squares, 400x400 and 768x1024 (0.75 is nearer 1.0)
  }
}

TEST_CASE("several backends' buckets carry their backend and batch, ordered by load (pixels x frames x batch)") {
  BackendShape photos = backend(1024, "pixel");
  BackendShape small = backend(512, "pixel");
  small.id = "small";
  small.batch = 4;
  // photos: 1500x1000 -> 1536x1024 (1.57 Mpx x batch 1); small: 1024x1024 -> 512x512 (0.26 Mpx x 4 = 1.05)
  const BucketResult a = simpletuner_buckets(photos, {{1500, 1000}});
  const BucketResult b = simpletuner_buckets(small, {{1024, 1024}, {1024, 1024}});
  REQUIRE(a.buckets.size() == 1);
  REQUIRE(b.buckets.size() == 1);
  CHECK(a.buckets[0].backend == "photos");
  CHECK(a.buckets[0].batch == 1);
  CHECK(b.buckets[0].backend == "small");
  CHECK(b.buckets[0].batch == 4);
  CHECK(b.buckets[0].width == 512);
  CHECK(b.buckets[0].count == 2);
}

TEST_CASE("video buckets: every clip the first num_frames frames, min_frames and max_frames under the frame rule") {
  // Wan's rule (8k+1, rounded down), num_frames 49, pixel_area 480 with alignment 32
  BackendShape b = backend(480, "pixel_area");
  b.id = "clips";
  b.dataset_type = "video";
  b.frames = 49;
  b.rules.alignment = 32;
  b.rules.frame_rule = "8k+1";
  b.rules.max_frames = 80;
  const std::vector<MediaSize> media = {
      {832, 480, 81},  // 81 is 8k+1 and above max_frames 80: dropped
      {832, 480, 49},  // 49: kept
      {832, 480, 56},  // 56 -> 49 under the rule: kept
      {480, 832, 60},  // 60 -> 57: kept
      {640, 480, 48},  // 48 -> 41, under min_frames (num_frames, 49): dropped
  };
  const BucketResult r = simpletuner_buckets(b, media);
  CHECK(r.frames_out == 2);
  // 0.2304 MP: edge round32(480) = 480. 832x480: aspect 1.73, sqrt 1.3153: W = int(631.3) = 631 -> 640,
  // H = int(364.9) = 364 -> 352. 480x832: aspect 0.58, sqrt 0.7616: W = int(365.6) -> 352, H = int(630.3) -> 640
  CHECK(shapes(r) == std::vector<Shape>{{640, 352, 49, 2}, {352, 640, 49, 1}});
  SUBCASE("a family without a frame rule counts frames as they are; min_frames above num_frames") {
    b.rules.frame_rule = "none";
    b.rules.max_frames = 0;
    b.rules.min_frames = 57;
    const BucketResult n = simpletuner_buckets(b, media);
    // 81 and 60 reach 57; 49, 56 and 48 do not
    CHECK(n.frames_out == 3);
    REQUIRE(n.buckets.size() == 2);
    CHECK(n.buckets[0].count == 1);
    CHECK(n.buckets[1].count == 1);
  }
}

TEST_CASE("a JPEG's EXIF orientation is read from IFD0, in either byte order") {
  test::Scratch s("segadvise-exif-");
  const auto a = read_image_header(s.write("a.jpg", jpeg_oriented(4032, 3024, 6, true)));  // 6: turned 90 degrees
  REQUIRE(a);
  CHECK(a->width == 4032);  // as stored
  CHECK(a->height == 3024);
  CHECK(a->orientation == 6);
  const auto b = read_image_header(s.write("b.jpg", jpeg_oriented(800, 600, 3, false)));  // 3: upside down
  REQUIRE(b);
  CHECK(b->orientation == 3);
  const auto c = read_image_header(s.write("c.jpg", jpeg(800, 600)));  // an EXIF segment without the tag
  REQUIRE(c);
  CHECK(c->orientation == 1);
}

TEST_CASE("diffusers' buckets: the --resolution square, or the nearest listed bucket after exif_transpose") {
  DatasetSpec d;
  d.id = "--instance_data_dir";
  d.edge = 1024;
  d.batch = 2;
  d.repeats = 3;
  const std::vector<MediaSize> media = {{4032, 3024, 1, 6}, {4032, 3024, 1, 1}, {1024, 1024}, {1024, 1024}, {832, 1248}};
  SUBCASE("square: every image at edge x edge, each seen --repeats times") {
    const BucketResult r = diffusers_buckets(d, media);
    REQUIRE(r.buckets.size() == 1);
    CHECK(r.buckets[0].width == 1024);
    CHECK(r.buckets[0].count == 15);  // 5 images x 3
  }
  SUBCASE("listed (w, h): 1024x1024, 1248x832, 832x1248; the turned photo is 3024x4032 once transposed") {
    d.rule = "listed";
    d.listed = {{1024, 1024}, {1248, 832}, {832, 1248}};
    d.exif_transpose = true;
    d.drop_last = true;
    d.repeats = 1;
    const BucketResult r = diffusers_buckets(d, media);
    // |h bw - w bh| for 4032x3024 (w x h): 1024: |3024*1024 - 4032*1024| = 1032192; 1248x832: |3024*1248 -
    // 4032*832| = 419328; 832x1248: |3024*832 - 4032*1248| = 2515968 -> 1248x832. Transposed 3024x4032:
    // 1024: 1032192; 1248x832: |4032*1248 - 3024*832| = 2515968; 832x1248: |4032*832 - 3024*1248| = 419328
    // -> 832x1248, with the 832x1248 image (metric 0): 2 samples. 1248x832 has 1 sample, under batch 2:
    // never trained (drop_last). The squares: 2.
    CHECK(r.no_full_batch == 1);
    // 1024x1024 (1.05 Mpx) before 832x1248 (1.04 Mpx)
    REQUIRE(shapes(r) == std::vector<Shape>{{1024, 1024, 1, 2}, {832, 1248, 1, 2}});
    CHECK(r.buckets[1].batch == 2);
  }
  SUBCASE("a rule the trainer computes in code not described here forms no bucket") {
    d.rule = "not_modelled";
    CHECK(diffusers_buckets(d, media).buckets.empty());
  }
}

TEST_CASE("a DreamBooth dataset is the directory's own entries, not the directories below") {
  test::Scratch s("segadvise-flat-");
  std::filesystem::create_directories(s.dir / "sub");
  s.write("a.png", png(1024, 1024));
  s.write("sub/b.png", png(1024, 1024));
  DatasetSpec d;
  d.recursive = false;
  CHECK(scan_trainer_dataset(s.dir.string(), d).files == 1);
  d.recursive = true;
  CHECK(scan_trainer_dataset(s.dir.string(), d).files == 2);
}

TEST_CASE("musubi-tuner's clips by frame_extraction (docs/dataset_config.md's 40-frame examples)") {
  DatasetSpec d;
  d.id = "datasets[0].video_directory";
  d.rule = "musubi";
  d.dataset_type = "video";
  d.width = 960;
  d.height = 544;
  auto frames_of = [&](const std::vector<MediaSize>& media) {
    std::vector<std::pair<int, long long>> out;
    for (const DatasetBucket& b : musubi_buckets(d, media).buckets) out.emplace_back(b.frames, b.count);
    return out;
  };
  using V = std::vector<std::pair<int, long long>>;
  const MediaSize forty{1280, 720, 40};
  SUBCASE("head: one clip of each target the video reaches; num_repeats multiplies") {
    d.target_frames = {1, 25, 45};
    d.repeats = 2;
    // 40 frames: 1 and 25; 50: 1, 25, 45; 20: 1 -> 45 x1, 25 x2, 1 x3, each twice
    CHECK(frames_of({forty, {1280, 720, 50}, {1280, 720, 20}}) == V{{45, 2}, {25, 4}, {1, 6}});
    const BucketResult r = musubi_buckets(d, {forty});
    REQUIRE(r.buckets.size() == 2);
    CHECK(r.buckets[0].width == 960);  // every sample at the resolution
    CHECK(r.buckets[0].height == 544);
  }
  SUBCASE("chunk [13, 25]: 40 / 13 = 3 clips of 13, 40 / 25 = 1 of 25") {
    d.target_frames = {13, 25};
    d.frame_extraction = "chunk";
    CHECK(frames_of({forty}) == V{{25, 1}, {13, 3}});
  }
  SUBCASE("slide [1, 13, 25], stride 10: (40 - N) / 10 + 1 = 4, 3, 2") {
    d.target_frames = {1, 13, 25};
    d.frame_extraction = "slide";
    d.frame_stride = 10;
    CHECK(frames_of({forty}) == V{{25, 2}, {13, 3}, {1, 4}});
  }
  SUBCASE("uniform [1, 13, 25], frame_sample 4: 4 clips of each") {
    d.target_frames = {1, 13, 25};
    d.frame_extraction = "uniform";
    d.frame_sample = 4;
    CHECK(frames_of({forty}) == V{{25, 4}, {13, 4}, {1, 4}});
  }
  SUBCASE("full, max_frames 31: 20 -> 17, 25 -> 25, 35 -> 33 -> 31") {
    d.frame_extraction = "full";
    d.max_frames = 31;
    CHECK(frames_of({{1280, 720, 20}, {1280, 720, 25}, {1280, 720, 35}}) == V{{31, 1}, {25, 1}, {17, 1}});
  }
  SUBCASE("a video shorter than every target gives no clip") {
    d.target_frames = {45};
    const BucketResult r = musubi_buckets(d, {forty});
    CHECK(r.buckets.empty());
    CHECK(r.frames_out == 1);
  }
}

TEST_CASE("area buckets: every sample at the resolution, its clips at num_frames; repeats, balancing and samples") {
  DatasetSpec d;
  d.id = "datasets[0].folder_path";
  d.rule = "area";
  d.width = d.height = 1024;
  d.repeats = 3;
  const std::vector<MediaSize> media = {{1500, 1000}, {1000, 1500}, {1024, 1024}, {640, 480}};
  SUBCASE("ai-toolkit: num_repeats 3, every image at 1024x1024 whatever its aspect: 4 x 3 samples") {
    CHECK(shapes(trainer_buckets(d, media)) == std::vector<Shape>{{1024, 1024, 1, 12}});
  }
  SUBCASE("a video dataset: every clip num_frames frames") {
    d.dataset_type = "video";
    d.frames = 33;
    CHECK(shapes(area_buckets(d, {{832, 480, 81}, {480, 832, 40}})) == std::vector<Shape>{{1024, 1024, 33, 6}});
  }
  SUBCASE("OneTrainer REPEATS: files x balancing, rounded: 4 x 1.4 = 5.6 -> 6") {
    d.balancing = 1.4;
    CHECK(shapes(area_buckets(d, media)) == std::vector<Shape>{{1024, 1024, 1, 6}});
  }
  SUBCASE("no_upscale, step 16 (diffusers' on-the-fly cap, min(resolution, round(sqrt(h x w)))); SAMPLES shared out") {
    d.no_upscale = true;
    d.align = 16;
    d.samples = 10;
    // 1500x1000 and 1000x1500: 1.5 Mpx >= 1024^2 -> 1024x1024; 1024x1024 -> 1024x1024; 640x480: sqrt(307200)
    // = 554.3 -> 554 -> 544 (34 x 16). 10 samples over 4 files: 3 of 4 -> 7.5 -> 8, 1 of 4 -> 2.5 -> 3
    CHECK(shapes(area_buckets(d, media)) == std::vector<Shape>{{1024, 1024, 1, 8}, {544, 544, 1, 3}});
  }
  SUBCASE("drop_last: a bucket of fewer samples than a batch never trains") {
    d.no_upscale = true;
    d.align = 16;
    d.repeats = 1;
    d.batch = 2;
    d.drop_last = true;
    const BucketResult r = area_buckets(d, media);
    CHECK(shapes(r) == std::vector<Shape>{{1024, 1024, 1, 3}});  // 544x544 holds one sample
    CHECK(r.no_full_batch == 1);
  }
}

TEST_CASE("musubi-tuner's bucket_no_upscale: a sample under the resolution's pixels keeps its own area") {
  DatasetSpec d;
  d.id = "datasets[0].image_directory";
  d.rule = "musubi";
  d.width = 960;
  d.height = 544;
  d.no_upscale = true;
  d.align = 16;
  // 1280x720 (921,600 px) >= 960x544 (522,240): 960x544. 640x360 (230,400): k = sqrt(230400 / 522240) =
  // 0.66421; 960k = 637.6 -> 638 -> 624 (39 x 16), 544k = 361.3 -> 361 -> 352 (22 x 16)
  CHECK(shapes(musubi_buckets(d, {{1280, 720}, {640, 360}, {640, 360}})) == std::vector<Shape>{{960, 544, 1, 1}, {624, 352, 1, 2}});
  d.no_upscale = false;  // without it (or without enable_bucket) every sample at the resolution
  CHECK(shapes(musubi_buckets(d, {{1280, 720}, {640, 360}})) == std::vector<Shape>{{960, 544, 1, 2}});
}

#ifdef SEGADVISE_TEST_VIDEOS
#include "video_files.hpp"

TEST_CASE("video sizes and frame counts come from the container header: MP4, MOV, Matroska, WebM") {
  REQUIRE(video_probe_unavailable().empty());
  test::Scratch s("segadvise-videos-");
  auto path = [&](const std::string& name) { return (s.dir / name).string(); };
  REQUIRE(test::write_video(path("a.mp4"), "mp4", 832, 480, 49, 16));
  REQUIRE(test::write_video(path("b.mov"), "mov", 480, 832, 81, 24));
  REQUIRE(test::write_video(path("c.mkv"), "matroska", 1280, 720, 33, 25));
  REQUIRE(test::write_video(path("d.webm"), "webm", 640, 360, 17, 15));
  auto read = [&](const std::string& name) {
    const auto v = read_video_header(path(name));
    REQUIRE(v);
    return std::tuple<int, int, long long>(v->width, v->height, v->frames);
  };
  CHECK(read("a.mp4") == std::tuple(832, 480, 49LL));   // the track's sample count
  CHECK(read("b.mov") == std::tuple(480, 832, 81LL));
  CHECK(read("c.mkv") == std::tuple(1280, 720, 33LL));  // 33 / 25 s x 25 frames/s
  CHECK(read("d.webm") == std::tuple(640, 360, 17LL));  // 17 / 15 s x 15 frames/s
  CHECK_FALSE(read_video_header(s.write("text.mp4", "not a video")));
  CHECK_FALSE(read_video_header(path("absent.mp4")));

  std::filesystem::create_directories(s.dir / "sub");
  REQUIRE(test::write_video(path("sub/e.MP4"), "mp4", 832, 480, 60, 16));
  s.write("a.txt", "a caption");
  s.write("still.png", png(1024, 1024));
  const DatasetScan d = scan_dataset(s.dir.string(), MediaKind::video);
  CHECK(d.files == 6);  // a, b, c, d, sub/e and text.mp4; not the caption or the image
  CHECK(d.unreadable == 1);
  CHECK(d.media.size() == 5);
  CHECK(d.unavailable.empty());
}
#endif
