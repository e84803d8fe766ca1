// Shared by the subcommands: the setup flags, and turning them into the advisor's request (family,
// setup, GPU, coefficients, headroom, profile). The advisor (segadvise/planner/advisor.hpp) does the rest.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/planner/advisor.hpp"

namespace segadvise::cli {

// Exit codes: 0 answered (fits), 1 nothing fits / does not fit, 2 bad input.
enum ExitCode { kOk = 0, kDoesNotFit = 1, kBadInput = 2 };

struct SetupFlags {
  std::string model;
  std::string gpu;
  double vram_gib = 0;
  std::string resolution;
  std::string resolution_type = "pixel_area";
  std::string aspect;
  int frames = -1;
  int batch = -1;
  std::string precision;
  std::string model_type;
  std::string lora_type;
  int lora_rank = -1;
  std::string optimizer;
  std::string ramtorch;  // "", "on", "off"
  double ramtorch_percent = -1;
  int blocks_to_swap = -1;
  int text_tokens = -1;
  double headroom_gib = 1.0;
  std::string format = "table";
  std::string calibration;
  std::string profile;
};

// Validators of numeric and text flags, naming the value: "--batch: must be positive, got 0" (NaN,
// infinities and overflow rejected; up to 1e9).
extern const CLI::Validator kPositive;
extern const CLI::Validator kNonNegative;
extern const CLI::Validator kNonEmpty;

// --model is required unless `model_optional` (check reads it from the config).
void add_setup_flags(CLI::App* app, SetupFlags& f, bool model_optional = false);
void add_output_flags(CLI::App* app, SetupFlags& f);
void add_vram_flag(CLI::App* app, SetupFlags& f);  // --vram-gib

// Applies the flags on top of `base` (the family's example setup, or a config's setup).
TrainingSetup apply_flags(const Family& fam, TrainingSetup base, const SetupFlags& f);
// --gpu (a catalog id, or auto: the card in this machine) and --vram-gib.
GpuSpec resolve_gpu(const SetupFlags& f);
// The advisor's request for `setup` on the flags' GPU, with their coefficients, headroom and profile.
AdvisorRequest make_request(const Family& fam, const TrainingSetup& setup, const SetupFlags& f);
// The family of --model, its example setup with the flags applied.
AdvisorRequest make_request(const SetupFlags& f);

// W:H (16:9) or a number (1.78), both parts positive; InputError naming `flag` otherwise.
double parse_aspect(const std::string& s, const std::string& flag = "--aspect");

// The trainer's config keys for a schedule.
nlohmann::json simpletuner_keys(const Schedule& s);

std::string gib_str(double bytes, int decimals = 1);
std::string secs_str(double s);
void check_format(const std::string& format);

}  // namespace segadvise::cli
