#include "common.hpp"
#include "gpu_detect.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <regex>

#include "segadvise/calibration/coefficients.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/profile.hpp"

namespace segadvise::cli {

void add_setup_flags(CLI::App* app, SetupFlags& f, bool model_optional) {
  auto* m = app->add_option("--model,-m", f.model,
                            "model: alias (wan14b, flux, sd3, …), model_family[:model_flavour], or a model .json file");
  if (!model_optional) m->required();
  app->add_option("--gpu,-g", f.gpu, "GPU: l40s, h100, h100-pcie, h200, a100, a100-40g, 3090, 4090, 5090, a6000, b200 (segadvise list gpus)");
  app->add_option("--vram-gib", f.vram_gib, "memory of any other card, GiB (with --gpu: that card with this memory)");
  app->add_option("--resolution,-r", f.resolution, "WxH (e.g. 832x480), or N with --resolution-type");
  app->add_option("--resolution-type", f.resolution_type, "pixel | pixel_area | area (the trainer's meanings)");
  app->add_option("--aspect", f.aspect, "source aspect W:H for a numeric --resolution (default 1:1, video 16:9)");
  app->add_option("--frames", f.frames, "video frames (the family's frame rule applies)");
  app->add_option("--batch", f.batch, "train_batch_size");
  app->add_option("--precision", f.precision, "base_model_precision: no_change/bf16, int8-quanto, fp8-torchao, int8-sdnq, int8-sdnq-hadamard, nf4-bnb, …");
  app->add_option("--model-type", f.model_type, "lora | full");
  app->add_option("--lora-type", f.lora_type, "standard | lycoris");
  app->add_option("--lora-rank", f.lora_rank, "lora_rank");
  app->add_option("--optimizer", f.optimizer, "optimizer: adamw_bf16, optimi-lion, adamw8bit, prodigy, …");
  app->add_option("--ramtorch", f.ramtorch, "on | off: stream block weights from host memory (RamTorch)");
  app->add_option("--ramtorch-percent", f.ramtorch_percent, "ramtorch_transformer_percent");
  app->add_option("--blocks-to-swap", f.blocks_to_swap, "musubi_blocks_to_swap");
  app->add_option("--text-tokens", f.text_tokens, "text sequence length (default: the family's)");
  add_output_flags(app, f);
}

void add_output_flags(CLI::App* app, SetupFlags& f) {
  app->add_option("--headroom-gib", f.headroom_gib, "memory to keep free on the card, GiB (default 1)");
  app->add_option("--format", f.format, "table | json | markdown");
  app->add_option("--calibration", f.calibration, "coefficients file (default: the shipped calibration)");
  app->add_option("--profile", f.profile, "profile.json from `segadvise profile`: measured block costs");
}

void check_format(const std::string& format) {
  if (format != "table" && format != "json" && format != "markdown")
    throw InputError("--format: '" + format + "' is not one of table, json, markdown");
}

namespace {

double parse_aspect(const std::string& s) {
  static const std::regex ratio("\\s*([0-9.]+)\\s*[:/]\\s*([0-9.]+)\\s*");
  static const std::regex number("\\s*([0-9.]+)\\s*");
  std::smatch m;
  try {
    if (std::regex_match(s, m, ratio)) return std::stod(m[1]) / std::stod(m[2]);
    if (std::regex_match(s, m, number)) return std::stod(m[1]);
  } catch (const std::exception&) {
  }
  throw InputError("--aspect: '" + s + "' is neither W:H (16:9) nor a number (1.78)");
}

}  // namespace

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
  if (f.frames != -1) {
    if (f.frames <= 0) throw InputError("--frames: must be positive, got " + std::to_string(f.frames));
    if (fam.modality != "video" && f.frames > 1)
      throw InputError("--frames: " + fam.name + " trains on images, got " + std::to_string(f.frames) + " frames");
    s.frames = apply_frame_rule(fam, f.frames);
    if (s.frames != f.frames)
      s.notes.push_back("frames " + std::to_string(f.frames) + " -> " + std::to_string(s.frames) + " (" +
                        fam.geometry.frame_rule + " rule)");
  }
  if (f.batch != -1) {
    if (f.batch <= 0) throw InputError("--batch: must be positive, got " + std::to_string(f.batch));
    s.batch = f.batch;
  }
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
  if (!f.model_type.empty()) {
    if (f.model_type != "lora" && f.model_type != "full")
      throw InputError("--model-type: '" + f.model_type + "' is not lora or full");
    s.model_type = f.model_type;
  }
  if (!f.lora_type.empty()) {
    if (f.lora_type != "standard" && f.lora_type != "lycoris")
      throw InputError("--lora-type: '" + f.lora_type + "' is not standard or lycoris");
    s.lora_type = f.lora_type;
  }
  if (f.lora_rank != -1) {
    if (f.lora_rank <= 0) throw InputError("--lora-rank: must be positive, got " + std::to_string(f.lora_rank));
    s.lora_rank = f.lora_rank;
  }
  if (!f.optimizer.empty()) {
    optimizer_info(f.optimizer);
    s.optimizer = f.optimizer;
  }
  if (!f.ramtorch.empty()) {
    if (f.ramtorch != "on" && f.ramtorch != "off" && f.ramtorch != "true" && f.ramtorch != "false")
      throw InputError("--ramtorch: '" + f.ramtorch + "' is not on or off");
    s.ramtorch = f.ramtorch == "on" || f.ramtorch == "true";
  }
  if (f.ramtorch_percent >= 0) {
    if (f.ramtorch_percent > 100) throw InputError("--ramtorch-percent: must be 0..100");
    s.ramtorch_percent = f.ramtorch_percent;
  }
  if (f.blocks_to_swap != -1) {
    if (f.blocks_to_swap < 0) throw InputError("--blocks-to-swap: must be >= 0");
    s.blocks_to_swap = f.blocks_to_swap;
  }
  if (f.text_tokens != -1) {
    if (f.text_tokens < 0) throw InputError("--text-tokens: must be >= 0");
    s.text_tokens = f.text_tokens;
  }
  if (s.model_type == "full" && precision_info(s.base_precision).quantized)
    throw InputError("--precision " + s.base_precision +
                     " with --model-type full: the trainer stops (quantized bases train only LoRA/LyCORIS)");
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

Context build_context(const Family& fam, const TrainingSetup& setup, const SetupFlags& f) {
  Context ctx;
  ctx.family = &fam;
  ctx.setup = setup;
  ctx.gpu = resolve_gpu(f);
  ctx.coef = coefficients_for(f.calibration);
  if (f.headroom_gib < 0) throw InputError("--headroom-gib: must be >= 0");
  ctx.headroom_bytes = f.headroom_gib * kGiB;
  check_format(f.format);
  reanalyze(ctx);
  if (!f.profile.empty()) {
    const Profile prof = load_profile(f.profile);
    apply_profile(prof, fam, ctx.setup, ctx.chain, ctx.gpu.id);
    apply_profile_bandwidth(prof, ctx.coef.for_gpu(ctx.gpu.id).pcie_efficiency, ctx.gpu);
    ctx.prepared_valid = false;
    ctx.warnings.push_back("block costs measured by " + f.profile + " (" + prof.device + ")");
  }
  return ctx;
}

Context build_context(const SetupFlags& f) {
  const Family& fam = find_family(f.model);
  return build_context(fam, apply_flags(fam, default_setup(fam), f), f);
}

void reanalyze(Context& ctx) {
  ctx.chain = analyze(*ctx.family, ctx.setup);
  ctx.prepared_valid = false;
}

const PreparedChain& prepared(const Context& ctx) {
  const PreparedChain& pc = ctx.prepared_cache;
  if (!ctx.prepared_valid || pc.chain != &ctx.chain || pc.setup != &ctx.setup || pc.gpu != &ctx.gpu ||
      pc.coef != &ctx.coef) {
    ctx.prepared_cache = prepare(ctx.chain, ctx.setup, ctx.gpu, ctx.coef);
    ctx.prepared_valid = true;
  }
  return ctx.prepared_cache;
}

Candidate evaluate(const Context& ctx, const Schedule& s) {
  Candidate c;
  c.schedule = s;
  c.plan = realize(*ctx.family, ctx.chain, s, ctx.setup);
  if (!c.plan.supported) {
    c.prediction = unsupported_prediction(c.plan.reason);
    return c;
  }
  c.prediction = predict(prepared(ctx), c.plan.plan, ctx.headroom_bytes);
  c.prediction.warnings = c.plan.warnings;
  return c;
}

ScheduleSpace schedule_space(const Context& ctx) {
  ScheduleSpace sp;
  const CheckpointSemantics& cs = ctx.family->checkpointing;
  std::map<std::string, int> per_list;
  int longest = 0, total = 0;
  for (const auto& b : ctx.chain.blocks) {
    if (!b.checkpointable) continue;
    longest = std::max(longest, ++per_list[b.list]);
    ++total;
  }
  const bool global = cs.index == BlockIndex::Global || cs.interval == IntervalRule::MicroBlocks;
  sp.max_interval = global ? total : longest;
  sp.interval = cs.interval != IntervalRule::Ignored;
  sp.stride = cs.stride;
  sp.backends = {Backend::Torch};
  if (cs.backend_setter) sp.backends.push_back(Backend::Unsloth);
  if (cs.ffn_backend) {
    sp.backends.push_back(Backend::TorchFfn);
    if (cs.backend_setter) sp.backends.push_back(Backend::UnslothFfn);
  }
  sp.attention_offload = cs.attention_offload;
  return sp;
}

nlohmann::json simpletuner_keys(const Schedule& s) {
  nlohmann::json j;
  j["gradient_checkpointing"] = s.checkpointing;
  if (s.checkpointing) {
    j["gradient_checkpointing_interval"] = s.interval > 1 ? nlohmann::json(s.interval) : nlohmann::json(nullptr);
    j["gradient_checkpointing_segment_stride"] = s.stride > 0 ? nlohmann::json(s.stride) : nlohmann::json(nullptr);
    j["gradient_checkpointing_backend"] = to_string(s.backend);
  } else {
    j["gradient_checkpointing_interval"] = nullptr;
    j["gradient_checkpointing_segment_stride"] = nullptr;
    j["gradient_checkpointing_backend"] = "torch";
  }
  j["gradient_checkpointing_offload_attention"] = s.offload_attention;
  return j;
}

std::string gib_str(double bytes, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f GiB", decimals, bytes / kGiB);
  return buf;
}

std::string secs_str(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f s" : "%.1f s", s);
  return buf;
}

}  // namespace segadvise::cli
