// check's dataset: where a training data backend's instance_data_dir exists on this machine (or --dataset DIR
// names one for the chosen backend), its images' or videos' headers are read and SimpleTuner's buckets
// formed (trainers/dataset_buckets.hpp), every backend's; the run is judged by the bucket with the highest
// peak, and every bucket is predicted on this card and the next smaller one.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "segadvise/planner/advisor.hpp"
#include "segadvise/trainers/dataset_buckets.hpp"

namespace segadvise {

struct BucketView {
  DatasetBucket bucket;
  double peak_vram_gib = 0;
  std::string fit;            // fits | borderline | does-not-fit | unsupported
  std::string smaller_fit;    // the same on the next smaller card ("" : none)
};
// One data backend's files as read.
struct BackendDataset {
  std::string backend, dir, dataset_type;  // image | video
  long long files = 0, unreadable = 0, too_small = 0, frames_out = 0, no_full_batch = 0;
  std::string unavailable;  // why its files were not read, or form no bucket ("" : they were, and do)
  std::string note;         // what the buckets assume (e.g. an aspect bucketing not modelled)
  std::string clips;        // a video dataset: how its videos become clips ("" : an image dataset)
};
struct DatasetView {
  std::vector<BackendDataset> sources;  // the backends whose directory is here, in the config's order
  long long files = 0, unreadable = 0, too_small = 0, frames_out = 0, no_full_batch = 0;  // over them
  std::string smaller_gpu;  // the next smaller card of the catalog ("" : none)
  std::vector<BucketView> buckets;  // after predict_buckets: the highest peak first
};

// The datasets of the training backends (each one's instance_data_dir; `dataset_dir` overriding the chosen
// backend's, the first of `backends`; relative paths against `cwd`, else the process's): nullopt when none
// is on this machine. InputError when --dataset is not a directory, or names one for a backend that
// reads no files (audio, caption).
std::optional<DatasetView> read_datasets(const std::vector<BackendShape>& backends, const std::string& dataset_dir,
                                         const std::string& cwd);
// The same for another trainer's datasets (TrainerRead::datasets: the diffusers scripts'), bucketed by
// that trainer's rule (dataset_buckets.hpp diffusers_buckets); `dataset_dir` stands for the first one's.
std::optional<DatasetView> read_trainer_datasets(const std::vector<DatasetSpec>& datasets, const std::string& dataset_dir,
                                                 const std::string& cwd);
// The datasets a config names, whichever way its trainer names them: a SimpleTuner config's data backends
// (read_datasets), else the trainer's datasets (read_trainer_datasets). InputError where --dataset
// (`dataset_dir`, non-empty) can stand for none of them.
std::optional<DatasetView> read_config_datasets(const TrainerRead& tr, const std::string& dataset_dir, const std::string& cwd);
// The setup of the bucket with the highest peak (predict_buckets first; a note says which backend and
// bucket); unchanged when no file formed a bucket.
void apply_largest_bucket(TrainingSetup& setup, const DatasetView& d);
// Each bucket's peak and verdict for `schedule` on `run`'s card (its own batch) and on the next smaller
// one, then the buckets ordered by peak, the highest first (the bucket that sets the run's peak).
void predict_buckets(DatasetView& d, const AdvisorRequest& run, const Schedule& schedule);

}  // namespace segadvise
