#include "report_parts.hpp"

#include "dataset_check.hpp"
#include "emitters.hpp"
#include "measured.hpp"
#include "segadvise/report/text_format.hpp"

namespace segadvise::cli {

namespace {

class CliParts final : public Parts {
 public:
  std::string peak_with_range(const Candidate& c) const override { return cli::peak_with_range(c); }
  std::string time_with_range(const Candidate& c, const std::string& unit_suffix) const override {
    return cli::time_with_range(c, unit_suffix);
  }
  std::string verdict_text(const Candidate& c) const override { return cli::verdict_text(c); }
  std::string shrink_line(const Candidate& c, const RangeIfMeasured& x, const std::string& measured) const override {
    return cli::shrink_line(c, x, measured);
  }
  std::string settle_hint(const Candidate& borderline) const override { return cli::settle_hint(borderline); }
  void measurements(std::ostream& out, const Anchor& a, const TextFormat& fmt) const override {
    print_measurements(out, a, fmt);
  }
  void verdict(std::ostream& out, const Candidate& c, const TextFormat& fmt) const override { print_verdict(out, c, fmt); }
  void buckets(std::ostream& out, const DatasetView& d, const std::string& gpu, const TextFormat& fmt) const override {
    print_buckets(out, d, gpu, fmt);
  }
  void add_buckets_json(nlohmann::json& check, const DatasetView& d) const override;
  void trainer_advice(std::ostream& out, const TrainerAdvice& a, bool markdown) const override {
    print_trainer_advice(out, a, markdown);
  }
  nlohmann::json trainer_advice_json(const TrainerAdvice& a) const override { return to_json(a); }
};

void CliParts::add_buckets_json(nlohmann::json& check, const DatasetView& d) const {
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

}  // namespace

const Parts& cli_parts() {
  static const CliParts parts;
  return parts;
}

std::unique_ptr<Printer> make_printer(const std::string& format, std::ostream& out) {
  if (format == "table") return std::make_unique<TablePrinter>(out, cli_parts());
  if (format == "markdown") return std::make_unique<MarkdownPrinter>(out, cli_parts());
  if (format == "json") return std::make_unique<JsonPrinter>(out, cli_parts());
  throw InputError("--format: '" + format + "' is not one of table, json, markdown");
}

}  // namespace segadvise::cli
