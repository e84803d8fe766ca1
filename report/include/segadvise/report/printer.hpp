// One printer per output format: each command hands its report to one of them, once.
// TablePrinter (aligned text), MarkdownPrinter (markdown), JsonPrinter (the keys scripts read:
// prediction.peak_vram_gib, prediction.step_time_s, prediction.fits, …).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "segadvise/calibration/calibrate.hpp"
#include "segadvise/trainers/log_reader.hpp"
#include "segadvise/trainers/trainer_plans.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/planner/dataset_check.hpp"

namespace segadvise::cli {

class TextFormat;    // text_format.hpp

// One data backend of a SimpleTuner config: the largest shape it yields.
struct BackendView {
  std::string id, dataset_type;
  int width = 0, height = 0, frames = 1, batch = 1;
  std::string note;
};

// What `check` prints: where the config came from, the report and what the CLI did around it.
struct CheckView {
  std::string config;  // the config's path as given
  // another trainer's config (musubi, ai-toolkit, OneTrainer, diffusers): its name, every file read
  // (the config first) and where the training shape comes from; "" : a SimpleTuner config
  std::string config_trainer;
  std::vector<std::string> inputs;
  std::string shape_source;
  // a SimpleTuner config: its data-backend file and training backends (the chosen one first)
  std::string data_backend_path;
  std::vector<BackendView> backends;
  const CheckReport* report = nullptr;
  const TrainerAdvice* trainer = nullptr;  // --emit for another trainer (nullptr: none)
  // another trainer's config with that trainer's advice: the advice is its plan alone (no SimpleTuner
  // schedule or key), with the whole run of its best plan by its own keys
  bool own_trainer_advice = false;
  std::optional<RunPhases> trainer_phases;
  bool emit_simpletuner = false;            // --emit simpletuner: the config written back
  std::optional<nlohmann::ordered_json> updated;  // that config (nullopt: nothing fits, none written)
  std::string output;                             // where it was written ("" : printed)
  int indent = 4;                                 // the user's indentation, to print it alike
  struct Written {
    std::string path, plan;
    std::vector<std::string> notes;
  };
  std::optional<Written> rewritten;  // --emit SAME_TRAINER --output: the user's file written back
  bool nothing_to_write = false;     // --output asked, but nothing within the trainer's knobs fits
  const DatasetView* dataset = nullptr;  // the dataset's buckets (dataset_check.hpp; nullptr: none read)
};

// What `calibrate` prints beside the coefficients: the fit, how long it took, where the file went.
struct CalibrationView {
  const FitResult* fit = nullptr;
  double seconds = 0;
  std::string output;  // "" : the coefficients went to stdout
};

// What `accuracy` prints: the report on the prepared runs and the with/without-measurement summary.
struct AccuracyView {
  const AccuracyReport* report = nullptr;
  const PreparedSet* set = nullptr;
  const std::vector<std::pair<std::string, Metrics>>* summary = nullptr;
  bool by_family = false;  // --by family: signed errors per family x precision x schedule
  bool runs = false;       // --runs: every run's figures
};

// What `list` prints: one of the shipped catalogs.
enum class Catalog { Models, Gpus, Precisions, Optimizers };

class Printer {
 public:
  virtual ~Printer() = default;
  virtual void prediction(const PredictionReport& r) = 0;
  // `trainer`: the recommendation within another trainer's knobs (--emit), nullptr for none
  virtual void advice(const AdviceReport& r, const TrainerAdvice* trainer) = 0;
  virtual void check(const CheckView& v) = 0;
  virtual void calibration(const CalibrationView& v) = 0;
  virtual void accuracy(const AccuracyView& v) = 0;
  virtual void catalog(Catalog what) = 0;
  virtual void log_report(const LogReport& r) = 0;  // read-log
};

// The text reports, laid out once and written through a TextFormat (the table layout or markdown).
class TextPrinter : public Printer {
 public:
  void prediction(const PredictionReport& r) override;
  void advice(const AdviceReport& r, const TrainerAdvice* trainer) override;
  void check(const CheckView& v) override;
  void calibration(const CalibrationView& v) override;
  void accuracy(const AccuracyView& v) override;
  void catalog(Catalog what) override;
  void log_report(const LogReport& r) override;

 protected:
  TextPrinter(std::ostream& out, const TextFormat& fmt) : out_(out), fmt_(fmt) {}

 private:
  std::ostream& out_;
  const TextFormat& fmt_;
};

// Aligned columns and plain titles for a terminal.
class TablePrinter final : public TextPrinter {
 public:
  explicit TablePrinter(std::ostream& out);
};

// Markdown: headings, lists, fenced config blocks, pipe tables.
class MarkdownPrinter final : public TextPrinter {
 public:
  explicit MarkdownPrinter(std::ostream& out);
};

// The JSON answers (json_report.hpp builds them).
class JsonPrinter final : public Printer {
 public:
  explicit JsonPrinter(std::ostream& out) : out_(out) {}
  void prediction(const PredictionReport& r) override;
  void advice(const AdviceReport& r, const TrainerAdvice* trainer) override;
  void check(const CheckView& v) override;
  void calibration(const CalibrationView& v) override;
  void accuracy(const AccuracyView& v) override;
  void catalog(Catalog what) override;
  void log_report(const LogReport& r) override;

 private:
  std::ostream& out_;
};

// table | markdown | json; InputError naming --format otherwise.
std::unique_ptr<Printer> make_printer(const std::string& format, std::ostream& out);

}  // namespace segadvise::cli
