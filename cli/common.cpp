#include "common.hpp"
#include "segadvise/families/gpu_detect.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "segadvise/planner/measurements.hpp"
#include "segadvise/report/measured_output.hpp"
#include "runs.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/calibration/ranges.hpp"
#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/output_file.hpp"
#include "segadvise/costmodel/kernels.hpp"
#include "segadvise/trainers/multi_gpu_config.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/profile.hpp"

namespace segadvise::cli {

CLI::Validator number_in(double lo, double hi, bool lo_open, const std::string& rule) {
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        try {
          // the checked reader: digits, sign, point and exponent only (no "nan", "inf", hex)
          const double v = parse_number_text(in, rule, lo, hi);
          return lo_open && v == lo ? rule + ", got " + in : "";
        } catch (const InputError&) {
          return rule + ", got " + in;
        }
      },
      rule);
}

const CLI::Validator kFormat = CLI::IsMember({"table", "json", "markdown"});
const CLI::Validator kPositive = number_in(0, 1e9, true, "must be positive");
const CLI::Validator kNonNegative = number_in(0, 1e9, false, "must be >= 0");
const CLI::Validator kNonEmpty([](std::string& in) -> std::string { return in.empty() ? "must not be empty" : ""; },
                               "TEXT");

void add_setup_flags(CLI::App* app, SetupFlags& f, bool model_optional) {
  auto* m = app->add_option("--model,-m", f.model,
                            "model: alias (wan14b, flux, sd3, …), model_family[:model_flavour], or a model .json file")
                ->check(kNonEmpty);
  if (!model_optional) m->required();
  app->add_option("--gpu,-g", f.gpu, "GPU: l40s, h100, h100-pcie, h200, a100, a100-40g, 3090, 4090, 5090, a6000, b200 (segadvise list gpus)")
      ->check(kNonEmpty);
  add_vram_flag(app, f);
  app->add_option("--resolution,-r", f.resolution, "WxH (e.g. 832x480), or N with --resolution-type")->check(kNonEmpty);
  app->add_option("--resolution-type", f.resolution_type, "pixel | pixel_area | area (the trainer's meanings)")
      ->check(CLI::IsMember({"pixel", "pixel_area", "area"}));
  app->add_option("--aspect", f.aspect, "source aspect W:H for a numeric --resolution (default 1:1, video 16:9)");
  app->add_option("--frames", f.frames, "video frames (the family's frame rule applies)")->check(kPositive);
  app->add_option("--batch", f.batch, "train_batch_size")->check(kPositive);
  app->add_option("--precision", f.precision, "base_model_precision: no_change/bf16, int8-quanto, fp8-torchao, int8-sdnq, int8-sdnq-hadamard, nf4-bnb, …")
      ->check(kNonEmpty);
  app->add_option("--model-type", f.model_type, "lora | full")->check(CLI::IsMember({"lora", "full"}));
  app->add_option("--lora-type", f.lora_type, "standard | lycoris")->check(CLI::IsMember({"standard", "lycoris"}));
  app->add_option("--lora-rank", f.lora_rank, "lora_rank")->check(kPositive);
  app->add_option("--optimizer", f.optimizer, "optimizer: adamw_bf16, optimi-lion, adamw8bit, prodigy, …")->check(kNonEmpty);
  app->add_option("--ramtorch", f.ramtorch, "on | off: stream block weights from host memory (RamTorch)")
      ->check(CLI::IsMember({"on", "off", "true", "false"}));
  app->add_option("--ramtorch-percent", f.ramtorch_percent, "ramtorch_transformer_percent (0..100)")
      ->check(number_in(0, 100, false, "must be 0..100"));
  app->add_option("--blocks-to-swap", f.blocks_to_swap, "musubi_blocks_to_swap")->check(kNonNegative);
  app->add_option("--text-tokens", f.text_tokens, "text sequence length (default: the family's)")->check(kNonNegative);
  add_output_flags(app, f);
  add_measured_flags(app, f);
  add_multi_gpu_flags(app, f);
}

void add_multi_gpu_flags(CLI::App* app, SetupFlags& f) {
  const auto count = number_in(1, kMaxGpusPerNode, false, "must be a whole number 1..65536");
  app->add_option("--gpus", f.gpus, "GPUs (processes) per node; per-rank prediction (default 1)")->check(count);
  app->add_option("--nodes", f.nodes, "nodes (num_machines), each with --gpus GPUs")->check(count);
  app->add_option("--strategy", f.strategy, "ddp | fsdp2 | zero1 | zero2 | zero3 (default with --gpus > 1: ddp)")
      ->check(CLI::IsMember({"single", "ddp", "fsdp2", "zero1", "zero2", "zero3"}));
  app->add_flag("--fsdp-cpu-offload", f.fsdp_cpu_offload, "FSDP2 fsdp_cpu_offload: shards and optimizer step on the host");
  app->add_flag("--offload-optimizer", f.offload_optimizer, "ZeRO offload_optimizer device cpu");
  app->add_flag("--offload-param", f.offload_param, "ZeRO-3 offload_param device cpu");
  app->add_flag("--no-reshard-after-forward", f.no_reshard, "fsdp_reshard_after_forward false");
  app->add_option("--context-parallel", f.context_parallel, "context_parallel_size K (divides the world)")->check(count);
  app->add_option("--cp-comm", f.cp_comm, "context_parallel_comm_strategy: allgather | alltoall")
      ->check(CLI::IsMember({"allgather", "alltoall"}));
  app->add_option("--inter-node-gbps", f.inter_node_gbps, "network per GPU between nodes, GB/s one direction (default 50: NDR 400 Gb/s)")
      ->check(kPositive);
  app->add_option("--grad-accumulation", f.grad_accumulation, "gradient_accumulation_steps")->check(count);
}

MultiGpuSetup apply_multi_gpu_flags(MultiGpuSetup m, const SetupFlags& f) {
  if (f.gpus != -1) m.gpus_per_node = f.gpus;
  if (f.nodes != -1) m.nodes = f.nodes;
  // each flag is at most 65,536, their product is not (65,536 x 65,536 would wrap an int to 0)
  const long long world = static_cast<long long>(m.gpus_per_node) * m.nodes;
  if (world > kMaxWorld)
    throw InputError(std::string(f.gpus != -1 ? "--gpus " : "GPUs per node ") + std::to_string(m.gpus_per_node) + " x " +
                     (f.nodes != -1 ? "--nodes " : "nodes ") + std::to_string(m.nodes) + " = " + std::to_string(world) +
                     " GPUs: more than the " + std::to_string(kMaxWorld) + " a prediction covers");
  if (!f.strategy.empty())
    m.strategy = parse_strategy(f.strategy, "--strategy");
  else if (m.world() > 1 && m.strategy == Strategy::single)
    m.strategy = Strategy::ddp;
  if (m.world() > 1 && m.strategy == Strategy::single)
    throw InputError("--strategy single with " + std::to_string(m.world()) + " GPUs: name ddp, fsdp2 or zero1..3");
  if (f.fsdp_cpu_offload) m.fsdp_cpu_offload = true;
  if (f.offload_optimizer) m.offload_optimizer = true;
  if (f.offload_param) m.offload_param = true;
  if (f.no_reshard) m.reshard_after_forward = false;
  if (f.context_parallel != -1) m.context_parallel = f.context_parallel;
  if (!f.cp_comm.empty()) m.cp_comm = parse_cp_comm(f.cp_comm, "--cp-comm");
  if (f.inter_node_gbps > 0) m.inter_node_bytes_per_s = f.inter_node_gbps * 1e9;
  if (f.grad_accumulation != -1) m.grad_accumulation = f.grad_accumulation;
  if (m.fsdp_cpu_offload && m.strategy != Strategy::fsdp2)
    throw InputError("--fsdp-cpu-offload needs --strategy fsdp2 (got " + to_string(m.strategy) + ")");
  if ((m.offload_optimizer || m.offload_param) && zero_stage(m.strategy) == 0)
    throw InputError("--offload-optimizer/--offload-param need --strategy zero1, zero2 or zero3 (got " + to_string(m.strategy) + ")");
  if (m.offload_optimizer && m.strategy == Strategy::fsdp2)
    throw InputError("--offload-optimizer is DeepSpeed's; FSDP2 offloads with --fsdp-cpu-offload");
  return m;
}

void add_vram_flag(CLI::App* app, SetupFlags& f) {
  const std::string max = max_vram_gib_text();
  app->add_option("--vram-gib", f.vram_gib, "memory of any other card, GiB, up to " + max + " (with --gpu: that card with this memory)")
      ->check(number_in(0, kMaxVramGib, true, "must be a memory size in GiB above 0 and up to " + max));
}

void add_output_flags(CLI::App* app, SetupFlags& f) {
  app->add_option("--headroom-gib", f.headroom_gib,
                  "memory to keep free on the card for a desktop or another process, GiB (default 0.5 on a card "
                  "with display outputs, 0 on a datacenter card)")
      ->check(headroom_gib());
  app->add_option("--os", f.host_os,
                  "the system the run is on: linux or windows (Windows: over the card's memory the driver's "
                  "sysmem fallback runs it slowly instead of failing; default: what the config shows, else linux)")
      ->check(CLI::IsMember({"linux", "windows"}));
  app->add_flag("--expandable-segments", f.expandable_segments,
               "the run sets PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (the allocator's slack falls; docs/memory.md)");
  app->add_option("--format", f.format, "table | json | markdown")->check(kFormat);
  app->add_option("--calibration", f.calibration, "coefficients file (default: the shipped calibration)")
      ->check(CLI::ExistingFile);
  app->add_option("--profile", f.profile, "profile.json from `segadvise profile`: measured block costs")
      ->check(CLI::ExistingFile);
}

void add_measured_flags(CLI::App* app, SetupFlags& f) {
  app->add_option("--measured", f.measured,
                  "a measured run of this same setup: SCHEDULE:SEC:GIB (sec/step and the peak in GiB, e.g. "
                  "layer:1.85:16.2, taken as the reserved peak: an allocated figure, as SimpleTuner logs it, is lower "
                  "by the allocator's slack) or SCHEDULE:oom; repeatable. Every prediction is anchored on it");
  app->add_option("--measured-from", f.measured_from,
                  "a trainer's log of this same setup (see `segadvise read-log`): its out-of-memory message, or its "
                  "last training step and peak allocated memory, become a --measured of the logged schedule");
  app->add_option("--measured-from-schedule", f.measured_from_schedule,
                  "the schedule the logged run used (check: default the config's own; predict: default --schedule)");
  app->add_flag("--no-runs", f.no_runs, "leave out the runs kept by `segadvise runs add` (anchoring only on what is given here)");
  app->add_option("--ranges", f.ranges, "90% range bands file (default: the shipped calibration/data/ranges.json)")
      ->check(CLI::ExistingFile);
}

void check_format(const std::string& format) {
  if (format != "table" && format != "json" && format != "markdown")
    throw InputError("--format: '" + format + "' is not one of table, json, markdown");
}

namespace {

// `[0-9]*\.?[0-9]+` at `pos` (digits, or digits-point-digits, or point-digits); empty when absent
std::string decimal_at(const std::string& s, std::size_t& pos) {
  auto digit = [&](std::size_t i) { return i < s.size() && s[i] >= '0' && s[i] <= '9'; };
  const std::size_t from = pos;
  std::size_t i = pos;
  while (digit(i)) ++i;
  if (i < s.size() && s[i] == '.' && digit(i + 1)) {
    ++i;
    while (digit(i)) ++i;
  }
  if (i == from) return "";
  pos = i;
  return s.substr(from, i - from);
}

}  // namespace

double parse_aspect(const std::string& s, const std::string& flag) {
  // W:H, W/H or a number, spaces around the parts allowed; scanned left to right (no regex: a
  // 30,000-digit value must be an error, not a recursion)
  auto space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r'; };
  std::size_t pos = 0;
  auto skip_space = [&] { while (pos < s.size() && space(s[pos])) ++pos; };
  skip_space();
  const std::string first = decimal_at(s, pos);
  skip_space();
  std::string second;
  bool ratio = false, separator = false;
  if (!first.empty() && pos < s.size() && (s[pos] == ':' || s[pos] == '/')) {
    separator = true;
    ++pos;
    skip_space();
    second = decimal_at(s, pos);
    skip_space();
    ratio = !second.empty();
  }
  try {
    if (ratio && pos == s.size()) {
      const double w = std::stod(first), h = std::stod(second);
      if (w > 0 && h > 0 && std::isfinite(w / h)) return w / h;
    } else if (!first.empty() && !separator && pos == s.size()) {
      const double a = std::stod(first);
      if (a > 0 && std::isfinite(a)) return a;
    }
  } catch (const std::exception&) {  // out of range
  }
  throw InputError(flag + ": '" + brief_text(s) + "' is neither W:H (16:9) nor a positive number (1.78), both parts above 0");
}

TrainingSetup apply_flags(const Family& fam, TrainingSetup s, const SetupFlags& f) {
  if (!f.resolution.empty()) {
    const double aspect = f.aspect.empty() ? (fam.modality == "video" ? 16.0 / 9.0 : 1.0) : parse_aspect(f.aspect);
    const ResolvedSize r = parse_resolution(f.resolution, f.resolution_type, fam, aspect);
    s.width = r.width;
    s.height = r.height;
    s.notes.push_back(r.note);
  } else if (!f.aspect.empty()) {
    throw InputError("--aspect needs --resolution");
  }
  // the flags' validators (add_setup_flags) checked ranges and members; -1 and "" are "not given"
  if (f.frames != -1) {
    if (fam.modality != "video" && f.frames > 1)
      throw InputError("--frames: " + fam.name + " trains on images, got " + std::to_string(f.frames) + " frames");
    s.frames = apply_frame_rule(fam, f.frames);
    if (s.frames != f.frames)
      s.notes.push_back("frames " + std::to_string(f.frames) + " -> " + std::to_string(s.frames) + " (" +
                        fam.geometry.frame_rule + " rule)");
  }
  if (f.batch != -1) s.batch = f.batch;
  if (!f.precision.empty()) {
    if (f.precision == "int8-sdnq-hadamard") {
      s.base_precision = "int8-sdnq";
      s.sdnq_hadamard = true;
    } else {
      precision_info(f.precision);  // validates
      s.base_precision = f.precision == "bf16" ? "no_change" : f.precision;
      s.sdnq_hadamard = false;
    }
  }
  if (!f.model_type.empty()) s.model_type = parse_model_type(f.model_type, "--model-type");
  if (!f.lora_type.empty()) s.lora_type = parse_lora_type(f.lora_type, "--lora-type");
  if (f.lora_rank != -1) s.lora_rank = f.lora_rank;
  if (!f.optimizer.empty()) {
    optimizer_info(f.optimizer);
    s.optimizer = f.optimizer;
  }
  if (!f.ramtorch.empty()) s.ramtorch = f.ramtorch == "on" || f.ramtorch == "true";
  if (f.ramtorch_percent >= 0) s.ramtorch_percent = f.ramtorch_percent;
  if (f.blocks_to_swap != -1) s.blocks_to_swap = f.blocks_to_swap;
  if (f.text_tokens != -1) s.text_tokens = f.text_tokens;
  return s;
}

GpuSpec resolve_gpu(const SetupFlags& f) {
  if (f.gpu == "auto") {
    const GpuSpec g = auto_gpu();  // InputError when there is no GPU
    return f.vram_gib > 0 ? custom_gpu(f.vram_gib, &g) : g;
  }
  if (f.gpu.empty() && f.vram_gib <= 0) throw InputError("--gpu: required (or --vram-gib N for any card)");
  if (f.gpu.empty()) return custom_gpu(f.vram_gib);
  const GpuSpec& g = find_gpu(f.gpu);
  return f.vram_gib > 0 ? custom_gpu(f.vram_gib, &g) : g;
}

// The setup's attention_mechanism on a named card that cannot run it (attention_runs_on); a card given
// only by --vram-gib is not known to be one (its compute figures stand in)
static bool attention_cannot_run(const TrainingSetup& s, const GpuSpec& g) { return g.id != "custom" && !attention_runs_on(s.attention, g); }

AdvisorRequest make_request(const Family& fam, const TrainingSetup& setup, const SetupFlags& f) {
  AdvisorRequest r;
  r.family = &fam;
  r.setup = setup;
  r.setup.multi_gpu = apply_multi_gpu_flags(setup.multi_gpu, f);
  r.gpu = resolve_gpu(f);
  r.coef = coefficients_for(f.calibration);
  r.headroom_bytes = f.headroom_gib >= 0 ? f.headroom_gib * kGiB : default_headroom_bytes(r.gpu);
  if (!f.host_os.empty()) {
    r.setup.host_os = f.host_os == "windows" ? "windows" : "";
    r.setup.host_os_from = "--os " + f.host_os;
  }
  if (f.expandable_segments) {
    r.setup.expandable_segments = true;
    r.setup.expandable_segments_from = "--expandable-segments";
  }
  if (!f.profile.empty()) r.profile = load_profile(f.profile);
  r.measured = parse_measurements(f.measured);
  if (!f.measured_from.empty()) r.measured.push_back(measurement_from_log(f.measured_from, f.measured_from_schedule, r.gpu.total_bytes));
  // the runs the user kept for this setup on this card (runs.hpp): anchored on, and said so
  if (!f.no_runs)
    for (Measurement& m : remembered_for(r, runs_file())) r.measured.push_back(std::move(m));
  r.ranges = ranges_for(f.ranges);
  if (attention_cannot_run(r.setup, r.gpu))
    r.setup.notes.push_back("attention_mechanism " + r.setup.attention + " is FlashAttention-3, a Hopper kernel: the trainer cannot run it on " +
                            r.gpu.name + "; timed as the FA2-class kernel SDPA picks there (attention_mechanism diffusers)");
  return r;
}

std::vector<std::string> input_files(const SetupFlags& f) {
  std::vector<std::string> in;
  for (const std::string* p : {&f.model, &f.calibration, &f.profile, &f.ranges, &f.measured_from})
    if (!p->empty()) in.push_back(*p);  // a --model that is a family's name names no file: no file matches it
  return in;
}

AdvisorRequest make_request(const SetupFlags& f) {
  const Family& fam = find_model(f.model);
  TrainingSetup setup = apply_flags(fam, default_setup(fam), f);
  // the trainer's example may name an attention kernel this card cannot run (Wan 14B's flash-attn-3-hub,
  // a Hopper kernel, on an L40S): the advice is for the card, so it assumes the trainer's default, which
  // its printed keys then leave out
  if (attention_cannot_run(setup, resolve_gpu(f))) {
    setup.notes.push_back("the example's attention_mechanism " + setup.attention + " is FlashAttention-3, a Hopper kernel: on this card the trainer's default (diffusers, SDPA) is assumed");
    setup.attention = "diffusers";
  }
  return make_request(fam, setup, f);
}

std::string max_vram_gib_text() { return std::to_string(static_cast<int>(kMaxVramGib)); }

CLI::Validator headroom_gib() { return number_in(0, kMaxVramGib, false, "must be 0.." + max_vram_gib_text() + " GiB"); }

}  // namespace segadvise::cli
