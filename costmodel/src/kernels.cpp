#include "segadvise/costmodel/kernels.hpp"

#include <algorithm>
#include <cmath>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

std::string to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::Unfused: return "unfused";
    case AttentionKernel::Fa2: return "fa2";
    case AttentionKernel::Cudnn: return "cudnn";
    case AttentionKernel::Fa3: return "fa3";
    case AttentionKernel::MemEfficient: return "mem-efficient";
  }
  return "fa2";
}

double matmul_ceiling(const GpuSpec& gpu) {
  return gpu.matmul_flops_per_s > 0 ? gpu.matmul_flops_per_s : kDefaultMatmulCeilingShare * gpu.bf16_flops_per_s;
}

namespace {

// y at x on the polyline (xs, ys), linear in log2(x); outside: the end segment's slope below,
// the last value above (when clamp_high) or the last segment's slope
double log_interp(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  const std::size_t n = xs.size();
  if (n == 0) return 1;
  if (n == 1) return ys[0];
  const double lx = std::log2(std::max(x, 1.0));
  if (x >= xs[n - 1]) return ys[n - 1];
  std::size_t i = 0;
  while (i + 2 < n && x >= xs[i + 1]) ++i;
  const double x0 = std::log2(xs[i]), x1 = std::log2(xs[i + 1]);
  return ys[i] + (ys[i + 1] - ys[i]) * (lx - x0) / (x1 - x0);
}

bool is_hopper(const GpuSpec& g) { return g.arch == "hopper"; }
bool prefers_cudnn(const GpuSpec& g) { return g.arch == "hopper" || g.arch == "blackwell-datacenter"; }
// Turing and Volta: SDPA's flash backend needs sm80, so SDPA (and xformers) run the memory-efficient kernel
bool before_flash(const GpuSpec& g) { return g.arch == "turing" || g.arch == "volta"; }

// the curve of one head dim at seq (points given only at the ends: the 128 curve's shape between,
// its ratio to the 128 curve interpolated in log2(seq))
double curve_at(const KernelTable& t, const std::map<int, std::vector<double>>& by_hd, int hd, double seq) {
  auto it = by_hd.find(hd);
  if (it == by_hd.end()) return 0;
  const std::vector<double>& v = it->second;
  const double s = std::clamp(seq, t.seq.front(), t.seq.back());
  bool complete = v.size() == t.seq.size();
  for (double x : v) complete = complete && x > 0;
  if (complete) return log_interp(t.seq, v, s);
  auto ref = by_hd.find(128);
  if (ref == by_hd.end() || v.size() != t.seq.size() || v.front() <= 0 || v.back() <= 0) return 0;
  const std::vector<double>& r = ref->second;
  const double lo = v.front() / r.front(), hi = v.back() / r.back();
  const double share = (std::log2(s) - std::log2(t.seq.front())) / (std::log2(t.seq.back()) - std::log2(t.seq.front()));
  return log_interp(t.seq, r, s) * (lo + (hi - lo) * share);
}

}  // namespace

double matmul_size_share(const KernelTable* t, double edge) {
  if (!t || t->matmul_edge.size() < 2) return 1;
  const auto& xs = t->matmul_edge;
  const auto& ys = t->matmul_share;
  if (edge >= xs.front()) return std::min(1.0, log_interp(xs, ys, edge));
  // below the table: the first segment's slope
  const double slope = (ys[1] - ys[0]) / (std::log2(xs[1]) - std::log2(xs[0]));
  return std::max(kMinMatmulShare, ys[0] - slope * (std::log2(xs[0]) - std::log2(std::max(edge, 1.0))));
}

bool attention_runs_on(const std::string& m, const GpuSpec& gpu) {
  return !(m.rfind("flash-attn-3", 0) == 0 || m == "fa3") || is_hopper(gpu);
}

AttentionKernel attention_kernel(const std::string& m, const GpuSpec& gpu, bool bf16) {
  // PyTorch's sdp_utils: the memory-efficient kernel takes bf16 from sm80 only; below, SDPA falls to math
  const AttentionKernel sdpa = prefers_cudnn(gpu)  ? AttentionKernel::Cudnn
                               : !before_flash(gpu) ? AttentionKernel::Fa2
                               : bf16              ? AttentionKernel::Unfused
                                                   : AttentionKernel::MemEfficient;
  if (m == "native-math") return AttentionKernel::Unfused;
  // a flash kernel asked for on a card without it: the trainer stops or falls back (card limits,
  // trainers/common/card-capabilities.json); what runs, if anything, is SDPA's choice
  if (before_flash(gpu)) return sdpa;
  if (m == "cudnn" || m == "native-cudnn") return AttentionKernel::Cudnn;
  // FlashAttention-3 where it runs; elsewhere (a config that cannot run there, make_request says so) the
  // FA2-class kernel SDPA would pick
  if (m.rfind("flash-attn-3", 0) == 0 || m == "fa3") return attention_runs_on(m, gpu) ? AttentionKernel::Fa3 : AttentionKernel::Fa2;
  if (m.rfind("flash-attn", 0) == 0 || m == "native-flash") return AttentionKernel::Fa2;
  // diffusers (SDPA's own choice), native-efficient and xformers (memory-efficient kernels: no
  // published figure in the table; the fused kernel SDPA would pick stands in), sageattention
  // (inference only by default: training runs SDPA), anything else
  return sdpa;
}

double attention_flops_per_s(const GpuSpec& gpu, AttentionKernel k, double seq, double head_dim, bool backward) {
  const double ceiling = matmul_ceiling(gpu);
  const KernelTable* t = gpu.kernels.get();
  if (!t || t->seq.empty() || t->reference_matmul_flops_per_s <= 0) return 0.4 * ceiling;
  // a kernel without a published curve (mem-efficient): the FA2 curve, scaled to the card, stands in
  auto c = t->attention.find(k);
  if (c == t->attention.end()) c = t->attention.find(AttentionKernel::Fa2);
  if (c == t->attention.end()) return 0.4 * ceiling;
  const auto& by_hd = backward ? c->second.backward : c->second.forward;
  if (by_hd.empty()) return 0.4 * ceiling;
  // the head dims given around head_dim, log-interpolated (clamped to the table's)
  std::vector<int> hds;
  for (const auto& [hd, v] : by_hd)
    if (curve_at(*t, by_hd, hd, seq) > 0) hds.push_back(hd);
  if (hds.empty()) return 0.4 * ceiling;
  double tflops = 0;
  const double h = std::clamp(head_dim, double(hds.front()), double(hds.back()));
  if (hds.size() == 1 || h <= hds.front()) tflops = curve_at(*t, by_hd, hds.front(), seq);
  else {
    std::size_t i = 0;
    while (i + 2 < hds.size() && h >= hds[i + 1]) ++i;
    const double y0 = curve_at(*t, by_hd, hds[i], seq), y1 = curve_at(*t, by_hd, hds[i + 1], seq);
    const double w = (std::log2(h) - std::log2(hds[i])) / (std::log2(hds[i + 1]) - std::log2(hds[i]));
    tflops = y0 + (y1 - y0) * std::clamp(w, 0.0, 1.0);
  }
  return tflops * 1e12 * ceiling / t->reference_matmul_flops_per_s;
}

}  // namespace segadvise
