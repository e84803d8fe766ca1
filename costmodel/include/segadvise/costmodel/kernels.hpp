// What the kernels really reach: the practical bf16 matmul ceiling per GPU, the share of it a matmul
// of a given size gets, and fused-attention throughput by kernel, sequence length and head dimension
// (families/data/kernels.json, read by families/ into GpuSpec::kernels; sources in docs/sources/kernels.md).
// The step-time model (costmodel.cpp) divides each block's work by these figures and leaves a fitted
// share per GPU and kernel class (Coefficients) for what eager training adds on top.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace segadvise {

struct GpuSpec;

// The attention kernel a run uses: chosen by the trainer's attention_mechanism and the GPU (attention_kernel()).
// MemEfficient: SDPA's memory-efficient (xformers-derived cutlass) kernel, what SDPA and xformers run on
// cards without the flash kernels (Turing, Volta: sm < 80).
enum class AttentionKernel { Unfused, Fa2, Cudnn, Fa3, MemEfficient };
std::string to_string(AttentionKernel k);  // "unfused", "fa2", "cudnn", "fa3", "mem-efficient"

// One kernel's published curve: TFLOP/s at KernelTable::seq, per head dimension (absent points: 0).
struct AttentionCurve {
  std::map<int, std::vector<double>> forward, backward;  // head_dim -> TFLOP/s per seq point
};

struct KernelTable {
  // matmul of square-equivalent edge s = cbrt(M K N): share of the ceiling, linear in log2(s) between
  // the points, the first segment's slope below the first (never under kMinMatmulShare), 1 past the last
  std::vector<double> matmul_edge, matmul_share;
  // attention, measured on reference_gpu; another GPU gets it times its matmul ceiling / the reference's
  std::string reference_gpu;
  double reference_matmul_flops_per_s = 0;
  std::vector<double> seq;
  std::map<AttentionKernel, AttentionCurve> attention;
  std::string source;
};

constexpr double kMinMatmulShare = 0.05;
// The share of a GPU's nameplate dense bf16 a square matmul reaches when the card is not in the
// table: 0.8, the middle of the table's measured/nameplate ratios (0.74-0.85)
constexpr double kDefaultMatmulCeilingShare = 0.8;
// An attention kernel's backward FLOPs per forward FLOP (the paper's accounting: the backward
// recomputes the scores inside the kernel and forms dQ, dK, dV: 2.5 forward passes of work)
constexpr double kAttentionBackwardFlopsRatio = 2.5;

// The practical bf16 matmul ceiling of `gpu` (flop/s): the table's figure, or kDefaultMatmulCeilingShare of
// its nameplate peak.
double matmul_ceiling(const GpuSpec& gpu);
// Share of the ceiling a matmul of square-equivalent edge `edge` reaches (1 without a table).
double matmul_size_share(const KernelTable* t, double edge);
// The kernel attention_mechanism selects on this GPU: SDPA ("diffusers", "native-*" without a kernel
// named) picks cuDNN on Hopper and datacenter Blackwell, Flash (FA2) elsewhere; FA3 runs on Hopper only
// (elsewhere FA2, the fastest kernel there); "native-math" is unfused.
// bf16: the run's attention is bf16. On Turing and Volta SDPA's memory-efficient kernel takes fp16 and
// fp32 only, so bf16 attention runs SDPA's math kernel (unfused).
AttentionKernel attention_kernel(const std::string& mechanism, const GpuSpec& gpu, bool bf16 = false);
// Whether the trainer's attention_mechanism runs on the card: FlashAttention-3 (flash-attn-3*, fa3) is
// a Hopper kernel, not an option on Ada, Ampere or Blackwell (the FlashAttention-3 paper; the
// segmented-checkpointing notes: "FA3 is a Hopper backend; it is not an L40S option"). Every other
// mechanism runs (SDPA picks its own kernel per card).
bool attention_runs_on(const std::string& mechanism, const GpuSpec& gpu);
// Throughput (flop/s) of kernel k on `gpu` at `seq` keys per query and `head_dim`, forward or backward:
// the reference curve at the nearest head dims (log-interpolated in seq and head_dim; seq clamped to the
// table) scaled by the GPU's matmul ceiling over the reference's. Without a table: 0.4 of the ceiling.
double attention_flops_per_s(const GpuSpec& gpu, AttentionKernel k, double seq, double head_dim, bool backward);

}  // namespace segadvise
