// Static analyzer: what one block of each kind saves for backward, moves and computes.
//
// Derivation (bf16 activations, e = 2 bytes; "elements per token" below, times e for bytes):
// autograd keeps a tensor when some input that needs a gradient depends on it. With a frozen base
// (LoRA) a base Linear keeps nothing (grad wrt its input needs only the weight); a LoRA branch keeps
// its dropout output and mask (SimpleTuner's lora_dropout default is 0.1: w + w/e elements per
// adapted projection, each projection has its own dropout call); a full fine-tune keeps every
// Linear's input once. Per block kind:
//
//   attention (self, N tokens, width d)  norm input d, q/k RMSNorm inputs 2d, flash-attention saved
//                                        q, k, v, out 4d (the log-sum-exp is heads x 4 bytes, ~0;
//                                        the score matrix is never kept), adapted q,k,v,o inputs
//   cross-attention to T text tokens      norm input d, q-norm d, q and out 2d per query token;
//                                        k, v (2 d_text) and their adapter inputs per text token
//   FFN (hidden f)                        norm input d; GELU keeps its input f; gated units
//                                        (SwiGLU/GEGLU) keep gate, activation output and up: 3f;
//                                        adapted FFN projections add their inputs
//   rest                                  residual/gating bookkeeping: 2d (fp32 residual streams
//                                        and modulation products; fitted per kind by calibration)
//   U-Net ResNet (c channels)             two GroupNorm inputs and two SiLU inputs: 4c, + c rest
//   linear attention (Sana)               ReLU-kernel q, k, v and out 4d, no N^2 term
//
// FLOPs: a Linear of (in, out) costs 2*in*out per token; attention 4*Nq*Nkv*d (QK^T and PV);
// linear attention 4*N*d*head_dim. Weights: attention 4d^2 (+ cross 2d^2 + 2 d d_text),
// GELU FFN 2df, gated FFN 3df, adaLN modulation 6d^2 per stream (mmdit) / 3d^2 (single stream).
// Launches: eager PyTorch launches one or more kernels per op, each costing host time whether the GPU
// is fast or slow; a block whose kernels are small is bound by that host time, not by FLOPs (the
// sweep's small models run as fast on an L40S as on an H100). Counted per forward: attention 24
// (norm, modulation, 4 projections, RoPE and reshapes, SDPA, gate, residual) + 4 for q/k norms,
// cross-attention 15, FFN 8 + its projections, + 5 per LoRA-adapted Linear (dropout, A, B, scale,
// add); ResNet and conv-FFN blocks 12. The time per launch is fitted (calibration/).
// These are estimates the profiler replaces with measured bytes and the calibration scales per kind.
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"

namespace segadvise {

namespace {

struct Acc {
  double attn = 0, ffn = 0, rest = 0;  // elements (per sample)
  double ffn_input = 0;                // elements kept by FFN-only checkpointing
  double matmul_flops = 0, ffn_flops = 0, attn_flops = 0;
  double params = 0, quantizable = 0, lora = 0;
  double modulation = 0;  // of params, not of quantizable: the adaLN modulation Linears (BlockCost::modulation_params)
  // of quantizable, the Linears whose saved tensors are on the FFN side and on the rest (the others
  // are on the attention side): where a weight-only quantizer's upcast copies are kept
  double quantizable_ffn = 0, quantizable_rest = 0;
  double transient = 0;  // elements
  double launches = 0;   // forward kernel launches (see "Launches" in the header comment)
  double linears = 0;    // quantizable Linear layers (one quantized call each per forward)
  double ffn_linears = 0;  // of those, the FFN's (ffn())
  // inputs of quantizable Linear layers (elements), what a quantized Linear keeps for backward
  double lin_in_attn = 0, lin_in_ffn = 0;
  // attention's shape for the kernel tables: sum of flops x log2(keys per query) and x log2(head_dim)
  // over the block's fused attention calls, and the flops of linear-attention kernels (no fused kernel)
  double attn_seq_log = 0, attn_hd_log = 0, lin_attn_flops = 0;
  void fused_attention(double flops, double keys, double hd) {
    attn_flops += flops;
    attn_seq_log += flops * std::log2(std::max(1.0, keys));
    attn_hd_log += flops * std::log2(std::max(1.0, hd));
  }
  void add_attention(const Acc& o) {
    attn_flops += o.attn_flops;
    attn_seq_log += o.attn_seq_log;
    attn_hd_log += o.attn_hd_log;
    lin_attn_flops += o.lin_attn_flops;
  }
};

// LyCORIS factorization of one Linear dimension with factor f (the library's rule as
// docs/sources/simpletuner.md §2.4 states it): (f, dim / f) when f divides dim; otherwise the divisor
// pair whose smaller member is the largest divisor of dim not above f (f = -1: no cap) and not above
// sqrt(dim), the most balanced pair under the cap. Smaller member first.
std::pair<double, double> lokr_factorization(double dimension, int f) {
  const long long dim = std::max(1LL, std::llround(dimension));
  if (f > 0 && dim % f == 0) return {std::min<long long>(f, dim / f), std::max<long long>(f, dim / f)};
  long long m = 1;
  for (long long k = 2; k * k <= dim && (f < 0 || k <= f); ++k)
    if (dim % k == 0) m = k;
  return {static_cast<double>(m), static_cast<double>(dim / m)};
}

struct Training {
  bool full = false;
  bool lycoris = false;
  // LoKr read from the config (TrainingSetup::lokr_*): the attention and FFN factors, w2's form
  bool lokr = false;
  int lokr_attention_f = 0, lokr_ffn_f = 0;
  bool lokr_full = false;
  int lokr_dim = 4;
  int rank = 16;
  double e = 2;  // activation bytes
  double batch = 1;  // samples per step: token counts below are per step, attention runs per sample
  bool attn_targeted = true, text_targeted = false, ffn_targeted = false;

  // elements a trainable path keeps for an input of width w (see header comment): the dropout
  // output (w), its bool mask (w/e) and the adapter's down-projection output (rank)
  double adapter_input(double w) const {
    if (full) return 0;  // counted once per distinct input by the caller
    if (lycoris) return w;
    return w * (1 + 1 / e) + rank;
  }
  // the same for an input that needs no gradient (the text context of cross-attention): dropout
  // records no backward there, so no mask is kept; the adapter still keeps the dropout output
  double adapter_input_const(double w) const {
    if (full) return 0;
    if (lycoris) return w;
    return w + rank;
  }
  // kernels one adapted Linear adds per forward: dropout, A, B, scale, add (PEFT LoRA);
  // LyCORIS builds its delta weight (~4); a full fine-tune adds none
  double adapter_launches() const { return full ? 0 : (lycoris ? kLycorisLaunches : kLoraLaunches); }
  // trainable parameters of the adapter on a Linear (in, out); ffn_side: an FFN Linear (its LoKr factor).
  // A LoKr adapter's own products (bypass mode: the input reshaped to c x d through w2, then w1) are
  // not counted in the step time: counted as matmul FLOPs they fitted the sweep worse (score-check step
  // time p90 68.0% without, 70.5% with), its LoKr steps being slower than their FLOPs say (Kandinsky 5
  // Image at 3.3x the prediction either way: docs/calibration.md)
  double adapter_params(double in, double out, bool ffn_side = false) const {
    if (full) return 0;
    if (lokr) {
      // w1 = a x c, w2 = b x d in full, or b x r + r x d at rank r = linear_dim (w2 is full when
      // full_matrix is set or r >= max(b, d) / 2)
      const int f = ffn_side ? lokr_ffn_f : lokr_attention_f;
      const auto [a, b] = lokr_factorization(out, f);
      const auto [c, d] = lokr_factorization(in, f);
      const bool w2_full = lokr_full || lokr_dim >= std::max(b, d) / 2;
      return a * c + (w2_full ? b * d : lokr_dim * (b + d));
    }
    if (lycoris) return kLycorisParamsPerWidth * (in + out);  // LoKr factor-16 adapters, an estimate
    return rank * (in + out);
  }
  // per-token bookkeeping, in elements: LayerNorm's fp32 mean and rstd (8 bytes), an RMSNorm's
  // rsqrt (one element), attention's fp32 log-sum-exp per head (4 bytes)
  double ln_stats() const { return 8 / e; }
  double lse(double heads) const { return heads * 4 / e; }
};

bool contains_any(const std::vector<std::string>& targets, const std::set<std::string>& names) {
  for (const auto& t : targets)
    if (names.count(t)) return true;
  return false;
}

// Attention widths: queries and the output projection are heads x head_dim wide (`da`, the model
// width d for most families; wider in Cosmos 3 super and MiniMax H3), keys and values kv_heads x
// head_dim (`dkv`, narrower under grouped-query attention). `window` caps the keys each query sees
// (local / sliding-window attention; 0: the whole sequence). With da = dkv = d and no window every
// formula below is the plain multi-head one of the header comment.
struct AttnShape {
  double da = 0, dkv = 0, hd = kDefaultHeadDim, window = 0;
  double keys(double n) const { return window > 0 ? std::min(n, window) : n; }
};

AttnShape attn_shape(const BlockListSpec& b, double d) {
  AttnShape s;
  s.hd = b.head_dim > 0 ? b.head_dim : kDefaultHeadDim;
  s.da = b.heads > 0 ? b.heads * s.hd : d;
  s.dkv = b.kv_heads > 0 ? b.kv_heads * s.hd : s.da;
  s.window = b.attention_window;
  return s;
}

AttnShape plain_shape(double d, double hd) { return AttnShape{d, d, hd, 0}; }

// self-attention over n tokens of width d (joint sequence when the block is joint)
void self_attention(Acc& a, const Training& t, double n, double d, const AttnShape& h, bool qk_norm,
                    bool projections_targeted, bool linear_kernel = false) {
  const double da = h.da, dkv = h.dkv;
  a.attn += n * (d + t.ln_stats());                      // the norm's input
  if (qk_norm) a.attn += n * (da + 1 + dkv + 1);         // q and k before their RMSNorm, and its rsqrt
  a.attn += n * (2 * da + 2 * dkv);                      // the kernel's q, k, v, out
  if (!linear_kernel) a.attn += n * t.lse(da / h.hd);
  if (t.full) a.attn += n * (d + da);  // qkv input and out-proj input, once each
  if (projections_targeted) a.attn += n * (3 * t.adapter_input(d) + t.adapter_input(da));
  a.matmul_flops += n * 2 * (2 * d * da + 2 * d * dkv);
  a.lin_in_attn += n * (d + da);  // q/k/v share one input; the out projection has its own
  if (linear_kernel) {
    a.attn_flops += 4 * n * da * h.hd;
    a.lin_attn_flops += 4 * n * da * h.hd;
  } else {
    a.fused_attention(4 * n * h.keys(n / t.batch) * da, h.keys(n / t.batch), h.hd);
  }
  a.params += 2 * d * da + 2 * d * dkv;
  a.quantizable += 2 * d * da + 2 * d * dkv;
  a.linears += 4;  // q, k, v, out
  if (projections_targeted)
    a.lora += t.adapter_params(d, da) + 2 * t.adapter_params(d, dkv) + t.adapter_params(da, d);
  a.launches += kAttentionLaunches + (qk_norm ? kQkNormLaunches : 0) + (projections_targeted ? 4 * t.adapter_launches() : 0);
}

void self_attention(Acc& a, const Training& t, double n, double d, double hd, bool qk_norm, bool projections_targeted,
                    bool linear_kernel = false) {
  self_attention(a, t, n, d, plain_shape(d, hd), qk_norm, projections_targeted, linear_kernel);
}

// queries: nq tokens of width d; keys/values projected from nkv tokens of width dsrc
// kv_grad: the keys/values' source needs a gradient (another stream), not a constant text context
void cross_attention(Acc& a, const Training& t, double nq, double nkv, double d, double dsrc, const AttnShape& h,
                     bool qk_norm, bool kv_grad = false) {
  const double da = h.da, dkv = h.dkv;
  a.attn += nq * (d + t.ln_stats());                             // the norm's input
  if (qk_norm) a.attn += nq * (da + 1) + nkv * (dkv + 1);       // q and k before RMSNorm
  a.attn += nq * (2 * da + t.lse(da / h.hd)) + nkv * 2 * dkv;   // kernel: q, out; k, v
  if (t.full) a.attn += nq * (d + da) + nkv * dsrc;
  if (t.attn_targeted)
    a.attn += nq * (t.adapter_input(d) + t.adapter_input(da)) +
              nkv * 2 * (kv_grad ? t.adapter_input(dsrc) : t.adapter_input_const(dsrc));
  a.matmul_flops += nq * 2 * 2 * d * da + nkv * 2 * 2 * dsrc * dkv;
  a.lin_in_attn += nq * (d + da) + nkv * dsrc;  // q and out inputs per query token, k/v input per text token
  a.fused_attention(4 * nq * (nkv / t.batch) * da, nkv / t.batch, h.hd);
  a.params += 2 * d * da + 2 * dsrc * dkv;
  a.quantizable += 2 * d * da + 2 * dsrc * dkv;
  a.linears += 4;  // q, k, v, out
  if (t.attn_targeted) a.lora += t.adapter_params(d, da) + t.adapter_params(da, d) + 2 * t.adapter_params(dsrc, dkv);
  a.launches += kCrossAttentionLaunches + (t.attn_targeted ? 4 * t.adapter_launches() : 0);
}

void cross_attention(Acc& a, const Training& t, double nq, double nkv, double d, double dkv, double hd, bool qk_norm,
                     bool kv_grad = false) {
  cross_attention(a, t, nq, nkv, d, dkv, plain_shape(d, hd), qk_norm, kv_grad);
}

void ffn(Acc& a, const Training& t, double n, double d, double f, const std::string& act, int experts = 0,
         int active = 0, double shared_f = 0) {
  if (f <= 0 || act == "none") return;
  const bool gated = act == "swiglu" || act == "geglu" || act == "glumbconv";
  const double in_mult = gated ? 2 : 1;  // gated units project to 2f
  // adapted input projections: SwiGLU has two (w1, w3), GEGLU one fused projection to 2f
  const double in_adapters = act == "swiglu" ? 2 : 1;
  auto unit = [&](double fh, double tokens_share) {
    const double tok = n * tokens_share;
    a.ffn += tok * (gated ? 3 * fh : fh);
    if (t.full) a.ffn += tok * (d + fh);
    if (t.ffn_targeted) a.ffn += tok * (t.adapter_input(d) * in_adapters + t.adapter_input(fh));
    const double fl = tok * 2 * (in_mult + 1) * d * fh;
    a.lin_in_ffn += tok * (d + fh);  // up/gate input and down input
    a.matmul_flops += fl;
    a.ffn_flops += fl;
    a.transient = std::max(a.transient, tok * fh * in_mult);
  };
  a.ffn += n * (d + t.ln_stats());  // norm input
  a.ffn_input += n * d;
  a.launches += kFfnLaunches + in_mult + (t.ffn_targeted ? (in_mult + 1) * t.adapter_launches() : 0);
  const double unit_linears = in_adapters + 1;  // input projection(s) and the output projection
  if (experts > 0) {
    unit(f, active);  // every token runs `active` routed experts
    if (shared_f > 0) unit(shared_f, 1);
    a.ffn += n * experts;  // router logits
    a.params += experts * (in_mult + 1) * d * f + (shared_f > 0 ? (in_mult + 1) * d * shared_f : 0) + d * experts;
    a.quantizable += experts * (in_mult + 1) * d * f + (shared_f > 0 ? (in_mult + 1) * d * shared_f : 0);
    a.quantizable_ffn += experts * (in_mult + 1) * d * f + (shared_f > 0 ? (in_mult + 1) * d * shared_f : 0);
    a.linears += (experts + (shared_f > 0 ? 1 : 0)) * unit_linears;
    a.ffn_linears += (experts + (shared_f > 0 ? 1 : 0)) * unit_linears;
    if (t.ffn_targeted) a.lora += experts * (in_mult * t.adapter_params(d, f, true) + t.adapter_params(f, d, true));
  } else {
    unit(f, 1);
    a.params += (in_mult + 1) * d * f;
    a.quantizable += (in_mult + 1) * d * f;
    a.quantizable_ffn += (in_mult + 1) * d * f;
    a.linears += unit_linears;
    a.ffn_linears += unit_linears;
    if (t.ffn_targeted) a.lora += in_mult * t.adapter_params(d, f, true) + t.adapter_params(f, d, true);
  }
}

// The dimensions every block kind's accounting shares: widths (d, ffn hidden f, head_dim hd, text
// width dt), token counts (this list's stream, text, audio, packed rows) and the attention shape.
struct BlockDims {
  double d = 0, f = 0, hd = 0, dt = 0;
  double n_stream = 0, n_txt = 0, audio_tokens = 0, packed_rows = 0;
  AttnShape shape;
};

// the audio stream: half the width, its own self/cross attention and FFN, and the
// audio<->video cross attention (LTX-2 layout); audio_tokens from the family's geometry.
void audio_stream(Acc& a, const BlockListSpec& b, const Training& t, const BlockDims& k, double n) {
  const double d = k.d, hd = k.hd, n_txt = k.n_txt, audio_tokens = k.audio_tokens;
  const double da = k.dt, fa = k.f / 2;
  Acc audio;
  self_attention(audio, t, audio_tokens, da, hd, true, t.attn_targeted);
  cross_attention(audio, t, audio_tokens, n_txt, da, da, hd, true);
  ffn(audio, t, audio_tokens, da, fa, b.ffn_act);
  cross_attention(a, t, n, audio_tokens, d, da, hd, true, true);
  cross_attention(audio, t, audio_tokens, n, da, d, hd, true, true);
  a.attn += audio.attn + audio.ffn;
  a.matmul_flops += audio.matmul_flops;
  a.lin_in_attn += audio.lin_in_attn + audio.lin_in_ffn;
  a.add_attention(audio);
  a.params += audio.params;
  a.quantizable += audio.quantizable;
  a.linears += audio.linears;
  a.lora += audio.lora;
  a.launches += audio.launches;
}

// dit_cross and audio_video_dit
void dit_cross_block(Acc& a, const BlockListSpec& b, const Training& t, const BlockDims& k) {
  const double d = k.d, f = k.f;
  const double n = list_tokens(b, k.n_stream, k.n_txt);
  self_attention(a, t, n, d, k.shape, true, t.attn_targeted);
  // Wan's cross-attention RMS-normalizes q and k too; the text enters projected to the block width
  if (b.cross_attention)
    cross_attention(a, t, n, k.n_txt, d, b.kind == BlockKind::DitCross ? k.dt : d, k.shape, true);
  // Wan S2V: audio-injection cross-attention from the video tokens to the audio features (projected
  // to the block width), in the blocks the family lists with audio_cross_attention
  if (b.audio_cross_attention) cross_attention(a, t, n, k.audio_tokens, d, d, k.shape, true);
  ffn(a, t, n, d, f, b.ffn_act, b.moe_experts, b.moe_active, b.moe_shared_hidden);
  a.params += 0;  // modulation comes from a shared table (Wan, PixArt, LTX)
  if (traits(b.kind).audio_stream) audio_stream(a, b, t, k, n);
}

void dit_self_block(Acc& a, const BlockListSpec& b, const Training& t, const BlockDims& k) {
  const double d = k.d;
  const double n = list_tokens(b, k.n_stream, k.n_txt) + (b.tokens == "joint" ? k.packed_rows : 0);
  self_attention(a, t, n, d, k.shape, true, t.attn_targeted);
  if (b.cross_attention) cross_attention(a, t, n, k.n_txt, d, k.dt, k.shape, false);
  ffn(a, t, n, d, k.f, b.ffn_act, b.moe_experts, b.moe_active, b.moe_shared_hidden);
  a.params += 4 * d * d;  // adaLN modulation
  a.modulation += 4 * d * d;
}

// two streams with their own weights, one joint attention over n_img + n_txt
void mmdit_double_block(Acc& a, const BlockListSpec& b, const Training& t, const BlockDims& k) {
  const double d = k.d, f = k.f, dt = k.dt, n_stream = k.n_stream, n_txt = k.n_txt;
  const AttnShape& shape = k.shape;
  const double n = n_stream + n_txt;
  Acc img, txt;
  self_attention(img, t, n_stream, d, shape, true, t.attn_targeted);
  self_attention(txt, t, n_txt, dt, dt == d ? shape : plain_shape(dt, k.hd), true, t.text_targeted);
  a.attn = img.attn + txt.attn;
  a.launches = img.launches + txt.launches;
  a.lin_in_attn = img.lin_in_attn + txt.lin_in_attn;
  a.matmul_flops = img.matmul_flops + txt.matmul_flops;
  // joint attention over the concatenated sequence
  a.attn_flops = a.attn_seq_log = a.attn_hd_log = a.lin_attn_flops = 0;
  a.fused_attention(4 * n * shape.keys(n / t.batch) * shape.da, shape.keys(n / t.batch), shape.hd);
  a.params = img.params + txt.params;
  a.quantizable = img.quantizable + txt.quantizable;
  a.linears = img.linears + txt.linears;
  a.lora = img.lora + txt.lora;
  ffn(a, t, n_stream, d, f, b.ffn_act, b.moe_experts, b.moe_active, b.moe_shared_hidden);
  Training text_training = t;
  text_training.ffn_targeted = t.ffn_targeted && t.text_targeted;
  ffn(a, text_training, n_txt, dt, f * dt / d, b.ffn_act);
  a.params += 6 * d * d + 6 * dt * dt;  // adaLN modulation per stream
  a.modulation += 6 * d * d + 6 * dt * dt;
}

// fused qkv + MLP-in projection, parallel attention and MLP, one output projection over the
// concatenation (Flux single block); adapters on q, k, v (and the fused proj where targeted)
void single_stream_block(Acc& a, const BlockListSpec& b, const Training& t, const BlockDims& k) {
  const double d = k.d, f = k.f, hd = k.hd;
  const double n = k.n_stream + k.n_txt;
  a.attn += n * (d + t.ln_stats() + 2 * (d + 1) + 4 * d + t.lse(d / hd));
  if (t.attn_targeted) a.attn += n * 3 * t.adapter_input(d);
  if (t.full) a.attn += n * (d + d + f);
  a.fused_attention(4 * n * (n / t.batch) * d, n / t.batch, hd);
  const bool gated = b.ffn_act == "swiglu" || b.ffn_act == "geglu";
  const double f_in = gated ? 2 * f : f;
  a.ffn += n * (gated ? 3 * f : f);
  a.ffn_input += n * d;
  if (t.ffn_targeted) {
    a.ffn += n * t.adapter_input(d);        // the MLP input projection's adapter
    a.rest += n * t.adapter_input(d + f);   // proj_out's adapter over cat(attention, MLP)
  }
  const double proj_in = d * (3 * d + f_in), proj_out = (d + f) * d;
  a.lin_in_attn += n * (d + d);  // fused input projection, and the attention half of the output's input
  a.lin_in_ffn += n * f;
  a.matmul_flops += n * 2 * (proj_in + proj_out);
  a.ffn_flops += n * 2 * (d * f_in + f * d);
  a.params += proj_in + proj_out + 3 * d * d;
  a.modulation += 3 * d * d;  // adaLN modulation
  a.quantizable += proj_in + proj_out;
  a.quantizable_ffn += d * f_in + f * d;  // the MLP's share of the fused projections
  a.linears += 5;  // to_q, to_k, to_v, proj_mlp, proj_out (diffusers' single-stream block)
  if (t.attn_targeted) a.lora += 3 * t.adapter_params(d, d);
  // the attention's launches (kAttentionLaunches); its MLP shares the fused projections
  a.launches += kAttentionLaunches + (t.attn_targeted ? 3 * t.adapter_launches() : 0) + (t.ffn_targeted ? 2 * t.adapter_launches() : 0);
  if (t.ffn_targeted) a.lora += t.adapter_params(d, 3 * d + f_in, true) + t.adapter_params(d + f, d, true);
  a.transient = n * f_in;
}

void linear_dit_block(Acc& a, const BlockListSpec& b, const Training& t, const BlockDims& k) {
  const double d = k.d, f = k.f, hd = k.hd;
  const double n = k.n_stream;
  self_attention(a, t, n, d, hd, false, t.attn_targeted, true);
  if (b.cross_attention) cross_attention(a, t, n, k.n_txt, d, k.dt, hd, false);
  // GLUMBConv: 1x1 conv to 2f, SiLU, depthwise 3x3, GLU to f, 1x1 back to d. A convolution keeps
  // its input even with a frozen weight (its backward computes input and weight gradients in one
  // formula): norm input d (+ stats), 1x1 input d, SiLU input 2f, depthwise input 2f, depthwise
  // output 2f (both GLU halves are views of it), SiLU(gate) f, last 1x1 input f.
  a.ffn += n * (2 * d + t.ln_stats() + 8 * f);
  a.ffn_input += n * d;
  const double fl = n * 2 * (2 * d * f + 9 * 2 * f + f * d);
  a.lin_in_ffn += n * (d + f);
  a.matmul_flops += fl;
  a.ffn_flops += fl;
  a.params += 3 * d * f + 18 * f;
  a.launches += kConvBlockLaunches;
  a.quantizable += 3 * d * f;
  a.quantizable_ffn += 3 * d * f;
  a.transient = std::max(a.transient, n * 2 * f);
}

void unet_res_block(Acc& a, const Training& t, const BlockDims& k) {
  const double d = k.d;
  const double n = k.n_stream;
  // two GroupNorm inputs, two SiLU inputs, two 3x3 convolution inputs (kept even with frozen
  // weights); the GroupNorm statistics are per group, negligible
  a.rest += n * 6 * d;
  if (t.full) a.rest += n * 2 * d;
  a.matmul_flops += n * 2 * 18 * d * d;
  a.params += 18 * d * d + kUnetTimeEmbeddingWidth * d;  // two 3x3 convolutions, the time projection
  a.launches += kConvBlockLaunches;
  a.quantizable += kUnetTimeEmbeddingWidth * d;  // convolutions are not quantized by most backends; the time projection is
  a.quantizable_rest += kUnetTimeEmbeddingWidth * d;
  a.linears += 1;
  a.transient = n * d * 2;
}

void unet_attn_block(Acc& a, const BlockListSpec& b, const Training& t, const BlockDims& k) {
  const double d = k.d, hd = k.hd;
  const double n = k.n_stream;
  // the Transformer2DModel's GroupNorm and proj_in/proj_out run once per model, outside the
  // checkpointed transformer blocks: their weights are counted here, their activations are not
  a.matmul_flops += n * 2 * 2 * d * d;
  a.lin_in_attn += n * 2 * d;
  a.params += 2 * d * d;
  a.quantizable += 2 * d * d;
  a.linears += 2;  // proj_in, proj_out
  self_attention(a, t, n, d, hd, false, t.attn_targeted);
  if (b.cross_attention) cross_attention(a, t, n, k.n_txt, d, k.dt, hd, false);
  ffn(a, t, n, d, k.f, b.ffn_act);
}

// packed_rows: tokens a video family packs into its joint sequence besides text and video (MiniMax H3's
// audio and keyframe rows: the family's audio_tokens); they join every joint dit_self block
Acc analyze_block(const BlockListSpec& b, const Training& t, double n_img, double n_txt, double audio_tokens,
                  double packed_rows) {
  Acc a;
  BlockDims k;
  k.d = b.hidden;
  k.f = b.ffn_hidden;
  k.hd = b.head_dim > 0 ? b.head_dim : kDefaultHeadDim;
  k.dt = b.text_hidden > 0 ? b.text_hidden : k.d;
  k.n_stream = n_img * b.token_scale;
  k.n_txt = n_txt;
  k.audio_tokens = audio_tokens;
  k.packed_rows = packed_rows;
  k.shape = attn_shape(b, k.d);
  switch (b.kind) {
  case BlockKind::DitCross:
  case BlockKind::AudioVideoDit: dit_cross_block(a, b, t, k); break;
  case BlockKind::DitSelf: dit_self_block(a, b, t, k); break;
  case BlockKind::MmditDouble: mmdit_double_block(a, b, t, k); break;
  case BlockKind::SingleStream: single_stream_block(a, b, t, k); break;
  case BlockKind::LinearDit: linear_dit_block(a, b, t, k); break;
  case BlockKind::UnetRes: unet_res_block(a, t, k); break;
  case BlockKind::UnetAttn: unet_attn_block(a, b, t, k); break;
  }
  if (b.params_per_block > 0 && a.params > 0) {
    const double s = b.params_per_block / a.params;
    a.quantizable *= s;
    a.quantizable_ffn *= s;
    a.quantizable_rest *= s;
    a.params = b.params_per_block;
  }
  return a;
}

// Quanto's name filter over the family's recorded module names (BlockCost::modulation_kept_by_quanto):
// SimpleTuner's exclude patterns for the family, matched (fnmatch, as quanto's quantize does) against
// full module names, here "<list>.0.<module>"; with no list Quanto converts every Linear, the
// modulation too.
struct QuantizerNameFilters {
  const Family& fam;
  explicit QuantizerNameFilters(const Family& f) : fam(f) {}
  bool excluded(const std::string& list, const std::string& module) const {
    const std::string name = list + ".0." + module;
    for (const auto& p : fam.quanto_excludes)
      if (fnmatch(p.c_str(), name.c_str(), 0) == 0) return true;
    return false;
  }
  bool modulation_kept_by_quanto(const std::string& list) const {
    if (!fam.quanto_excludes_known) return true;
    if (fam.quanto_excludes.empty()) return false;  // no list: every Linear
    return fam.modulation_module.empty() || excluded(list, fam.modulation_module);
  }
  bool ffn_kept_by_quanto(const std::string& list) const {
    return fam.quanto_excludes_known && !fam.ffn_module.empty() && excluded(list, fam.ffn_module);
  }
};

// The published parameter count wins over the generic modulation estimate (adaLN 4d^2 per dit_self
// block, 6d^2 per mmdit stream, 3d^2 per single-stream block: the only non-quantizable weights the
// analyzer derives). Families whose modulation is small or shared (Chroma's pruned table, Z-Image,
// Ideogram's 512-wide and Lumina2's 1024-wide adaLN inputs, OmniGen's none) would otherwise carry
// billions of phantom bf16 weights. When the blocks exceed the published total, their
// non-quantizable part shrinks by one factor (to zero at most); returns the new block total.
double fit_modulation_to_published(BlockChain& chain, double published, double block_params) {
  if (published <= 0 || block_params <= published) return block_params;
  double quantizable = 0;
  for (const auto& b : chain.blocks) quantizable += b.quantizable_params;
  const double modulation = block_params - quantizable;
  if (modulation <= 0) return block_params;
  const double f = std::max(0.0, published - quantizable) / modulation;
  double total = 0;
  for (auto& b : chain.blocks) {
    b.params = b.quantizable_params + (b.params - b.quantizable_params) * f;
    b.modulation_params *= f;
    total += b.params;
  }
  return total;
}

}  // namespace

LoraCoverage lora_coverage(const Family& fam) {
  LoraCoverage c;
  const auto& targets = fam.lora_targets;
  c.attention = targets.empty() ||
                contains_any(targets, {"to_q", "to_k", "to_v", "to_qkv", "qkv", "to_query", "to_key", "to_value",
                                       "attn.to_q", "qkv_image", "q_linear", "add_q_proj"});
  c.text = contains_any(targets, {"add_q_proj", "add_k_proj", "add_v_proj", "to_add_out", "qkv_text"});
  c.ffn = contains_any(targets, {"w1", "w2", "w3", "w12", "ff_in", "ff_out", "proj_mlp", "to_qkv_mlp_proj",
                                 "ff.net.0.proj", "ff.net.2", "net.0.proj", "mlp"});
  return c;
}

bool is_joint(const BlockListSpec& spec) {
  return traits(spec.kind).joint_tokens || spec.tokens == "joint";
}

double list_tokens(const BlockListSpec& spec, double image_tokens, double text_tokens) {
  if (spec.tokens == "text" && !traits(spec.kind).joint_tokens) return text_tokens;
  return is_joint(spec) ? image_tokens + text_tokens : image_tokens;
}

namespace {

// The first of `stages` pipeline stages (TrainingSetup::pipeline_stages): its ceil(n / stages) blocks,
// the saved tensors and boundaries of the micro-batches in flight on it
void keep_first_stage(BlockChain& chain, int stages, int micro_batches) {
  const std::size_t n = chain.blocks.size();
  const std::size_t keep = std::max<std::size_t>(1, (n + static_cast<std::size_t>(stages) - 1) / static_cast<std::size_t>(stages));
  if (keep < n) chain.blocks.resize(keep);
  const double in_flight = std::max(1, std::min(stages, micro_batches));
  for (BlockCost& b : chain.blocks) {
    b.saved_attention_bytes *= in_flight;
    b.saved_ffn_bytes *= in_flight;
    b.saved_rest_bytes *= in_flight;
    b.boundary_bytes *= in_flight;
  }
  chain.outside_activation_bytes *= in_flight;
}

}  // namespace

BlockChain analyze(const Family& fam, const TrainingSetup& setup) {
  BlockChain chain;
  chain.model_id = fam.id;
  TokenGeometry g = token_geometry(fam, setup.width, setup.height, setup.frames, setup.text_tokens);
  // control/reference latents appended to the image tokens (FLUX.1 Kontext, Qwen-Image-Edit)
  if (setup.reference_images > 0) g.image_tokens *= 1 + setup.reference_images;
  const double batch = std::max(1, setup.batch);
  chain.tokens_image = g.image_tokens;
  chain.tokens_text = g.text_tokens;
  const double e = weight_dtype_bytes(setup);
  chain.activation_dtype_bytes = e;
  // TorchAO and fp8-native never convert RamTorch modules (SimpleTuner training/quantisation/__init__.py)
  if (precision_info(setup.base_precision).quantized && !setup.ramtorch) chain.quantized_kernel = precision_key(setup);

  Training t;
  t.full = setup.model_type == ModelType::Full;
  t.lycoris = setup.lora_type == LoraType::Lycoris;
  t.rank = std::max(1, setup.lora_rank);
  t.e = e;
  t.batch = batch;
  const LoraCoverage cov = lora_coverage(fam);
  t.attn_targeted = cov.attention;
  t.text_targeted = cov.text;
  t.ffn_targeted = cov.ffn;
  if (t.lycoris && setup.lokr_read) {
    // LyCORIS targets come only from its apply_preset (§2.4), not the family's PEFT targets: the
    // attention classes hold the text stream's projections of joint blocks too
    t.lokr = true;
    t.lokr_attention_f = setup.lokr_attention_factor;
    t.lokr_ffn_f = setup.lokr_ffn_factor;
    t.lokr_full = setup.lokr_full_matrix;
    t.lokr_dim = std::max(1, setup.lokr_linear_dim);
    t.attn_targeted = t.text_targeted = t.lokr_attention_f != 0;
    t.ffn_targeted = t.lokr_ffn_f != 0;
  }

  const double n_img = g.image_tokens * batch;
  const double n_txt = g.text_tokens * batch;
  double skip_stack = 0, skip_peak = 0, block_params = 0;
  int global = 0, checkpointable_count = 0;
  // a weight-only quantizer's upcast copies (BlockCost::upcast_weight_attention_bytes): every converted
  // Linear's weight at the activation dtype, on the side its saved tensors are on
  const bool upcast = precision_info(setup.base_precision).upcast_weight && !setup.ramtorch;
  const QuantizerNameFilters filters(fam);
  std::map<std::string, int> list_counter;
  for (const auto& spec : fam.block_lists) {
    const double audio = fam.geometry.audio_tokens * batch;
    const double packed = fam.modality == "video" && spec.kind == BlockKind::DitSelf && spec.tokens == "joint" ? audio : 0;
    const Acc a = analyze_block(spec, t, n_img, n_txt, audio, packed);
    const double n_stream = n_img * spec.token_scale;
    // the state entering the block: the stream (joint lists: image and text tokens in one tensor;
    // double-stream blocks: two tensors, the text one text_hidden wide; LTX-2: the audio stream too)
    const double dt = spec.text_hidden > 0 ? spec.text_hidden : spec.hidden;
    double hidden_state = traits(spec.kind).text_stream ? n_stream * spec.hidden + n_txt * dt
                                                        : list_tokens(spec, n_stream, n_txt) * spec.hidden;
    if (traits(spec.kind).audio_stream) hidden_state += fam.geometry.audio_tokens * batch * dt;
    hidden_state += packed * spec.hidden;
    hidden_state *= e;
    const bool modulation_kept_by_quanto = filters.modulation_kept_by_quanto(spec.name);
    const bool ffn_kept_by_quanto = filters.ffn_kept_by_quanto(spec.name);
    for (int i = 0; i < spec.count; ++i, ++global) {
      BlockCost b;
      b.list = spec.name;
      b.index = i;
      b.kind = to_string(spec.kind);
      b.checkpointable = spec.checkpointed;
      if (b.checkpointable) {
        b.list_position = list_counter[spec.name]++;
        b.global_position = checkpointable_count++;
      }
      b.attention_offloadable = fam.checkpointing.attention_offload && traits(spec.kind).attention;
      b.has_ffn_boundary = traits(spec.kind).attention;
      b.saved_attention_bytes = a.attn * e;
      b.saved_ffn_bytes = a.ffn * e;
      b.saved_rest_bytes = a.rest * e;
      b.ffn_input_bytes = a.ffn_input * e;
      // skip tensors alive when the block starts travel with the checkpoint state (ZLab I1)
      b.boundary_bytes = hidden_state + skip_stack;
      b.carried_skip_bytes = skip_stack;
      b.transient_bytes = std::max(a.transient * e, hidden_state);
      b.matmul_flops = a.matmul_flops;
      b.ffn_matmul_flops = a.ffn_flops;
      b.attention_flops = a.attn_flops;
      const double fused = a.attn_flops - a.lin_attn_flops;
      b.linear_attention_flops = a.lin_attn_flops;
      b.attention_keys = fused > 0 ? std::exp2(a.attn_seq_log / fused) : 0;
      b.head_dim = fused > 0 ? std::exp2(a.attn_hd_log / fused) : 0;
      b.params = a.params;
      b.quantizable_params = a.quantizable;
      b.quantizable_ffn_params = a.quantizable_ffn;
      b.modulation_params = a.modulation;
      b.modulation_kept_by_quanto = modulation_kept_by_quanto;
      b.ffn_kept_by_quanto = ffn_kept_by_quanto;
      b.ffn_linears = a.ffn_linears;
      b.lora_params = a.lora;
      b.launches = a.launches;
      b.quantizable_linears = a.linears;
      b.linear_input_attention_bytes = a.lin_in_attn * e;
      b.linear_input_ffn_bytes = a.lin_in_ffn * e;
      if (spec.skip == "push") b.skip_push_bytes = n_stream * spec.hidden * e;
      if (spec.skip == "pop") b.skip_pop_bytes = std::min(skip_stack, n_stream * spec.hidden * e);
      skip_stack += b.skip_push_bytes - b.skip_pop_bytes;
      skip_peak = std::max(skip_peak, skip_stack);
      block_params += b.params;
      if (upcast) {
        b.upcast_weight_attention_bytes = std::max(0.0, a.quantizable - a.quantizable_ffn - a.quantizable_rest) * e;
        b.upcast_weight_ffn_bytes = a.quantizable_ffn * e;
        b.upcast_weight_rest_bytes = a.quantizable_rest * e;
      }
      chain.blocks.push_back(b);
    }
  }
  const double d0 = fam.block_lists.front().hidden;
  // outside the blocks: patch embedding, final norm/projection, loss on the latent, plus the skip
  // tensors held between their push and pop: a few hidden-sized tensors per token
  chain.outside_activation_bytes = 4 * n_img * d0 * e + skip_peak;
  block_params = fit_modulation_to_published(chain, fam.params_published, block_params);
  // the converted parameters beyond the quantizable Linears (the modulation, as fitted to the
  // published count above, or a whole-block plan's rest): their copies with the rest
  if (upcast)
    for (BlockCost& b : chain.blocks) b.upcast_weight_rest_bytes += (converted_params(b, setup) - b.quantizable_params) * e;
  chain.outside_params = std::max(0.0, fam.params_published - block_params);
  chain.outside_matmul_flops = 2 * n_img * 2 * d0 * kPatchFeatures;
  if (setup.pipeline_stages > 1) keep_first_stage(chain, setup.pipeline_stages, setup.pipeline_micro_batches);
  return chain;
}

}  // namespace segadvise
