// check's dataset: when the chosen data backend's instance_data_dir exists on this machine (or --dataset DIR
// names one), its images' headers are read and SimpleTuner's buckets formed (trainers/dataset_buckets.hpp);
// the run is judged by the largest bucket, and every bucket is predicted on this card and the next smaller one.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "segadvise/planner/advisor.hpp"
#include "segadvise/trainers/dataset_buckets.hpp"

namespace segadvise::cli {

struct BucketView {
  DatasetBucket bucket;
  double peak_vram_gib = 0;
  std::string fit;            // fits | borderline | does-not-fit | unsupported
  std::string smaller_fit;    // the same on the next smaller card ("" : none)
};
struct DatasetView {
  std::string dir;
  long long files = 0, unreadable = 0, too_small = 0;
  std::string smaller_gpu;  // the next smaller card of the catalog ("" : none)
  std::vector<BucketView> buckets;  // largest first
};

// The dataset of backend `b` (its instance_data_dir, `dataset_dir` overriding it; relative paths against
// `cwd`, else the process's): nullopt when there is none on this machine. InputError when --dataset is not
// a directory.
std::optional<DatasetView> read_dataset(const BackendShape& b, const std::string& dataset_dir, const std::string& cwd);
// The setup of the run's largest bucket (a note says so); unchanged when no image formed a bucket.
void apply_largest_bucket(TrainingSetup& setup, const DatasetView& d);
// Each bucket's peak and verdict for `schedule` on `run`'s card and on the next smaller one.
void predict_buckets(DatasetView& d, const AdvisorRequest& run, const Schedule& schedule);

class TextFormat;  // text_format.hpp
// The buckets' table (check's table and markdown output), and which would not fit the next smaller card.
void print_buckets(std::ostream& out, const DatasetView& d, const std::string& gpu, const TextFormat& fmt);

}  // namespace segadvise::cli
