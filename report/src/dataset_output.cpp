// check's dataset: the buckets' table (table and markdown output) and their JSON.
#include "segadvise/report/dataset_output.hpp"

#include "segadvise/report/output.hpp"
#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

namespace {

std::string bucket_name(const DatasetBucket& b) {
  std::string name = std::to_string(b.width) + "x" + std::to_string(b.height);
  if (b.frames > 1) name += "x" + std::to_string(b.frames);
  return name;
}

}  // namespace

void print_buckets(std::ostream& out, const DatasetView& d, const std::string& gpu, const TextFormat& fmt) {
  const bool several = d.sources.size() > 1;
  std::string head = "Buckets of the dataset";
  for (std::size_t i = 0; i < d.sources.size(); ++i) {
    const BackendDataset& s = d.sources[i];
    head += (i ? "; " : " ") + (several ? "'" + s.backend + "' " : std::string()) + s.dir + " (" + std::to_string(s.files) +
            " " + s.dataset_type + " files" + (s.unreadable ? ", " + std::to_string(s.unreadable) + " unreadable" : std::string()) +
            (s.too_small ? ", " + std::to_string(s.too_small) + " under minimum_image_size" : std::string()) +
            (s.frames_out ? ", " + std::to_string(s.frames_out) + (s.backend.find("video_directory") != std::string::npos ? " shorter than every target frame count" : " outside min_frames..max_frames") : std::string()) +
            (s.no_full_batch ? ", " + std::to_string(s.no_full_batch) + " in buckets smaller than a batch, never trained" : std::string()) + ")";
  }
  out << fmt.section(3, head, head + ":\n");
  for (const BackendDataset& s : d.sources)
    if (!s.note.empty()) out << "'" << s.backend << "': " << s.note << "\n";
  for (const BackendDataset& s : d.sources)
    if (!s.unavailable.empty())
      out << (s.dataset_type == "video" ? "the videos of '" + s.backend + "' were not read: " : "'" + s.backend + "' forms no bucket: ")
          << s.unavailable << "\n";
  if (d.buckets.empty()) {
    out << "no file forms a bucket: the run is judged on the config's shape\n\n";
    return;
  }
  std::vector<std::string> header = {"bucket"};
  if (several) header.push_back("backend");
  if (several) header.push_back("batch");
  header.insert(header.end(), {"samples", "peak GiB reserved", "on " + gpu});
  if (!d.smaller_gpu.empty()) header.push_back("on " + d.smaller_gpu);
  Table t(header);
  std::vector<std::string> not_smaller;
  for (const BucketView& b : d.buckets) {
    const std::string name = bucket_name(b.bucket);
    char peak[32];
    std::snprintf(peak, sizeof peak, "%.1f", b.peak_vram_gib);
    std::vector<std::string> row = {name};
    if (several) row.push_back(b.bucket.backend);
    if (several) row.push_back(std::to_string(b.bucket.batch));
    row.insert(row.end(), {std::to_string(b.bucket.count), peak, b.fit});
    if (!d.smaller_gpu.empty()) row.push_back(b.smaller_fit);
    const std::string label = several ? name + " ('" + b.bucket.backend + "')" : name;
    if (!d.smaller_gpu.empty() && b.smaller_fit != "fits") not_smaller.push_back(label);
    t.add(row);
  }
  fmt.table(out, t);
  const DatasetBucket& big = d.buckets.front().bucket;
  out << fmt.either("", "\n") << "judged by the largest bucket, " << bucket_name(big)
      << (several ? " of backend '" + big.backend + "'" : std::string()) << " (the setup above)";
  if (!d.smaller_gpu.empty()) {
    out << "; on the next smaller card (" << d.smaller_gpu << "), ";
    if (not_smaller.empty()) out << "every bucket fits";
    else {
      out << "these would not fit with confidence: ";
      for (std::size_t i = 0; i < not_smaller.size(); ++i) out << (i ? ", " : "") << not_smaller[i];
    }
  }
  out << "\n";
  std::vector<std::string> said;
  for (const BackendDataset& s : d.sources)
    if (!s.clips.empty() && std::find(said.begin(), said.end(), s.clips) == said.end()) {
      said.push_back(s.clips);
      out << s.clips << "\n";
    }
  out << "\n";
}

void add_buckets_json(nlohmann::json& check, const DatasetView& d) {
  nlohmann::json b = nlohmann::json::array();
  for (const BucketView& k : d.buckets) {
    nlohmann::json e = {{"width", k.bucket.width}, {"height", k.bucket.height}, {"frames", k.bucket.frames},
                        {"count", k.bucket.count}, {"batch", k.bucket.batch}, {"backend", k.bucket.backend},
                        {"peak_vram_gib", k.peak_vram_gib}, {"fit", k.fit}};
    if (!d.smaller_gpu.empty()) e["fit_" + d.smaller_gpu] = k.smaller_fit;
    b.push_back(e);
  }
  check["buckets"] = b;
  long long images = 0, videos = 0;
  nlohmann::json sources = nlohmann::json::array();
  for (const BackendDataset& s : d.sources) {
    (s.dataset_type == "video" ? videos : images) += s.files;
    sources.push_back({{"id", s.backend}, {"dir", s.dir}, {"dataset_type", s.dataset_type}, {"files", s.files},
                       {"unreadable", s.unreadable}, {"under_minimum_image_size", s.too_small},
                       {"outside_frame_range", s.frames_out}, {"in_buckets_under_a_batch", s.no_full_batch},
                       {"not_read", s.unavailable.empty() ? nlohmann::json() : nlohmann::json(s.unavailable)}});
  }
  check["dataset"] = {{"dir", d.sources.front().dir}, {"files", d.files}, {"image_files", images}, {"video_files", videos},
                      {"unreadable", d.unreadable}, {"under_minimum_image_size", d.too_small},
                      {"outside_frame_range", d.frames_out},
                      {"smaller_gpu", d.smaller_gpu.empty() ? nlohmann::json() : nlohmann::json(d.smaller_gpu)},
                      {"backends", sources}};
}

}  // namespace segadvise::cli
