#include "dataset_check.hpp"

#include <cstdio>
#include <filesystem>

#include "output.hpp"
#include "text_format.hpp"

#include "segadvise/costmodel/json_input.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise::cli {

namespace {

std::string verdict_of(const Candidate& c) {
  if (!c.prediction.supported) return "unsupported";
  return to_string(c.verdict());
}

}  // namespace

std::optional<DatasetView> read_dataset(const BackendShape& b, const std::string& dataset_dir, const std::string& cwd) {
  namespace fs = std::filesystem;
  std::string dir = dataset_dir.empty() ? b.rules.instance_data_dir : dataset_dir;
  if (dir.empty()) return std::nullopt;
  std::error_code ec;
  if (fs::path(dir).is_relative() && !cwd.empty() && fs::is_directory(fs::path(cwd) / dir, ec))
    dir = (fs::path(cwd) / dir).string();
  if (!fs::is_directory(dir, ec)) {
    if (!dataset_dir.empty()) throw InputError("--dataset '" + brief_text(dataset_dir) + "': not a directory");
    return std::nullopt;  // the dataset lives on the training machine
  }
  if (b.dataset_type != "image") return std::nullopt;  // videos: not read yet (docs/datasets.md)
  const DatasetScan scan = scan_image_dataset(dir);
  const BucketResult br = simpletuner_buckets(b, scan.media);
  DatasetView v;
  v.dir = dir;
  v.files = scan.files;
  v.unreadable = scan.unreadable;
  v.too_small = br.too_small;
  for (const DatasetBucket& k : br.buckets) v.buckets.push_back({k, 0, "", ""});
  return v;
}

void apply_largest_bucket(TrainingSetup& setup, const DatasetView& d) {
  if (d.buckets.empty()) return;
  const DatasetBucket& big = d.buckets.front().bucket;
  setup.width = big.width;
  setup.height = big.height;
  setup.frames = big.frames;
  setup.notes.push_back("the largest bucket of the dataset " + d.dir + ": " + std::to_string(big.width) + "x" +
                        std::to_string(big.height) + " (" + std::to_string(big.count) + " samples an epoch)");
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
    const Candidate c = evaluate(Context(q), schedule);
    bv.peak_vram_gib = c.prediction.peak_vram_bytes / kGiB;
    bv.fit = verdict_of(c);
    if (smaller) {
      q.gpu = *smaller;
      q.measured.clear();  // measured on the user's card, not this one
      bv.smaller_fit = verdict_of(evaluate(Context(q), schedule));
    }
  }
}

}  // namespace segadvise::cli

namespace segadvise::cli {

void print_buckets(std::ostream& out, const DatasetView& d, const std::string& gpu, const TextFormat& fmt) {
  const std::string head = "Buckets of the dataset " + d.dir + " (" + std::to_string(d.files) + " image files" +
                           (d.unreadable ? ", " + std::to_string(d.unreadable) + " unreadable" : std::string()) +
                           (d.too_small ? ", " + std::to_string(d.too_small) + " under minimum_image_size" : std::string()) +
                           ")";
  out << fmt.section(3, head, head + ":\n");
  if (d.buckets.empty()) {
    out << "no image forms a bucket: the run is judged on the config's shape\n\n";
    return;
  }
  std::vector<std::string> header = {"bucket", "samples", "peak GiB", "on " + gpu};
  if (!d.smaller_gpu.empty()) header.push_back("on " + d.smaller_gpu);
  Table t(header);
  std::vector<std::string> not_smaller;
  for (const BucketView& b : d.buckets) {
    std::string name = std::to_string(b.bucket.width) + "x" + std::to_string(b.bucket.height);
    if (b.bucket.frames > 1) name += "x" + std::to_string(b.bucket.frames);
    char peak[32];
    std::snprintf(peak, sizeof peak, "%.1f", b.peak_vram_gib);
    std::vector<std::string> row = {name, std::to_string(b.bucket.count), peak, b.fit};
    if (!d.smaller_gpu.empty()) row.push_back(b.smaller_fit);
    if (!d.smaller_gpu.empty() && b.smaller_fit != "fits") not_smaller.push_back(name);
    t.add(row);
  }
  fmt.table(out, t);
  const DatasetBucket& big = d.buckets.front().bucket;
  out << fmt.either("", "\n") << "judged by the largest bucket, " << big.width << "x" << big.height
      << (big.frames > 1 ? "x" + std::to_string(big.frames) : std::string()) << " (the setup above)";
  if (!d.smaller_gpu.empty()) {
    out << "; on a " << d.smaller_gpu << ", ";
    if (not_smaller.empty()) out << "every bucket fits";
    else {
      out << "these would not fit with confidence: ";
      for (std::size_t i = 0; i < not_smaller.size(); ++i) out << (i ? ", " : "") << not_smaller[i];
    }
  }
  out << "\n\n";
}

}  // namespace segadvise::cli
