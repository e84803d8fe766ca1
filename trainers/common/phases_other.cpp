// Another trainer's run (RunSetup::other, TrainerRun), phase by phase: caching, loading, the step,
// sampling and saving by that trainer's own keys (phases.hpp).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/phase_parts.hpp"
#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"

namespace segadvise::phase_parts {

// ---- another trainer's run (RunSetup::other) -------------------------------------------------------
// The same five phases by that trainer's keys (TrainerRun). What differs from SimpleTuner's run: the
// models it keeps through the step are in the step's prediction already (add_model counts them); the
// text encoders and the VAE are at the dtypes the trainer loads them in; there is no quantize_via;
// sampling takes the place of validation with the trainer's own rule for the gradients.

double other_te_bytes(const Ctx& c, const TrainerRun& o, std::size_t i) {
  const TextEncoderSpec& te = c.data.text_encoders[i];
  const double per = i < o.text_encoder_bytes_per_param.size() && o.text_encoder_bytes_per_param[i] > 0
                         ? o.text_encoder_bytes_per_param[i] : te.dtype_bytes;
  return te.params * per;
}
void other_add_text_encoders(const Ctx& c, const TrainerRun& o, std::vector<Resident>& r, const std::string& what) {
  for (std::size_t i = 0; i < c.data.text_encoders.size(); ++i)
    add(r, what + ": " + c.data.text_encoders[i].name, other_te_bytes(c, o, i), weights_band(c.data.text_encoders[i].tag));
}
double other_vae_bytes(const Ctx& c, const TrainerRun& o) {
  if (!c.data.has_vae) return 0;
  return c.data.vae.params * (o.vae_bytes_per_param > 0 ? o.vae_bytes_per_param : c.data.vae.dtype_bytes);
}
std::string key_note(const std::string& key) { return key.empty() ? std::string() : " (" + key + ")"; }

// Caching in processes of their own (TrainerRun::caching_processes): each holds its own model, the text
// encoder(s) or the VAE, never the trained model; their peaks are said, the run's peak leaves them out.
PhaseResult separate_caching(const Ctx& c, const TrainerRun& o, bool latents) {
  PhaseResult r{Phase::StartupCaching, false, 0, 0, 0, {}, ""};
  std::string peaks;
  auto gib = [](double bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / kGiB);
    return std::string(buf);
  };
  if (o.text_caching && !c.data.text_encoders.empty()) {
    PhaseResult t{Phase::StartupCaching, true, 0, 0, 0, {}, ""};
    other_add_text_encoders(c, o, t.resident, "text encoder");
    add(t.resident, "text-encoder activations", te_activation_peak(c, RunSetup{}), part_band("estimate"));
    finish(t);
    peaks += "text encoder " + gib(t.peak_vram_bytes);
  }
  if (latents) {
    PhaseResult v{Phase::StartupCaching, true, 0, 0, 0, {}, ""};
    add(v.resident, "VAE", other_vae_bytes(c, o), weights_band(c.data.vae.params_tag));
    add(v.resident, "VAE encode activations",
        vae_activation_bytes(c.data.vae, false, c.setup.width, c.setup.height, c.setup.frames, std::max(1, o.caching_batch), false, false),
        vae_work_band(c));
    finish(v);
    peaks += (peaks.empty() ? "" : ", ") + std::string("latents (VAE) ") + gib(v.peak_vram_bytes);
  }
  r.set_by = "not part of this run: " + o.name + " caches in separate processes before training (" + o.caching_processes +
             "); their own peaks: " + peaks;
  return r;
}

// Caching before training: the VAE and the text encoders at the trainer's dtypes with the larger of
// the text-encoder forward and the VAE encode of caching_batch samples at the training shape. Nothing
// runs when the trainer caches neither.
PhaseResult other_caching(const Ctx& c, const TrainerRun& o) {
  PhaseResult r{Phase::StartupCaching, true, 0, 0, 0, {}, ""};
  const bool latents = o.latent_caching && c.data.has_vae;
  if (!latents && !o.text_caching) {
    r.runs = false;
    r.set_by = "off: " + o.name + " caches neither latents nor text" + key_note(o.latent_caching_key);
    return r;
  }
  RunSetup plain;
  std::vector<PhaseResult> moments;
  if (o.text_caching && !c.data.text_encoders.empty()) {
    PhaseResult t{Phase::StartupCaching, true, 0, 0, 0, {}, "text caching" + key_note(o.text_caching_key) + ": the text encoder(s) on the GPU"};
    other_add_text_encoders(c, o, t.resident, "text encoder");
    if (latents) add(t.resident, "VAE", other_vae_bytes(c, o), weights_band(c.data.vae.params_tag));
    add(t.resident, "text-encoder activations", te_activation_peak(c, plain), part_band("estimate"));
    moments.push_back(finish(t));
  }
  if (latents) {
    PhaseResult v{Phase::StartupCaching, true, 0, 0, 0, {}, ""};
    add(v.resident, "VAE", other_vae_bytes(c, o), weights_band(c.data.vae.params_tag));
    if (o.text_caching) other_add_text_encoders(c, o, v.resident, "text encoder");
    const int b = std::max(1, o.caching_batch);
    add(v.resident, "VAE encode activations",
        vae_activation_bytes(c.data.vae, false, c.setup.width, c.setup.height, c.setup.frames, b, false, false), vae_work_band(c));
    v.set_by = "latent caching" + key_note(o.latent_caching_key) + ": encode of " + std::to_string(b) + " x " +
               dims(c.setup.width, c.setup.height, c.setup.frames);
    moments.push_back(finish(v));
  }
  if (moments.empty()) {  // text caching asked for a family whose text encoders are not described
    r.runs = false;
    r.set_by = "not modelled: " + o.name + " caches text" + key_note(o.text_caching_key) +
               ", but this family's text encoders are not described (trainers/common/phases)";
    return r;
  }
  if (!o.caching_processes.empty()) return separate_caching(c, o, latents);
  return largest(moments);
}

// Loading: the trained model and what the step keeps at their precisions; with quantizes_on_gpu the
// unquantized base (bf16) on the GPU before it is quantized; with sample_prompts_before_load and sampling
// on, the text encoder(s) alone before it, encoding the prompts.
PhaseResult other_load(const Ctx& c, const TrainerRun& o) {
  PhaseResult move{Phase::ModelLoad, true, 0, 0, 0, {}, o.name + ": the trained model on the GPU at its precision" + key_note(o.load_key)};
  add_model(c, move.resident, false, false);
  std::vector<PhaseResult> moments{finish(move)};
  if (o.samples && o.sample_prompts_before_load && !c.data.text_encoders.empty()) {
    PhaseResult t{Phase::ModelLoad, true, 0, 0, 0, {}, o.name + ": sample prompts encoded before the model loads" + key_note(o.sample_key)};
    other_add_text_encoders(c, o, t.resident, "text encoder (sample prompts)");
    add(t.resident, "text-encoder activations", te_activation_peak(c, RunSetup{}), part_band("estimate"));
    moments.push_back(finish(t));
  }
  if (o.quantizes_on_gpu && precision_info(c.setup.base_precision).quantized) {
    PhaseResult q{Phase::ModelLoad, true, 0, 0, 0, {}, o.name + ": the bf16 base on the GPU before it is quantized" + key_note(o.load_key)};
    add(q.resident, "bf16 base model (quantized on the GPU)", base_bf16_bytes(c), part_band("resident"));
    add(q.resident, "kept on the GPU", c.step.memory.other_models_bytes, part_band("resident"));
    moments.push_back(finish(q));
  }
  return largest(moments);
}

// The step: the step's prediction (its range), and without latent caching an encode at the training
// batch before the forward (the VAE's weights are among the kept models).
PhaseResult other_step(const Ctx& c, const TrainerRun& o) {
  const MemoryBreakdown& m = c.step.memory;
  PhaseResult s{Phase::TrainingStep, true, 0, 0, 0, {}, "training step" + (m.peak_phase.empty() ? std::string() : ": " + m.peak_phase)};
  add_model(c, s.resident, true, true);
  add(s.resident, "activations", m.activation_peak_bytes + m.fragmentation_bytes, PartBand{});
  finish(s);
  const Range step = c.step_range.hi > 0 ? c.step_range : Range{s.peak_vram_bytes, s.peak_vram_bytes};
  s.peak_lo_bytes = std::min(s.peak_vram_bytes, step.lo);
  s.peak_hi_bytes = std::max(s.peak_vram_bytes, step.hi);
  std::vector<PhaseResult> moments{s};
  if (!o.latent_caching && c.data.has_vae) {
    PhaseResult e{Phase::TrainingStep, true, 0, 0, 0, {}, "latent encode inside the step" + key_note(o.latent_caching_key + " off")};
    add_model(c, e.resident, true, true);
    add(e.resident, "VAE encode activations (latents encoded during training)",
        vae_activation_bytes(c.data.vae, false, c.setup.width, c.setup.height, c.setup.frames, c.setup.batch, false, false),
        vae_work_band(c));
    moments.push_back(finish(e));
  }
  return largest(moments);
}

// Sampling: the model and its optimizer state (gradients only where the trainer keeps them), the VAE
// and, where the prompts are encoded then, the text encoders (the ones the step keeps are counted
// once, with the model), + the larger of the denoising forward and the decode at the sample shape.
PhaseResult other_sampling(const Ctx& c, const TrainerRun& o) {
  PhaseResult r{Phase::Validation, false, 0, 0, 0, {}, "off" + key_note(o.sample_key)};
  if (!o.samples) return r;
  const int w = o.sample_width > 0 ? o.sample_width : c.setup.width;
  const int h = o.sample_height > 0 ? o.sample_height : c.setup.height;
  const int frames = c.fam.modality == "video" ? std::max(1, o.sample_frames > 1 ? o.sample_frames : c.setup.frames) : 1;
  std::vector<Resident> base;
  add_model(c, base, true, o.sample_keeps_gradients);
  const bool te_kept = c.step.memory.other_models_bytes > 0 && c.setup.kept_models.find("text encoder") != std::string::npos;
  if (o.sample_loads_text_encoders && !te_kept) other_add_text_encoders(c, o, base, "loaded for sampling");
  const bool vae_kept = c.setup.kept_models.find("VAE") != std::string::npos;
  if (!vae_kept) add(base, "VAE (loaded for sampling)", other_vae_bytes(c, o), weights_band(c.data.vae.params_tag));
  const std::string shape = "1 x " + dims(w, h, frames);
  if (o.sample_moves_parts) {
    std::vector<PhaseResult> moments;
    std::vector<Resident> model;
    add_model(c, model, true, o.sample_keeps_gradients);
    if (o.sample_loads_text_encoders && !te_kept && !c.data.text_encoders.empty()) {
      PhaseResult t{Phase::Validation, true, 0, 0, 0, {}, "sampling" + key_note(o.sample_key) + ": prompts encoded, the text encoder(s) moved in, the denoiser off"};
      add(t.resident, "optimizer state", c.step.memory.optimizer_bytes, part_band("resident"));
      add(t.resident, "kept on the GPU", c.step.memory.other_models_bytes, part_band("resident"));
      other_add_text_encoders(c, o, t.resident, "moved in for the prompts");
      add(t.resident, "text-encoder activations", te_activation_peak(c, RunSetup{}), part_band("estimate"));
      moments.push_back(finish(t));
    }
    PhaseResult dn{Phase::Validation, true, 0, 0, 0, model, "sampling" + key_note(o.sample_key) + ": denoising forward at " + shape};
    add(dn.resident, "denoising activations", denoise_bytes(c, w, h, frames, o.sample_cfg ? 2 : 1) * (1 + c.frag), part_band("estimate"));
    moments.push_back(finish(dn));
    if (c.data.has_vae) {
      PhaseResult dc{Phase::Validation, true, 0, 0, 0, {}, "sampling" + key_note(o.sample_key) + ": VAE decode of " + shape + ", the denoiser moved off"};
      add(dc.resident, "optimizer state", c.step.memory.optimizer_bytes, part_band("resident"));
      add(dc.resident, "kept on the GPU", c.step.memory.other_models_bytes, part_band("resident"));
      if (!vae_kept) add(dc.resident, "VAE (moved in for the decode)", other_vae_bytes(c, o), weights_band(c.data.vae.params_tag));
      add(dc.resident, "VAE decode activations", vae_activation_bytes(c.data.vae, true, w, h, frames, 1, false, false), vae_work_band(c));
      moments.push_back(finish(dc));
    }
    return largest(moments);
  }
  PhaseResult denoise{Phase::Validation, true, 0, 0, 0, base, "sampling" + key_note(o.sample_key) + ": denoising forward at " + shape};
  add(denoise.resident, "denoising activations", denoise_bytes(c, w, h, frames, o.sample_cfg ? 2 : 1) * (1 + c.frag), part_band("estimate"));
  if (!c.data.has_vae) return finish(denoise);
  PhaseResult decode{Phase::Validation, true, 0, 0, 0, base, "sampling" + key_note(o.sample_key) + ": VAE decode of " + shape};
  add(decode.resident, "VAE decode activations", vae_activation_bytes(c.data.vae, true, w, h, frames, 1, false, false), vae_work_band(c));
  return largest({finish(decode), finish(denoise)});
}

// Saving: the model and its optimizer state; the tensors are copied to the host.
PhaseResult other_save(const Ctx& c, const TrainerRun& o) {
  PhaseResult r{Phase::Save, true, 0, 0, 0, {}, "saving" + key_note(o.save_key) + ": model and optimizer state resident"};
  add_model(c, r.resident, true, false);
  return finish(r);
}

}  // namespace segadvise::phase_parts
