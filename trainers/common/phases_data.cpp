// The data of a run's phases (run-phases.json: text encoders, VAEs, validation rules, bands) and the
// figures read from it; the phases themselves are phases.cpp.
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

using nlohmann::json;

namespace {

const char* const kOrigin = "trainers/common/phases/run-phases.json";

double dtype_bytes(const FieldReader& r) {
  const std::string d = r.str("dtype", "bf16");
  r.one_of("dtype", d, {"bf16", "fp32"});
  return d == "fp32" ? 4 : 2;
}

TextEncoderSpec parse_te(const std::string& id, const FieldReader& r) {
  TextEncoderSpec t;
  t.id = id;
  t.name = r.str("name", id);
  t.params = r.num("params", 0, true, 1, kMaxParams);
  t.hidden = r.integer("hidden", 0, true, 1, kMaxModelDim);
  t.layers = r.integer("layers", 0, true, 1, 4096);
  t.dtype_bytes = dtype_bytes(r);
  t.tag = r.str("tag", "", true);
  t.source = r.str("source", "", true);
  return t;
}

VaeSpec parse_vae(const std::string& id, const FieldReader& r) {
  const double kMaxBytesPerPixel = 1 << 20;
  VaeSpec v;
  v.id = id;
  v.name = r.str("name", id);
  v.params = r.num("params", 0, true, 1, kMaxParams);
  v.dtype_bytes = dtype_bytes(r);
  v.decode_fixed_bytes = r.num("decode_fixed_bytes", 0, false, 0, 1e12);
  v.decode_bytes_per_pixel = r.num("decode_bytes_per_pixel", 0, true, 0, kMaxBytesPerPixel);
  v.encode_bytes_per_pixel = r.num("encode_bytes_per_pixel", 0, true, 0, kMaxBytesPerPixel);
  v.tile_side_px = r.integer("tile_side_px", 0, false, 0, kMaxEdgePixels);
  v.tiled_pixels = r.num("tiled_pixels", 0, false, 0, double(kMaxEdgePixels) * kMaxEdgePixels);
  v.tiled_decode_bytes = r.num("tiled_decode_bytes", 0, false, 0, 1e12);
  v.tiled_encode_bytes = r.num("tiled_encode_bytes", 0, false, 0, 1e12);
  v.frames_per_chunk = r.integer("frames_per_chunk", 0, false, 0, kMaxFrames);
  v.tile_frames = r.integer("tile_frames", 0, false, 0, kMaxFrames);
  v.tiling_ignored = r.boolean("tiling_ignored", false);
  v.params_tag = r.str("params_tag", "U");
  v.tag = r.str("tag", "", true);
  v.source = r.str("source", "", true);
  return v;
}

ModelSpec parse_model(const std::string& id, const FieldReader& r) {
  ModelSpec m;
  m.id = id;
  m.name = r.str("name", id);
  m.params = r.num("params", 0, true, 1, kMaxParams);
  m.dtype_bytes = dtype_bytes(r);
  m.tag = r.str("tag", "", true);
  m.source = r.str("source", "", true);
  return m;
}

// A band keeps the point inside it: 0 <= lo <= 1 <= hi.
PartBand parse_band(const FieldReader& r) {
  PartBand b;
  b.lo = r.num("lo", 1, true, 0, 1);
  b.hi = r.num("hi", 1, true, 1, 100);
  r.str("reason", "", true);
  return b;
}

const char* const kBandKinds[] = {"resident", "counted", "inferred", "assumed", "measured", "estimate", "spike"};

struct PhaseCatalog {
  std::map<std::string, TextEncoderSpec> tes;
  std::map<std::string, VaeSpec> vaes;
  std::map<std::string, ModelSpec> models;
  std::map<std::string, PartBand> bands;
  double spike_copies = 0;
  json families;
};

void parse_extras(PhaseCatalog& cat, const json& j, const FieldReader& top) {
  const FieldReader models = top.sub("validation_models", true);
  for (auto it = j["validation_models"].begin(); it != j["validation_models"].end(); ++it)
    cat.models[it.key()] = parse_model(it.key(), models.sub(it.key(), true));
  const FieldReader bands = top.sub("bands", true);
  for (const char* kind : kBandKinds) cat.bands[kind] = parse_band(bands.sub(kind, true));
  cat.spike_copies = top.sub("save_spike", true).num("copies_of_quantized_weights", 0, true, 0, 10);
}

const PhaseCatalog& catalog() {
  static const PhaseCatalog c = [] {
    PhaseCatalog cat;
    for (std::size_t i = 0; i < kRunPhaseDataCount; ++i) {
      const std::string origin = std::string("trainers/common/phases/") + kRunPhaseData[i].name;
      const json j = parse_json_text(kRunPhaseData[i].text, origin);
      const FieldReader top{j, origin, ""};
      for (const char* section : {"text_encoders", "vaes", "families"}) top.sub(section, true);
      for (auto it = j["text_encoders"].begin(); it != j["text_encoders"].end(); ++it)
        cat.tes[it.key()] = parse_te(it.key(), top.sub("text_encoders", true).sub(it.key(), true));
      for (auto it = j["vaes"].begin(); it != j["vaes"].end(); ++it)
        cat.vaes[it.key()] = parse_vae(it.key(), top.sub("vaes", true).sub(it.key(), true));
      parse_extras(cat, j, top);
      for (auto it = j["families"].begin(); it != j["families"].end(); ++it) cat.families[it.key()] = it.value();
    }
    return cat;
  }();
  return c;
}

std::vector<TextEncoderSpec> te_list(const FieldReader& r) {
  std::vector<TextEncoderSpec> out;
  for (const auto& id : r.strings("text_encoders")) {
    const auto it = catalog().tes.find(id);
    if (it == catalog().tes.end()) r.fail("text_encoders", "names an unknown text encoder '" + brief_text(id) + "'");
    out.push_back(it->second);
  }
  return out;
}

std::vector<ModelSpec> model_list(const FieldReader& r) {
  std::vector<ModelSpec> out;
  for (const auto& id : r.strings("validation_models")) {
    const auto it = catalog().models.find(id);
    if (it == catalog().models.end())
      r.fail("validation_models", "names an unknown model '" + brief_text(id) + "'");
    out.push_back(it->second);
  }
  return out;
}

}  // namespace

PartBand part_band(const std::string& kind) {
  const auto it = catalog().bands.find(kind);
  if (it == catalog().bands.end()) throw std::logic_error("no band '" + kind + "' in " + kOrigin);
  return it->second;
}

PartBand weights_band(const std::string& tag) {
  if (tag == "C" || tag == "R") return part_band("counted");
  if (tag == "I") return part_band("inferred");
  return part_band("assumed");
}

double save_spike_copies() { return catalog().spike_copies; }

FitVerdict worst(FitVerdict a, FitVerdict b) {
  auto rank = [](FitVerdict v) { return v == FitVerdict::Fits ? 0 : (v == FitVerdict::Borderline ? 1 : 2); };
  return rank(a) >= rank(b) ? a : b;
}

FitVerdict PhaseResult::verdict(double budget_bytes) const {
  if (!runs) return FitVerdict::Fits;
  return fit_verdict(Range{peak_lo_bytes, peak_hi_bytes}, budget_bytes, 0.0);
}

FitVerdict RunPhases::verdict(double budget_bytes) const {
  FitVerdict v = FitVerdict::Fits;
  for (const auto& p : phases) v = worst(v, p.verdict(budget_bytes));
  return v;
}

FamilyPhaseData phase_data(const Family& fam, const std::string& model_flavour) {
  FamilyPhaseData d;
  d.trainer_family = fam.trainer_family;
  const json& fams = catalog().families;
  if (!fams.contains(fam.trainer_family)) {
    d.known = false;
    return d;
  }
  const FieldReader r = FieldReader{fams, kOrigin, "families."}.sub(fam.trainer_family, true);
  d.text_encoders = te_list(r);
  // a flavour's own text encoders: the config's model_flavour, else one keyed by the family's id
  // (FLUX.2 klein 4B's Qwen3-4B)
  const FieldReader flavours = r.sub("flavours", false);
  const std::string flavour = !model_flavour.empty() && flavours.get(model_flavour, false) ? model_flavour : fam.id;
  if (flavours.get(flavour, false)) {
    const FieldReader f = flavours.sub(flavour, true);
    if (f.get("text_encoders", false)) d.text_encoders = te_list(f);
  }
  d.max_tokens = r.integer("max_tokens", 0, false, 0, kMaxTextTokens);
  const std::string vae = r.str("vae", "");
  if (!vae.empty()) {
    const auto it = catalog().vaes.find(vae);
    if (it == catalog().vaes.end()) r.fail("vae", "names an unknown VAE '" + brief_text(vae) + "'");
    d.vae = it->second;
    d.has_vae = true;
  }
  d.latent_channels = r.integer("latent_channels", 0, false, 0, 4096);
  d.cfg = r.str("cfg", "unknown");
  r.one_of("cfg", d.cfg, {"batched", "sequential", "distilled", "unknown"});
  d.tiling_forced = r.boolean("tiling_forced", false);
  d.tiling_default = r.boolean("tiling_default", false);
  d.validation_frames = r.integer("validation_frames", 0, false, 0, kMaxFrames);
  d.validation_frames_cap = r.integer("validation_frames_cap", 0, false, 0, kMaxFrames);
  d.validation_reloads_text_encoders = r.boolean("validation_reloads_text_encoders", false);
  d.validation_models = model_list(r);
  return d;
}

std::string to_string(Phase p) {
  switch (p) {
    case Phase::StartupCaching: return "startup_caching";
    case Phase::ModelLoad: return "model_load";
    case Phase::TrainingStep: return "training_step";
    case Phase::Validation: return "validation";
    case Phase::Save: return "save";
  }
  return "?";
}

const PhaseResult& RunPhases::at(Phase p) const {
  for (const auto& r : phases)
    if (r.phase == p) return r;
  throw std::logic_error("RunPhases without phase " + to_string(p));
}

// Weights of a text encoder: params x its load dtype (bf16), or x the bytes per parameter of its
// text_encoder_N_precision when quantized (run-phases §A1 steps 1-3: quantized on the CPU, then moved
// to the GPU at that size for the text-embed cache).
double text_encoder_bytes(const TextEncoderSpec& te, const std::string& precision) {
  if (precision.empty() || precision == "no_change") return te.params * te.dtype_bytes;
  const PrecisionInfo p = precision_info(precision);
  return te.params * (p.quantized ? p.bytes_per_param : te.dtype_bytes);
}

// run-phases §D "Text encoders": all hidden states at text_encoder_batch_size captions; a 28-layer,
// 3584-wide model at 1024 tokens: 1024 x 3584 x 29 x 2 B = 0.21 GB ("about 0.2 GB").
double text_encoder_activation_bytes(const TextEncoderSpec& te, int batch, int tokens) {
  return static_cast<double>(std::max(1, batch)) * std::max(0, tokens) * te.hidden * (te.layers + 1) * 2.0;
}

// A VAE pass (run-phases §D): per output pixel x pixels x the frames decoded at once, per clip.
//   untiled: fixed + bytes_per_pixel x W x H x frames_at_once
//   tiled (only when the larger side exceeds tile_side_px and the family honours the flag): the
//     measured tiled working set x frames_at_once, or bytes_per_pixel x min(W x H, one tile)
//   frames_at_once: min(frames, frames_per_chunk) for streaming decoders (Wan), all frames for LTX
//     (min(frames, tile_frames) when tiled), 1 for images
//   clips: all at once, or one at a time with vae_enable_slicing
double vae_activation_bytes(const VaeSpec& vae, bool decode, int width, int height, int frames, int images,
                            bool tiling, bool slicing) {
  const double per_px = decode ? vae.decode_bytes_per_pixel : vae.encode_bytes_per_pixel;
  const double fixed = decode ? vae.decode_fixed_bytes : 0.0;
  const int f = std::max(1, frames);
  const bool tiled = tiling && !vae.tiling_ignored && vae.tile_side_px > 0 && std::max(width, height) > vae.tile_side_px;
  double at_once = f;
  if (vae.frames_per_chunk > 0) at_once = std::min(f, vae.frames_per_chunk);
  if (tiled && vae.tile_frames > 0) at_once = std::min(f, vae.tile_frames);
  const double pixels = static_cast<double>(width) * height;
  double one = fixed + per_px * pixels * at_once;
  if (tiled) {
    const double measured = decode ? vae.tiled_decode_bytes : vae.tiled_encode_bytes;
    if (measured > 0) one = fixed + measured * at_once;
    else if (vae.tiled_pixels > 0) one = fixed + per_px * std::min(pixels, vae.tiled_pixels) * at_once;
    else one = fixed + per_px * std::min(pixels, double(vae.tile_side_px) * vae.tile_side_px) * at_once;
  }
  return one * (slicing ? 1 : std::max(1, images));
}

// run-phases §B "Frames": Wan min(81, v or 81), LTX min(125, v or 125), fixed defaults elsewhere;
// images render one frame; a video family without a rule renders what it was asked (or its training
// frames). The family's frame rule (8k+1, …) is applied to the count.
int validation_frames(const FamilyPhaseData& d, const Family& fam, const RunSetup& run, int training_frames) {
  if (fam.modality != "video") return 1;
  int v = run.validation_num_video_frames > 0 ? run.validation_num_video_frames
                                              : (d.validation_frames > 0 ? d.validation_frames : training_frames);
  if (d.validation_frames_cap > 0) v = std::min(v, d.validation_frames_cap);
  return apply_frame_rule(fam, std::max(1, v));
}

}  // namespace segadvise
