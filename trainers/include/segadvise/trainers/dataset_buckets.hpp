// The dataset itself: the sizes of its images read from their headers (PNG, JPEG, WebP: no pixel data is
// decoded), the sizes and frame counts of its videos from their container headers (libavformat, loaded
// only when a video is read: video_probe.hpp), and the aspect and frame buckets SimpleTuner forms from
// them with a data backend's rules (docs/datasets.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "segadvise/families/family.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise {

struct MediaSize {
  int width = 0, height = 0, frames = 1;
  int orientation = 1;  // a JPEG's EXIF orientation (1-8; 5-8 turn it a quarter: width and height swap)
};

// The size a file's header says: PNG (IHDR), JPEG (the first SOF marker, EXIF and other segments skipped;
// the EXIF orientation tag of IFD0 read on the way),
// WebP (VP8, VP8L, VP8X). nullopt when the file is none of these or its header is cut short. Reads at most
// the header's bytes, never the image data.
std::optional<MediaSize> read_image_header(const std::string& path);

// Every image (or video) under `dir` (recursively, as SimpleTuner's local backend lists it; images .png
// .jpg .jpeg .webp, videos .mp4 .webm .mov .mkv, any case), read with read_image_header (or
// read_video_header). InputError when `dir` is not a readable directory. A video dataset on a machine
// where libavformat cannot be loaded reads no file: `unavailable` says why.
enum class MediaKind { image, video };
struct DatasetScan {
  std::string dir;
  long long files = 0;       // files with an image (video) extension
  long long unreadable = 0;  // of those, headers that did not read
  std::vector<MediaSize> media;
  std::string unavailable;   // "" : the files were read
};
DatasetScan scan_dataset(const std::string& dir, MediaKind kind);
inline DatasetScan scan_image_dataset(const std::string& dir) { return scan_dataset(dir, MediaKind::image); }

struct DatasetBucket {
  int width = 0, height = 0, frames = 1;
  long long count = 0;  // samples per epoch: files x (repeats + 1)
  int batch = 1;        // the backend's train_batch_size
  std::string backend;  // the data backend's id
};
struct BucketResult {
  std::vector<DatasetBucket> buckets;  // largest (width x height x frames x batch) first
  long long too_small = 0;             // files minimum_image_size drops
  long long frames_out = 0;            // videos min_frames or max_frames drops
  long long no_full_batch = 0;         // samples in buckets smaller than a batch, which never train (drop_last)
};
// SimpleTuner's buckets of `media` under backend `b`'s rules (BackendShape::rules): each file's aspect
// rounded to two decimals, its target size by resolution type, alignment and crop, files under
// minimum_image_size dropped, every count times repeats + 1. A video backend's clip is the first
// num_frames frames of each video (b.frames, the family's frame rule applied); a video whose frame
// count, under the same rule, is below min_frames or above max_frames is dropped.
BucketResult simpletuner_buckets(const BackendShape& b, const std::vector<MediaSize>& media);

// The images (videos, for a video DatasetSpec) of `dir` as `d` lists them (recursively or not).
DatasetScan scan_trainer_dataset(const std::string& dir, const DatasetSpec& d);
// The buckets of a diffusers example script's dataset `d` (trainer_config.hpp DatasetSpec): "square", every
// image at edge x edge; "listed", the nearest listed (width, height) by aspect, |h x bw - w x bh| smallest
// (ties: the later entry); EXIF orientation applied first when the script does; every count times
// `repeats`; with drop_last a bucket of fewer samples than a batch is left out (counted in no_full_batch).
BucketResult diffusers_buckets(const DatasetSpec& d, const std::vector<MediaSize>& media);
// The buckets of a musubi-tuner dataset `d` (rule "musubi"): every sample at its resolution (width x
// height); an image one frame; a video's clips by frame_extraction (docs/dataset_config.md): head, one
// clip of each target N the video reaches; chunk, F / N clips of N; slide, (F - N) / frame_stride + 1;
// uniform, frame_sample clips of N; full, F trimmed to N*4+1, then to max_frames. Counts times num_repeats.
// With no_upscale (enable_bucket and bucket_no_upscale) a sample of fewer pixels than the resolution
// counts at its own area (DatasetSpec::no_upscale).
BucketResult musubi_buckets(const DatasetSpec& d, const std::vector<MediaSize>& media);
// The buckets of a dataset whose trainer's aspect ladder is not modelled (rule "area": ai-toolkit,
// OneTrainer, diffusers' on-the-fly buckets): every sample at d.width x d.height (x d.frames), or with
// no_upscale a smaller sample at its own area; counts by repeats, balancing or samples; with drop_last a
// bucket of fewer samples than a batch is left out (no_full_batch).
BucketResult area_buckets(const DatasetSpec& d, const std::vector<MediaSize>& media);
// The buckets of `d` by its rule: musubi_buckets for "musubi", area_buckets for "area", else
// diffusers_buckets.
BucketResult trainer_buckets(const DatasetSpec& d, const std::vector<MediaSize>& media);

}  // namespace segadvise
