#include <algorithm>
#include <cmath>
#include <cstdio>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/families/analyzer.hpp"

namespace segadvise {

long long round_half_even(double x) {
  const double f = std::floor(x);
  const double diff = x - f;
  if (diff > 0.5) return static_cast<long long>(f) + 1;
  if (diff < 0.5) return static_cast<long long>(f);
  const long long fi = static_cast<long long>(f);
  return (fi % 2 == 0) ? fi : fi + 1;
}

int round_to_alignment(double x, int alignment) {
  const long long r = round_half_even(x / alignment) * alignment;
  return static_cast<int>(std::max<long long>(r, alignment));
}

namespace {

// §1.3 square crop in area mode: values near the usual sizes snap to them
double remap_area_mp(double mp, const AreaSnaps& snaps) {
  for (const AreaSnap& snap : snaps.snaps)
    if (std::abs(mp - snap.megapixels) <= snaps.tolerance_mp) return double(snap.edge_px) * snap.edge_px / 1e6;
  return mp;
}

// A bucketed edge in pixels; past kMaxEdgePixels (or not finite) is an InputError, never a wrapped int.
int edge_px(double x) {
  if (!(x <= kMaxEdgePixels)) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    throw InputError(std::string("the trained size has an edge of ") + buf + " px, beyond the limit of " +
                     std::to_string(kMaxEdgePixels));
  }
  return static_cast<int>(x);
}

}  // namespace

ResolvedSize bucket_size(double resolution, const std::string& type, int alignment, double aspect, bool crop_square,
                         const AreaSnaps& snaps) {
  ResolvedSize out;
  if (!(resolution > 0) || !std::isfinite(resolution))
    throw InputError("resolution must be positive, got " + std::to_string(resolution));
  if (!(aspect > 0) || !std::isfinite(aspect)) throw InputError("aspect ratio must be positive");
  aspect = round_half_even(aspect * kAspectRoundingScale) / kAspectRoundingScale;  // aspect_bucket_rounding = 2
  std::string t = type;
  double mp = 0;
  if (t == "pixel_area") {
    mp = resolution * resolution / 1e6;
    t = "area";
  } else if (t == "area") {
    mp = resolution;
  } else if (t != "pixel") {
    throw InputError("resolution_type '" + type + "' is not one of pixel, pixel_area, area");
  }
  if (t == "pixel") {
    if (crop_square) {
      out.width = out.height = edge_px(resolution);
    } else if (aspect >= 1) {
      out.height = round_to_alignment(edge_px(resolution), alignment);
      out.width = round_to_alignment(edge_px(resolution * aspect), alignment);
    } else {
      out.width = round_to_alignment(edge_px(resolution), alignment);
      out.height = round_to_alignment(edge_px(resolution / aspect), alignment);
    }
  } else if (crop_square) {
    const int edge = round_to_alignment(edge_px(std::sqrt(remap_area_mp(mp, snaps) * 1e6)), alignment);
    out.width = out.height = edge;
  } else {
    const int edge = round_to_alignment(edge_px(std::sqrt(mp * 1e6)), alignment);
    if (aspect == 1.0) {
      out.width = out.height = edge;
    } else {
      out.width = round_to_alignment(edge_px(edge * std::sqrt(aspect)), alignment);
      out.height = round_to_alignment(edge_px(edge / std::sqrt(aspect)), alignment);
    }
  }
  out.note = "resolution " + std::to_string(resolution).substr(0, 8) + " (" + type + ", alignment " +
             std::to_string(alignment) + ", aspect " + std::to_string(aspect).substr(0, 4) +
             (crop_square ? ", square crop" : "") + ") -> " + std::to_string(out.width) + "x" +
             std::to_string(out.height);
  return out;
}

ResolvedSize parse_resolution(const std::string& arg, const std::string& type, const Family& fam, double aspect) {
  // WxH or a number, spaces around the parts allowed; scanned left to right (no regex: a
  // 30,000-digit value must be an out-of-range error, not a recursion)
  auto space = [](char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r'; };
  auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  std::size_t pos = 0;
  auto skip_space = [&] { while (pos < arg.size() && space(arg[pos])) ++pos; };
  auto digits = [&] {
    const std::size_t from = pos;
    while (pos < arg.size() && digit(arg[pos])) ++pos;
    return arg.substr(from, pos - from);
  };
  skip_space();
  const std::string first = digits();
  std::string second, fraction;
  bool is_wxh = false, is_number = false;
  if (!first.empty()) {
    const std::size_t after_first = pos;
    skip_space();
    if (pos < arg.size() && (arg[pos] == 'x' || arg[pos] == 'X')) {
      ++pos;
      skip_space();
      second = digits();
      skip_space();
      is_wxh = !second.empty() && pos == arg.size();
    } else {
      pos = after_first;
      if (pos < arg.size() && arg[pos] == '.') {
        ++pos;
        fraction = digits();
        if (fraction.empty()) pos = arg.size() + 1;  // "5." is not a number
      }
      if (pos <= arg.size()) {
        skip_space();
        is_number = pos == arg.size();
      }
    }
  }
  const std::string where = "--resolution '" + brief_text(arg) + "'";
  if (is_wxh) {
    const int w = static_cast<int>(parse_integer_text(first, where + ": width", 1, kMaxEdgePixels));
    const int h = static_cast<int>(parse_integer_text(second, where + ": height", 1, kMaxEdgePixels));
    ResolvedSize out;
    const int a = fam.geometry.alignment;
    out.width = round_to_alignment(w, a);
    out.height = round_to_alignment(h, a);
    out.note = "resolution " + arg + " rounded to alignment " + std::to_string(a) + " -> " +
               std::to_string(out.width) + "x" + std::to_string(out.height);
    return out;
  }
  if (is_number) {
    // an edge in pixels, or megapixels for "area" (at most a kMaxEdgePixels square)
    const double hi = type == "area" ? double(kMaxEdgePixels) * kMaxEdgePixels / 1e6 : kMaxEdgePixels;
    const double r = parse_number_text(fraction.empty() ? first : first + "." + fraction, where, 0, hi);
    try {
      return bucket_size(r, type, fam.geometry.alignment, aspect, false, AreaSnaps{});
    } catch (const InputError& e) {
      throw InputError(where + ": " + e.what());
    }
  }
  throw InputError("--resolution: '" + brief_text(arg) + "' is neither WxH (e.g. 832x480) nor a number (e.g. 1024)");
}

int apply_frame_rule(const Family& fam, int frames) { return apply_frame_rule(fam.geometry.frame_rule, frames); }

int apply_frame_rule(const std::string& rule, int frames) {
  if (frames <= 1) return 1;
  if (rule == "8k+1") return ((frames - 1) / 8) * 8 + 1;
  if (rule == "17k+5") {
    int n = frames;
    while (n % 17 != 5) ++n;
    return n;
  }
  return frames;
}

TokenGeometry token_geometry(const Family& fam, int width, int height, int frames, int text_tokens_override) {
  TokenGeometry g;
  const Geometry& geo = fam.geometry;
  g.text_tokens = text_tokens_override >= 0 ? text_tokens_override : fam.text_tokens;
  if (fam.modality == "audio") {
    g.image_tokens = geo.audio_tokens;
    return g;
  }
  int w = width, h = height;
  const bool video = geo.vae_temporal > 0 && frames > 1;
  if (video) {  // the VAE cache trims H and W so that dim / spatial ratio is even (§1.3)
    w = (w / (2 * geo.vae_spatial)) * 2 * geo.vae_spatial;
    h = (h / (2 * geo.vae_spatial)) * 2 * geo.vae_spatial;
  }
  g.latent_width = w / geo.vae_spatial;
  g.latent_height = h / geo.vae_spatial;
  if (video && geo.frame_rule == "17k+5" && frames >= 5) {
    // MiniMax H3's VAE maps 17n+5 frames to 5n+2 latent frames (diffusers transformer_minimax_h3.py, SimpleTuner minimaxh3/packing.py)
    g.latent_frames = (frames - 5) / 17 * 5 + 2;
  } else if (video) {
    g.latent_frames = geo.temporal_causal ? (frames - 1) / geo.vae_temporal + 1
                                          : std::max(1, frames / geo.vae_temporal);
  } else if (geo.vae_temporal > 0) {
    g.latent_frames = 1;
  } else {
    g.latent_frames = std::max(1, frames);  // image models trained on single frames
    if (frames > 1) g.latent_frames = 1;
  }
  const double tw = std::ceil(static_cast<double>(g.latent_width) / geo.patch_spatial);
  const double th = std::ceil(static_cast<double>(g.latent_height) / geo.patch_spatial);
  const double tf = std::ceil(static_cast<double>(g.latent_frames) / geo.patch_temporal);
  // a packed model's clean context frames (FramePack) join the image tokens at the same patch rate
  g.image_tokens = tw * th * (tf + geo.context_latent_frames);
  return g;
}

TrainingSetup default_setup(const Family& fam) {
  TrainingSetup s;
  const ExampleSetup& e = fam.example;
  s.model_id = fam.id;
  s.width = e.width;
  s.height = e.height;
  s.frames = apply_frame_rule(fam, e.frames);
  s.batch = e.batch;
  s.model_type = e.model_type;
  s.lora_type = e.lora_type;
  s.lora_rank = e.lora_rank;
  s.optimizer = e.optimizer;
  s.base_precision = e.base_precision;
  s.ramtorch = e.ramtorch;
  s.sdnq_hadamard = e.sdnq_hadamard;
  s.ramtorch_percent = e.ramtorch_percent;
  s.attention = e.attention;
  s.mixed_precision = e.mixed_precision;
  s.regional_compile = e.regional_compile;
  s.lokr_read = e.lokr_read;
  s.lokr_attention_factor = e.lokr_attention_factor;
  s.lokr_ffn_factor = e.lokr_ffn_factor;
  s.lokr_full_matrix = e.lokr_full_matrix;
  s.lokr_linear_dim = e.lokr_linear_dim;
  s.blocks_to_swap = e.blocks_to_swap;
  s.use_ema = e.use_ema;
  s.ema_on_gpu = e.ema_on_gpu;
  s.notes.push_back("setup of the trainer's example " + (e.name.empty() ? std::string("(none named)") : e.name));
  return s;
}

}  // namespace segadvise
