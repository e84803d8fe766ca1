// Image headers and SimpleTuner's aspect and frame buckets (dataset_buckets.hpp). Each image header is
// read with a few small reads: PNG and WebP from their first 30 bytes, JPEG marker by marker (segments
// skipped by their length) up to its first SOF. Videos go through video_probe.hpp.
#include "segadvise/trainers/dataset_buckets.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <tuple>

#include "segadvise/io/json_input.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include "segadvise/trainers/video_probe.hpp"

namespace segadvise {
namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

unsigned be16(const unsigned char* p) { return (unsigned(p[0]) << 8) | p[1]; }
unsigned long be32(const unsigned char* p) {
  return (static_cast<unsigned long>(p[0]) << 24) | (static_cast<unsigned long>(p[1]) << 16) | (unsigned(p[2]) << 8) | p[3];
}
unsigned le16(const unsigned char* p) { return unsigned(p[0]) | (unsigned(p[1]) << 8); }
unsigned long le24(const unsigned char* p) { return unsigned(p[0]) | (unsigned(p[1]) << 8) | (static_cast<unsigned long>(p[2]) << 16); }

bool valid(long w, long h) { return w > 0 && h > 0 && w <= 1000000 && h <= 1000000; }

std::optional<MediaSize> png(const unsigned char* b, std::size_t n) {
  // signature, then the IHDR chunk: length, "IHDR", width, height (big-endian)
  if (n < 24 || std::string(reinterpret_cast<const char*>(b + 12), 4) != "IHDR") return std::nullopt;
  const long w = static_cast<long>(be32(b + 16)), h = static_cast<long>(be32(b + 20));
  if (!valid(w, h)) return std::nullopt;
  return MediaSize{static_cast<int>(w), static_cast<int>(h), 1};
}

std::optional<MediaSize> webp(const unsigned char* b, std::size_t n) {
  // RIFF size "WEBP", then the first chunk: "VP8 " (lossy), "VP8L" (lossless) or "VP8X" (extended)
  if (n < 25) return std::nullopt;
  const std::string chunk(reinterpret_cast<const char*>(b + 12), 4);
  const unsigned char* d = b + 20;
  long w = 0, h = 0;
  if (chunk != "VP8L" && n < 30) return std::nullopt;  // VP8 and VP8X: 10 bytes of the chunk, VP8L 5
  if (chunk == "VP8 ") {
    // frame tag (3 bytes), start code 9d 01 2a, then 14-bit width and height
    if (d[3] != 0x9d || d[4] != 0x01 || d[5] != 0x2a) return std::nullopt;
    w = le16(d + 6) & 0x3fff;
    h = le16(d + 8) & 0x3fff;
  } else if (chunk == "VP8L") {
    // signature 0x2f, then width - 1 and height - 1 in 14 bits each
    if (d[0] != 0x2f) return std::nullopt;
    const unsigned long bits = static_cast<unsigned long>(d[1]) | (static_cast<unsigned long>(d[2]) << 8) |
                               (static_cast<unsigned long>(d[3]) << 16) | (static_cast<unsigned long>(d[4]) << 24);
    w = static_cast<long>(bits & 0x3fff) + 1;
    h = static_cast<long>((bits >> 14) & 0x3fff) + 1;
  } else if (chunk == "VP8X") {
    // flags (4 bytes), canvas width - 1 and height - 1 in 24 bits each
    w = static_cast<long>(le24(d + 4)) + 1;
    h = static_cast<long>(le24(d + 7)) + 1;
  } else {
    return std::nullopt;
  }
  if (!valid(w, h)) return std::nullopt;
  return MediaSize{static_cast<int>(w), static_cast<int>(h), 1};
}

// The orientation tag of an APP1 segment's EXIF IFD0 (1 when there is none or it does not read).
int exif_orientation(const unsigned char* p, std::size_t n) {
  if (n < 14 || std::string(reinterpret_cast<const char*>(p), 6) != std::string("Exif\0\0", 6)) return 1;
  const unsigned char* t = p + 6;
  const std::size_t tn = n - 6;
  const bool le = t[0] == 'I' && t[1] == 'I';
  if (!le && !(t[0] == 'M' && t[1] == 'M')) return 1;
  auto u16 = [&](std::size_t at) -> unsigned { return le ? le16(t + at) : be16(t + at); };
  auto u32 = [&](std::size_t at) -> unsigned long {
    return le ? (static_cast<unsigned long>(le16(t + at + 2)) << 16) | le16(t + at) : be32(t + at);
  };
  if (u16(2) != 42) return 1;
  const unsigned long ifd = u32(4);
  if (ifd + 2 > tn) return 1;
  const unsigned entries = u16(ifd);
  for (unsigned i = 0; i < entries; ++i) {
    const std::size_t e = ifd + 2 + 12 * static_cast<std::size_t>(i);
    if (e + 12 > tn) return 1;
    if (u16(e) == 0x0112) {
      const unsigned v = u16(e + 8);
      return v >= 1 && v <= 8 ? static_cast<int>(v) : 1;
    }
  }
  return 1;
}

std::optional<MediaSize> jpeg(std::FILE* f) {
  int orientation = 1;
  // after SOI: markers FF xx; standalone ones (RSTn, TEM) have no length, every other segment is skipped by
  // its length until a start-of-frame (C0-CF but C4 DHT, C8 JPG, CC DAC) gives height and width
  if (std::fseek(f, 2, SEEK_SET) != 0) return std::nullopt;
  for (int segments = 0; segments < 10000; ++segments) {
    int c = std::fgetc(f);
    if (c != 0xFF) return std::nullopt;
    while (c == 0xFF) c = std::fgetc(f);  // fill bytes
    if (c == EOF) return std::nullopt;
    const int marker = c;
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;
    if (marker == 0xD9 || marker == 0xDA) return std::nullopt;  // end of image, or scan data before any frame
    unsigned char len[2];
    if (std::fread(len, 1, 2, f) != 2) return std::nullopt;
    const unsigned length = be16(len);
    if (length < 2) return std::nullopt;
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC) {
      unsigned char sof[5];  // precision, height, width
      if (std::fread(sof, 1, 5, f) != 5) return std::nullopt;
      const long h = be16(sof + 1), w = be16(sof + 3);
      if (!valid(w, h)) return std::nullopt;
      return MediaSize{static_cast<int>(w), static_cast<int>(h), 1, orientation};
    }
    if (marker == 0xE1 && length >= 2 + 14 && orientation == 1) {
      // APP1: "Exif\0\0", then a TIFF header (II or MM, 42, offset of IFD0); IFD0's entries are 12 bytes
      // (tag, type, count, value): tag 0x0112 is the orientation, a SHORT in the value's first two bytes
      std::string seg(length - 2, '\0');
      if (std::fread(seg.data(), 1, seg.size(), f) != seg.size()) return std::nullopt;
      orientation = exif_orientation(reinterpret_cast<const unsigned char*>(seg.data()), seg.size());
      continue;
    }
    if (std::fseek(f, static_cast<long>(length) - 2, SEEK_CUR) != 0) return std::nullopt;
  }
  return std::nullopt;
}

std::string lower_extension(const std::filesystem::path& p) {
  std::string e = p.extension().string();
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return e;
}
bool image_extension(const std::filesystem::path& p) {
  const std::string e = lower_extension(p);
  return e == ".png" || e == ".jpg" || e == ".jpeg" || e == ".webp";
}
bool video_extension(const std::filesystem::path& p) {
  const std::string e = lower_extension(p);
  return e == ".mp4" || e == ".webm" || e == ".mov" || e == ".mkv";
}

std::optional<MediaSize> video_size(const std::string& path) {
  const auto v = read_video_header(path);
  if (!v) return std::nullopt;
  return MediaSize{v->width, v->height, static_cast<int>(std::min<long long>(v->frames, 1000000000))};
}

}  // namespace

std::optional<MediaSize> read_image_header(const std::string& path) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f) return std::nullopt;
  unsigned char b[30];
  const std::size_t n = std::fread(b, 1, sizeof b, f.get());
  if (n >= 8 && b[0] == 0x89 && b[1] == 'P' && b[2] == 'N' && b[3] == 'G') return png(b, n);
  if (n >= 12 && std::string(reinterpret_cast<const char*>(b), 4) == "RIFF" &&
      std::string(reinterpret_cast<const char*>(b + 8), 4) == "WEBP")
    return webp(b, n);
  if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF) return jpeg(f.get());
  return std::nullopt;
}

namespace {

template <class It>
void scan_entries(It it, DatasetScan& s, const std::string& dir, bool video) {
  std::error_code ec;
  for (It end; it != end; it.increment(ec)) {
    if (ec) throw InputError("dataset '" + brief_text(dir) + "': " + ec.message());
    if (!it->is_regular_file(ec) || !(video ? video_extension(it->path()) : image_extension(it->path()))) continue;
    ++s.files;
    if (!s.unavailable.empty()) continue;  // counted, not read
    const std::string path = it->path().string();
    if (const auto m = video ? video_size(path) : read_image_header(path)) s.media.push_back(*m);
    else ++s.unreadable;
  }
}

}  // namespace

DatasetScan scan_trainer_dataset(const std::string& dir, const DatasetSpec& d) {
  const bool video = d.dataset_type == "video";
  if (d.recursive) return scan_dataset(dir, video ? MediaKind::video : MediaKind::image);
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError("dataset '" + brief_text(dir) + "': not a directory");
  DatasetScan s;
  s.dir = dir;
  if (video) s.unavailable = video_probe_unavailable();
  fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw InputError("dataset '" + brief_text(dir) + "': " + ec.message());
  scan_entries(std::move(it), s, dir, video);
  return s;
}

namespace {

// d.width x d.height, or with no_upscale, for a sample of fewer pixels, that shape scaled to the sample's
// own area: each side round(side x sqrt(pixels / (W x H))), then down to a multiple of d.align (at least
// one step). For a square of edge E that side is round(sqrt(w x h)), the on-the-fly cap of diffusers'
// DreamBooth scripts (min(resolution, round((height * width) ** 0.5)), train_dreambooth_lora_flux2_klein.py).
std::pair<int, int> sample_size(const DatasetSpec& d, const MediaSize& m) {
  const double full = static_cast<double>(d.width) * d.height, own = static_cast<double>(m.width) * m.height;
  if (!d.no_upscale || own >= full) return {d.width, d.height};
  const double k = std::sqrt(own / full);
  const int a = std::max(1, d.align);
  auto side = [&](int s) { return std::max(a, static_cast<int>(std::llround(s * k)) / a * a); };
  return {side(d.width), side(d.height)};
}

// largest first: pixels x frames, then the wider
void sort_largest_first(std::vector<DatasetBucket>& buckets) {
  std::stable_sort(buckets.begin(), buckets.end(), [](const DatasetBucket& x, const DatasetBucket& y) {
    const double ax = static_cast<double>(x.width) * x.height * x.frames, ay = static_cast<double>(y.width) * y.height * y.frames;
    if (ax != ay) return ax > ay;
    return x.width > y.width;
  });
}

}  // namespace

BucketResult musubi_buckets(const DatasetSpec& d, const std::vector<MediaSize>& media) {
  BucketResult out;
  std::map<std::tuple<int, int, int>, long long> by_shape;  // (width, height, clip length) -> samples
  const bool video = d.dataset_type == "video";
  for (const MediaSize& m : media) {
    const auto [w, h] = sample_size(d, m);
    if (!video) {
      by_shape[{w, h, 1}] += d.repeats;
      continue;
    }
    const long long f = m.frames;
    bool any = false;
    auto add = [&, w = w, h = h](int n, long long clips) {
      if (clips <= 0) return;
      by_shape[{w, h, n}] += clips * d.repeats;
      any = true;
    };
    if (d.frame_extraction == "full") {
      // trimmed to N*4+1, then to max_frames: docs/dataset_config.md's example trims 35 frames under
      // max_frames 31 to 31, 20 to 17, and keeps 25
      const long long n = std::min<long long>((f - 1) / 4 * 4 + 1, d.max_frames);
      if (f >= 1 && n >= 1) add(static_cast<int>(n), 1);
    } else {
      for (int n : d.target_frames) {
        if (n < 1 || f < n) continue;  // a clip lies within the video
        if (d.frame_extraction == "chunk") add(n, f / n);
        else if (d.frame_extraction == "slide") add(n, (f - n) / std::max(1, d.frame_stride) + 1);
        else if (d.frame_extraction == "uniform") add(n, std::max(1, d.frame_sample));
        else add(n, 1);  // head
      }
    }
    if (!any) ++out.frames_out;
  }
  for (const auto& [k, count] : by_shape)
    out.buckets.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), count, d.batch, d.id});
  sort_largest_first(out.buckets);
  return out;
}

BucketResult area_buckets(const DatasetSpec& d, const std::vector<MediaSize>& media) {
  BucketResult out;
  std::map<std::pair<int, int>, long long> files;  // shape -> files
  for (const MediaSize& m : media) ++files[sample_size(d, m)];
  const int frames = d.dataset_type == "video" ? std::max(1, d.frames) : 1;
  for (const auto& [wh, n] : files) {
    const long long count = d.samples > 0     ? std::llround(static_cast<double>(d.samples) * n / static_cast<double>(media.size()))
                            : d.balancing > 0 ? std::llround(n * d.balancing)
                                              : n * d.repeats;
    if (count <= 0) continue;
    if (d.drop_last && count < d.batch) {
      out.no_full_batch += count;
      continue;
    }
    out.buckets.push_back({wh.first, wh.second, frames, count, d.batch, d.id});
  }
  sort_largest_first(out.buckets);
  return out;
}

BucketResult diffusers_buckets(const DatasetSpec& d, const std::vector<MediaSize>& media) {
  BucketResult out;
  if (d.rule != "square" && d.rule != "listed") return out;
  std::map<std::pair<int, int>, long long> counts;
  std::vector<std::pair<int, int>> order;  // first seen first, as the script lists its buckets
  for (MediaSize m : media) {
    if (d.exif_transpose && m.orientation >= 5) std::swap(m.width, m.height);  // PIL ImageOps.exif_transpose
    std::pair<int, int> b{d.edge, d.edge};
    if (d.rule == "listed" && !d.listed.empty()) {
      double best = -1;
      for (const auto& [bw, bh] : d.listed) {
        const double metric = std::fabs(static_cast<double>(m.height) * bw - static_cast<double>(m.width) * bh);
        if (best < 0 || metric <= best) {
          best = metric;
          b = {bw, bh};
        }
      }
    }
    if (!counts.count(b)) order.push_back(b);
    counts[b] += d.repeats;
  }
  for (const auto& b : order) {
    if (d.drop_last && counts[b] < d.batch) {
      out.no_full_batch += counts[b];
      continue;
    }
    out.buckets.push_back({b.first, b.second, 1, counts[b], d.batch, d.id});
  }
  std::stable_sort(out.buckets.begin(), out.buckets.end(), [](const DatasetBucket& x, const DatasetBucket& y) {
    return static_cast<double>(x.width) * x.height > static_cast<double>(y.width) * y.height;
  });
  return out;
}

BucketResult trainer_buckets(const DatasetSpec& d, const std::vector<MediaSize>& media) {
  if (d.rule == "musubi") return musubi_buckets(d, media);
  if (d.rule == "area") return area_buckets(d, media);
  return diffusers_buckets(d, media);
}

DatasetScan scan_dataset(const std::string& dir, MediaKind kind) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw InputError("dataset '" + brief_text(dir) + "': not a directory");
  DatasetScan s;
  s.dir = dir;
  const bool video = kind == MediaKind::video;
  if (video) s.unavailable = video_probe_unavailable();
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  if (ec) throw InputError("dataset '" + brief_text(dir) + "': " + ec.message());
  scan_entries(std::move(it), s, dir, video);
  return s;
}

BucketResult simpletuner_buckets(const BackendShape& b, const std::vector<MediaSize>& media) {
  const BackendShape::Rules& r = b.rules;
  BucketResult out;
  std::map<std::tuple<int, int, int>, long long> counts;
  const bool square = r.crop && r.crop_aspect == "square";
  // minimum_image_size (metadata/backends/base.py meets_resolution_requirements): pixel, the shorter side
  // in pixels; area, megapixels; pixel_area, converted to megapixels (x^2 / 1e6) like the resolution. A
  // square crop also needs the shorter side at the square's edge.
  const double min_mp = r.resolution_type == "area"         ? r.minimum_image_size
                        : r.resolution_type == "pixel_area" ? r.minimum_image_size * r.minimum_image_size / 1e6
                                                            : 0;
  const bool video = b.dataset_type == "video" && b.frames > 1;
  // §1.5: the frame rule applies to min_frames and to each video's count before the min/max check
  const int min_frames = video ? apply_frame_rule(r.frame_rule, r.min_frames > 0 ? r.min_frames : b.frames) : 0;
  for (const MediaSize& m : media) {
    if (video) {
      const int n = apply_frame_rule(r.frame_rule, m.frames);
      if (n < min_frames || (r.max_frames > 0 && n > r.max_frames)) {
        ++out.frames_out;
        continue;
      }
    }
    const double shorter = std::min(m.width, m.height);
    if (r.minimum_image_size > 0) {
      const bool small = r.resolution_type == "pixel" ? shorter < r.minimum_image_size
                                                      : static_cast<double>(m.width) * m.height / 1e6 < min_mp ||
                                                            (square && shorter < std::sqrt(min_mp * 1e6) - 1e-9);
      if (small) {
        ++out.too_small;
        continue;
      }
    }
    double aspect = static_cast<double>(m.width) / m.height;
    if (r.crop && (r.crop_aspect == "closest" || r.crop_aspect == "random") && !r.crop_aspect_buckets.empty()) {
      // closest: the crop bucket nearest the image's aspect. random: any bucket may be drawn for any image,
      // so the count cannot be known: every image is counted in the largest (b's own shape, as read)
      if (r.crop_aspect == "closest") {
        double best = r.crop_aspect_buckets.front();
        for (double a : r.crop_aspect_buckets)
          if (std::fabs(a - aspect) < std::fabs(best - aspect)) best = a;
        aspect = best;
      } else {
        counts[{b.width, b.height, b.frames}] += r.repeats + 1;
        continue;
      }
    }
    const ResolvedSize s = bucket_size(r.resolution, r.resolution_type, r.alignment, square ? 1.0 : aspect, square);
    counts[{s.width, s.height, b.frames}] += r.repeats + 1;
  }
  for (const auto& [k, n] : counts)
    out.buckets.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), n, b.batch, b.id});
  std::stable_sort(out.buckets.begin(), out.buckets.end(), [](const DatasetBucket& x, const DatasetBucket& y) {
    const double ax = static_cast<double>(x.width) * x.height * x.frames * x.batch,
                 ay = static_cast<double>(y.width) * y.height * y.frames * y.batch;
    if (ax != ay) return ax > ay;
    return x.width > y.width;
  });
  return out;
}

}  // namespace segadvise
