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
#include "segadvise/report/format.hpp"  // gib_str, secs_str
#include "exit_code.hpp"

namespace segadvise::cli {

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
  double headroom_gib = -1;  // -1: the card's default (default_headroom_bytes)
  std::string host_os;       // --os linux|windows ("" : from the config, else Linux)
  bool expandable_segments = false;  // --expandable-segments
  std::string format = "table";
  std::string calibration;
  std::string profile;
  std::vector<std::string> measured;  // --measured SCHEDULE:SEC:GIB | SCHEDULE:oom (repeatable)
  std::string ranges;                 // --ranges FILE ("" : the shipped bands)
  // --measured-from LOG: the log's OOM or last training step and peak, as a measurement of the schedule
  // --measured-from-schedule names (check: the config's own, predict: --schedule when not given)
  std::string measured_from, measured_from_schedule;
  bool no_runs = false;  // --no-runs: leave the runs `segadvise runs add` kept out (runs.hpp)
  // multi-GPU (-1 / "" / false: not given; a config's keys or one GPU then)
  int gpus = -1;                 // --gpus: GPUs (processes) per node
  int nodes = -1;                // --nodes
  std::string strategy;          // --strategy ddp|fsdp2|zero1|zero2|zero3
  bool fsdp_cpu_offload = false;
  bool offload_optimizer = false;
  bool offload_param = false;
  bool no_reshard = false;       // --no-reshard-after-forward
  int context_parallel = -1;     // --context-parallel K
  std::string cp_comm;           // --cp-comm allgather|alltoall
  double inter_node_gbps = -1;   // --inter-node-gbps
  int grad_accumulation = -1;    // --grad-accumulation
};

// Validators of numeric and text flags, naming the value: "--batch: must be positive, got 0" (NaN,
// infinities and overflow rejected; up to 1e9).
extern const CLI::Validator kPositive;
// A number in [lo, hi] (lo excluded when lo_open) read by parse_number_text; `rule` is the message.
CLI::Validator number_in(double lo, double hi, bool lo_open, const std::string& rule);
extern const CLI::Validator kFormat;  // table | json | markdown
extern const CLI::Validator kNonNegative;
extern const CLI::Validator kNonEmpty;

// --model is required unless `model_optional` (check reads it from the config).
void add_setup_flags(CLI::App* app, SetupFlags& f, bool model_optional = false);
void add_output_flags(CLI::App* app, SetupFlags& f);
void add_vram_flag(CLI::App* app, SetupFlags& f);  // --vram-gib
void add_measured_flags(CLI::App* app, SetupFlags& f);  // --measured, --ranges
// --gpus, --nodes, --strategy, --fsdp-cpu-offload, --offload-optimizer, --offload-param,
// --no-reshard-after-forward, --context-parallel, --cp-comm, --inter-node-gbps, --grad-accumulation
void add_multi_gpu_flags(CLI::App* app, SetupFlags& f);
// The flags given, on top of `base` (one GPU, or a config's multi-GPU keys). --gpus N > 1 with no
// --strategy is DDP, as the trainer runs num_processes > 1 without an FSDP or DeepSpeed plugin.
MultiGpuSetup apply_multi_gpu_flags(MultiGpuSetup base, const SetupFlags& f);

// Applies the flags on top of `base` (the family's example setup, or a config's setup).
TrainingSetup apply_flags(const Family& fam, TrainingSetup base, const SetupFlags& f);
// --gpu (a catalog id, or auto: the card in this machine) and --vram-gib.
GpuSpec resolve_gpu(const SetupFlags& f);
// The advisor's request for `setup` on the flags' GPU, with their coefficients, headroom and profile.
AdvisorRequest make_request(const Family& fam, const TrainingSetup& setup, const SetupFlags& f);
// The family of --model, its example setup with the flags applied.
AdvisorRequest make_request(const SetupFlags& f);

// The files the setup flags name (--model when it is a family file, --calibration, --profile, --ranges,
// --measured-from): what no output of the command may be (io/output_file.hpp check_output_is_not_input).
std::vector<std::string> input_files(const SetupFlags& f);

// W:H (16:9) or a number (1.78), both parts positive; InputError naming `flag` otherwise.
double parse_aspect(const std::string& s, const std::string& flag = "--aspect");

// The largest card memory a flag takes ("4096": costmodel/constants.hpp kMaxVramGib), and the validator of
// a headroom in GiB (0 up to that).
std::string max_vram_gib_text();
CLI::Validator headroom_gib();
void check_format(const std::string& format);

}  // namespace segadvise::cli
