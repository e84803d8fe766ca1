// segadvise-torch: `profile` and `validate`, the LibTorch side of segadvise. `segadvise profile …`
// and `segadvise validate …` exec this binary with the same arguments. This file parses flags and
// hands the results to the report layer (segadvise/report/torch_output.hpp); it includes no LibTorch
// header (the work is in segadvise_torch_lib).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "segadvise/report/text_format.hpp"
#include "segadvise/report/torch_output.hpp"
#include "segadvise/families/gpu_detect.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/report/json_io.hpp"
#include "segadvise/planner/plan_json.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/profile.hpp"
#include "segadvise/profiler/distributed.hpp"
#include "segadvise/profiler/profiler.hpp"
#include "segadvise/profiler/validate.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"

using namespace segadvise;
using nlohmann::json;

namespace {

constexpr int kBadInput = 2;

struct TorchFlags {
  cli::SetupFlags setup;
  std::string device = "cpu";
  int tokens = 0;
  std::string output;
  int repeats = 3;
  bool quiet = false;
  // validate
  std::string schedule;
  std::string backend;
  bool offload_attention = false;
  int steps = 3;
  int warmup = 1;
  int blocks = 0;
  bool all_schedules = false;
  std::string plan;
  // validate --gpus N: N ranks over Gloo on this CPU
  int gpus = 1;
  std::string strategies;  // comma list, or all
  int timeout_s = 600;
  // the hidden `_rank` subcommand each of them runs
  int rank = -1;
  std::string store, result;
};

void add_shape_flags(CLI::App* app, TorchFlags& f) {
  cli::SetupFlags& s = f.setup;
  app->add_option("--model,-m", s.model, "model: alias (wan, sd3, flux, …), model_family[:flavour], or a model .json")->required();
  app->add_option("--device", f.device, "cpu | cuda (default cpu)")->check(CLI::IsMember({"cpu", "cuda"}));
  app->add_option("--resolution,-r", s.resolution, "WxH, or N with --resolution-type")->check(cli::kNonEmpty);
  app->add_option("--resolution-type", s.resolution_type, "pixel | pixel_area | area")
      ->check(CLI::IsMember({"pixel", "pixel_area", "area"}));
  app->add_option("--aspect", s.aspect, "source aspect W:H for a numeric --resolution");
  app->add_option("--frames", s.frames, "video frames (the family's frame rule applies)")->check(cli::kPositive);
  app->add_option("--batch", s.batch, "train_batch_size")->check(cli::kPositive);
  app->add_option("--precision", s.precision, "base_model_precision (recorded; base weights run in the activation dtype)");
  app->add_option("--model-type", s.model_type, "lora | full")->check(CLI::IsMember({"lora", "full"}));
  app->add_option("--lora-type", s.lora_type, "standard (lycoris has no archetype yet)")
      ->check(CLI::IsMember({"standard", "lycoris"}));
  app->add_option("--lora-rank", s.lora_rank, "lora_rank")->check(cli::kPositive);
  app->add_option("--text-tokens", s.text_tokens, "text sequence length (default: the family's)")->check(cli::kNonNegative);
  app->add_flag("--quiet,-q", f.quiet, "no progress on stderr");
}

// --tokens for validate: a square-ish shape with about T image tokens per sample
void apply_tokens(const Family& fam, TrainingSetup& s, int tokens) {
  if (tokens <= 0) throw InputError("--tokens: must be positive, got " + std::to_string(tokens));
  const int px = fam.geometry.vae_spatial * std::max(1, fam.geometry.patch_spatial);
  const TokenGeometry g = token_geometry(fam, s.width, s.height, s.frames, s.text_tokens);
  const double per_frame = std::max(1.0, g.image_tokens / std::max(1, g.latent_frames));
  const double frames = g.image_tokens / per_frame;
  const double side = std::sqrt(std::max(1.0, tokens / frames));
  const double aspect = static_cast<double>(s.width) / std::max(1, s.height);
  const int tw = std::max(1, static_cast<int>(std::lround(side * std::sqrt(aspect))));
  const int th = std::max(1, static_cast<int>(std::lround(side / std::sqrt(aspect))));
  s.width = tw * px;
  s.height = th * px;
  s.notes.push_back("--tokens " + std::to_string(tokens) + ": " + std::to_string(s.width) + "x" + std::to_string(s.height));
}

// ------------------------------------------------------------------------------------------- profile

int run_profile_cmd(TorchFlags& f) {
  const Family& fam = find_model(f.setup.model);
  TrainingSetup setup = cli::apply_flags(fam, default_setup(fam), f.setup);
  profiler::ProfileOptions opt;
  opt.device = f.device;
  opt.max_tokens = f.tokens;
  opt.repeats = f.repeats;
  opt.quiet = f.quiet;
  const std::string out = f.output.empty() ? fam.id + "." + f.device + ".profile.json" : f.output;
  if (!f.quiet) {
    const TokenGeometry g = token_geometry(fam, setup.width, setup.height, setup.frames, setup.text_tokens);
    std::fprintf(stderr, "segadvise profile: %s at %dx%d, %d frames, batch %d: %.0f image + %.0f text tokens on %s\n",
                 fam.name.c_str(), setup.width, setup.height, setup.frames, setup.batch, g.image_tokens, g.text_tokens,
                 f.device.c_str());
  }
  Profile p = profiler::run_profile(fam, setup, opt);
  p.path = out;
  if (f.device == "cuda") {  // the catalog card this device is, so predictions for it use the times
    double total = 0;
    try {
      total = detect_gpu().total_bytes;
    } catch (const InputError&) {
    }
    p.gpu_id = catalog_id_for(p.device, total);
    if (p.gpu_id.empty())
      p.notes.push_back("device '" + p.device + "' is not in the GPU catalog: its times apply to no --gpu");
  }
  write_file_atomically(out, profile_to_json(p).dump(2) + "\n");
  // summary next to the static estimate
  const BlockChain chain = analyze(fam, setup);
  cli::ProfileSummary summary{{}, out, p.device, p.dtype, p.torch_version, p.attention_backend};
  for (const auto& k : p.kinds) {
    cli::ProfiledKind row;
    row.list = k.list;
    row.kind = k.kind;
    row.tokens = k.tokens;
    for (const auto& b : chain.blocks)
      if (b.list == k.list) {
        row.static_saved_bytes = b.saved_bytes();
        break;
      }
    row.saved_bytes = k.saved_attention_bytes + k.saved_ffn_bytes + k.saved_rest_bytes;
    row.forward_s = k.forward_linear_s * k.tokens + k.forward_quadratic_s * k.tokens * k.tokens;
    row.backward_s = k.backward_linear_s * k.tokens + k.backward_quadratic_s * k.tokens * k.tokens;
    row.extrapolated = k.extrapolated;
    summary.kinds.push_back(row);
  }
  cli::print_profile_summary(std::cout, summary);
  return 0;
}

// ------------------------------------------------------------------------------------------ validate

// What validate runs on: the family's first N blocks for the flags' setup, the machine, the profile
// the prediction uses (given, or measured now), applied to the chain.
struct ValidationInputs {
  const Family* fam = nullptr;
  TrainingSetup setup;
  BlockChain chain;
  int n = 0;
  GpuSpec gpu;
  Coefficients coef;
  Profile prof;
};

// The profile validate predicts with: --profile, or the family's first lists measured now.
Profile validation_profile(const TorchFlags& f, const Family& fam, const TrainingSetup& setup, int n) {
  Profile prof;
  if (!f.setup.profile.empty()) return load_profile(f.setup.profile);
  Family only = fam;
  std::vector<BlockListSpec> lists;
  int left = n;
  for (const auto& l : fam.block_lists) {
    if (left <= 0) break;
    lists.push_back(l);
    left -= l.count;
  }
  only.block_lists = lists;
  profiler::ProfileOptions po;
  po.device = f.device;
  po.quiet = true;
  po.repeats = 5;
  prof = profiler::run_profile(only, setup, po);
  prof.path = "(measured now)";
  prof.family = fam.id;
  return prof;
}

// Every check of validate's flags that needs no measurement, before anything runs: a bad schedule
// name must not cost a profile first.
void check_validate_flags(const TorchFlags& f) {
  cli::check_format(f.setup.format);
  if (f.schedule.empty() && !f.all_schedules && f.plan.empty())
    throw InputError("validate: give --schedule S, --all-schedules or --plan plan.json");
  if (f.tokens != 0 && !f.setup.resolution.empty()) throw InputError("--tokens and --resolution: give one of them");
  if (!f.schedule.empty()) Schedule::parse(f.schedule);
  if (!f.backend.empty()) parse_backend(f.backend);
}

// The flags' setup as the executor runs it.
TrainingSetup validation_setup(const TorchFlags& f, const Family& fam) {
  TrainingSetup setup = cli::apply_flags(fam, default_setup(fam), f.setup);
  if (f.tokens != 0) apply_tokens(fam, setup, f.tokens);
  if (setup.ramtorch || setup.blocks_to_swap > 0 || setup.group_offload) {
    // the executor keeps every block's weights on the device: predict the same
    setup.ramtorch = false;
    setup.blocks_to_swap = 0;
    setup.group_offload = false;
    if (!f.quiet)
      std::fprintf(stderr, "segadvise validate: weight streaming (RamTorch / block swap / group offload) is not "
                           "executed; validating with all weights resident\n");
  }
  return setup;
}

ValidationInputs validation_inputs(TorchFlags& f) {
  ValidationInputs in;
  const Family& fam = find_model(f.setup.model);
  in.fam = &fam;
  TrainingSetup setup = validation_setup(f, fam);

  // the chain of the blocks that run: the first N, nothing outside them
  BlockChain chain = profiler::validation_chain(fam, setup, f.blocks);
  const int n = static_cast<int>(chain.blocks.size());
  if (!f.plan.empty()) load_plan(f.plan, n);  // a bad plan file fails before anything is measured

  // the machine: CPU, or the CUDA device matched to the catalog
  GpuSpec gpu;
  Coefficients coef = coefficients_for(f.setup.calibration);
  if (f.device == "cpu") {
    gpu = profiler::cpu_gpu_spec();
    profiler::use_cpu_coefficients(coef);
  } else {
    if (!f.setup.gpu.empty()) {
      gpu = cli::resolve_gpu(f.setup);
    } else {
      gpu = auto_gpu();  // the card this CUDA device is, matched to the catalog
    }
  }

  // the profile the prediction uses: given, or measured now on this device for these lists
  Profile prof = validation_profile(f, fam, setup, n);
  if (f.device == "cpu") prof.gpu_id = "cpu";
  apply_profile(prof, fam, setup, chain, gpu.id);
  apply_profile_bandwidth(prof, coef.for_gpu(gpu.id).pcie_efficiency, gpu);
  in.setup = setup;
  in.chain = std::move(chain);
  in.n = n;
  in.gpu = gpu;
  in.coef = coef;
  in.prof = prof;
  return in;
}

// The plans named by --plan, --schedule and --all-schedules (the trainer's Pareto front), realized.
std::vector<std::pair<std::string, PlanResult>> plans_to_validate(const TorchFlags& f, const ValidationInputs& in) {
  const Family& fam = *in.fam;
  const int n = in.n;

  // the schedules
  std::vector<std::pair<std::string, PlanResult>> plans;
  if (!f.plan.empty()) {
    PlanResult r;
    r.plan = load_plan(f.plan, n);
    plans.push_back({"plan " + f.plan, r});
  }
  std::vector<Schedule> schedules;
  if (!f.schedule.empty()) {
    Schedule s = Schedule::parse(f.schedule);
    if (!f.backend.empty()) s.backend = parse_backend(f.backend);
    if (f.offload_attention) s.offload_attention = true;
    schedules.push_back(s);
  }
  if (f.all_schedules) {
    AdvisorRequest req;  // the chain of the blocks that run, its profile applied above
    req.family = &fam;
    req.setup = in.setup;
    req.gpu = in.gpu;
    req.coef = in.coef;
    req.chain = in.chain;
    req.headroom_bytes = 0;  // only the Pareto front is used
    const Context ctx(req);
    std::vector<Candidate> cands;
    for (const auto& s : enumerate_schedules(schedule_space(ctx))) {
      Candidate c = evaluate(ctx, s);
      if (c.plan.supported) cands.push_back(c);
    }
    mark_pareto(cands);
    for (const auto& c : cands)
      if (c.pareto) schedules.push_back(c.schedule);
  }
  for (const auto& s : schedules) plans.push_back({s.name(), realize(fam, in.chain, s, in.setup)});
  return plans;
}

// Predicts and runs each plan.
std::vector<cli::ValidatedPlan> run_plans(const TorchFlags& f, const ValidationInputs& in,
                                          std::vector<std::pair<std::string, PlanResult>> plans) {
  const BlockChain& chain = in.chain;
  const TrainingSetup& setup = in.setup;

  profiler::ValidateOptions vo;
  vo.device = f.device;
  vo.steps = f.steps;
  vo.warmup = f.warmup;
  vo.blocks = in.n;
  vo.quiet = f.quiet;
  std::vector<cli::ValidatedPlan> rows;
  for (auto& [name, pr] : plans) {
    cli::ValidatedPlan row;
    row.schedule = name;
    row.supported = pr.supported;
    row.reason = pr.reason;
    if (pr.supported) {
      if (pr.plan.description.empty() || name.rfind("plan ", 0) != 0) pr.plan.description = describe(pr.plan, chain);
      row.description = pr.plan.description;
      row.predicted = predict(chain, pr.plan, setup, in.gpu, in.coef, 0);
      const profiler::ValidateRun run = profiler::run_validation(*in.fam, setup, pr.plan, vo);
      row.measured_peak_bytes = run.peak_bytes;
      row.measured_host_peak_bytes = run.host_peak_bytes;
      row.measured_step_s = run.step_s;
      row.measured_step_times_s = run.step_times_s;
    }
    rows.push_back(row);
  }
  return rows;
}

// The text layouts through the report layer (segadvise/report/text_format.hpp): a TextFormat picks table or markdown.
const cli::TextFormat& text_format_of(const TorchFlags& f) {
  return f.setup.format == "markdown" ? cli::markdown_format() : cli::table_format();
}

// ------------------------------------------------------------------------------- validate --gpus N

std::vector<Strategy> strategies_of(const std::string& list) {
  if (list.empty() || list == "all")
    return {Strategy::ddp, Strategy::zero1, Strategy::zero2, Strategy::zero3, Strategy::fsdp2};
  std::vector<Strategy> out;
  std::stringstream ss(list);
  std::string w;
  while (std::getline(ss, w, ',')) {
    const Strategy s = parse_strategy(w, "--strategy");
    if (s == Strategy::single) throw InputError("--strategy: 'single' is one process; give ddp, zero1, zero2, zero3 or fsdp2");
    out.push_back(s);
  }
  if (out.empty()) throw InputError("--strategy: empty list");
  return out;
}

// The arguments every rank gets: the flags' shape, the strategy, the steps.
std::vector<std::string> rank_args(const TorchFlags& f, Strategy s) {
  const cli::SetupFlags& x = f.setup;
  std::vector<std::string> a = {"_rank", "--quiet", "--model", x.model, "--strategy", to_string(s),
                                "--steps", std::to_string(f.steps), "--timeout", std::to_string(f.timeout_s)};
  auto opt = [&a](const char* flag, const std::string& v) {
    if (!v.empty()) a.insert(a.end(), {flag, v});
  };
  auto num = [&a](const char* flag, int v, int min) {
    if (v >= min) a.insert(a.end(), {flag, std::to_string(v)});
  };
  opt("--resolution", x.resolution);
  opt("--resolution-type", x.resolution.empty() ? "" : x.resolution_type);
  opt("--aspect", x.aspect);
  opt("--precision", x.precision);
  opt("--model-type", x.model_type);
  opt("--lora-type", x.lora_type);
  num("--frames", x.frames, 1);
  num("--batch", x.batch, 1);
  num("--lora-rank", x.lora_rank, 1);
  num("--text-tokens", x.text_tokens, 0);
  num("--tokens", f.tokens, 1);
  num("--blocks", f.blocks, 1);
  return a;
}

std::string self_exe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("validate --gpus: cannot find this executable (/proc/self/exe)");
  buf[n] = 0;
  return buf;
}

// A strategy's prediction beside its ranks' runs: the busiest rank's peak and payloads, the slowest
// rank's step, rank 0's gradients.
cli::DistributedRun distributed_run(Strategy s, const RankStateInput& in, std::vector<profiler::RankRun> ranks) {
  cli::DistributedRun r;
  r.strategy = s;
  r.predicted = rank_state(in);
  r.predicted_comm = comm_per_step(in);
  std::size_t busiest = 0;
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i].peak.total_bytes() > ranks[busiest].peak.total_bytes()) busiest = i;
  const profiler::RankRun& b = ranks[busiest];
  r.measured_peak_bytes = b.peak.total_bytes();
  r.allgather_bytes = b.comm.allgather_bytes;
  r.reduce_scatter_bytes = b.comm.reduce_scatter_bytes;
  r.allreduce_bytes = b.comm.allreduce_bytes;
  r.comm_equal = true;
  for (const auto& x : ranks) {
    r.step_s = std::max(r.step_s, x.step_s);
    if (x.comm.allgather_bytes != r.predicted_comm.allgather_bytes ||
        x.comm.reduce_scatter_bytes != r.predicted_comm.reduce_scatter_bytes ||
        x.comm.allreduce_bytes != r.predicted_comm.allreduce_bytes)
      r.comm_equal = false;
    r.ranks.push_back(profiler::to_json(x));
  }
  const profiler::RankRun& rank0 = ranks.front();
  r.gradients_bit_equal = rank0.grad_bit_equal;
  r.grad_max_abs_diff = rank0.grad_max_abs_diff;
  r.grad_max_abs = rank0.grad_max_abs;
  return r;
}

int run_distributed_cmd(TorchFlags& f) {
  cli::check_format(f.setup.format);
  if (f.device != "cpu") throw InputError("--gpus: runs N processes on this CPU; --device must be cpu");
  if (f.all_schedules || !f.plan.empty() || (!f.schedule.empty() && f.schedule != "none"))
    throw InputError("--gpus: the ranks run without checkpointing; drop --schedule/--plan/--all-schedules");
  if (f.tokens != 0 && !f.setup.resolution.empty()) throw InputError("--tokens and --resolution: give one of them");
  const std::vector<Strategy> strategies = strategies_of(f.strategies);
  const Family& fam = find_model(f.setup.model);
  const TrainingSetup setup = validation_setup(f, fam);
  const BlockChain chain = profiler::validation_chain(fam, setup, f.blocks);
  const int blocks = static_cast<int>(chain.blocks.size());
  const std::string exe = self_exe();
  cli::DistributedView v;
  v.family = &fam;
  v.setup = setup;
  v.gpus = f.gpus;
  v.blocks = blocks;
  v.steps = f.steps;
  v.device = profiler::device_name("cpu");
  v.torch_version = profiler::torch_version();
  for (Strategy s : strategies) {
    const RankStateInput in = profiler::rank_state_input(chain, setup, s, f.gpus);
    if (!f.quiet) std::fprintf(stderr, "segadvise validate: %s on %d ranks…\n", to_string(s).c_str(), f.gpus);
    v.runs.push_back(distributed_run(s, in, profiler::launch_ranks(exe, rank_args(f, s), f.gpus, f.timeout_s)));
  }
  if (f.setup.format == "json")
    std::cout << cli::distributed_validation_json(v).dump(2) << "\n";
  else
    cli::print_distributed_validation(std::cout, v, text_format_of(f));
  return 0;
}

int run_rank_cmd(TorchFlags& f) {
  const Family& fam = find_model(f.setup.model);
  const TrainingSetup setup = validation_setup(f, fam);
  profiler::DistributedOptions o;
  o.world = f.gpus;
  o.rank = f.rank;
  o.store_path = f.store;
  o.strategy = parse_strategy(f.strategies, "--strategy");
  o.steps = f.steps;
  o.blocks = f.blocks;
  o.timeout_s = f.timeout_s;
  const profiler::RankRun r = profiler::run_rank(fam, setup, o);
  write_file_atomically(f.result, profiler::to_json(r).dump(2) + "\n");
  return 0;
}

int run_validate_cmd(TorchFlags& f) {
  if (f.gpus > 1) return run_distributed_cmd(f);
  if (!f.strategies.empty()) throw InputError("--strategy: needs --gpus N with N > 1");
  check_validate_flags(f);
  const ValidationInputs in = validation_inputs(f);
  cli::ValidationView v;
  v.family = in.fam;
  v.setup = in.setup;
  v.blocks = in.n;
  v.device = profiler::device_name(f.device);
  v.torch_version = profiler::torch_version();
  v.profile = in.prof.path;
  v.steps = f.steps;
  v.warmup = f.warmup;
  v.plans = run_plans(f, in, plans_to_validate(f, in));
  if (f.setup.format == "json")
    std::cout << cli::validation_json(v).dump(2) << "\n";
  else
    cli::print_validation(std::cout, v, text_format_of(f));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"segadvise-torch: LibTorch profiler and validator for segadvise"};
  app.require_subcommand(1);
  TorchFlags f;
  int rc = 0;
  auto* prof = app.add_subcommand("profile", "measure each block kind of a family on this machine's device");
  add_shape_flags(prof, f);
  prof->add_option("--tokens", f.tokens, "most stream tokens one pass may run; larger shapes are extrapolated")
      ->check(cli::kPositive);
  prof->add_option("--output,-o", f.output, "profile file to write (default <family>.<device>.profile.json)")
      ->check(cli::kNonEmpty);
  prof->add_option("--repeats", f.repeats, "timed repeats after the warm-up (median)")->check(cli::kPositive);
  prof->callback([&] { rc = run_profile_cmd(f); });

  auto* val = app.add_subcommand("validate", "run real training steps of a schedule and compare with the prediction");
  add_shape_flags(val, f);
  val->add_option("--schedule,-s", f.schedule, "none, layer, intervalK, segK-strideS, activation-offload, … (+backend)");
  val->add_option("--backend", f.backend, "torch | torch-ffn | unsloth | unsloth-ffn")
      ->check(CLI::IsMember({"torch", "torch-ffn", "unsloth", "unsloth-ffn"}));
  val->add_flag("--offload-attention", f.offload_attention, "gradient_checkpointing_offload_attention");
  val->add_option("--steps", f.steps, "measured optimizer steps (default 3)")->check(cli::kPositive);
  val->add_option("--warmup", f.warmup, "unmeasured steps first (default 1)")->check(cli::kNonNegative);
  val->add_option("--blocks", f.blocks, "run the first N blocks only (default all)")->check(cli::kPositive);
  val->add_option("--tokens", f.tokens, "about T image tokens per sample (instead of --resolution)")->check(cli::kPositive);
  val->add_flag("--all-schedules", f.all_schedules, "validate every schedule on the predicted Pareto front");
  val->add_option("--plan", f.plan, "an explicit per-block plan (plan.json: segments with keep/checkpoint/checkpoint_ffn)")
      ->check(CLI::ExistingFile);
  val->add_option("--gpu,-g", f.setup.gpu, "the catalog GPU the CUDA device is (default: matched by name)");
  val->add_option("--gpus", f.gpus, "N processes over Gloo on this CPU, the block stack sharded per --strategy")
      ->check(CLI::Range(1, 64));
  val->add_option("--strategy", f.strategies, "with --gpus: ddp, zero1, zero2, zero3, fsdp2 (comma list) or all (default)");
  val->add_option("--timeout", f.timeout_s, "with --gpus: give up after this many seconds per strategy (default 600)")
      ->check(CLI::Range(1, 86400));
  cli::add_output_flags(val, f.setup);
  val->callback([&] { rc = run_validate_cmd(f); });

  // one rank of validate --gpus (started by it; not for users)
  auto* rank = app.add_subcommand("_rank", "one rank of validate --gpus")->group("");
  add_shape_flags(rank, f);
  rank->add_option("--strategy", f.strategies)->required();
  rank->add_option("--steps", f.steps)->check(cli::kPositive);
  rank->add_option("--blocks", f.blocks)->check(cli::kPositive);
  rank->add_option("--tokens", f.tokens)->check(cli::kPositive);
  rank->add_option("--rank", f.rank)->required();
  rank->add_option("--world", f.gpus)->required();
  rank->add_option("--store", f.store)->required();
  rank->add_option("--result", f.result)->required();
  rank->add_option("--timeout", f.timeout_s);
  rank->callback([&] { rc = run_rank_cmd(f); });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int r = app.exit(e);
    return r == 0 ? 0 : kBadInput;
  } catch (const InputError& e) {
    std::cerr << "segadvise: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const nlohmann::json::exception& e) {
    std::cerr << "segadvise: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "segadvise: internal error: " << e.what() << "\n";
    return 3;
  }
  return rc;
}
