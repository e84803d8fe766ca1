// Block archetypes (see archetypes.hpp). Conventions used by every builder:
//
// - Base weights are frozen, random, in the run's dtype, without biases (the analyzer's weight count
//   has none); the text context, the timestep embedding and the modulation table are frozen
//   constants. A base Linear with a frozen weight keeps nothing for backward (grad wrt its input
//   needs only the weight).
// - A LoRA adapter is PEFT's: y = W x + B(A(dropout(x))) * alpha/r. Dropout runs as
//   at::native_dropout, the fused kernel PyTorch uses on CUDA, which keeps a bool mask (1 byte per
//   element); A keeps the dropout output (its weight trains) and B keeps A's output (r per token).
//   On CPU plain at::dropout would keep a mask in the activation dtype instead; the trainer runs on
//   CUDA, so the CUDA behaviour is the one to measure.
// - Norms: LayerNorm without affine (keeps its input, plus fp32 mean and rstd per token);
//   the q/k RMSNorm is x * rsqrt(mean(x^2) + eps) * w (keeps x and the per-token rsqrt).
// - Modulation (adaLN): x * (1 + scale) + shift and x + gate * y with per-sample vectors that do
//   not need a gradient: autograd keeps only the small vectors.
// - Attention keeps what flash-style kernels keep: q, k, v, the output and the log-sum-exp, never the
//   score matrix (FlashAttention below recomputes scores in backward; on CUDA with LibTorch >= 2
//   the fused kernel runs).
#include "segadvise/profiler/archetypes.hpp"

#include <array>
#include <cmath>
#include <set>

#include "segadvise/families/analyzer.hpp"

namespace segadvise::profiler {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {
thread_local Side g_side = Side::Rest;
thread_local bool g_recompute = false;
}  // namespace

Side current_side() { return g_side; }
void set_current_side(Side s) { g_side = s; }
bool in_recompute() { return g_recompute; }
void set_in_recompute(bool v) { g_recompute = v; }

const char* side_name(Side s) {
  switch (s) {
    case Side::Attention:
      return "attention";
    case Side::Ffn:
      return "ffn";
    default:
      return "rest";
  }
}

bool is_scratch(const std::string& slot) { return !slot.empty() && slot[0] == '_'; }

State boundary_of(const State& s) {
  State b;
  for (const auto& [k, v] : s)
    if (!is_scratch(k) && v.defined()) b[k] = v;
  return b;
}

double state_bytes(const State& s) {
  std::set<const void*> seen;
  double bytes = 0;
  for (const auto& [k, v] : s) {
    if (is_scratch(k) || !v.defined()) continue;
    const auto* impl = v.storage().unsafeGetStorageImpl();
    if (seen.insert(impl).second) bytes += static_cast<double>(v.storage().nbytes());
  }
  return bytes;
}

State Block::forward(const State& in) const {
  State s = in;
  const Side saved_side = current_side();
  for (const auto& p : parts) {
    set_current_side(p.side);
    for (auto& [k, v] : p.fn(s)) s[k] = v;
  }
  set_current_side(saved_side);
  return boundary_of(s);
}

double Block::frozen_params() const {
  double n = 0;
  for (const auto& t : frozen)
    if (t.dim() == 2 || t.dim() == 4) n += static_cast<double>(t.numel());
  return n;
}

double Block::trainable_params() const {
  double n = 0;
  for (const auto& t : trainable) n += static_cast<double>(t.numel());
  return n;
}

// ---------------------------------------------------------------------------------------------
// Attention kernels

namespace {

std::string g_attention_backend = "segadvise flash-style (CPU, recompute in backward)";

// Scores of one head chunk are materialised in forward and backward only (transient), at most
// about kScoreChunkBytes at a time: a CPU stand-in for a flash kernel's tiling.
constexpr double kScoreChunkBytes = 64.0 * 1024 * 1024;

int head_chunk(int64_t b, int64_t h, int64_t nq, int64_t nk) {
  const double per_head = static_cast<double>(b) * nq * nk * 4.0;
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(h, static_cast<int64_t>(kScoreChunkBytes / per_head))));
}

// [B, N, H*hd] -> [B, H, N, hd] (a view)
Tensor heads_view(const Tensor& x, int64_t heads) {
  const auto b = x.size(0), n = x.size(1), hd = x.size(2) / heads;
  return x.view({b, n, heads, hd}).transpose(1, 2);
}

struct FlashAttention : public torch::autograd::Function<FlashAttention> {
  static Tensor forward(AutogradContext* ctx, Tensor q, Tensor k, Tensor v, int64_t heads) {
    const auto b = q.size(0), nq = q.size(1), nk = k.size(1);
    const auto hd = q.size(2) / heads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    auto qh = heads_view(q, heads), kh = heads_view(k, heads), vh = heads_view(v, heads);
    auto out = torch::empty({b, heads, nq, hd}, q.options());
    auto lse = torch::empty({b, heads, nq}, q.options().dtype(torch::kFloat));
    const int chunk = head_chunk(b, heads, nq, nk);
    for (int64_t h0 = 0; h0 < heads; h0 += chunk) {
      const int64_t h1 = std::min<int64_t>(heads, h0 + chunk);
      auto s = torch::matmul(qh.slice(1, h0, h1), kh.slice(1, h0, h1).transpose(-1, -2)).to(torch::kFloat) * scale;
      auto l = torch::logsumexp(s, -1, true);
      auto p = (s - l).exp_();
      out.slice(1, h0, h1).copy_(torch::matmul(p.to(q.scalar_type()), vh.slice(1, h0, h1)));
      lse.slice(1, h0, h1).copy_(l.squeeze(-1));
    }
    Tensor o = out.transpose(1, 2).reshape({b, nq, heads * hd});
    ctx->saved_data["heads"] = heads;
    ctx->save_for_backward({q, k, v, o, lse});
    return o;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor &q = saved[0], &k = saved[1], &v = saved[2], &o = saved[3], &lse = saved[4];
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const auto b = q.size(0), nq = q.size(1), nk = k.size(1);
    const auto hd = q.size(2) / heads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    Tensor dout = grads[0].contiguous();
    auto qh = heads_view(q, heads), kh = heads_view(k, heads), vh = heads_view(v, heads);
    auto doh = heads_view(dout, heads), oh = heads_view(o, heads);
    auto dq = torch::empty({b, heads, nq, hd}, q.options());
    auto dk = torch::empty({b, heads, nk, hd}, k.options());
    auto dv = torch::empty({b, heads, nk, hd}, v.options());
    // D_i = sum_j dO_ij O_ij (the softmax backward's row term)
    auto d_row = (doh.to(torch::kFloat) * oh.to(torch::kFloat)).sum(-1, true);
    const int chunk = head_chunk(b, heads, nq, nk);
    for (int64_t h0 = 0; h0 < heads; h0 += chunk) {
      const int64_t h1 = std::min<int64_t>(heads, h0 + chunk);
      auto qc = qh.slice(1, h0, h1), kc = kh.slice(1, h0, h1), vc = vh.slice(1, h0, h1), dc = doh.slice(1, h0, h1);
      auto s = torch::matmul(qc, kc.transpose(-1, -2)).to(torch::kFloat) * scale;
      auto p = (s - lse.slice(1, h0, h1).unsqueeze(-1)).exp_();
      const auto dt = q.scalar_type();
      dv.slice(1, h0, h1).copy_(torch::matmul(p.to(dt).transpose(-1, -2), dc));
      auto dp = torch::matmul(dc, vc.transpose(-1, -2)).to(torch::kFloat);
      auto ds = (p * (dp - d_row.slice(1, h0, h1)) * scale).to(dt);
      dq.slice(1, h0, h1).copy_(torch::matmul(ds, kc));
      dk.slice(1, h0, h1).copy_(torch::matmul(ds.transpose(-1, -2), qc));
    }
    auto flat = [&](const Tensor& t, int64_t n) { return t.transpose(1, 2).reshape({b, n, heads * hd}); };
    return {flat(dq, nq), flat(dk, nk), flat(dv, nk), Tensor()};
  }
};

// Sana's ReLU linear attention: out_i = q_i S / (q_i . ksum) with S = K^T V and ksum = sum_j k_j,
// per head. Keeps q, k (the ReLU outputs, which ReLU keeps anyway), v and the output: no N^2 term.
struct LinearAttention : public torch::autograd::Function<LinearAttention> {
  static Tensor forward(AutogradContext* ctx, Tensor q, Tensor k, Tensor v, int64_t heads) {
    const auto b = q.size(0), n = q.size(1), hd = q.size(2) / heads;
    auto qh = heads_view(q, heads).to(torch::kFloat), kh = heads_view(k, heads).to(torch::kFloat),
         vh = heads_view(v, heads).to(torch::kFloat);
    auto s = torch::matmul(kh.transpose(-1, -2), vh);       // [B,H,hd,hd]
    auto ksum = kh.sum(2, true);                             // [B,H,1,hd]
    auto den = (qh * ksum).sum(-1, true) + 1e-6;             // [B,H,N,1]
    auto out = (torch::matmul(qh, s) / den).to(q.scalar_type());
    Tensor o = out.transpose(1, 2).reshape({b, n, heads * hd});
    ctx->saved_data["heads"] = heads;
    ctx->save_for_backward({q, k, v, o});
    return o;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const int64_t heads = ctx->saved_data["heads"].toInt();
    const auto dt = saved[0].scalar_type();
    const auto b = saved[0].size(0), n = saved[0].size(1), hd = saved[0].size(2) / heads;
    auto qh = heads_view(saved[0], heads).to(torch::kFloat), kh = heads_view(saved[1], heads).to(torch::kFloat),
         vh = heads_view(saved[2], heads).to(torch::kFloat), oh = heads_view(saved[3], heads).to(torch::kFloat);
    auto doh = heads_view(grads[0].contiguous(), heads).to(torch::kFloat);
    auto s = torch::matmul(kh.transpose(-1, -2), vh);
    auto ksum = kh.sum(2, true);
    auto den = (qh * ksum).sum(-1, true) + 1e-6;
    auto dnum = doh / den;                                   // d out / d num
    auto dden = -(doh * oh).sum(-1, true) / den;             // d out / d den
    auto dq = torch::matmul(dnum, s.transpose(-1, -2)) + dden * ksum;
    auto ds = torch::matmul(qh.transpose(-1, -2), dnum);     // [B,H,hd,hd]
    auto dksum = (dden * qh).sum(2, true);                   // [B,H,1,hd]
    auto dk = torch::matmul(vh, ds.transpose(-1, -2)) + dksum;
    auto dv = torch::matmul(kh, ds);
    auto flat = [&](const Tensor& t) { return t.transpose(1, 2).reshape({b, n, heads * hd}).to(dt); };
    return {flat(dq), flat(dk), flat(dv), Tensor()};
  }
};

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t heads) {
#if defined(TORCH_VERSION_MAJOR) && TORCH_VERSION_MAJOR >= 2
  if (q.is_cuda()) {
    // the fused kernel of this LibTorch (flash or memory-efficient): it keeps q, k, v, out, lse
    const auto b = q.size(0), nq = q.size(1), hd = q.size(2) / heads;
    auto o = at::scaled_dot_product_attention(heads_view(q, heads), heads_view(k, heads), heads_view(v, heads));
    static bool named = false;
    if (!named) {
      const int64_t choice =
          at::_fused_sdp_choice(heads_view(q, heads), heads_view(k, heads), heads_view(v, heads));
      g_attention_backend = choice == 1 ? "flash (at::_scaled_dot_product_flash_attention)"
                            : choice == 2 ? "memory-efficient (at::_scaled_dot_product_efficient_attention)"
                                          : "math (unfused sdpa, backend " + std::to_string(choice) + ")";
      named = true;
    }
    return o.transpose(1, 2).reshape({b, nq, heads * hd});
  }
#endif
  return FlashAttention::apply(q, k, v, heads);
}

// ---------------------------------------------------------------------------------------------
// Builder helpers

struct Builder {
  const BuildOptions& opt;
  Block& blk;
  torch::TensorOptions to() const { return torch::TensorOptions().dtype(opt.dtype).device(opt.device); }

  Tensor frozen(std::vector<int64_t> shape, double std) {
    Tensor t = (torch::randn(shape, torch::TensorOptions().dtype(torch::kFloat)) * std).to(to());
    blk.frozen.push_back(t);
    return t;
  }
  // a constant shared by the blocks of one network (registered with each block as frozen)
  Tensor constant(const std::string& key, std::vector<int64_t> shape, double std) {
    if (opt.shared) {
      auto it = opt.shared->find(key);
      if (it != opt.shared->end()) {
        blk.frozen.push_back(it->second);
        return it->second;
      }
    }
    Tensor t = (torch::randn(shape, torch::TensorOptions().dtype(torch::kFloat)) * std).to(to());
    blk.frozen.push_back(t);
    if (opt.shared) (*opt.shared)[key] = t;
    return t;
  }
  Tensor weight(int64_t out, int64_t in) {
    Tensor w = frozen({out, in}, 1.0 / std::sqrt(static_cast<double>(in)));
    if (opt.lora.full) {
      w.requires_grad_(true);
      blk.trainable.push_back(w);
    }
    return w;
  }
  Tensor trainable(std::vector<int64_t> shape, double std) {
    Tensor t = (torch::randn(shape, torch::TensorOptions().dtype(torch::kFloat)) * std).to(to());
    t.requires_grad_(true);
    blk.trainable.push_back(t);
    return t;
  }
};

struct Linear {
  Tensor w, a, b;
  double scale = 0, p = 0;
  Tensor operator()(const Tensor& x) const {
    Tensor y = torch::linear(x, w);
    if (a.defined()) {
      Tensor xd = p > 0 ? std::get<0>(at::native_dropout(x, p, true)) : x;
      y = y + torch::linear(torch::linear(xd, a), b) * scale;
    }
    return y;
  }
};

Linear linear(Builder& bd, int64_t in, int64_t out, bool adapted) {
  Linear l;
  l.w = bd.weight(out, in);
  if (adapted && !bd.opt.lora.full) {
    const int r = bd.opt.lora.rank;
    l.a = bd.trainable({r, in}, 1.0 / std::sqrt(static_cast<double>(in)));
    // PEFT starts B at zero; a small random B keeps every gradient path non-zero for the tests
    l.b = bd.trainable({out, r}, 0.02);
    l.scale = bd.opt.lora.alpha / r;
    l.p = bd.opt.lora.dropout;
  }
  return l;
}

Tensor layer_norm(const Tensor& x) { return torch::layer_norm(x, {x.size(-1)}, {}, {}, 1e-6); }

Tensor rms_norm(const Tensor& x, const Tensor& w) {
  // sum / d rather than mean: LibTorch 1.13's mean keeps its whole input for backward (PyTorch 2
  // keeps only its size), which would add a tensor the trainer's PyTorch does not keep
  Tensor r = torch::rsqrt(x.pow(2).sum(-1, true) * (1.0 / static_cast<double>(x.size(-1))) + 1e-6);
  return x * r * w;
}

Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale) { return x * (1 + scale) + shift; }

// adaLN vectors: shift, scale, gate ... as [B, 1, d] chunks of a [B, 1, k*d] tensor computed per
// forward from the frozen timestep embedding through a frozen projection (modulation weights).
struct Modulation {
  Tensor temb, w;  // temb [B, d_t]; w [k*d, d_t] (undefined: a shared table, no weights)
  Tensor table;    // [1, 1, k*d] shared table (Wan, PixArt)
  int k = 6;
  std::vector<Tensor> operator()() const {
    Tensor m = w.defined() ? torch::linear(torch::silu(temb), w).unsqueeze(1) : table + temb.unsqueeze(1).repeat({1, 1, k});
    return m.chunk(k, -1);
  }
};

Modulation modulation(Builder& bd, int batch, int64_t d, int k, bool weights) {
  Modulation m;
  m.k = k;
  m.temb = bd.constant("temb." + std::to_string(d), {batch, d}, 1.0);
  if (weights)
    m.w = bd.weight(k * d, d);
  else
    m.table = bd.frozen({1, 1, k * d}, 0.1);
  if (bd.opt.lora.full && m.w.defined()) {  // modulation trains too in a full run
  }
  return m;
}

struct SelfAttention {
  Linear q, k, v, o;
  Tensor nq, nk;  // RMSNorm weights (undefined: no q/k norm)
  int64_t heads = 1;
  bool linear_kernel = false;
};

// q from width q_in, k and v from width kv_in, all projected to d; out back to width out; the
// q/k RMSNorm weights when the block has them. Shared by self- and cross-attention.
template <typename Attention>
void build_projections(Builder& bd, Attention& a, int64_t d, int64_t q_in, int64_t kv_in, int64_t out,
                       int64_t heads, bool qk_norm, bool adapted) {
  a.q = linear(bd, q_in, d, adapted);
  a.k = linear(bd, kv_in, d, adapted);
  a.v = linear(bd, kv_in, d, adapted);
  a.o = linear(bd, d, out, adapted);
  if (qk_norm) {
    a.nq = bd.frozen({d}, 0.1) + 1;
    a.nk = bd.frozen({d}, 0.1) + 1;
    bd.blk.frozen.push_back(a.nq);
    bd.blk.frozen.push_back(a.nk);
  }
  a.heads = heads;
}

SelfAttention self_attention(Builder& bd, int64_t d, int64_t heads, bool qk_norm, bool adapted, int64_t d_in = 0) {
  SelfAttention a;
  const int64_t din = d_in > 0 ? d_in : d;
  build_projections(bd, a, d, din, din, din, heads, qk_norm, adapted);
  return a;
}

// q from x (width d), k and v from ctx (width dkv); output width d
struct CrossAttention {
  Linear q, k, v, o;
  Tensor nq, nk;
  int64_t heads = 1;
};

CrossAttention cross_attention(Builder& bd, int64_t d, int64_t dkv, int64_t heads, bool qk_norm, bool adapted) {
  CrossAttention a;
  build_projections(bd, a, d, d, dkv, d, heads, qk_norm, adapted);
  return a;
}

Tensor run_cross(const CrossAttention& a, const Tensor& x, const Tensor& ctx) {
  Tensor q = a.q(x), k = a.k(ctx), v = a.v(ctx);
  if (a.nq.defined()) {
    q = rms_norm(q, a.nq);
    k = rms_norm(k, a.nk);
  }
  return a.o(attention(q, k, v, a.heads));
}

// q, k, v of one stream (joint attention concatenates streams before the kernel)
std::array<Tensor, 3> project(const SelfAttention& a, const Tensor& x) {
  Tensor q = a.q(x), k = a.k(x), v = a.v(x);
  if (a.nq.defined()) {
    q = rms_norm(q, a.nq);
    k = rms_norm(k, a.nk);
  }
  return {q, k, v};
}

Tensor run_self(const SelfAttention& a, const Tensor& x) {
  auto [q, k, v] = project(a, x);
  if (a.linear_kernel) return a.o(LinearAttention::apply(torch::relu(q), torch::relu(k), v, a.heads));
  return a.o(attention(q, k, v, a.heads));
}

// FFN: GELU (fc1 -> gelu -> fc2), SwiGLU (w1, w3 -> silu(w1 x) * w3 x -> w2), GEGLU (one
// projection to 2f, chunked: h * gelu(gate) -> out).
struct Ffn {
  std::string act;
  Linear up, gate, down;
};

Ffn ffn(Builder& bd, int64_t d, int64_t f, const std::string& act, bool adapted) {
  Ffn m;
  m.act = act;
  if (act == "geglu") {
    m.up = linear(bd, d, 2 * f, adapted);
  } else {
    m.up = linear(bd, d, f, adapted);
    if (act == "swiglu") m.gate = linear(bd, d, f, adapted);
  }
  m.down = linear(bd, f, d, adapted);
  return m;
}

Tensor run_ffn(const Ffn& m, const Tensor& x) {
  if (m.act == "geglu") {
    auto hg = m.up(x).chunk(2, -1);
    return m.down(hg[0] * torch::gelu(hg[1], "tanh"));
  }
  if (m.act == "swiglu") return m.down(torch::silu(m.up(x)) * m.gate(x));
  return m.down(torch::gelu(m.up(x), "tanh"));
}

Part part(Side side, std::string name, std::function<State(const State&)> fn) {
  return Part{side, std::move(name), std::move(fn)};
}

int64_t heads_of(const BlockListSpec& s) {
  if (s.heads > 0) return s.heads;
  const int hd = s.head_dim > 0 ? s.head_dim : 64;
  return std::max<int64_t>(1, s.hidden / hd);
}

}  // namespace

// ---------------------------------------------------------------------------------------------

LoraSetup lora_setup(const Family& fam, const TrainingSetup& setup) {
  LoraSetup l;
  l.full = setup.model_type == "full";
  l.rank = std::max(1, setup.lora_rank);
  l.alpha = l.rank;  // SimpleTuner sets lora_alpha = rank unless told otherwise
  const LoraCoverage c = lora_coverage(fam);
  l.attn = c.attention;
  l.text = c.text;
  l.ffn = c.ffn;
  return l;
}

BlockShape block_shape(const Family& fam, const BlockListSpec& spec, const TrainingSetup& setup) {
  const TokenGeometry g = token_geometry(fam, setup.width, setup.height, setup.frames, setup.text_tokens);
  BlockShape s;
  s.batch = std::max(1, setup.batch);
  s.text_tokens = static_cast<int>(g.text_tokens);
  s.audio_tokens = fam.geometry.audio_tokens;
  const int patch = std::max(1, fam.geometry.patch_spatial);
  int gw = g.latent_width > 0 ? (g.latent_width + patch - 1) / patch : 1;
  int gh = g.latent_height > 0 ? (g.latent_height + patch - 1) / patch * std::max(1, g.latent_frames) : 1;
  if (fam.modality == "audio") {
    gw = 1;
    gh = static_cast<int>(g.image_tokens);
  }
  if (spec.token_scale != 1.0) {  // U-Net levels: each side shrinks by sqrt(token_scale)
    const double f = std::sqrt(spec.token_scale);
    gw = std::max(1, static_cast<int>(std::lround(gw * f)));
    gh = std::max(1, static_cast<int>(std::lround(gh * f)));
  }
  s.grid_h = gh;
  s.grid_w = gw;
  s.image_tokens = gh * gw;
  return s;
}

BlockShape scaled_shape(const BlockShape& s, double scale) {
  BlockShape r = s;
  // shrink the longer side first so the grid stays as square as the original
  const double f = std::sqrt(scale);
  r.grid_h = std::max(1, static_cast<int>(std::lround(s.grid_h * f)));
  r.grid_w = std::max(1, static_cast<int>(std::lround(s.grid_w * f)));
  r.image_tokens = r.grid_h * r.grid_w;
  return r;
}

State make_input(const BlockListSpec& spec, const BlockShape& shape, const BuildOptions& opt, int skips_in) {
  auto to = torch::TensorOptions().dtype(opt.dtype).device(opt.device);
  const int64_t b = shape.batch, d = spec.hidden, dt = spec.text_hidden > 0 ? spec.text_hidden : spec.hidden;
  auto fresh = [&](std::vector<int64_t> sz) {
    // a leaf that requires grad, cloned so the block sees a non-leaf like inside a network
    Tensor leaf = torch::randn(sz, torch::TensorOptions().dtype(torch::kFloat)).to(to).requires_grad_(true);
    return leaf.clone();
  };
  State s;
  const int64_t n_stream = list_tokens(spec, shape.image_tokens, shape.text_tokens) ;
  if (traits(spec.kind).text_stream) {
    s["img"] = fresh({b, shape.image_tokens, d});
    s["txt"] = fresh({b, shape.text_tokens, dt});
  } else {
    s["img"] = fresh({b, n_stream, d});
  }
  if (traits(spec.kind).audio_stream) s["audio"] = fresh({b, shape.audio_tokens, dt});
  for (int i = 0; i < skips_in; ++i) s["skip." + std::to_string(i)] = fresh({b, shape.image_tokens, d});
  return s;
}

Block make_block(const BlockListSpec& spec, const BlockShape& shape, const BuildOptions& opt) {
  torch::manual_seed(opt.seed);
  auto blk = std::make_shared<Block>();
  Block& B = *blk;
  B.kind = to_string(spec.kind);
  B.list = spec.name;
  Builder bd{opt, B};
  const LoraSetup& L = opt.lora;
  const int64_t d = spec.hidden, f = spec.ffn_hidden, heads = heads_of(spec);
  const int64_t dt = spec.text_hidden > 0 ? spec.text_hidden : spec.hidden;
  const int batch = shape.batch;
  const std::string act = spec.ffn_act.empty() ? "gelu" : spec.ffn_act;
  const std::string skip = spec.skip;

  // skip tensors: a "push" block leaves its output on the skip stack, a "pop" block adds the top
  auto skip_in = [skip](const State& s, Tensor x) {
    if (skip != "pop") return x;
    int top = -1;
    for (const auto& [k, v] : s)
      if (k.rfind("skip.", 0) == 0) top = std::max(top, std::stoi(k.substr(5)));
    return top >= 0 ? x + s.at("skip." + std::to_string(top)) : x;
  };
  auto skip_out = [skip](const State& s, State out) {
    int top = -1;
    for (const auto& [k, v] : s)
      if (k.rfind("skip.", 0) == 0) top = std::max(top, std::stoi(k.substr(5)));
    if (skip == "push") out["skip." + std::to_string(top + 1)] = out.at("img");
    if (skip == "pop" && top >= 0) out["skip." + std::to_string(top)] = Tensor();  // consumed
    return out;
  };

  switch (spec.kind) {
  case BlockKind::DitCross:
  case BlockKind::DitSelf:
  case BlockKind::LinearDit: {
    // Wan / PixArt / LTX (dit_cross), Lumina2 / Z-Image (dit_self), Sana (linear_dit):
    //   x1 = x  + g1 * SelfAttn(mod(LN(x)))        [attention]
    //   x2 = x1 + CrossAttn(LN(x1), text)          [attention, when cross_attention]
    //   x3 = x2 + g2 * FFN(mod(LN(x2)))            [ffn]
    const bool linear_kernel = traits(spec.kind).linear_attention;
    const bool qk_norm = !linear_kernel;
    auto sa = std::make_shared<SelfAttention>(self_attention(bd, d, heads, qk_norm, L.attn));
    sa->linear_kernel = linear_kernel;
    // dit_self (Lumina2): adaLN from weights, 4 chunks (scale, gate per sub-block), no shift;
    // dit_cross / linear_dit: a shared table plus the timestep embedding, 6 chunks
    const bool own_mod = traits(spec.kind).own_modulation;
    auto mod = std::make_shared<Modulation>(modulation(bd, batch, d, own_mod ? 4 : 6, own_mod));
    // chunk indices: shift/scale/gate for attention, shift/scale/gate for the FFN (-1: none)
    const std::array<int, 6> mi = own_mod ? std::array<int, 6>{-1, 0, 1, -1, 2, 3} : std::array<int, 6>{0, 1, 2, 3, 4, 5};
    std::shared_ptr<CrossAttention> ca;
    Tensor ctx;
    if (spec.cross_attention) {
      // the text context enters projected to the block width (Wan, PixArt, Sana); its K/V adapters
      // see that width
      ca = std::make_shared<CrossAttention>(cross_attention(bd, d, dt, heads, traits(spec.kind).cross_qk_norm, L.attn));
      ctx = bd.constant("text." + std::to_string(dt), {batch, shape.text_tokens, dt}, 1.0);
    }
    auto mlp = std::make_shared<Ffn>();
    std::shared_ptr<Tensor> conv_w;
    Linear conv_in, conv_out;
    if (linear_kernel) {
      // GLUMBConv: 1x1 conv d -> 2f (a Linear on tokens), SiLU, depthwise 3x3 on 2f, GLU to f
      // (h * silu(gate)), 1x1 conv f -> d
      conv_in = linear(bd, d, 2 * f, false);
      conv_out = linear(bd, f, d, false);
      conv_w = std::make_shared<Tensor>(bd.frozen({2 * f, 1, 3, 3}, 1.0 / 3));
    } else {
      *mlp = ffn(bd, d, f, act, L.ffn);
    }
    const int gh = shape.grid_h, gw = shape.grid_w;
    const bool pop = skip == "pop";
    B.parts.push_back(part(Side::Attention, "self-attention", [=](const State& s) {
      auto m = (*mod)();
      Tensor x = pop ? skip_in(s, s.at("img")) : s.at("img");
      Tensor n = layer_norm(x);
      n = mi[0] >= 0 ? modulate(n, m[mi[0]], m[mi[1]]) : n * (1 + m[mi[1]]);
      Tensor y = run_self(*sa, n);
      return State{{"img", x + m[mi[2]] * y}};
    }));
    if (ca) {
      B.parts.push_back(part(Side::Attention, "cross-attention", [=](const State& s) {
        Tensor x = s.at("img");
        return State{{"img", x + run_cross(*ca, layer_norm(x), ctx)}};
      }));
    }
    B.parts.push_back(part(Side::Ffn, "ffn", [=](const State& s) {
      auto m = (*mod)();
      Tensor x = s.at("img");
      Tensor h = layer_norm(x);
      h = mi[3] >= 0 ? modulate(h, m[mi[3]], m[mi[4]]) : h * (1 + m[mi[4]]);
      Tensor y;
      if (conv_w) {
        // real 1x1 convolutions (not Linears): a convolution keeps its input for backward even
        // with a frozen weight, as the trainer's nn.Conv2d layers do
        const auto b = h.size(0), dd = h.size(2);
        auto spatial = [&](const Tensor& t) { return t.view({b, gh, gw, t.size(2)}).permute({0, 3, 1, 2}); };
        Tensor a = torch::silu(torch::conv2d(spatial(h), conv_in.w.view({conv_in.w.size(0), dd, 1, 1})));
        const auto c = a.size(1);
        Tensor dw = torch::conv2d(a, *conv_w, {}, 1, 1, 1, c);
        auto hg = dw.chunk(2, 1);
        Tensor g = hg[0] * torch::silu(hg[1]);  // [B, f, H, W]
        Tensor o = torch::conv2d(g, conv_out.w.view({dd, c / 2, 1, 1}));
        y = o.permute({0, 2, 3, 1}).reshape({b, gh * gw, dd});
      } else {
        y = run_ffn(*mlp, h);
      }
      return State{{"img", x + m[mi[5]] * y}};
    }));
    if (skip == "push" || skip == "pop")
      B.parts.push_back(part(Side::Rest, "skip", [=](const State& s) { return skip_out(s, State{{"img", s.at("img")}}); }));
    break;
  }
  case BlockKind::MmditDouble: {
    // SD3 / Flux double blocks: two streams with their own weights, one joint attention.
    //   img1 = img + g * ImgOut(Attn(cat(txt q,k,v, img q,k,v)))      [attention]
    //   txt1 = txt + g * TxtOut(...)
    //   img2 = img1 + g * FFN(mod(LN(img1))), txt2 likewise          [ffn]
    auto ia = std::make_shared<SelfAttention>(self_attention(bd, d, heads, true, L.attn));
    auto ta = std::make_shared<SelfAttention>(self_attention(bd, dt, heads, true, L.text));
    auto im = std::make_shared<Modulation>(modulation(bd, batch, d, 6, true));
    auto tm = std::make_shared<Modulation>(modulation(bd, batch, dt, 6, true));
    auto iff = std::make_shared<Ffn>(ffn(bd, d, f, act, L.ffn));
    auto tff = std::make_shared<Ffn>(ffn(bd, dt, f * dt / d, act, L.ffn && L.text));
    const bool pop = skip == "pop";
    B.parts.push_back(part(Side::Attention, "joint attention", [=](const State& s) {
      auto mi = (*im)(), mt = (*tm)();
      Tensor img = pop ? skip_in(s, s.at("img")) : s.at("img");
      Tensor txt = s.at("txt");
      auto [qi, ki, vi] = project(*ia, modulate(layer_norm(img), mi[0], mi[1]));
      auto [qt, kt, vt] = project(*ta, modulate(layer_norm(txt), mt[0], mt[1]));
      const int64_t nt = txt.size(1);
      Tensor o = attention(torch::cat({qt, qi}, 1), torch::cat({kt, ki}, 1), torch::cat({vt, vi}, 1), ia->heads);
      Tensor ot = o.narrow(1, 0, nt), oi = o.narrow(1, nt, o.size(1) - nt);
      return State{{"img", img + mi[2] * ia->o(oi)}, {"txt", txt + mt[2] * ta->o(ot)}};
    }));
    B.parts.push_back(part(Side::Ffn, "ffn", [=](const State& s) {
      auto mi = (*im)(), mt = (*tm)();
      Tensor img = s.at("img"), txt = s.at("txt");
      Tensor yi = run_ffn(*iff, modulate(layer_norm(img), mi[3], mi[4]));
      Tensor yt = run_ffn(*tff, modulate(layer_norm(txt), mt[3], mt[4]));
      return State{{"img", img + mi[5] * yi}, {"txt", txt + mt[5] * yt}};
    }));
    if (skip == "push" || skip == "pop")
      B.parts.push_back(part(Side::Rest, "skip", [=](const State& s) { return skip_out(s, State{{"img", s.at("img")}}); }));
    break;
  }
  case BlockKind::SingleStream: {
    // Flux single block: n = mod(LN(x)); attention (q, k, v from n) in parallel with the MLP
    // (act(proj_mlp(n))); proj_out(cat(attn, mlp)); gated residual.
    const bool gated = act == "swiglu" || act == "geglu";
    const int64_t f_in = gated ? 2 * f : f;
    auto a = std::make_shared<SelfAttention>();
    a->q = linear(bd, d, d, L.attn);
    a->k = linear(bd, d, d, L.attn);
    a->v = linear(bd, d, d, L.attn);
    a->nq = bd.frozen({d}, 0.1) + 1;
    a->nk = bd.frozen({d}, 0.1) + 1;
    a->heads = heads;
    auto mlp_in = std::make_shared<Linear>(linear(bd, d, f_in, L.ffn));
    auto proj_out = std::make_shared<Linear>(linear(bd, d + f, d, L.ffn));
    auto mod = std::make_shared<Modulation>(modulation(bd, batch, d, 3, true));
    B.parts.push_back(part(Side::Attention, "attention", [=](const State& s) {
      auto m = (*mod)();
      Tensor x = s.at("img");
      Tensor n = modulate(layer_norm(x), m[0], m[1]);
      auto [q, k, v] = project(*a, n);
      return State{{"_n", n}, {"_attn", attention(q, k, v, a->heads)}};
    }));
    B.parts.push_back(part(Side::Ffn, "mlp", [=, act = act](const State& s) {
      Tensor h = (*mlp_in)(s.at("_n"));
      Tensor m;
      if (act == "swiglu") {
        auto c = h.chunk(2, -1);
        m = torch::silu(c[0]) * c[1];
      } else if (act == "geglu") {
        auto c = h.chunk(2, -1);
        m = c[0] * torch::gelu(c[1], "tanh");
      } else {
        m = torch::gelu(h, "tanh");
      }
      return State{{"_mlp", m}};
    }));
    B.parts.push_back(part(Side::Rest, "output", [=](const State& s) {
      auto m = (*mod)();
      Tensor y = (*proj_out)(torch::cat({s.at("_attn"), s.at("_mlp")}, -1));
      return State{{"img", s.at("img") + m[2] * y}};
    }));
    break;
  }
  case BlockKind::AudioVideoDit: {
    // LTX-2: a video stream (width d) and an audio stream (width d_a = text_hidden, FFN f/2), each
    // with self-attention and text cross-attention, then audio->video and video->audio
    // cross-attention, then the FFNs. The audio stream's FFN counts as attention side (only the
    // video FFN has an FFN-only checkpoint boundary).
    const int64_t da = dt, fa = f / 2;
    const int64_t ha = std::max<int64_t>(1, da / (spec.head_dim > 0 ? spec.head_dim : 64));
    auto vs = std::make_shared<SelfAttention>(self_attention(bd, d, heads, true, L.attn));
    auto as = std::make_shared<SelfAttention>(self_attention(bd, da, ha, true, L.attn));
    auto vt = std::make_shared<CrossAttention>(cross_attention(bd, d, d, heads, true, L.attn));
    auto at = std::make_shared<CrossAttention>(cross_attention(bd, da, da, ha, true, L.attn));
    auto a2v = std::make_shared<CrossAttention>(cross_attention(bd, d, da, heads, true, L.attn));
    auto v2a = std::make_shared<CrossAttention>(cross_attention(bd, da, d, ha, true, L.attn));
    auto vf = std::make_shared<Ffn>(ffn(bd, d, f, act, L.ffn));
    auto af = std::make_shared<Ffn>(ffn(bd, da, fa, act, L.ffn));
    auto vm = std::make_shared<Modulation>(modulation(bd, batch, d, 6, false));
    auto am = std::make_shared<Modulation>(modulation(bd, batch, da, 6, false));
    Tensor ctx_v = bd.constant("text." + std::to_string(d), {batch, shape.text_tokens, d}, 1.0);
    Tensor ctx_a = bd.constant("text." + std::to_string(da), {batch, shape.text_tokens, da}, 1.0);
    B.parts.push_back(part(Side::Attention, "self-attention", [=](const State& s) {
      auto mv = (*vm)(), ma = (*am)();
      Tensor v = s.at("img"), a = s.at("audio");
      return State{{"img", v + mv[2] * run_self(*vs, modulate(layer_norm(v), mv[0], mv[1]))},
                   {"audio", a + ma[2] * run_self(*as, modulate(layer_norm(a), ma[0], ma[1]))}};
    }));
    B.parts.push_back(part(Side::Attention, "text cross-attention", [=](const State& s) {
      Tensor v = s.at("img"), a = s.at("audio");
      return State{{"img", v + run_cross(*vt, layer_norm(v), ctx_v)}, {"audio", a + run_cross(*at, layer_norm(a), ctx_a)}};
    }));
    B.parts.push_back(part(Side::Attention, "audio-video attention", [=](const State& s) {
      Tensor v = s.at("img"), a = s.at("audio");
      Tensor nv = layer_norm(v), na = layer_norm(a);
      return State{{"img", v + run_cross(*a2v, nv, na)}, {"audio", a + run_cross(*v2a, na, nv)}};
    }));
    B.parts.push_back(part(Side::Ffn, "video ffn", [=](const State& s) {
      auto mv = (*vm)();
      Tensor v = s.at("img");
      return State{{"img", v + mv[5] * run_ffn(*vf, modulate(layer_norm(v), mv[3], mv[4]))}};
    }));
    B.parts.push_back(part(Side::Attention, "audio ffn", [=](const State& s) {
      auto ma = (*am)();
      Tensor a = s.at("audio");
      return State{{"audio", a + ma[5] * run_ffn(*af, modulate(layer_norm(a), ma[3], ma[4]))}};
    }));
    break;
  }
  case BlockKind::UnetRes: {
    // diffusers ResnetBlock2D (SDXL): h = conv1(silu(GN(x))) + proj(silu(temb));
    // h = conv2(silu(GN(h))); out = x + h. The state is kept as tokens [B, H*W, c] in
    // channels-last memory; the convolutions see it as a channels-last [B, c, H, W] view.
    const int64_t c = d;
    Tensor w1 = bd.frozen({c, c, 3, 3}, 1.0 / std::sqrt(9.0 * c));
    Tensor w2 = bd.frozen({c, c, 3, 3}, 1.0 / std::sqrt(9.0 * c));
    Tensor tproj = bd.weight(c, 1280);
    Tensor temb = bd.constant("temb.1280", {batch, 1280}, 1.0);
    Tensor g1 = bd.frozen({c}, 0.1) + 1, g2 = bd.frozen({c}, 0.1) + 1;
    bd.blk.frozen.push_back(g1);
    bd.blk.frozen.push_back(g2);
    const int gh = shape.grid_h, gw = shape.grid_w;
    const int groups = c % 32 == 0 ? 32 : 1;
    B.parts.push_back(part(Side::Rest, "resnet", [=](const State& s) {
      Tensor x = s.at("img");
      const auto b = x.size(0);
      Tensor sp = x.view({b, gh, gw, c}).permute({0, 3, 1, 2});
      Tensor h = torch::conv2d(torch::silu(torch::group_norm(sp, groups, g1, {}, 1e-5)), w1, {}, 1, 1);
      h = h + torch::linear(torch::silu(temb), tproj).view({b, c, 1, 1});
      h = torch::conv2d(torch::silu(torch::group_norm(h, groups, g2, {}, 1e-5)), w2, {}, 1, 1);
      Tensor out = (sp + h).permute({0, 2, 3, 1}).reshape({b, gh * gw, c});
      return State{{"img", out}};
    }));
    break;
  }
  case BlockKind::UnetAttn: {
    // diffusers BasicTransformerBlock (SDXL): LN -> self-attention -> +; LN -> cross-attention
    // to the text (width text_hidden) -> +; LN -> GEGLU FFN -> +. No q/k norm, no modulation.
    auto sa = std::make_shared<SelfAttention>(self_attention(bd, d, heads, false, L.attn));
    std::shared_ptr<CrossAttention> ca;
    Tensor ctx;
    if (spec.cross_attention) {
      ca = std::make_shared<CrossAttention>(cross_attention(bd, d, dt, heads, false, L.attn));
      ctx = bd.constant("text." + std::to_string(dt), {batch, shape.text_tokens, dt}, 1.0);
    }
    auto mlp = std::make_shared<Ffn>(ffn(bd, d, f, act, L.ffn));
    B.parts.push_back(part(Side::Attention, "self-attention", [=](const State& s) {
      Tensor x = s.at("img");
      return State{{"img", x + run_self(*sa, layer_norm(x))}};
    }));
    if (ca) {
      B.parts.push_back(part(Side::Attention, "cross-attention", [=](const State& s) {
        Tensor x = s.at("img");
        return State{{"img", x + run_cross(*ca, layer_norm(x), ctx)}};
      }));
    }
    B.parts.push_back(part(Side::Ffn, "ffn", [=](const State& s) {
      Tensor x = s.at("img");
      return State{{"img", x + run_ffn(*mlp, layer_norm(x))}};
    }));
    break;
  }
  }
  return B;
}

const std::string& attention_backend_name() { return g_attention_backend; }

}  // namespace segadvise::profiler
