// Image headers and SimpleTuner's buckets (trainers/dataset_buckets.hpp). The images are written here with
// their headers only (what the reader reads; no pixel data is needed or decoded), and every bucket is
// derived by hand from SimpleTuner's rules (docs/datasets.md).
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "scratch_dir.hpp"
#include "segadvise/costmodel/json_input.hpp"
#include "segadvise/trainers/dataset_buckets.hpp"

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
std::string riff(const std::string& chunk, const std::string& data) {
  return "RIFF" + le32(4 + 8 + data.size()) + "WEBP" + chunk + le32(data.size()) + data;
}
std::string webp_lossy(unsigned w, unsigned h) { return riff("VP8 ", std::string(3, '\0') + "\x9d\x01\x2a" + le16(w) + le16(h)); }
std::string webp_lossless(unsigned w, unsigned h) {
  const unsigned bits = (w - 1) | ((h - 1) << 14);
  return riff("VP8L", "\x2f" + le32(bits));
}
std::string webp_extended(unsigned w, unsigned h) { return riff("VP8X", std::string(4, '\0') + le24(w - 1) + le24(h - 1)); }

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
