#include "segadvise/planner/dataset_check.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "segadvise/io/json_input.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise {

namespace {

std::string verdict_of(const Candidate& c) {
  if (!c.prediction.supported) return "unsupported";
  return to_string(c.verdict());
}

std::string bucket_name(const DatasetBucket& b) {
  std::string name = std::to_string(b.width) + "x" + std::to_string(b.height);
  if (b.frames > 1) name += "x" + std::to_string(b.frames);
  return name;
}

}  // namespace

namespace {

// `dir` against `cwd` where it is relative and found there; "" when it is not a directory here
std::string local_dir(const std::string& value, const std::string& cwd) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string dir = value;
  if (fs::path(dir).is_relative() && !cwd.empty() && fs::is_directory(fs::path(cwd) / dir, ec)) dir = (fs::path(cwd) / dir).string();
  return fs::is_directory(dir, ec) ? dir : "";
}

void add_source(DatasetView& v, const BackendDataset& src, const BucketResult& br) {
  v.files += src.files;
  v.unreadable += src.unreadable;
  v.too_small += src.too_small;
  v.frames_out += src.frames_out;
  v.no_full_batch += src.no_full_batch;
  v.sources.push_back(src);
  for (const DatasetBucket& k : br.buckets) v.buckets.push_back({k, 0, "", ""});
}

// Every dataset of a config in its order: `configured(i)` is the i-th one's directory as written ("" :
// none), `dataset_dir` (--dataset) stands for the first one's; `read(i, dir, given, v)` reads and buckets
// one whose directory is here. A directory that is not here is skipped (the dataset lives on the training
// machine), except --dataset's.
template <class Configured, class Read>
std::optional<DatasetView> read_each(std::size_t n, const std::string& dataset_dir, const std::string& cwd,
                                     Configured configured, Read read) {
  DatasetView v;
  for (std::size_t i = 0; i < n; ++i) {
    const bool given = i == 0 && !dataset_dir.empty();
    const std::string written = given ? dataset_dir : configured(i);
    if (written.empty()) continue;
    const std::string dir = local_dir(written, cwd);
    if (dir.empty()) {
      if (given) throw InputError("--dataset '" + brief_text(dataset_dir) + "': not a directory");
      continue;
    }
    read(i, dir, given, v);
  }
  if (v.sources.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<DatasetView> read_trainer_datasets(const std::vector<DatasetSpec>& datasets, const std::string& dataset_dir,
                                                 const std::string& cwd) {
  // one directory read once, however many datasets name it (an ai-toolkit folder of several resolutions)
  std::map<std::tuple<std::string, bool, std::string>, DatasetScan> scans;
  return read_each(
      datasets.size(), dataset_dir, cwd, [&](std::size_t i) { return datasets[i].dir; },
      [&](std::size_t i, const std::string& dir, bool, DatasetView& v) {
        const DatasetSpec& d = datasets[i];
        const auto key = std::make_tuple(dir, d.recursive, d.dataset_type);
        auto it = scans.find(key);
        if (it == scans.end()) it = scans.emplace(key, scan_trainer_dataset(dir, d)).first;
        const DatasetScan& scan = it->second;
        const BucketResult br = trainer_buckets(d, scan.media);
        // a rule that forms no bucket says why in place of the buckets; the others' assumptions are a note
        const bool forms = d.rule != "not_modelled";
        BackendDataset src{d.id, dir, d.dataset_type, scan.files, scan.unreadable, br.too_small, br.frames_out, br.no_full_batch,
                           !scan.unavailable.empty() ? scan.unavailable : forms ? std::string() : d.why};
        if (forms) src.note = d.why;
        if (d.dataset_type == "video")
          src.clips = d.rule == "musubi" ? "each video gives the clips of frame_extraction and target_frames (the frames column)"
                                         : "each video trains as num_frames frames spread over it (the frames column)";
        add_source(v, src, br);
      });
}

std::optional<DatasetView> read_datasets(const std::vector<BackendShape>& backends, const std::string& dataset_dir,
                                         const std::string& cwd) {
  return read_each(
      backends.size(), dataset_dir, cwd, [&](std::size_t i) { return backends[i].rules.instance_data_dir; },
      [&](std::size_t i, const std::string& dir, bool given, DatasetView& v) {
        const BackendShape& b = backends[i];
        if (b.dataset_type != "image" && b.dataset_type != "video") {
          if (given)
            throw InputError("--dataset '" + brief_text(dataset_dir) + "': backend '" + b.id + "' is a " + b.dataset_type +
                             " dataset; only image and video datasets are read");
          return;
        }
        const DatasetScan scan = scan_dataset(dir, b.dataset_type == "video" ? MediaKind::video : MediaKind::image);
        const BucketResult br = simpletuner_buckets(b, scan.media);
        BackendDataset src{b.id, dir, b.dataset_type, scan.files, scan.unreadable, br.too_small, br.frames_out, 0, scan.unavailable};
        if (b.dataset_type == "video") src.clips = "each video trains as its first num_frames frames (the frames column)";
        add_source(v, src, br);
      });
}

std::optional<DatasetView> read_config_datasets(const TrainerRead& tr, const std::string& dataset_dir, const std::string& cwd) {
  if (!tr.backends.empty()) {
    std::optional<DatasetView> d = read_datasets(tr.backends, dataset_dir, cwd);
    if (!dataset_dir.empty() && !d)
      throw InputError("--dataset '" + dataset_dir + "': backend '" + tr.backends.front().id + "' is a " +
                       tr.backends.front().dataset_type + " dataset; only image and video datasets are read");
    return d;
  }
  if (!dataset_dir.empty() && tr.datasets.empty())
    throw InputError("--dataset '" + dataset_dir + "': the config names no dataset directory to stand for (diffusers: --instance_data_dir or --train_data_dir; musubi: image_directory or video_directory; "
                     "ai-toolkit: datasets[].folder_path; OneTrainer: a concept's path)");
  return read_trainer_datasets(tr.datasets, dataset_dir, cwd);
}

void apply_largest_bucket(TrainingSetup& setup, const DatasetView& d) {
  if (d.buckets.empty()) return;
  const DatasetBucket& big = d.buckets.front().bucket;
  setup.width = big.width;
  setup.height = big.height;
  setup.frames = big.frames;
  setup.batch = big.batch;
  setup.notes.push_back("the largest bucket of the dataset, backend '" + big.backend + "': " + bucket_name(big) +
                        ", batch " + std::to_string(big.batch) + " (" + std::to_string(big.count) + " samples an epoch)");
}

void predict_buckets(DatasetView& d, const AdvisorRequest& run, const Schedule& schedule) {
  const GpuSpec* smaller = nullptr;
  for (const GpuSpec& g : builtin_gpus())
    if (g.total_bytes < run.gpu.total_bytes && (!smaller || g.total_bytes > smaller->total_bytes)) smaller = &g;
  if (smaller) d.smaller_gpu = smaller->id;
  for (BucketView& bv : d.buckets) {
    AdvisorRequest q = run;
    q.setup.width = bv.bucket.width;
    q.setup.height = bv.bucket.height;
    q.setup.frames = bv.bucket.frames;
    q.setup.batch = bv.bucket.batch;
    const Candidate c = evaluate(Context(q), schedule);
    bv.peak_vram_gib = c.prediction.peak_vram_bytes / kGiB;
    bv.fit = verdict_of(c);
    if (smaller) {
      q.gpu = *smaller;
      q.measured.clear();  // measured on the user's card, not this one
      bv.smaller_fit = verdict_of(evaluate(Context(q), schedule));
    }
  }
  // the highest peak first: the bucket that sets the run's peak (ties: the larger load, as read)
  std::stable_sort(d.buckets.begin(), d.buckets.end(),
                   [](const BucketView& x, const BucketView& y) { return x.peak_vram_gib > y.peak_vram_gib; });
}

}  // namespace segadvise

