// The dataset itself: the sizes of its images read from their headers (PNG, JPEG, WebP: no pixel data is
// decoded), and the aspect buckets SimpleTuner forms from them with a data backend's rules
// (docs/datasets.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "segadvise/families/family.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"

namespace segadvise {

struct MediaSize {
  int width = 0, height = 0, frames = 1;
};

// The size a file's header says: PNG (IHDR), JPEG (the first SOF marker, EXIF and other segments skipped),
// WebP (VP8, VP8L, VP8X). nullopt when the file is none of these or its header is cut short. Reads at most
// the header's bytes, never the image data.
std::optional<MediaSize> read_image_header(const std::string& path);

// Every image under `dir` (recursively, as SimpleTuner's local backend lists it; .png .jpg .jpeg .webp,
// any case), read with read_image_header. InputError when `dir` is not a readable directory.
struct DatasetScan {
  std::string dir;
  long long files = 0;       // files with an image extension
  long long unreadable = 0;  // of those, headers that did not read
  std::vector<MediaSize> media;
};
DatasetScan scan_image_dataset(const std::string& dir);

struct DatasetBucket {
  int width = 0, height = 0, frames = 1;
  long long count = 0;  // samples per epoch: images x (repeats + 1)
};
struct BucketResult {
  std::vector<DatasetBucket> buckets;  // largest (width x height x frames) first
  long long too_small = 0;             // images minimum_image_size drops
};
// SimpleTuner's buckets of `media` under backend `b`'s rules (BackendShape::rules): each image's aspect
// rounded to two decimals, its target size by resolution type, alignment and crop, images under
// minimum_image_size dropped, every count times repeats + 1.
BucketResult simpletuner_buckets(const BackendShape& b, const std::vector<MediaSize>& media);

}  // namespace segadvise
