// segadvise-torch: `profile` and `validate`, the LibTorch side of segadvise. `segadvise profile …`
// and `segadvise validate …` exec this binary with the same arguments. This file parses flags and
// prints; it includes no LibTorch header (the work is in segadvise_torch_lib).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "output.hpp"
#include "text_format.hpp"
#include "segadvise/families/gpu_detect.hpp"
#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/json_io.hpp"
#include "segadvise/costmodel/plan_json.hpp"
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

std::string gib(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, b < 0.1 * kGiB ? "%.1f MiB" : "%.2f GiB", b < 0.1 * kGiB ? b / kMiB : b / kGiB);
  return buf;
}

std::string fixed(double x, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string pct(double predicted, double measured) {
  if (measured <= 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100.0 * (predicted - measured) / measured);
  return buf;
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
  cli::Table t({"list", "kind", "tokens", "saved", "static", "fwd", "bwd", ""});
  for (const auto& k : p.kinds) {
    double stat = 0;
    for (const auto& b : chain.blocks)
      if (b.list == k.list) {
        stat = b.saved_bytes();
        break;
      }
    const double saved = k.saved_attention_bytes + k.saved_ffn_bytes + k.saved_rest_bytes;
    const double fw = k.forward_linear_s * k.tokens + k.forward_quadratic_s * k.tokens * k.tokens;
    const double bw = k.backward_linear_s * k.tokens + k.backward_quadratic_s * k.tokens * k.tokens;
    t.add({k.list, k.kind, fixed(k.tokens, 0), gib(saved), gib(stat), fixed(fw, 3) + "s", fixed(bw, 3) + "s",
           k.extrapolated ? "(extrapolated)" : ""});
  }
  cli::table_format().table(std::cout, t);
  std::cout << "profile written to " << out << " (" << p.device << ", " << p.dtype << ", torch " << p.torch_version
            << ", attention: " << p.attention_backend << ")\n";
  return 0;
}

// ------------------------------------------------------------------------------------------ validate

struct Row {
  std::string schedule, description, reason;
  bool supported = true;
  Prediction pred;
  profiler::ValidateRun run;
};

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
std::vector<Row> run_plans(const TorchFlags& f, const ValidationInputs& in,
                           std::vector<std::pair<std::string, PlanResult>> plans) {
  const BlockChain& chain = in.chain;
  const TrainingSetup& setup = in.setup;

  profiler::ValidateOptions vo;
  vo.device = f.device;
  vo.steps = f.steps;
  vo.warmup = f.warmup;
  vo.blocks = in.n;
  vo.quiet = f.quiet;
  std::vector<Row> rows;
  for (auto& [name, pr] : plans) {
    Row row;
    row.schedule = name;
    row.supported = pr.supported;
    row.reason = pr.reason;
    if (pr.supported) {
      if (pr.plan.description.empty() || name.rfind("plan ", 0) != 0) pr.plan.description = describe(pr.plan, chain);
      row.description = pr.plan.description;
      row.pred = predict(chain, pr.plan, setup, in.gpu, in.coef, 0);
      row.run = profiler::run_validation(*in.fam, setup, pr.plan, vo);
    }
    rows.push_back(row);
  }
  return rows;
}

json validation_json(const TorchFlags& f, const ValidationInputs& in, const std::vector<Row>& rows) {
  const Family& fam = *in.fam;
  const TrainingSetup& setup = in.setup;
  const int n = in.n;
  const TokenGeometry g = token_geometry(fam, setup.width, setup.height, setup.frames, setup.text_tokens);
  json j;
  j["model"] = fam.id;
  j["device"] = profiler::device_name(f.device);
  j["torch_version"] = profiler::torch_version();
  j["blocks"] = n;
  j["setup"] = to_json(setup);
  j["tokens_image"] = g.image_tokens;
  j["tokens_text"] = g.text_tokens;
  j["profile"] = in.prof.path;
  j["steps"] = f.steps;
  json arr = json::array();
  for (const auto& r : rows) {
    json o = {{"schedule", r.schedule}, {"supported", r.supported}};
    if (!r.supported) {
      o["reason"] = r.reason;
    } else {
      o["plan"] = r.description;
      o["predicted_peak_bytes"] = r.pred.peak_vram_bytes;
      o["measured_peak_bytes"] = r.run.peak_bytes;
      o["peak_error"] = r.run.peak_bytes > 0 ? (r.pred.peak_vram_bytes - r.run.peak_bytes) / r.run.peak_bytes : 0;
      o["predicted_step_s"] = r.pred.step_time_s;
      o["measured_step_s"] = r.run.step_s;
      o["step_error"] = r.run.step_s > 0 ? (r.pred.step_time_s - r.run.step_s) / r.run.step_s : 0;
      o["measured_step_times_s"] = r.run.step_times_s;
      o["measured_host_peak_bytes"] = r.run.host_peak_bytes;
      o["predicted_host_bytes"] = r.pred.memory.host_activation_bytes;
      o["prediction"] = to_json(r.pred);
    }
    arr.push_back(o);
  }
  j["runs"] = arr;
  return j;
}

// The text layouts through the report layer (cli/text_format.hpp): a TextFormat picks table or markdown.
const cli::TextFormat& text_format_of(const TorchFlags& f) {
  return f.setup.format == "markdown" ? cli::markdown_format() : cli::table_format();
}

void print_validation(const TorchFlags& f, const ValidationInputs& in, const std::vector<Row>& rows) {
  const Family& fam = *in.fam;
  const TrainingSetup& setup = in.setup;
  const TokenGeometry g = token_geometry(fam, setup.width, setup.height, setup.frames, setup.text_tokens);
  const cli::TextFormat& fmt = text_format_of(f);
  std::ostringstream head;
  head << fam.name << ", " << in.n << " blocks, " << setup.width << "x" << setup.height << ", " << setup.frames
       << " frames, batch " << setup.batch << " (" << fixed(g.image_tokens, 0) << " image + " << fixed(g.text_tokens, 0)
       << " text tokens), on " << profiler::device_name(f.device) << ", torch " << profiler::torch_version();
  std::cout << fmt.either("validate: ", "") << head.str() << "\n"
            << fmt.either("  ", "") << "prediction from profile " << in.prof.path << "; median of " << f.steps
            << " steps after " << f.warmup << " warm-up\n\n";
  cli::Table t({"schedule", "plan", "predicted peak", "measured peak", "error", "predicted s/step", "measured s/step",
                "error"});
  for (const auto& r : rows) {
    if (!r.supported) {
      t.add({r.schedule, "not run: " + r.reason, "", "", "", "", "", ""});
      continue;
    }
    t.add({r.schedule, r.description, gib(r.pred.peak_vram_bytes), gib(r.run.peak_bytes),
           pct(r.pred.peak_vram_bytes, r.run.peak_bytes), fixed(r.pred.step_time_s, 3), fixed(r.run.step_s, 3),
           pct(r.pred.step_time_s, r.run.step_s)});
  }
  fmt.table(std::cout, t);
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

struct DistRow {
  Strategy strategy = Strategy::ddp;
  RankState predicted;
  CommVolume predicted_comm;
  std::vector<profiler::RankRun> ranks;
  const profiler::RankRun& busiest() const {
    std::size_t b = 0;
    for (std::size_t i = 1; i < ranks.size(); ++i)
      if (ranks[i].peak.total_bytes() > ranks[b].peak.total_bytes()) b = i;
    return ranks[b];
  }
  double slowest_step_s() const {
    double t = 0;
    for (const auto& r : ranks) t = std::max(t, r.step_s);
    return t;
  }
  // every rank handed the predicted payload to each kind of collective
  bool comm_equal() const {
    for (const auto& r : ranks)
      if (r.comm.allgather_bytes != predicted_comm.allgather_bytes ||
          r.comm.reduce_scatter_bytes != predicted_comm.reduce_scatter_bytes ||
          r.comm.allreduce_bytes != predicted_comm.allreduce_bytes)
        return false;
    return true;
  }
  const profiler::RankRun& rank0() const { return ranks.front(); }
};

json dist_json(const TorchFlags& f, const Family& fam, const TrainingSetup& setup, int blocks,
               const std::vector<DistRow>& rows) {
  json j;
  j["model"] = fam.id;
  j["device"] = profiler::device_name("cpu");
  j["torch_version"] = profiler::torch_version();
  j["backend"] = "gloo (127.0.0.1, FileStore)";
  j["gpus"] = f.gpus;
  j["blocks"] = blocks;
  j["steps"] = f.steps;
  // setup.gpus / setup.strategy as predict --gpus writes them (one strategy per run below)
  TrainingSetup multi = setup;
  multi.multi_gpu.gpus_per_node = f.gpus;
  if (rows.size() == 1) multi.multi_gpu.strategy = rows.front().strategy;
  j["setup"] = to_json(multi);
  if (rows.size() != 1) j["setup"]["strategy"] = "per run";
  json arr = json::array();
  for (const auto& r : rows) {
    const auto& p = r.predicted;
    const auto& b = r.busiest();
    json ranks = json::array();
    for (const auto& x : r.ranks) ranks.push_back(profiler::to_json(x));
    arr.push_back({{"strategy", to_string(r.strategy)},
                   {"predicted",
                    {{"weights_bytes", p.weights_bytes},
                     {"grads_bytes", p.grads_bytes},
                     {"optimizer_bytes", p.optimizer_bytes},
                     {"gathered_in_flight_bytes", p.gathered_in_flight_bytes},
                     {"buckets_bytes", p.buckets_bytes},
                     {"peak_bytes", p.total_bytes()},
                     {"allgather_bytes", r.predicted_comm.allgather_bytes},
                     {"reduce_scatter_bytes", r.predicted_comm.reduce_scatter_bytes},
                     {"allreduce_bytes", r.predicted_comm.allreduce_bytes}}},
                   {"measured_peak_bytes", b.peak.total_bytes()},
                   {"peak_error", b.peak.total_bytes() > 0 ? (p.total_bytes() - b.peak.total_bytes()) / b.peak.total_bytes() : 0},
                   {"comm_equal", r.comm_equal()},
                   {"gradients_bit_equal", r.rank0().grad_bit_equal},
                   {"grad_max_abs_diff", r.rank0().grad_max_abs_diff},
                   {"grad_max_abs", r.rank0().grad_max_abs},
                   {"step_s", r.slowest_step_s()},
                   {"ranks", ranks}});
  }
  j["runs"] = arr;
  return j;
}

std::string mib(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", b / kMiB);
  return buf;
}

void print_dist(const TorchFlags& f, const Family& fam, const TrainingSetup& setup, int blocks,
                const std::vector<DistRow>& rows) {
  const cli::TextFormat& fmt = text_format_of(f);
  std::cout << fmt.either("validate: ", "") << fam.name << ", " << blocks << " blocks, " << setup.width << "x"
            << setup.height << ", batch " << setup.batch << " per rank, "
            << (setup.model_type == ModelType::Full ? "full" : "LoRA") << ", on " << f.gpus
            << " CPU processes over Gloo (torch " << profiler::torch_version() << ")\n"
            << fmt.either("  ", "") << "model-state peak per rank (busiest rank), payload bytes per rank per step (last of "
            << f.steps << "), gradients of step 1 against one process\n\n";
  cli::Table t({"strategy", "pred peak", "meas peak", "err", "all-gather", "reduce-scatter", "all-reduce", "bytes",
                "gradients", "s/step"});
  for (const auto& r : rows) {
    const auto& b = r.busiest();
    const auto& g = r.rank0();
    char grad[64];
    if (g.grad_bit_equal)
      std::snprintf(grad, sizeof grad, "bit-equal");
    else
      std::snprintf(grad, sizeof grad, "max diff %.2g", g.grad_max_abs_diff);
    t.add({to_string(r.strategy), mib(r.predicted.total_bytes()), mib(b.peak.total_bytes()),
           pct(r.predicted.total_bytes(), b.peak.total_bytes()), mib(b.comm.allgather_bytes),
           mib(b.comm.reduce_scatter_bytes), mib(b.comm.allreduce_bytes), r.comm_equal() ? "equal" : "DIFFER", grad,
           fixed(r.slowest_step_s(), 3) + "s"});
  }
  fmt.table(std::cout, t);
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
  std::vector<DistRow> rows;
  for (Strategy s : strategies) {
    DistRow row;
    row.strategy = s;
    const RankStateInput in = profiler::rank_state_input(chain, setup, s, f.gpus);
    row.predicted = rank_state(in);
    row.predicted_comm = comm_per_step(in);
    if (!f.quiet) std::fprintf(stderr, "segadvise validate: %s on %d ranks…\n", to_string(s).c_str(), f.gpus);
    row.ranks = profiler::launch_ranks(exe, rank_args(f, s), f.gpus, f.timeout_s);
    rows.push_back(std::move(row));
  }
  if (f.setup.format == "json")
    std::cout << dist_json(f, fam, setup, blocks, rows).dump(2) << "\n";
  else
    print_dist(f, fam, setup, blocks, rows);
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
  const std::vector<Row> rows = run_plans(f, in, plans_to_validate(f, in));
  if (f.setup.format == "json")
    std::cout << validation_json(f, in, rows).dump(2) << "\n";
  else
    print_validation(f, in, rows);
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
