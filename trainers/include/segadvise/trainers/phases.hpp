// The whole SimpleTuner run, not only the training step (docs/sources/run-phases.md):
// startup caching (text encoders and VAE on the GPU while captions and latents are cached), loading
// and quantizing the base model, the training step, validation (the trained model and its optimizer
// still resident, the VAE reloaded for the decode) and saving. Each phase gets a peak, what is
// resident and what sets it; the run's peak is the largest. Per-phase advice names the cheapest
// config key that brings a phase under the card's budget, with the phase's peak after it.
//
// The text encoders, VAEs and per-family validation rules are data (trainers/common/phases/run-phases.json,
// every figure with its source and a tag: measured, read in the code, inferred or estimated).
//
// 90% ranges: no phase but the training step has measured residuals. A phase's range is built from
// what it is made of: each resident part carries the band of the kind of number it is (run-phases.json
// "bands": the step's fixed part and counted weights tight, assumed sizes and unmeasured working sets
// wide, a documented spike from none to its size); a moment of a phase adds its parts' lower ends and
// their upper ends, and a phase (a maximum over its moments: the text-embed and the VAE cache, the
// bf16 base and the EMA clone, the step and the EMA round trip, the denoise and the decode) takes the
// largest lower end and the largest upper end. The training step's own moment keeps the step's range.
// A phase fits when its upper end fits the budget, does not fit when its lower end does not, and is
// borderline in between: the rule of the step's verdict (costmodel/anchor.hpp).
#pragma once

#include <string>
#include <vector>

#include "segadvise/costmodel/anchor.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise {

// ---- data ----------------------------------------------------------------------------------------

struct TextEncoderSpec {
  std::string id, name;
  double params = 0;
  int hidden = 0, layers = 0;   // size the caching activations only
  double dtype_bytes = 2;       // weight_dtype (bf16) unless the file says fp32
  std::string tag, source;
};

// VAE memory: weights, and encode/decode activations per output pixel (per pixel-frame for video).
struct VaeSpec {
  std::string id, name;
  double params = 0;
  double dtype_bytes = 2;              // vae_dtype bf16 (fp32 where the family loads it so)
  double decode_fixed_bytes = 0;       // a constant part of a decode (LTX)
  double decode_bytes_per_pixel = 0;   // untiled
  double encode_bytes_per_pixel = 0;   // untiled
  int tile_side_px = 0;                // tiling only changes anything above this side (0: no tiling)
  double tiled_pixels = 0;             // one tile with its overlap: the tiled working set in pixels
  double tiled_decode_bytes = 0;       // measured tiled working set (0: tiled_pixels x per-pixel cost)
  double tiled_encode_bytes = 0;
  std::string params_tag;              // the parameter count's tag (its band: weights_band)
  int frames_per_chunk = 0;            // video decoders that stream the clip: frames decoded at once
  int tile_frames = 0;                 // temporal tiles (LTX): frames per tile
  bool tiling_ignored = false;         // the family's load_vae ignores vae_enable_tiling
  std::string tag, source;
};

// A model the validation loads next to the trained one (Stable Cascade's decoder, LTX-2's audio VAE).
struct ModelSpec {
  std::string id, name;
  double params = 0;
  double dtype_bytes = 2;
  std::string tag, source;
};

// A part's 90% band as multipliers of its bytes (run-phases.json "bands").
struct PartBand {
  double lo = 1, hi = 1;
};
// The band of a kind of part: resident, counted, inferred, assumed, measured, estimate, spike.
PartBand part_band(const std::string& kind);
// The band of weights whose parameter count carries `tag`: C/R counted, I inferred, else assumed.
PartBand weights_band(const std::string& tag);
// The save spike of fp8-quanto (run-phases.json "save_spike"): copies of the quantized base weights.
double save_spike_copies();

struct FamilyPhaseData {
  std::string trainer_family;
  std::vector<TextEncoderSpec> text_encoders;
  int max_tokens = 0;
  bool has_vae = false;
  VaeSpec vae;
  int latent_channels = 0;
  std::string cfg = "unknown";  // batched | sequential | distilled | unknown (taken as batched)
  bool tiling_forced = false;   // check_user_config turns tiling and slicing on
  bool tiling_default = false;  // the VAE tiles unless told otherwise
  int validation_frames = 0;    // the family hook's default frame count (0: none)
  int validation_frames_cap = 0;
  bool validation_reloads_text_encoders = false;  // get_pipeline loads the text encoders back (Ideogram, MiniMax Music)
  std::vector<ModelSpec> validation_models;       // loaded at validation next to the trained model
  bool known = true;            // false: no data for this family (phases count the transformer only)
};

// The data for a family (its trainer_family and, where the data differ per flavour, its flavour).
FamilyPhaseData phase_data(const Family& fam, const std::string& model_flavour = "");

// ---- the run's keys ----------------------------------------------------------------------------

enum class Phase { StartupCaching, ModelLoad, TrainingStep, Validation, Save };
std::string to_string(Phase p);  // startup_caching, model_load, training_step, validation, save

// One of another trainer's keys that lowers a phase, as that trainer writes it (trainers/<trainer>/<id>.json
// "phases"."fixes"): `value_json` null removes a flag; `effect` is what it does to the run
// ("samples_off": no sampling during training).
struct TrainerPhaseKnob {
  Phase phase = Phase::Validation;
  std::string key, value_json, effect;
};

// Another trainer's run (OneTrainer, diffusers scripts, ai-toolkit, musubi-tuner): what it keeps on the
// GPU in each phase, by its own keys. Filled by the trainer's component (segadvise/trainers/trainer.hpp
// run_setup: trainers/<trainer>/<id>.json "phases" and what its reader read); `trainer` empty: SimpleTuner's
// run, the RunSetup keys below. The models the trainer keeps through the step (text encoders it trains
// or does not unload, the VAE without latent caching) are in the step's prediction
// (TrainingSetup::kept_model_bytes), so every phase that holds the model holds them too.
struct TrainerRun {
  std::string trainer;  // its id; "" SimpleTuner
  std::string name;     // OneTrainer, …
  bool latent_caching = true;      // latents encoded before training, the VAE then leaves the GPU
  std::string latent_caching_key;  // the key that says so, as the trainer writes it
  bool text_caching = true;        // text embeddings computed before training
  std::string text_caching_key;
  int caching_batch = 1;           // samples the VAE encodes at once while caching
  // the caching runs in processes of its own before training (musubi's cache scripts, named here):
  // the phase says their peaks but is not part of this run's
  std::string caching_processes;
  // per text encoder (the family's order), bytes per parameter as the trainer loads it (0: the family's)
  std::vector<double> text_encoder_bytes_per_param;
  double vae_bytes_per_param = 0;  // 0: the family's
  bool quantizes_on_gpu = false;   // the unquantized base reaches the GPU before it is quantized
  std::string load_key;            // what decides how it loads
  bool samples = false;            // samples images during training
  std::string sample_key;          // the key that turns it on or off
  int sample_width = 0, sample_height = 0, sample_frames = 1;
  bool sample_keeps_gradients = false;     // gradients still resident while it samples
  bool sample_loads_text_encoders = true;  // the prompts are encoded when it samples
  bool sample_prompts_before_load = false; // the prompts are encoded before the model loads, the encoders alone
  bool sample_cfg = true;                  // classifier-free guidance batches two passes
  // the sampler moves one part at a time to the GPU (text encoders to encode, back; the denoiser;
  // then the VAE with the denoiser moved off): no moment holds all of them
  bool sample_moves_parts = false;
  std::string save_key;
  // its keys that lower a phase (none for a phase: the phase advice says it has none)
  std::vector<TrainerPhaseKnob> phase_knobs;
  std::string source;  // where the facts come from
};

// Every SimpleTuner key that moves a phase, with the trainer's defaults (run-phases §A2, §B;
// registry defaults are the CLI defaults).
struct RunSetup {
  std::string model_flavour;
  bool offload_during_startup = false;
  bool keep_vae_loaded = false;
  bool vae_cache_ondemand = false, vae_cache_disable = false;
  bool text_cache_ondemand = false, text_cache_disable = false;
  bool validation_disable = false;
  bool disable_benchmark = false;
  int validation_width = 256, validation_height = 256;  // the largest of validation_resolution ("256")
  int validation_num_video_frames = 0;                  // 0: None (the family's default)
  int num_validation_images = 1;
  double validation_guidance = 7.5;
  double validation_guidance_real = 1.0;
  bool vae_enable_tiling = false, vae_enable_slicing = false;
  int vae_batch_size = 0;           // 0: unset (4 for images, 1 for video datasets)
  int text_encoder_batch_size = 1;
  std::string quantize_via = "accelerator";   // registry default (registry/model.py:578)
  std::vector<std::string> text_encoder_precision;  // text_encoder_N_precision, N = index + 1; "no_change"
  bool ramtorch_text_encoder = false;  // the text encoders' Linear weights stream from the host [I]
  bool set_grads_to_none = false;
  bool use_ema = false;
  std::string ema_device = "cpu";
  bool ema_cpu_only = false;
  std::string ema_validation = "comparison";
  bool offload_during_save = false;
  bool save_text_encoder = false;
  int validation_step_interval = 100;
  int max_train_steps = 0;  // 0: not given (epochs)
  TrainerRun other;  // another trainer's run: its phases replace SimpleTuner's (other.trainer set)
};

// ---- the phases ----------------------------------------------------------------------------------


struct Resident {
  std::string what;
  double bytes = 0;
  double lo_bytes = 0, hi_bytes = 0;  // its 90% band
};

struct PhaseResult {
  Phase phase = Phase::TrainingStep;
  bool runs = true;          // false: the phase does not run (validation_disable, …)
  double peak_vram_bytes = 0;
  double peak_lo_bytes = 0, peak_hi_bytes = 0;  // the 90% range of the peak
  std::vector<Resident> resident;  // what is on the GPU at the phase's peak (sums to the peak)
  std::string set_by;              // what sets the peak
  // fits: the upper end fits `budget_bytes`; does-not-fit: not even the lower end; borderline between
  FitVerdict verdict(double budget_bytes) const;
};

// One config key that brings a phase down, and the phase's peak with it.
struct PhaseFix {
  Phase phase = Phase::Validation;
  std::string key;
  std::string value_json;  // the value as JSON text: true, "cpu", "512x512", 33
  double peak_after_bytes = 0;
  bool fits_after = false;  // the point after it fits the budget
  FitVerdict fit_after = FitVerdict::DoesNotFit;  // the phase's verdict after it (its range)
  double peak_after_lo_bytes = 0, peak_after_hi_bytes = 0;
  // `key` empty: no key of the trainer lowers this phase, and this says so (peak_after: the phase's own)
  std::string note;
};

struct HostMemory {
  double peak_bytes = 0;
  std::vector<Resident> parts;  // at the host peak
  std::string set_by;
};

struct RunPhases {
  std::vector<PhaseResult> phases;  // run order; every phase present (runs=false when skipped)
  Phase peak_phase = Phase::TrainingStep;
  double peak_vram_bytes = 0;       // the largest phase peak
  double peak_lo_bytes = 0, peak_hi_bytes = 0;  // the largest lower and upper ends of the running phases
  std::vector<PhaseFix> fixes;      // for each phase over the budget other than the step
  HostMemory host;
  std::vector<std::string> warnings;

  const PhaseResult& at(Phase p) const;
  // the worst verdict of the running phases against `budget_bytes` (usable VRAM minus headroom)
  FitVerdict verdict(double budget_bytes) const;
};

// The worse of two verdicts (does-not-fit over borderline over fits).
FitVerdict worst(FitVerdict a, FitVerdict b);

// The phases of a run: `step` is the training step's prediction for `setup` on `chain` (its memory
// breakdown is reused: weights, trainable, gradients, optimizer, activations); `budget_bytes` is what
// a phase may use (usable VRAM minus headroom; <= 0: no advice; no advice either while the step itself
// is over it: the schedule advice comes first); advice is given for every other phase whose verdict is
// not "fits". `step_peak_range` is the step's 90% range (hi <= 0: none, the step's point is its range).
RunPhases predict_phases(const Family& fam, const TrainingSetup& setup, const BlockChain& chain,
                         const Prediction& step, const RunSetup& run, double budget_bytes,
                         const Range& step_peak_range = {});

// The pieces, exposed for tests and for the printers' notes.
double text_encoder_bytes(const TextEncoderSpec& te, const std::string& precision);
// all hidden states of a forward at `tokens` for `batch` captions: batch x tokens x hidden x (layers+1) x 2
double text_encoder_activation_bytes(const TextEncoderSpec& te, int batch, int tokens);
// working set of encoding (decode=false) or decoding `images` clips of width x height x frames
double vae_activation_bytes(const VaeSpec& vae, bool decode, int width, int height, int frames, int images,
                            bool tiling, bool slicing);
// frames the validation renders: the family's rule applied to validation_num_video_frames
int validation_frames(const FamilyPhaseData& d, const Family& fam, const RunSetup& run, int training_frames);

}  // namespace segadvise
