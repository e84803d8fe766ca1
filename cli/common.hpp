// Shared by the subcommands: the setup flags, building the evaluation context (family, setup,
// GPU, coefficients, block chain), evaluating one schedule, and the schedule space of a family.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/planner/planner.hpp"

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

// --model is required unless `model_optional` (check reads it from the config).
void add_setup_flags(CLI::App* app, SetupFlags& f, bool model_optional = false);
void add_output_flags(CLI::App* app, SetupFlags& f);

struct Context {
  const Family* family = nullptr;
  TrainingSetup setup;
  GpuSpec gpu;
  Coefficients coef;
  BlockChain chain;
  double headroom_bytes = 0;
  std::vector<std::string> warnings;
  // schedule-independent costs, computed once per context (see prepared()); rebuilt when the
  // context was copied or reanalyzed
  mutable PreparedChain prepared_cache;
  mutable bool prepared_valid = false;
};

const PreparedChain& prepared(const Context& ctx);

// Applies the flags on top of `base` (the family's example setup, or a config's setup).
TrainingSetup apply_flags(const Family& fam, TrainingSetup base, const SetupFlags& f);
GpuSpec resolve_gpu(const SetupFlags& f);
// Family, setup, GPU, coefficients, chain (with a profile applied when given).
Context build_context(const Family& fam, const TrainingSetup& setup, const SetupFlags& f);
Context build_context(const SetupFlags& f);
// Rebuilds the chain after the setup changed (advise's "what would fit" search).
void reanalyze(Context& ctx);

Candidate evaluate(const Context& ctx, const Schedule& s);
ScheduleSpace schedule_space(const Context& ctx);

// The trainer's config keys for a schedule.
nlohmann::json simpletuner_keys(const Schedule& s);

std::string gib_str(double bytes, int decimals = 1);
std::string secs_str(double s);
void check_format(const std::string& format);

}  // namespace segadvise::cli
