// The phases of a SimpleTuner run (SimpleTuner bc8e6ab, cited as §A1 … §E of docs/sources/run-phases.md).
// Every phase's peak is a sum of what is resident plus the largest working set while it runs; the
// arithmetic of each is in the comment above its function.
#include "segadvise/trainers/phases.hpp"

#include <stdexcept>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "common/phase_parts.hpp"

namespace segadvise {

namespace phase_parts {

void add(std::vector<Resident>& r, const std::string& what, double bytes, PartBand band) {
  if (bytes > 0) r.push_back({what, bytes, bytes * band.lo, bytes * band.hi});
}

// a part without a band (host memory)
void add(std::vector<Resident>& r, const std::string& what, double bytes) { add(r, what, bytes, PartBand{}); }

double sum(const std::vector<Resident>& r) {
  double s = 0;
  for (const auto& x : r) s += x.bytes;
  return s;
}

// The moment's point and range: the sums of its parts' bytes, lower and upper ends.
PhaseResult& finish(PhaseResult& p) {
  p.peak_vram_bytes = p.peak_lo_bytes = p.peak_hi_bytes = 0;
  for (const auto& x : p.resident) {
    p.peak_vram_bytes += x.bytes;
    p.peak_lo_bytes += x.lo_bytes;
    p.peak_hi_bytes += x.hi_bytes;
  }
  return p;
}

// A phase is the largest of its moments: the point and what is resident come from the moment with the
// largest point; the range runs from the largest lower end to the largest upper end.
PhaseResult largest(std::vector<PhaseResult> moments) {
  if (moments.empty()) throw std::logic_error("largest: no moment of the phase");
  PhaseResult out = moments.front();
  for (const auto& m : moments)
    if (m.peak_vram_bytes > out.peak_vram_bytes) out = m;
  for (const auto& m : moments) {
    out.peak_lo_bytes = std::max(out.peak_lo_bytes, m.peak_lo_bytes);
    out.peak_hi_bytes = std::max(out.peak_hi_bytes, m.peak_hi_bytes);
  }
  return out;
}

std::string dims(int w, int h, int frames) {
  return std::to_string(w) + "x" + std::to_string(h) + (frames > 1 ? "x" + std::to_string(frames) + "f" : "");
}

std::string te_precision(const RunSetup& run, std::size_t i) {
  return i < run.text_encoder_precision.size() ? run.text_encoder_precision[i] : "no_change";
}

// The text encoders at their precisions, each part with the band of its parameter count's tag.
void add_text_encoders(const Ctx& c, const RunSetup& run, std::vector<Resident>& r, const std::string& what) {
  if (run.ramtorch_text_encoder) return;  // Linear weights stream from the host [I]
  for (std::size_t i = 0; i < c.data.text_encoders.size(); ++i) {
    const TextEncoderSpec& te = c.data.text_encoders[i];
    add(r, what + ": " + te.name, text_encoder_bytes(te, te_precision(run, i)), weights_band(te.tag));
  }
}

double vae_weight_bytes(const Ctx& c) { return c.data.has_vae ? c.data.vae.params * c.data.vae.dtype_bytes : 0; }
void add_vae(const Ctx& c, std::vector<Resident>& r, const std::string& what) {
  add(r, what, vae_weight_bytes(c), weights_band(c.data.vae.params_tag));
}
// a VAE working set: measured (tag M) or an estimate
PartBand vae_work_band(const Ctx& c) { return part_band(c.data.vae.tag == "M" ? "measured" : "estimate"); }

bool vae_resident(const RunSetup& run) { return run.keep_vae_loaded || run.vae_cache_ondemand || run.vae_cache_disable; }
bool text_resident(const RunSetup& run) { return run.text_cache_ondemand || run.text_cache_disable; }
bool tiling_on(const Ctx& c, const RunSetup& run) { return run.vae_enable_tiling || c.data.tiling_forced || c.data.tiling_default; }
bool slicing_on(const Ctx& c, const RunSetup& run) { return run.vae_enable_slicing || c.data.tiling_forced; }

// What the run keeps on the GPU besides the model: the VAE (keep_vae_loaded, on-demand or disabled
// latent cache, §A2) and the text encoders (on-demand or disabled text cache).
void add_kept(const Ctx& c, const RunSetup& run, std::vector<Resident>& r) {
  if (vae_resident(run)) add_vae(c, r, "VAE (kept loaded)");
  if (text_resident(run)) add_text_encoders(c, run, r, "text encoders (text cache on demand/disabled)");
}

// The trained model's fixed part as the step has it, with the tight band of counted parameters.
void add_model(const Ctx& c, std::vector<Resident>& r, bool optimizer, bool gradients) {
  const MemoryBreakdown& m = c.step.memory;
  const PartBand b = part_band("resident");
  add(r, "base weights", m.weights_bytes - m.other_models_bytes, b);
  add(r, "kept on the GPU: " + (c.setup.kept_models.empty() ? std::string("other models") : c.setup.kept_models),
      m.other_models_bytes, b);
  add(r, "trainable parameters", m.trainable_bytes, b);
  if (optimizer) add(r, "optimizer state", m.optimizer_bytes, b);
  if (gradients) add(r, "gradients", m.gradient_bytes, b);
}

// The text tokens a text encoder's activations are counted at when the family's phase data give no
// max_tokens (every shipped family gives one; a family from the user's own JSON may not). An assumption:
// the length SimpleTuner encodes FLUX.1's T5 prompts at (its flux model forces tokenizer_max_length 512,
// run-phases.json "flux" max_tokens), the common T5 length of the shipped families.
constexpr int kAssumedTextTokens = 512;

int largest_te_activation_tokens(const Ctx& c) { return c.data.max_tokens > 0 ? c.data.max_tokens : kAssumedTextTokens; }

double te_activation_peak(const Ctx& c, const RunSetup& run) {
  double a = 0;
  for (const auto& te : c.data.text_encoders)
    a = std::max(a, text_encoder_activation_bytes(te, run.text_encoder_batch_size, largest_te_activation_tokens(c)));
  return a;
}

int vae_batch(const Ctx& c, const RunSetup& run) {
  if (run.vae_batch_size > 0) return run.vae_batch_size;
  return c.fam.modality == "video" ? 1 : 4;  // registry default 4; video datasets force 1 (factory.py:4192-4199)
}

// Startup caching (§A1 steps 1-4, §A2 offload_during_startup, §D "Startup VAE-cache peak"):
//   text-embed cache = VAE weights + every text encoder + the largest encoder's hidden states
//   VAE latent cache = VAE weights + text encoders (none with offload_during_startup)
//                      + encode of vae_batch_size samples at the training shape (skipped when the
//                      latent cache is on demand or disabled: encoding moves into the step)
// The transformer is not loaded yet. The VAE figures are reserved memory as measured: no extra slack.
PhaseResult startup_caching(const Ctx& c, const RunSetup& run) {
  PhaseResult text{Phase::StartupCaching, true, 0, 0, 0, {}, ""};
  add_vae(c, text.resident, "VAE");
  add_text_encoders(c, run, text.resident, "text encoder");
  add(text.resident, "text-encoder activations", te_activation_peak(c, run), part_band("estimate"));
  text.set_by = "text-embed cache: " + std::to_string(c.data.text_encoders.size()) + " text encoder(s) and the VAE on the GPU";
  if (run.vae_cache_ondemand || run.vae_cache_disable || !c.data.has_vae) return finish(text);

  PhaseResult vae{Phase::StartupCaching, true, 0, 0, 0, {}, ""};
  add_vae(c, vae.resident, "VAE");
  if (!run.offload_during_startup) add_text_encoders(c, run, vae.resident, "text encoder (offload_during_startup off)");
  const int b = vae_batch(c, run);
  const double enc = vae_activation_bytes(c.data.vae, false, c.setup.width, c.setup.height, c.setup.frames, b,
                                          tiling_on(c, run), slicing_on(c, run));
  add(vae.resident, "VAE encode activations", enc, vae_work_band(c));
  vae.set_by = "VAE latent cache: encode of " + std::to_string(b) + " x " + dims(c.setup.width, c.setup.height, c.setup.frames) +
               (tiling_on(c, run) && !c.data.vae.tiling_ignored ? " (tiled)" : "");
  return largest({finish(text), finish(vae)});
}

double base_bf16_bytes(const Ctx& c) {
  double params = c.chain.outside_params;
  for (const auto& b : c.chain.blocks) params += b.params;
  return params * 2;
}

// The part of the bf16 base that reaches the GPU when it is quantized there: RamTorch keeps its
// share of the block weights on the host (its modules are never converted, SimpleTuner training/quantisation/__init__.py) [I].
double base_bf16_on_gpu_bytes(const Ctx& c) {
  double blocks = 0;
  for (const auto& b : c.chain.blocks) blocks += b.params;
  const double streamed = c.setup.ramtorch ? std::clamp(c.setup.ramtorch_percent / 100.0, 0.0, 1.0) : 0.0;
  return (c.chain.outside_params + blocks * (1 - streamed)) * 2;
}

bool quantized_lora(const TrainingSetup& setup) {
  return precision_info(setup.base_precision).quantized && setup.model_type != ModelType::Full;
}

// Loading the base model (§A1 steps 7-12, §A2 quantize_via, §A4), the largest of:
//   a quantized LoRA run with quantize_via accelerator (the registry default) puts the whole bf16
//   base on the GPU before quantizing: (block + outside params) x 2 B; bnb and `pipeline` quantize
//   inside from_pretrained, `cpu` on the host
//   move_models: the trained model at its precision (the step's resident weights and adapters)
//   EMA creation (use_ema, after accelerator.prepare, before the first step: no optimizer state or
//   gradients yet [I]): the shadow is cloned on the parameters' device before it is placed (ema.py:132):
//   the trainable parameters a second time, trainable params x weight dtype (as the gradients) [I]
//   plus, in each, whatever the run keeps loaded (VAE, text encoders)
PhaseResult model_load(const Ctx& c, const RunSetup& run) {
  std::vector<PhaseResult> moments;
  PhaseResult move{Phase::ModelLoad, true, 0, 0, 0, {}, "move_models: the trained model on the GPU at its precision"};
  add_model(c, move.resident, false, false);
  add_kept(c, run, move.resident);
  moments.push_back(finish(move));
  const bool on_gpu = quantized_lora(c.setup) && run.quantize_via == "accelerator" &&
                      precision_info(c.setup.base_precision).backend != "bnb";
  if (on_gpu) {
    PhaseResult q{Phase::ModelLoad, true, 0, 0, 0, {}, "quantize_via accelerator: the whole bf16 base model on the GPU before quantizing"};
    add(q.resident, c.setup.ramtorch ? "bf16 base model outside RamTorch (quantized on the GPU)" : "bf16 base model (quantized on the GPU)",
        base_bf16_on_gpu_bytes(c), part_band("resident"));
    add_kept(c, run, q.resident);
    moments.push_back(finish(q));
  }
  if (run.use_ema) {
    PhaseResult e{Phase::ModelLoad, true, 0, 0, 0, {}, "EMA creation: the trainable parameters cloned on the GPU (use_ema)"};
    add_model(c, e.resident, false, false);
    add(e.resident, "EMA shadow cloned on the GPU before it is placed", c.step.memory.gradient_bytes, part_band("resident"));
    add_kept(c, run, e.resident);
    moments.push_back(finish(e));
  }
  return largest(moments);
}

// The training step (the cost model's step peak, §A2, §A4), the largest of:
//   the step: its peak (weights + trainable + gradients + optimizer + activations + slack) with the
//     step's own 90% range, + the VAE / text encoders the run keeps loaded
//   an encode at the training shape where latents are encoded during training (on-demand or disabled
//     latent cache): before the forward, in place of the step's activations
//   EMA with ema_device cpu (not ema_cpu_only): the whole shadow is moved to the GPU and updated with a
//     shadow-sized temporary (2 x shadow) after the optimizer step, activations freed
PhaseResult training_step(const Ctx& c, const RunSetup& run) {
  const MemoryBreakdown& m = c.step.memory;
  PhaseResult s{Phase::TrainingStep, true, 0, 0, 0, {}, "training step" + (m.peak_phase.empty() ? std::string() : ": " + m.peak_phase)};
  add_model(c, s.resident, true, true);
  const double step_act = m.activation_peak_bytes + m.fragmentation_bytes;
  add(s.resident, "activations", step_act, PartBand{});
  finish(s);
  // the step's own parts keep the step's range (its point without one); the parts it does not count
  // add their bands; the range always holds the point
  const Range step = c.step_range.hi > 0 ? c.step_range : Range{s.peak_vram_bytes, s.peak_vram_bytes};
  const double own_lo = s.peak_lo_bytes, own_hi = s.peak_hi_bytes;
  add_kept(c, run, s.resident);
  finish(s);
  s.peak_lo_bytes = std::min(s.peak_vram_bytes, s.peak_lo_bytes - own_lo + step.lo);
  s.peak_hi_bytes = std::max(s.peak_vram_bytes, s.peak_hi_bytes - own_hi + step.hi);
  std::vector<PhaseResult> moments{s};

  if ((run.vae_cache_ondemand || run.vae_cache_disable) && c.data.has_vae) {
    PhaseResult e{Phase::TrainingStep, true, 0, 0, 0, {}, "latent encode inside the step (VAE cache on demand/disabled)"};
    add_model(c, e.resident, true, true);
    add_kept(c, run, e.resident);
    add(e.resident, "VAE encode activations (latents encoded during training)",
        vae_activation_bytes(c.data.vae, false, c.setup.width, c.setup.height, c.setup.frames, c.setup.batch,
                             tiling_on(c, run), slicing_on(c, run)),
        vae_work_band(c));
    moments.push_back(finish(e));
  }
  if (run.use_ema && run.ema_device == "cpu" && !run.ema_cpu_only) {
    PhaseResult e{Phase::TrainingStep, true, 0, 0, 0, {}, "EMA update: the CPU shadow moved to the GPU (ema_device cpu)"};
    add_model(c, e.resident, true, true);
    add_kept(c, run, e.resident);
    // the shadow: trainable params x weight dtype, as the gradients
    add(e.resident, "EMA shadow moved to the GPU and its update temporary", 2 * m.gradient_bytes, part_band("resident"));
    moments.push_back(finish(e));
  }
  return largest(moments);
}

// Inference working set of the transformer at the validation shape: no saved tensors under no_grad;
// the largest block's input and output hidden state plus its transient (2 x boundary + transient).
double denoise_bytes(const Ctx& c, int width, int height, int frames, int batch) {
  TrainingSetup v = c.setup;
  v.width = width;
  v.height = height;
  v.frames = frames;
  v.batch = batch;
  const BlockChain chain = analyze(c.fam, v);
  double most = 0;
  for (const auto& b : chain.blocks) most = std::max(most, 2 * b.boundary_bytes + b.transient_bytes);
  return most;
}

int cfg_batch(const Ctx& c, const RunSetup& run) {
  if (c.data.cfg == "sequential") return 1;
  if (c.data.cfg == "distilled") return 1;  // CFG only with validation_guidance_real > 1: sequential
  return run.validation_guidance > 1 ? 2 : 1;
}

// What validation holds besides its working set (§B): base weights + trainable + optimizer state +
// gradients (kept unless set_grads_to_none; RamTorch forces it) + the VAE reloaded for the decode + kept
// text encoders, or the ones the family's get_pipeline loads back (Ideogram's Qwen3-VL, ideogram/model.py:197;
// MiniMax Music's 8B LM, minimaxmusic/model.py:1677-1683), at their text_encoder_N_precision + the models
// its pipeline loads (LTX-2's audio VAE and vocoder, load_validation_models; Stable Cascade's combined
// pipeline: stage B decoder and VQGAN, stable_cascade/model.py:199-231) + one EMA shadow for the
// ema_validation comparison pass.
std::vector<Resident> validation_resident(const Ctx& c, const RunSetup& run, bool intermediary) {
  std::vector<Resident> r;
  const MemoryBreakdown& m = c.step.memory;
  const bool grads_freed = run.set_grads_to_none || c.setup.ramtorch;
  add_model(c, r, intermediary, false);
  if (intermediary && !grads_freed) add(r, "gradients (set_grads_to_none off)", m.gradient_bytes, part_band("resident"));
  add_vae(c, r, vae_resident(run) ? "VAE (kept loaded)" : "VAE (reloaded for the decode)");
  if (text_resident(run)) add_text_encoders(c, run, r, "text encoders (text cache on demand/disabled)");
  else if (c.data.validation_reloads_text_encoders) add_text_encoders(c, run, r, "reloaded for validation");
  for (const auto& x : c.data.validation_models)
    add(r, x.name + " (loaded for validation)", x.params * x.dtype_bytes, weights_band(x.tag));
  if (intermediary && run.use_ema && run.ema_validation != "none")
    add(r, "EMA weights copied in (ema_validation)", m.gradient_bytes, part_band("resident"));
  return r;
}

// Validation (§B): the residents above + the larger of the denoising forward (num_validation_images x 2
// with batched CFG) and the VAE decode of num_validation_images clips (the denoising activations are
// freed first). The step-0 benchmark runs the same with no optimizer state and no gradients, so it
// only sets the phase when no validation runs later (validation_step_interval beyond max_train_steps, or 0).
PhaseResult validation(const Ctx& c, const RunSetup& run) {
  PhaseResult r{Phase::Validation, false, 0, 0, 0, {}, "off (validation_disable)"};
  if (run.validation_disable) return r;
  const bool intermediary = run.validation_step_interval > 0 &&
                            (run.max_train_steps <= 0 || run.validation_step_interval <= run.max_train_steps);
  if (!intermediary && run.disable_benchmark) {
    r.set_by = "off (no validation within max_train_steps, benchmark disabled)";
    return r;
  }
  const int w = std::max(16, run.validation_width / 16 * 16), h = std::max(16, run.validation_height / 16 * 16);
  const int frames = validation_frames(c.data, c.fam, run, c.setup.frames);
  const int images = std::max(1, run.num_validation_images);
  const std::string shape = std::to_string(images) + " x " + dims(w, h, frames);
  const std::string when = intermediary ? "validation" : "step-0 benchmark";

  PhaseResult denoise{Phase::Validation, true, 0, 0, 0, validation_resident(c, run, intermediary),
                      when + ": denoising forward at " + shape + (cfg_batch(c, run) == 2 ? " with batched CFG" : "")};
  add(denoise.resident, "denoising activations", denoise_bytes(c, w, h, frames, images * cfg_batch(c, run)) * (1 + c.frag),
      part_band("estimate"));
  if (!c.data.has_vae) return finish(denoise);
  PhaseResult decode{Phase::Validation, true, 0, 0, 0, validation_resident(c, run, intermediary),
                     when + ": VAE decode of " + shape + (tiling_on(c, run) && !c.data.vae.tiling_ignored ? " (tiled)" : " (untiled)")};
  add(decode.resident, "VAE decode activations",
      vae_activation_bytes(c.data.vae, true, w, h, frames, images, tiling_on(c, run), slicing_on(c, run)), vae_work_band(c));
  // a tie goes to the decode (the point is the same)
  return largest({finish(decode), finish(denoise)});
}

bool fp8_quanto(const TrainingSetup& setup) {
  const PrecisionInfo p = precision_info(setup.base_precision);
  return p.backend == "quanto" && p.name.find("fp8") == 0;
}

// Saving (§A3): LoRA tensors are copied to the host, so the peak is what is resident (weights,
// adapters, gradients, optimizer state, kept VAE/text encoders); offload_during_save moves the model
// to the CPU around the save hook. A full fine-tune's final save loads the VAE (and the text
// encoders with save_text_encoder) next to the model and its optimizer. fp8-quanto weights "can spike
// VRAM usage during state_dict() serialization" (OPTIONS.md --offload_during_save): no figure, taken
// as save_spike copies of the resident quantized weights with the spike band (from none to that) [E].
PhaseResult save(const Ctx& c, const RunSetup& run) {
  PhaseResult r{Phase::Save, true, 0, 0, 0, {}, ""};
  const MemoryBreakdown& m = c.step.memory;
  if (!run.offload_during_save) add_model(c, r.resident, false, false);
  add(r.resident, "gradients", m.gradient_bytes, part_band("resident"));
  add(r.resident, "optimizer state", m.optimizer_bytes, part_band("resident"));
  add_kept(c, run, r.resident);
  const bool full = c.setup.model_type == ModelType::Full;
  if (full && !vae_resident(run)) add_vae(c, r.resident, "VAE (loaded for the final save)");
  if (full && run.save_text_encoder && !text_resident(run))
    add_text_encoders(c, run, r.resident, "text encoders (save_text_encoder)");
  const bool spike = fp8_quanto(c.setup) && !run.offload_during_save;
  if (spike)
    add(r.resident, "fp8-quanto state_dict() serialization spike (estimate)", save_spike_copies() * m.weights_bytes,
        part_band("spike"));
  r.set_by = full ? "final save of the full fine-tune (VAE loaded next to the model)"
                  : (run.offload_during_save ? "checkpoint save, model offloaded (offload_during_save)"
             : spike ? "checkpoint save: fp8-quanto weights serialized by state_dict() (a spike, estimated)"
                     : "checkpoint save: weights, gradients and optimizer state resident");
  return finish(r);
}

std::vector<PhaseResult> all_phases(const Ctx& c, const RunSetup& run) {
  if (!run.other.trainer.empty()) {
    const TrainerRun& o = run.other;
    return {other_caching(c, o), other_load(c, o), other_step(c, o), other_sampling(c, o), other_save(c, o)};
  }
  return {startup_caching(c, run), model_load(c, run), training_step(c, run), validation(c, run), save(c, run)};
}

// Host memory (§E FLUX.md:9 "about 50GB of system memory" to quantize Flux's 11.9B (23.8 GB bf16):
// about 2x the bf16 model; LTXVIDEO2.md: 46 GB quantizing Gemma3-12B (24 GB bf16), also ~2x):
//   load  = the bf16 base loaded on the CPU (always, §A1 step 7), x2 when quantized there
//           (quantize_via cpu); text encoders quantized on the CPU: 2 x their bf16 size
//   train = RamTorch-streamed weights + offloaded activations + an EMA shadow on the CPU
HostMemory host_memory(const Ctx& c, const RunSetup& run) {
  HostMemory load, train;
  if (!run.other.trainer.empty()) {
    // another trainer: the base as loaded, and what its offload keeps on the host while training
    add(load.parts, "base model loaded on the CPU (bf16)", base_bf16_bytes(c));
    load.peak_bytes = sum(load.parts);
    load.set_by = run.other.name + ": loading";
    add(train.parts, "offloaded / streamed weights", c.step.memory.streamed_weights_bytes);
    add(train.parts, "offloaded activations", c.step.memory.host_activation_bytes);
    train.peak_bytes = sum(train.parts);
    train.set_by = run.other.name + ": training";
    return train.peak_bytes > load.peak_bytes ? train : load;
  }
  const double base = base_bf16_bytes(c);
  const bool cpu_quant = quantized_lora(c.setup) && run.quantize_via == "cpu";
  add(load.parts, cpu_quant ? "bf16 base model being quantized on the CPU (2x)" : "bf16 base model loaded on the CPU",
      base * (cpu_quant ? 2 : 1));
  double te_quant = 0;
  for (std::size_t i = 0; i < c.data.text_encoders.size(); ++i)
    if (te_precision(run, i) != "no_change" && !te_precision(run, i).empty())
      te_quant = std::max(te_quant, 2 * c.data.text_encoders[i].params * c.data.text_encoders[i].dtype_bytes);
  if (te_quant > base * (cpu_quant ? 2 : 1)) load.parts = {{"text encoder being quantized on the CPU (2x bf16)", te_quant}};
  load.peak_bytes = sum(load.parts);
  load.set_by = "loading" + std::string(cpu_quant ? " and quantizing on the CPU (quantize_via cpu)" : "");
  add(train.parts, "RamTorch/block-swap weights (pinned)", c.step.memory.streamed_weights_bytes);
  add(train.parts, "offloaded activations (pinned)", c.step.memory.host_activation_bytes);
  if (run.use_ema && run.ema_device == "cpu") add(train.parts, "EMA shadow", c.step.memory.gradient_bytes);
  if (run.ramtorch_text_encoder) {
    double te = 0;
    for (std::size_t i = 0; i < c.data.text_encoders.size(); ++i)
      te += text_encoder_bytes(c.data.text_encoders[i], te_precision(run, i));
    add(train.parts, "text encoders streamed by RamTorch (pinned)", te);
  }
  train.peak_bytes = sum(train.parts);
  train.set_by = "training:";  // what is on the host here, not every kind that could be
  for (std::size_t i = 0; i < train.parts.size(); ++i) train.set_by += (i ? ", " : " ") + train.parts[i].what;
  return train.peak_bytes > load.peak_bytes ? train : load;
}

}  // namespace phase_parts

namespace phase_parts {

PhaseResult phase_of(const Ctx& c, const RunSetup& run, Phase p) {
  switch (p) {
    case Phase::StartupCaching: return startup_caching(c, run);
    case Phase::ModelLoad: return model_load(c, run);
    case Phase::TrainingStep: return training_step(c, run);
    case Phase::Validation: return validation(c, run);
    case Phase::Save: return save(c, run);
  }
  return {};
}

struct Candidate {
  std::string key, value_json;
  std::function<void(RunSetup&)> apply;
};

std::string quote(const std::string& s) { return "\"" + s + "\""; }

// Lower validation resolutions: the larger side to 1024, 768, 512, 256 px (aspect kept, multiples of 16).
std::vector<Candidate> resolution_candidates(const RunSetup& run) {
  std::vector<Candidate> out;
  const int side = std::max(run.validation_width, run.validation_height);
  for (int target : {1024, 768, 512, 256}) {
    if (target >= side) continue;
    const int w = std::max(16, static_cast<int>(std::lround(run.validation_width * double(target) / side / 16)) * 16);
    const int h = std::max(16, static_cast<int>(std::lround(run.validation_height * double(target) / side / 16)) * 16);
    out.push_back({"validation_resolution", quote(std::to_string(w) + "x" + std::to_string(h)), [w, h](RunSetup& r) {
                     r.validation_width = w;
                     r.validation_height = h;
                   }});
  }
  return out;
}

// An int8 text encoder for each one over 1B parameters still at its load dtype.
std::vector<Candidate> te_int8_candidates(const Ctx& c, const RunSetup& run) {
  std::vector<Candidate> out;
  for (std::size_t i = 0; i < c.data.text_encoders.size(); ++i)
    if (te_precision(run, i) == "no_change" && c.data.text_encoders[i].params > 1e9)
      out.push_back({"text_encoder_" + std::to_string(i + 1) + "_precision", quote("int8-quanto"), [i](RunSetup& r) {
                       if (r.text_encoder_precision.size() <= i) r.text_encoder_precision.resize(i + 1, "no_change");
                       r.text_encoder_precision[i] = "int8-quanto";
                     }});
  return out;
}

// Another trainer's keys for a phase (TrainerRun::phase_knobs), in its data file's order.
std::vector<Candidate> other_candidates(const RunSetup& run, Phase p) {
  std::vector<Candidate> out;
  for (const TrainerPhaseKnob& k : run.other.phase_knobs) {
    if (k.phase != p) continue;
    if (k.effect == "samples_off") {
      if (!run.other.samples) continue;
      out.push_back({k.key, k.value_json, [](RunSetup& r) { r.other.samples = false; }});
    }
  }
  return out;
}

// The keys that bring a phase down, cheapest first (what the trainer's documentation suggests: §E);
// another trainer's own keys for its run.
std::vector<Candidate> candidates(const Ctx& c, const RunSetup& run, Phase p) {
  if (!run.other.trainer.empty()) return other_candidates(run, p);
  std::vector<Candidate> out;
  const bool can_tile = c.data.has_vae && !c.data.vae.tiling_ignored && !tiling_on(c, run) && c.data.vae.tile_side_px > 0;
  if (p == Phase::StartupCaching) {
    if (!run.offload_during_startup && !c.data.text_encoders.empty())
      out.push_back({"offload_during_startup", "true", [](RunSetup& r) { r.offload_during_startup = true; }});
    if (can_tile) out.push_back({"vae_enable_tiling", "true", [](RunSetup& r) { r.vae_enable_tiling = true; }});
    if (vae_batch(c, run) > 1) out.push_back({"vae_batch_size", "1", [](RunSetup& r) { r.vae_batch_size = 1; }});
    for (const auto& k : te_int8_candidates(c, run)) out.push_back(k);
  } else if (p == Phase::ModelLoad) {
    if (run.quantize_via == "accelerator")
      out.push_back({"quantize_via", quote("cpu"), [](RunSetup& r) { r.quantize_via = "cpu"; }});
  } else if (p == Phase::Validation) {
    if (!run.set_grads_to_none && !c.setup.ramtorch)
      out.push_back({"set_grads_to_none", "true", [](RunSetup& r) { r.set_grads_to_none = true; }});
    if (can_tile) out.push_back({"vae_enable_tiling", "true", [](RunSetup& r) { r.vae_enable_tiling = true; }});
    // text encoders on the GPU at validation (reloaded by the family, or never unloaded): an int8 one
    // (MINIMAX_MUSIC.md 23, 258: "use an int8 TE")
    if (c.data.validation_reloads_text_encoders || text_resident(run))
      for (const auto& k : te_int8_candidates(c, run)) out.push_back(k);
    for (const auto& k : resolution_candidates(run)) out.push_back(k);
    const int frames = validation_frames(c.data, c.fam, run, c.setup.frames);
    for (int f : {49, 33, 17, 9})
      if (f < frames)
        out.push_back({"validation_num_video_frames", std::to_string(f), [f](RunSetup& r) { r.validation_num_video_frames = f; }});
  } else if (p == Phase::Save) {
    if (!run.offload_during_save)
      out.push_back({"offload_during_save", "true", [](RunSetup& r) { r.offload_during_save = true; }});
  }
  return out;
}

PhaseFix fix_of(const Ctx& c, const RunSetup& trial, Phase p, const Candidate& k, double budget) {
  const PhaseResult after = phase_of(c, trial, p);
  return {p, k.key, k.value_json, after.peak_vram_bytes, after.peak_vram_bytes <= budget, after.verdict(budget),
          after.peak_lo_bytes, after.peak_hi_bytes};
}

// The cheapest single key after which the phase fits (its range's upper end under the budget, the
// verdict's rule); otherwise the keys in that order, each on top of the ones before (a later value of a
// key replaces its earlier one; a key that lowers nothing is left out), until the phase fits or the list
// runs out (the last entry then says how far it got: its fit_after borderline or does-not-fit).
std::vector<PhaseFix> fix_phase(const Ctx& c, const RunSetup& run, Phase p, double budget) {
  const std::vector<Candidate> all = candidates(c, run, p);
  for (const auto& k : all) {
    RunSetup trial = run;
    k.apply(trial);
    const PhaseFix f = fix_of(c, trial, p, k, budget);
    if (f.fit_after == FitVerdict::Fits) return {f};
  }
  std::vector<PhaseFix> out;
  RunSetup acc = run;
  double last = phase_of(c, run, p).peak_hi_bytes;
  for (const auto& k : all) {
    RunSetup trial = acc;
    k.apply(trial);
    const PhaseFix f = fix_of(c, trial, p, k, budget);
    if (f.peak_after_hi_bytes >= last) continue;
    acc = trial;
    last = f.peak_after_hi_bytes;
    auto same = std::find_if(out.begin(), out.end(), [&](const PhaseFix& x) { return x.key == k.key; });
    if (same != out.end()) out.erase(same);
    out.push_back(f);
    if (f.fit_after == FitVerdict::Fits) break;
  }
  return out;
}

}  // namespace phase_parts

using namespace phase_parts;

RunPhases predict_phases(const Family& fam, const TrainingSetup& setup, const BlockChain& chain,
                         const Prediction& step, const RunSetup& run, double budget_bytes, const Range& step_peak_range) {
  Ctx c{fam, setup, chain, step, phase_data(fam, run.model_flavour), 0, step_peak_range};
  // the allocator slack per activation byte, as the step applies it (not on upcast weight copies)
  const double slackened = step.memory.activation_peak_bytes - step.memory.upcast_weight_bytes;
  if (slackened > 0) c.frag = step.memory.fragmentation_bytes / slackened;
  RunPhases out;
  if (!c.data.known)
    out.warnings.push_back("no text-encoder or VAE data for model family '" + fam.trainer_family +
                           "': the phases count the transformer only");
  out.phases = all_phases(c, run);
  for (const auto& p : out.phases) {
    if (!p.runs) continue;
    if (p.peak_vram_bytes > out.peak_vram_bytes) {
      out.peak_vram_bytes = p.peak_vram_bytes;
      out.peak_phase = p.phase;
    }
    out.peak_lo_bytes = std::max(out.peak_lo_bytes, p.peak_lo_bytes);
    out.peak_hi_bytes = std::max(out.peak_hi_bytes, p.peak_hi_bytes);
  }
  out.host = host_memory(c, run);
  // a step that does not fit is the schedule advice's to fix first: no phase advice on top of it.
  // Another trainer's run is advised in its own keys; a phase none of them lowers says so.
  if (budget_bytes > 0 && out.at(Phase::TrainingStep).peak_vram_bytes <= budget_bytes) {
    for (const auto& p : out.phases) {
      if (!p.runs || p.phase == Phase::TrainingStep || p.verdict(budget_bytes) == FitVerdict::Fits) continue;
      std::vector<PhaseFix> fixes = fix_phase(c, run, p.phase, budget_bytes);
      if (fixes.empty() && !run.other.trainer.empty()) {
        PhaseFix none{p.phase, "", "null", p.peak_vram_bytes, p.peak_vram_bytes <= budget_bytes, p.verdict(budget_bytes),
                      p.peak_lo_bytes, p.peak_hi_bytes, ""};
        none.note = run.other.name + " has no key that lowers this phase";
        fixes.push_back(none);
      }
      for (const auto& f : fixes) out.fixes.push_back(f);
    }
  }
  if (run.other.trainer.empty() && fp8_quanto(setup) && !run.offload_during_save)
    out.warnings.push_back("saving fp8-quanto weights can spike VRAM during state_dict() serialization "
                           "(OPTIONS.md --offload_during_save): estimated as one more copy of the quantized weights, "
                           "its range from no spike to that copy");
  return out;
}

}  // namespace segadvise
