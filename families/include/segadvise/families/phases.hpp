// The whole SimpleTuner run, not only the training step (shared/reference/simpletuner-run-phases.md):
// startup caching (text encoders and VAE on the GPU while captions and latents are cached), loading
// and quantizing the base model, the training step, validation (the trained model and its optimizer
// still resident, the VAE reloaded for the decode) and saving. Each phase gets a peak, what is
// resident and what sets it; the run's peak is the largest. Per-phase advice names the cheapest
// config key that brings a phase under the card's budget, with the phase's peak after it.
//
// The text encoders, VAEs and per-family validation rules are data (families/data/phases/run-phases.json,
// every figure with its source and a tag: measured, read in the code, inferred or estimated).
#pragma once

#include <string>
#include <vector>

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
  int frames_per_chunk = 0;            // video decoders that stream the clip: frames decoded at once
  int tile_frames = 0;                 // temporal tiles (LTX): frames per tile
  bool tiling_ignored = false;         // the family's load_vae ignores vae_enable_tiling
  std::string tag, source;
};

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
  bool known = true;            // false: no data for this family (phases count the transformer only)
};

// The data for a family (its trainer_family and, where the data differ per flavour, its flavour).
FamilyPhaseData phase_data(const Family& fam, const std::string& model_flavour = "");

// ---- the run's keys ----------------------------------------------------------------------------

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
};

// ---- the phases ----------------------------------------------------------------------------------

enum class Phase { StartupCaching, ModelLoad, TrainingStep, Validation, Save };
std::string to_string(Phase p);  // startup_caching, model_load, training_step, validation, save

struct Resident {
  std::string what;
  double bytes = 0;
};

struct PhaseResult {
  Phase phase = Phase::TrainingStep;
  bool runs = true;          // false: the phase does not run (validation_disable, …)
  double peak_vram_bytes = 0;
  std::vector<Resident> resident;  // what is on the GPU at the phase's peak (sums to the peak)
  std::string set_by;              // what sets the peak
};

// One config key that brings a phase down, and the phase's peak with it.
struct PhaseFix {
  Phase phase = Phase::Validation;
  std::string key;
  std::string value_json;  // the value as JSON text: true, "cpu", "512x512", 33
  double peak_after_bytes = 0;
  bool fits_after = false;
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
  std::vector<PhaseFix> fixes;      // for each phase over the budget other than the step
  HostMemory host;
  std::vector<std::string> warnings;

  const PhaseResult& at(Phase p) const;
};

// The phases of a run: `step` is the training step's prediction for `setup` on `chain` (its memory
// breakdown is reused: weights, trainable, gradients, optimizer, activations); `budget_bytes` is what
// a phase may use (usable VRAM minus headroom; <= 0: no advice; no advice either while the step itself
// is over it: the schedule advice comes first).
RunPhases predict_phases(const Family& fam, const TrainingSetup& setup, const BlockChain& chain,
                             const Prediction& step, const RunSetup& run, double budget_bytes);

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
