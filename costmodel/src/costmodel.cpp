#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/evaluator.hpp"
#include "segadvise/costmodel/multi_gpu.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise {

double offload_share(const Plan& plan, const Coefficients& coef) {
  for (const auto& s : plan.segments)
    if (s.mode != BlockMode::Keep) return coef.offload_share_checkpointed;
  return 1.0;
}

namespace {
// Quanto's exclude list keeps this block's FFN at the weight dtype; `kernel` is a precision_key()
// (every kernel key is a row of the precision table; "" unquantized)
bool quanto_keeps_ffn(const BlockCost& b, const std::string& kernel) {
  return b.ffn_kept_by_quanto && !kernel.empty() && precision_info(kernel).backend == "quanto";
}
}  // namespace

ScaledBlock scaled(const BlockCost& b, const Coefficients& coef) { return scaled(b, coef, ""); }

ScaledBlock scaled(const BlockCost& b, const Coefficients& coef, const std::string& quantized_kernel) {
  ScaledBlock s;
  const double a = b.measured ? 1.0 : coef.scale(b.kind, "attention");
  const double f = b.measured ? 1.0 : coef.scale(b.kind, "ffn");
  const double r = b.measured ? 1.0 : coef.scale(b.kind, "rest");
  // quantized Linear layers keep their inputs (calibration: quantized_input_scale per precision)
  const double q = b.measured ? 0.0 : coef.input_scale(quantized_kernel);
  // weight-only quantizers' upcast weight copies: exact bytes, not a fitted share of the activations
  const double w = b.measured ? 0.0 : 1.0;
  s.attention_bytes = b.saved_attention_bytes * a + q * b.linear_input_attention_bytes + w * b.upcast_weight_attention_bytes;
  const double q_ffn = quanto_keeps_ffn(b, quantized_kernel) ? 0.0 : q;  // a bf16 FFN keeps no quantized inputs
  s.ffn_bytes = b.saved_ffn_bytes * f + q_ffn * b.linear_input_ffn_bytes + w * b.upcast_weight_ffn_bytes;
  s.rest_bytes = b.saved_rest_bytes * r + w * b.upcast_weight_rest_bytes;
  s.ffn_input_bytes = b.ffn_input_bytes;
  s.boundary_bytes = b.boundary_bytes - b.carried_skip_bytes;  // what a checkpoint adds (see types.hpp)
  s.transient_bytes = b.transient_bytes;
  return s;
}

// The activation timeline (DESIGN.md, "Memory, in one paragraph").
//
// Forward, segment by segment, each leaves behind what the schedule retains on the GPU:
//   Keep block          all its saved tensors (attention side on the host if offloaded)
//   Checkpoint [b,e)    the segment's input state only (on the host with an unsloth backend)
//   CheckpointFfn block attention + rest saved tensors, and the FFN's input instead of the FFN side
// While a block runs forward, its own saved tensors and its transient workspace are live on top of
// what earlier blocks retained.
// Backward walks the segments in reverse. While segment j is recomputed and back-propagated,
// everything retained by segments < j is still alive, plus the recomputed activations of the whole
// segment (a checkpoint call recomputes all of its blocks before their backward runs), plus the
// gradient of the hidden state flowing in and out (2 x boundary) and the block's transient.
// The peak is the maximum over all these positions: a max, not a sum of savings.
ActivationTimeline simulate_activations(const BlockChain& chain, const Plan& plan, const Coefficients& coef,
                                        bool keep_points) {
  PreparedChain pc;
  pc.chain = &chain;
  pc.coef = &coef;
  for (const auto& b : chain.blocks) pc.scaled.push_back(scaled(b, coef, chain.quantized_kernel));
  return simulate_activations(pc, plan, keep_points);
}

namespace {

// The timeline's positions, in order; Sink decides what a position costs: Peak only keeps the
// maximum (advise scores thousands of plans), Points also records every position by name.
// Every sum below is formed in the same order for both, so both give bit-identical peaks.
struct PeakSink {
  double peak = 0;
  int what = 0, block = 0;
  void operator()(int w, int i, double live) {
    if (live > peak) {
      peak = live;
      what = w;
      block = i;
    }
  }
};

// The sink goes in and comes back by value: held by reference, the running peak went to memory and
// back once per position (a store-forwarding chain that was a third of advise's scoring).
template <class Sink>
Sink walk_timeline(const PreparedChain& pc, const Plan& plan, Sink note, ActivationTimeline& tl) {
  const OffloadView o = offload_view(pc, plan);
  const std::size_t segments = plan.segments.size();
  const Segment* seg = plan.segments.data();
  thread_local std::vector<double> before;  // what the segments before j retain
  before.assign(segments, 0.0);
  double retained_sum = 0, host = 0;
  for (std::size_t j = 0; j < segments; ++j) {
    before[j] = retained_sum;
    retained_sum += segment_forward(pc, o, seg[j], retained_sum, host, note);
  }
  tl.retained_after_forward_bytes = retained_sum;
  tl.host_bytes = host;
  for (std::size_t jj = segments; jj-- > 0;) segment_backward(pc, o, seg[jj], before[jj], note);
  return note;
}

// The figures predict() needs of a plan, in one pass (fused_block for one-block segments without
// attention offload, fused_segment for any segment): the timeline's positions (its peak: a maximum is
// the same in any order; a block's backward position needs only what the blocks before it retain) and predict()'s recompute and
// transfer sums, each formed over the blocks in the same order as there, so every figure is
// bit-identical to the timeline walk plus predict()'s loop over segments.
struct SingleBlockFigures {
  double peak_bytes = 0, retained_bytes = 0, host_bytes = 0;
  double recompute_s = 0, offload_bytes = 0, recomputed_blocks = 0;
};

// One plan's running sums before a segment (PlanScorer keeps one per segment). The count of recomputed
// blocks is an int: exact, as the double it replaced, and off the chain of double additions.
using FusedState = PlanScorer::State;

// Block i forward and backward (the sums and their order as in walk_timeline and predict())
inline void fused_block(const PreparedChain& pc, const BlockCost* blocks, const ScaledBlock& b, double base, int i,
                        const Segment& seg, FusedState& l) {
  const double saved = b.saved();
  const double below = base + l.retained;
  const double live = forward_live(b, below);
  l.peak = live > l.peak ? live : l.peak;
  const BlockMode mode = seg.mode;
  const double back =
      mode == BlockMode::Checkpoint ? recomputed_backward_live(b, b, saved, below) : backward_live(b, mode, below);
  l.peak = back > l.peak ? back : l.peak;
  double kept = 0;
  const bool to_host = seg.offload_to_host;
  if (mode != BlockMode::Checkpoint) {
    kept = block_kept_bytes(b, b.attention_bytes, mode, to_host, l.host);  // no attention offload here
    if (mode == BlockMode::CheckpointFfn) {
      l.recompute_s += pc.ffn_recompute_s[i];
      ++l.recomputed;
      if (to_host) l.offload_bytes += blocks[i].ffn_input_bytes;
    }
  } else {
    l.recompute_s += pc.recompute_s[i];
    ++l.recomputed;
    if (to_host) {
      l.host += b.boundary_bytes;
      l.offload_bytes += b.boundary_bytes;
    } else {
      kept = b.boundary_bytes;
    }
  }
  l.retained += kept;
}

SingleBlockFigures figures_of(const FusedState& l) {
  SingleBlockFigures f;
  f.peak_bytes = l.peak;
  f.retained_bytes = l.retained;
  f.host_bytes = l.host;
  f.recompute_s = l.recompute_s;
  f.offload_bytes = l.offload_bytes;
  f.recomputed_blocks = l.recomputed;
  return f;
}

// Segment s forward and backward in one go, with predict()'s sums (PlanScorer): the same segment
// walks and sums as walk_timeline and predict(), so every figure is bit-identical.
inline void fused_segment(const PreparedChain& pc, const OffloadView& o, const Segment& s, FusedState& l) {
  const double before = l.retained;
  MaxSink max{l.peak};
  const double kept = segment_forward(pc, o, s, before, l.host, max);
  segment_backward(pc, o, s, before, max);
  l.peak = max.peak;
  l.retained += kept;
  segment_sums(pc, o, s, l.recompute_s, l.offload_bytes, l.recomputed);
}

SingleBlockFigures single_block_figures(const PreparedChain& pc, const Plan& plan) {
  const ScaledBlock* sb = pc.scaled.data();
  const BlockCost* blocks = pc.chain->blocks.data();
  const double base = pc.chain->outside_activation_bytes;
  FusedState st;
  const int n = static_cast<int>(plan.segments.size());
  for (int i = 0; i < n; ++i) fused_block(pc, blocks, sb[i], base, i, plan.segments[i], st);
  return figures_of(st);
}

}  // namespace

namespace {

ActivationTimeline timeline(const PreparedChain& pc, const Plan& plan, bool keep_points, bool name_peak) {
  ActivationTimeline tl;
  const auto& blocks = pc.chain->blocks;
  // phases are named lazily: building a string per position would dominate advise's run time
  auto phase_name = [&](int what, int i) {
    const std::string where = blocks[i].list + "." + std::to_string(blocks[i].index);
    return (what == 0 ? "forward " : what == 1 ? "backward (recomputed segment) " : "backward ") + where;
  };
  PeakSink peak;
  if (keep_points) {
    auto note = [&](int what, int i, double live) {
      peak(what, i, live);
      tl.points.push_back({phase_name(what, i), live});
    };
    walk_timeline(pc, plan, note, tl);
  } else if (!name_peak) {
    peak.peak = walk_timeline(pc, plan, MaxSink{}, tl).peak;
  } else {
    peak = walk_timeline(pc, plan, peak, tl);
  }
  tl.peak_bytes = peak.peak;
  if (name_peak && !blocks.empty()) tl.peak_phase = phase_name(peak.what, peak.block);
  return tl;
}

}  // namespace

ActivationTimeline simulate_activations(const PreparedChain& pc, const Plan& plan, bool keep_points) {
  return timeline(pc, plan, keep_points, true);
}

double quantizable_param_bytes(const TrainingSetup& setup) {
  const PrecisionInfo prec = precision_info(setup.base_precision);
  const double dtype = stored_weight_bytes(setup);
  // TransformerEngine keeps bf16 weight storage for full runs (§2.2)
  if (prec.backend == "transformerengine" && setup.model_type == ModelType::Full) return dtype;
  return prec.quantized ? prec.bytes_per_param : dtype;
}

// bytes a block's weights take. The quantizable Linears at the quantized width; the rest at the weight
// dtype (bf16), except where more of it is converted: every parameter when the trainer's own plan
// converts the whole block (ai-toolkit's quantize_model, OneTrainer's "blocks" filter), and the adaLN
// modulation Linears where the quantizer's name filter lets them through: TorchAO and fp8-native
// convert every nn.Linear whose in and out dims are divisible by 16 with no name excluded (SimpleTuner
// helpers/training/quantisation; a modulation Linear maps d to 3d, 4d or 6d); Quanto every Linear its
// per-family exclude list does not name (sd3's and flux's `*norm*` hold AdaLayerNormZero's
// `norm1.linear`; most families have no list), and Wan's list keeps the FFN (`*ffn*`). bitsandbytes
// (nf4-bnb, a Diffusers/Transformers BitsAndBytesConfig at load) replaces every nn.Linear whose name
// holds none of llm_int8_skip_modules, the modulation included: diffusion-pipe's lists
// (models/hidream.py:24, chroma.py:23) name no adaLN Linear; SimpleTuner's nf4 preset (pipeline-only,
// docs/sources/simpletuner.md §2.2) is not in the mirrored sources and is counted with no skip list. SDNQ's own skip
// keys are not spelled out in the sources: its modulation is counted at the weight dtype (the larger
// count; docs/calibration.md names the families whose SDNQ peaks say otherwise). No quantizer here
// converts a convolution.
double converted_params(const BlockCost& b, const TrainingSetup& setup) {
  const PrecisionInfo prec = precision_info(setup.base_precision);
  if (!prec.quantized) return 0;
  if (setup.quantize_all_block_linears) return b.params;
  const bool modulation = prec.backend == "torchao" || prec.backend == "native" || prec.backend == "bnb" ||
                          (prec.backend == "quanto" && !b.modulation_kept_by_quanto);
  return quantized_linear_params(b, setup) + (modulation ? b.modulation_params : 0);
}

double quantized_linear_params(const BlockCost& b, const TrainingSetup& setup) {
  return b.quantizable_params - (quanto_keeps_ffn(b, precision_key(setup)) ? b.quantizable_ffn_params : 0);
}

double quantized_linears(const BlockCost& b, const TrainingSetup& setup) {
  return b.quantizable_linears - (quanto_keeps_ffn(b, precision_key(setup)) ? b.ffn_linears : 0);
}

double block_weight_bytes(const BlockCost& b, const TrainingSetup& setup) {
  const double q = quantizable_param_bytes(setup), dtype = stored_weight_bytes(setup);
  const double converted = converted_params(b, setup);  // 0 unquantized: every weight at the dtype
  return converted * q + (b.params - converted) * dtype;
}

namespace {

// The blocks a per-list swap (TrainingSetup::blocks_to_swap_per_list) keeps on the host: the last
// counts[k] blocks of each of the chain's last counts.size() lists (lists in the order they first
// appear); empty where counts is.
std::vector<bool> swapped_by_list(const BlockChain& chain, const std::vector<int>& counts) {
  if (counts.empty()) return {};
  std::vector<std::string> lists;
  std::map<std::string, int> sizes;
  for (const BlockCost& b : chain.blocks) {
    if (!sizes.count(b.list)) lists.push_back(b.list);
    ++sizes[b.list];
  }
  std::map<std::string, int> swapped;
  const size_t k = std::min(counts.size(), lists.size());
  for (size_t j = 0; j < k; ++j) swapped[lists[lists.size() - k + j]] = counts[counts.size() - k + j];
  std::vector<bool> out(chain.blocks.size(), false);
  std::map<std::string, int> seen;
  for (size_t i = 0; i < chain.blocks.size(); ++i) {
    const std::string& l = chain.blocks[i].list;
    const int pos = seen[l]++;
    out[i] = swapped.count(l) && pos >= sizes[l] - std::min(swapped[l], sizes[l] - 1);
  }
  return out;
}

}  // namespace

StaticMemory static_memory(const BlockChain& chain, const TrainingSetup& setup) {
  StaticMemory m;
  const double dtype = stored_weight_bytes(setup);
  const bool full = setup.model_type == ModelType::Full;
  const double q_bytes = quantizable_param_bytes(setup);

  // Streaming: RamTorch moves ramtorch_percent of the block weights to the host (targets `blocks.*`
  // in the examples); Musubi swap keeps the last N blocks on the host. Both stream one block at a
  // time; a double buffer of the largest block stays resident.
  const int n = static_cast<int>(chain.blocks.size());
  const int swap_from = setup.blocks_to_swap > 0 ? std::max(1, n - std::min(setup.blocks_to_swap, n - 1)) : n;
  const std::vector<bool> swapped_in_list = swapped_by_list(chain, setup.blocks_to_swap_per_list);
  double largest_block_bytes = 0, all_block_bytes = 0, largest = 0, second = 0, largest_linear_bytes = 0;
  for (int i = 0; i < n; ++i) {
    const BlockCost& b = chain.blocks[i];
    const double bytes = block_weight_bytes(b, setup);
    all_block_bytes += bytes;
    if (setup.layer_offload_fraction > 0 && b.quantizable_linears > 0)
      largest_linear_bytes = std::max(largest_linear_bytes, 2 * b.quantizable_params * q_bytes / b.quantizable_linears);
    if (bytes > largest) {
      second = largest;
      largest = bytes;
    } else {
      second = std::max(second, bytes);
    }
    double streamed_share = 0;
    if (setup.ramtorch) streamed_share = std::clamp(setup.ramtorch_percent / 100.0, 0.0, 1.0);
    const bool swapped = swapped_in_list.empty() ? i >= swap_from : swapped_in_list[i];
    if (swapped || setup.group_offload) streamed_share = 1.0;
    if (setup.layer_offload_fraction > 0) continue;  // below, by bytes
    m.weights_bytes += bytes * (1 - streamed_share);
    m.streamed_weights_bytes += bytes * streamed_share;
    if (streamed_share > 0) largest_block_bytes = std::max(largest_block_bytes, bytes);
  }
  m.weights_bytes += kStreamedBlockBuffers * largest_block_bytes;
  if (setup.layer_offload_fraction > 0 && n > 0) {
    // OneTrainer's LayerOffloadStrategy: target_loaded_bytes = total x (1 - fraction), a window of
    // whole layers up to that (at least two layers), held in a static GPU cache of at most 10 tensors
    // that each add one largest tensor, and "no more than 10% overhead" (StaticLayerAllocator.allocate_cache);
    // the largest tensor is taken as twice a block's average quantizable Linear (an FFN projection
    // is 4d^2 against the attention's d^2). The rest of the bytes wait on the host and are streamed.
    const double f = std::clamp(setup.layer_offload_fraction, 0.0, 1.0);
    const double loaded = std::max(all_block_bytes * (1 - f), std::min(all_block_bytes, largest + second));
    const double slack = largest_linear_bytes > 0 ? std::min(kLayerOffloadCacheOverhead * loaded, kLayerOffloadCacheTensors * largest_linear_bytes)
                                                  : kLayerOffloadCacheOverhead * loaded;
    m.weights_bytes += loaded + slack;
    m.streamed_weights_bytes += all_block_bytes - loaded;
  }
  m.weights_bytes += chain.outside_params * dtype;
  // the other experts: the same resident and streamed bytes each; idle ones parked on the host move only
  // when a step's timestep falls on the other side of the boundary, not every step, so they are neither
  // resident nor streamed (their occasional move is not timed)
  const int experts = std::max(1, setup.experts);
  if (experts > 1 && !setup.idle_experts_on_host) {
    const double one_resident = m.weights_bytes - kStreamedBlockBuffers * largest_block_bytes;
    m.weights_bytes += (experts - 1) * one_resident;  // their offloaded share waits on the host: only the active one streams
  }

  double block_params = 0, lora = 0, largest_params = 0, largest_lora = 0;
  for (const auto& b : chain.blocks) {
    block_params += b.params;
    lora += b.lora_params;
    largest_params = std::max(largest_params, b.params);
    largest_lora = std::max(largest_lora, b.lora_params);
  }
  const OptimizerInfo opt = optimizer_info(setup.optimizer);
  if (full) {
    m.trainable_params = block_params + chain.outside_params;
    m.trainable_bytes = 0;  // the weights themselves, already counted
    // gradients in the weights' dtype; the fused back pass frees each as it is applied: one block's
    m.gradient_bytes = (setup.fused_back_pass ? largest_params : m.trainable_params) * dtype;
  } else if (setup.embedding_params > 0) {
    m.trainable_params = setup.embedding_params;  // the embedding vectors, fp32, no adapters
    m.trainable_bytes = setup.embedding_params * kFp32Bytes;
    m.gradient_bytes = setup.embedding_params * kFp32Bytes;
  } else {
    m.trainable_params = lora;
    // adapters are cast to weight_dtype (bf16), §2.1, unless the trainer keeps them in their own dtype
    const double adapter = setup.adapter_weight_bytes > 0 ? setup.adapter_weight_bytes : kBf16Bytes;
    m.trainable_bytes = lora * adapter;
    m.gradient_bytes = (setup.fused_back_pass ? largest_lora : lora) * adapter;
  }
  // each trained expert has its own adapter (or weights) and optimizer state; one expert's gradients
  // exist at a time (its step)
  const int trained = setup.trained_experts > 0 ? std::min(setup.trained_experts, experts) : experts;
  if (trained > 1) {
    m.trainable_bytes *= trained;
    m.trainable_params *= trained;
  }
  m.optimizer_bytes = m.trainable_params * opt.state_bytes_per_param;
  if (setup.use_ema && setup.ema_on_gpu) m.optimizer_bytes += m.trainable_params * dtype;
  m.other_models_bytes = std::max(0.0, setup.kept_model_bytes);
  m.weights_bytes += m.other_models_bytes;
  return m;
}

// Host time of one pass over a block: its kernel launches (times launch_multiple: autograd launches
// a backward kernel or two per forward op) and one dispatch per quantized Linear call (calibration:
// quantized_call_s per precision; 0 for a bf16 base). The GPU cannot finish the block sooner.
double block_host_s(const BlockCost& b, const TrainingSetup& setup, const Coefficients& coef, double launch_multiple) {
  return launch_multiple * b.launches * coef.launch_s + quantized_linears(b, setup) * coef.call_s(precision_key(setup));
}

// The block's GPU work by kernel class (Step time, below):
//   matmul       FLOPs / (the card's practical bf16 ceiling x the share a matmul of the block's size
//                reaches x matmul_efficiency); the size is the square-equivalent edge cbrt(M K N) of its
//                average Linear call, M K N = matmul FLOPs / (2 x Linear calls); quantized: x time factor
//   attention    fused kernels: FLOPs / (the kernel's published rate at the block's keys per query and
//                head dim x attention_efficiency), the kernel attention_mechanism picks on the card;
//                linear-attention kernels at the unfused rate
//   elementwise  norms, modulation, RoPE, activations, gates, residuals, adapter dropout: each saved
//                tensor is written once and read once, 2 x saved bytes / (memory bandwidth x
//                elementwise_efficiency)
//   dequant      quantized kernels rebuild each weight per call (dequant_passes x 2 B/param at bandwidth)
// Backward: a frozen (LoRA) base's matmuls form input gradients only, the forward's FLOPs again (a full
// fine-tune adds its weight gradients: twice); attention's backward recomputes the scores inside the
// kernel, kAttentionBackwardFlopsRatio x the forward FLOPs at the kernel's backward rate; elementwise
// backward reads the incoming gradient and the saved input and writes a gradient: twice the forward's
// bytes. Each pass is never shorter than the host takes to launch it.
BlockKernelTimes block_kernel_times(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu,
                                    const Coefficients& coef) {
  BlockKernelTimes k;
  const GpuCoefficients& g = coef.for_gpu(gpu.id);
  const double factor = coef.time_factor(precision_key(setup));
  const double q_share = b.params > 0 ? quantized_linear_params(b, setup) / b.params : 0;
  const double calls = std::max(1.0, b.quantizable_linears);
  const double edge = b.matmul_flops > 0 ? std::cbrt(b.matmul_flops / (2 * calls)) : 0;
  k.matmul_size_share = matmul_size_share(gpu.kernels.get(), edge);
  const double mm_rate = g.matmul_efficiency * matmul_ceiling(gpu) * k.matmul_size_share * setup.matmul_rate_share;
  k.matmul_s = b.matmul_flops / mm_rate * (q_share * factor + (1 - q_share));
  const bool backward_full = setup.model_type == ModelType::Full;
  k.matmul_backward_s = (backward_full ? 2.0 : 1.0) * coef.backward_factor * k.matmul_s;
  const double fused = std::max(0.0, b.attention_flops - b.linear_attention_flops);
  k.kernel = attention_kernel(setup.attention, gpu, setup.mixed_precision == "bf16");
  const double keys = b.attention_keys > 0 ? b.attention_keys : 4096;
  const double hd = b.head_dim > 0 ? b.head_dim : 128;
  auto attn_s = [&](double flops, AttentionKernel kern, bool backward) {
    if (flops <= 0) return 0.0;
    return flops / (g.attention_efficiency * attention_flops_per_s(gpu, kern, keys, hd, backward) * setup.matmul_rate_share);
  };
  k.attention_s = attn_s(fused, k.kernel, false) + attn_s(b.linear_attention_flops, AttentionKernel::Unfused, false);
  k.attention_backward_s = attn_s(kAttentionBackwardFlopsRatio * fused, k.kernel, true) +
                           attn_s(kAttentionBackwardFlopsRatio * b.linear_attention_flops, AttentionKernel::Unfused, true);
  k.elementwise_s = 2 * b.saved_bytes() / (g.elementwise_efficiency * gpu.mem_bytes_per_s);
  k.dequant_s = coef.dequant(precision_key(setup)) * quantized_linear_params(b, setup) * kBf16Bytes / gpu.mem_bytes_per_s;
  k.host_forward_s = block_host_s(b, setup, coef, 1.0);
  k.host_backward_s = block_host_s(b, setup, coef, coef.backward_host_ratio);
  return k;
}

namespace {

// A forward pass over the block (all of it, or its FFN side: mm_share of the matmuls and the FFN's
// share of the saved bytes), never under host_multiple x its share of the forward's host time.
double forward_pass_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef,
                      bool ffn_only, double host_multiple) {
  const BlockKernelTimes k = block_kernel_times(b, setup, gpu, coef);
  if (!ffn_only)
    return std::max(k.matmul_s + k.attention_s + k.elementwise_s + k.dequant_s, host_multiple * k.host_forward_s);
  const double mm_share = b.ffn_matmul_flops / b.matmul_flops;
  const double byte_share = b.saved_bytes() > 0 ? b.saved_ffn_bytes / b.saved_bytes() : mm_share;
  return std::max((k.matmul_s + k.dequant_s) * mm_share + k.elementwise_s * byte_share,
                  host_multiple * k.host_forward_s * mm_share);
}

}  // namespace

double block_forward_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef) {
  if (b.measured_forward_s > 0) return b.measured_forward_s;
  return forward_pass_s(b, setup, gpu, coef, false, 1.0);
}

double block_recompute_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef) {
  if (b.measured_forward_s > 0) return b.measured_forward_s;
  return forward_pass_s(b, setup, gpu, coef, false, 1 + coef.checkpoint_host_ratio);
}

double block_backward_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef) {
  if (b.measured_forward_s > 0)
    return b.measured_backward_s > 0 ? b.measured_backward_s : coef.backward_factor * b.measured_forward_s;
  const BlockKernelTimes k = block_kernel_times(b, setup, gpu, coef);
  // the dequantized weight is rebuilt for the input-gradient matmul too
  const double compute = k.matmul_backward_s + k.attention_backward_s + 2 * k.elementwise_s + k.dequant_s;
  return std::max(compute, k.host_backward_s);
}

// What -ffn backends recompute: the FFN side's matmuls and elementwise work (its share of the
// block's saved bytes), never under its share of the forward's launches.
double block_ffn_forward_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu,
                           const Coefficients& coef) {
  if (b.measured_ffn_forward_s > 0) return b.measured_ffn_forward_s;
  if (b.matmul_flops <= 0) return 0;
  return forward_pass_s(b, setup, gpu, coef, true, 1.0);
}

double block_ffn_recompute_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu,
                             const Coefficients& coef) {
  if (b.measured_ffn_forward_s > 0) return b.measured_ffn_forward_s;
  if (b.matmul_flops <= 0) return 0;
  return forward_pass_s(b, setup, gpu, coef, true, 1 + coef.checkpoint_host_ratio);
}

Prediction unsupported_prediction(const std::string& reason) {
  Prediction p;
  p.supported = false;
  p.reason = reason;
  return p;
}

double CardOverhead::usable_bytes() const {
  return std::max(0.0, total_bytes - driver_reserved_bytes - context_bytes - library_bytes - allocator_margin_bytes);
}

CardOverhead card_overhead(const GpuSpec& gpu, const Coefficients& coef) {
  CardOverhead o;
  o.total_bytes = gpu.total_bytes;
  o.driver_reserved_bytes = gpu.driver_reserved_bytes;
  o.context_bytes = gpu.context_bytes;
  o.library_bytes = gpu.library_bytes;
  const double known = o.driver_reserved_bytes + o.context_bytes + o.library_bytes;
  const auto fitted = coef.gpu.find(gpu.id);
  // a card the calibration measured, at the memory it was measured with (not --vram-gib's other size)
  if (fitted != coef.gpu.end() && !gpu.custom_total && fitted->second.reserve_bytes > 0) {
    o.allocator_margin_bytes = std::max(0.0, fitted->second.reserve_bytes - known);
    o.margin_measured = true;
  } else {
    o.allocator_margin_bytes = gpu.allocator_margin_share * gpu.total_bytes;
  }
  return o;
}

double usable_vram_bytes(const GpuSpec& gpu, const Coefficients& coef) { return card_overhead(gpu, coef).usable_bytes(); }

double allocator_slack_share(const TrainingSetup& setup, const Coefficients& coef) {
  return setup.expandable_segments ? std::min(coef.fragmentation, kExpandableSegmentsSlack) : coef.fragmentation;
}

double default_headroom_bytes(const GpuSpec& gpu) { return gpu.display ? 0.5 * kGiB : 0.0; }

std::string default_headroom_reason(const GpuSpec& gpu) {
  return gpu.display ? "default for a card with display outputs: an idle desktop's share; a browser or another "
                       "CUDA process needs more (--headroom-gib)"
                     : "default for a datacenter card without display outputs; another process on it needs --headroom-gib";
}

PreparedChain prepare(const BlockChain& chain, const TrainingSetup& setup, const GpuSpec& gpu,
                      const Coefficients& coef) {
  PreparedChain pc;
  pc.chain = &chain;
  pc.setup = &setup;
  pc.gpu = &gpu;
  pc.coef = &coef;
  const GpuCoefficients& g = coef.for_gpu(gpu.id);
  const std::size_t n = chain.blocks.size();
  pc.scaled.reserve(n);
  pc.forward_s.reserve(n);
  pc.ffn_forward_s.reserve(n);
  pc.recompute_s.reserve(n);
  pc.ffn_recompute_s.reserve(n);
  pc.attention_s.reserve(n);
  for (const auto& b : chain.blocks) {
    pc.scaled.push_back(scaled(b, coef, chain.quantized_kernel));
    const double fwd = block_forward_s(b, setup, gpu, coef);
    pc.forward_s.push_back(fwd);
    pc.ffn_forward_s.push_back(block_ffn_forward_s(b, setup, gpu, coef));
    pc.recompute_s.push_back(block_recompute_s(b, setup, gpu, coef));
    pc.ffn_recompute_s.push_back(block_ffn_recompute_s(b, setup, gpu, coef));
    pc.backward_s.push_back(block_backward_s(b, setup, gpu, coef));
    pc.attention_s.push_back(b.measured_forward_s > 0 ? 0.0 : std::min(fwd, block_kernel_times(b, setup, gpu, coef).attention_s));
  }
  for (std::size_t i = 0; i < n; ++i) {
    pc.forward_sum_s += pc.forward_s[i];
    pc.backward_sum_s += pc.backward_s[i];
  }
  pc.static_memory = static_memory(chain, setup);
  // embedders and heads: large matmuls (patch embedding, final projection) at the practical ceiling
  pc.outside_s = chain.outside_matmul_flops / (g.matmul_efficiency * matmul_ceiling(gpu) * setup.matmul_rate_share);
  pc.usable_vram_bytes = usable_vram_bytes(gpu, coef);
  pc.gpu_coef = &g;
  pc.optimizer_update_bytes_per_param = optimizer_info(setup.optimizer).update_bytes_per_param;
  if (setup.multi_gpu.active()) pc.multi_gpu = multi_gpu_plan_free(pc);
  bool copies = false;
  for (const auto& b : chain.blocks)
    copies = copies || (!b.measured && b.upcast_weight_attention_bytes + b.upcast_weight_ffn_bytes + b.upcast_weight_rest_bytes > 0);
  if (copies) {
    auto bare = std::make_shared<PreparedChain>(pc);
    for (std::size_t i = 0; i < n; ++i) {
      const BlockCost& b = chain.blocks[i];
      if (b.measured) continue;
      bare->scaled[i].attention_bytes -= b.upcast_weight_attention_bytes;
      bare->scaled[i].ffn_bytes -= b.upcast_weight_ffn_bytes;
      bare->scaled[i].rest_bytes -= b.upcast_weight_rest_bytes;
    }
    pc.without_upcast_copies = std::move(bare);
  }
  return pc;
}

Prediction predict(const BlockChain& chain, const Plan& plan, const TrainingSetup& setup, const GpuSpec& gpu,
                   const Coefficients& coef, double headroom_bytes) {
  return predict(prepare(chain, setup, gpu, coef), plan, headroom_bytes);
}

// Step time (DESIGN.md, "Time, in one paragraph"):
//   forward   = sum of block times (block_kernel_times above: matmuls against the card's practical
//               ceiling at their size, attention against the kernel the run uses at its sequence length
//               and head dim, elementwise bytes against memory bandwidth; never under the host's
//               launches) + embedders/heads outside the blocks; a profile's own time where it measured one
//   backward  = input gradients of the matmuls (+ weight gradients for a full fine-tune), the attention
//               kernel's backward (it recomputes the scores inside), twice the elementwise bytes, never
//               under the backward's launches; a profile's own backward time where it measured one
//   recompute = forward time of every checkpointed block, all of it (matmuls, attention, elementwise
//               and the host's launches: the recompute pass launches every kernel again), never under
//               the checkpoint machinery's host time (block_recompute_s); the FFN side only for -ffn
//               backends
//   transfer  = offloaded bytes out and back over PCIe (not hidden by compute: 1 - offload_overlap),
//               streamed weights on forward, recompute and backward (1 - stream_overlap)
//   optimizer = trainable bytes read and written at memory bandwidth
//   overhead  = fixed per step (fitted per GPU)
namespace {

struct SingleBlockFigures;
Prediction predict_plan(const PreparedChain& pc, const Plan& plan, double headroom_bytes, bool name_peak,
                        const SingleBlockFigures* figures = nullptr);
bool fusable(const PreparedChain& pc, const Plan& plan) {
  return !plan.offload_attention && plan.segments.size() == pc.chain->blocks.size();
}

}  // namespace

Prediction predict(const PreparedChain& pc, const Plan& plan, double headroom_bytes) {
  return predict_plan(pc, plan, headroom_bytes, true);
}

Prediction predict_figures(const PreparedChain& pc, const Plan& plan, double headroom_bytes) {
  return predict_plan(pc, plan, headroom_bytes, false);
}

Prediction PlanScorer::figures(const Plan& plan, double headroom_bytes) {
  const PreparedChain& pc = *pc_;
  const std::size_t n = plan.segments.size();
  // attention offload makes every segment's figures depend on what the whole plan checkpoints (the
  // offloaded share, the staging copies): the walk resumes only under the same view. Plans of
  // one-block segments without it walk block by block (fused_block, the lighter pass).
  const OffloadView o = offload_view(pc, plan);
  const bool single = !o.on && n == pc.chain->blocks.size();
  if (single != walked_single_ || o.on != walked_view_[0] || o.share != walked_view_[1] || o.base != walked_view_[2]) {
    walked_.clear();  // the other walk's states do not serve
    walked_single_ = single;
    walked_view_[0] = o.on;
    walked_view_[1] = o.share;
    walked_view_[2] = o.base;
  }
  if (states_.size() < n + 1) states_.resize(n + 1);
  // the first segment where this plan differs from the last one walked: the walk resumes there
  // (one-block segments: segment j is block j, only modes differ)
  std::size_t p = 0;
  const std::size_t common = std::min(n, walked_.size());
  const Segment* was = walked_.data();
  const Segment* now = plan.segments.data();
  if (single)
    while (p < common && was[p].mode == now[p].mode && was[p].offload_to_host == now[p].offload_to_host) ++p;
  else
    while (p < common && was[p].begin == now[p].begin && was[p].end == now[p].end && was[p].mode == now[p].mode &&
           was[p].offload_to_host == now[p].offload_to_host)
      ++p;
  walked_.resize(n);
  resumed_at_ = p;
  const ScaledBlock* sb = pc.scaled.data();
  const BlockCost* blocks = pc.chain->blocks.data();
  const double base = pc.chain->outside_activation_bytes;
  State st = p == 0 ? State{} : states_[p];
  State* states = states_.data();
  Segment* walked = walked_.data();
  if (single) {
    for (std::size_t j = p; j < n; ++j) {
      fused_block(pc, blocks, sb[j], base, static_cast<int>(j), now[j], st);
      states[j + 1] = st;
      walked[j] = now[j];
    }
  } else {
    for (std::size_t j = p; j < n; ++j) {
      fused_segment(pc, o, now[j], st);
      states[j + 1] = st;
      walked[j] = now[j];
    }
  }
  const SingleBlockFigures fig = figures_of(st);
  return predict_plan(pc, plan, headroom_bytes, false, &fig);
}

namespace {

Prediction predict_plan(const PreparedChain& pc, const Plan& plan, double headroom_bytes, bool name_peak,
                        const SingleBlockFigures* figures) {
  Prediction p;
  const BlockChain& chain = *pc.chain;
  const TrainingSetup& setup = *pc.setup;
  const GpuSpec& gpu = *pc.gpu;
  const Coefficients& coef = *pc.coef;
  const GpuCoefficients& g = pc.gpu_coef ? *pc.gpu_coef : coef.for_gpu(gpu.id);
  const StaticMemory& sm = pc.static_memory;
  // figures given (PlanScorer: any plan), or one fused pass for a plan of one-block segments without
  // attention offload nobody names the peak of (single_block_figures)
  const bool fused = figures != nullptr || (!name_peak && fusable(pc, plan));
  SingleBlockFigures fig;
  ActivationTimeline tl;
  if (fused) {
    fig = figures ? *figures : single_block_figures(pc, plan);
    tl.peak_bytes = fig.peak_bytes;
    tl.retained_after_forward_bytes = fig.retained_bytes;
    tl.host_bytes = fig.host_bytes;
  } else {
    tl = timeline(pc, plan, false, name_peak);
  }

  MemoryBreakdown& m = p.memory;
  m.weights_bytes = sm.weights_bytes;
  m.other_models_bytes = sm.other_models_bytes;
  m.streamed_weights_bytes = sm.streamed_weights_bytes;
  m.trainable_bytes = sm.trainable_bytes;
  m.gradient_bytes = sm.gradient_bytes;
  m.optimizer_bytes = sm.optimizer_bytes;
  m.activation_peak_bytes = tl.peak_bytes;
  // what the upcast weight copies add to the peak: the peak with them less the peak without them
  if (pc.without_upcast_copies)
    m.upcast_weight_bytes = std::max(0.0, tl.peak_bytes - timeline(*pc.without_upcast_copies, plan, false, false).peak_bytes);
  m.fragmentation_bytes = (tl.peak_bytes - m.upcast_weight_bytes) * allocator_slack_share(setup, coef);
  m.reserve_bytes = 0;  // reserve is taken off the card's usable memory instead (usable_vram_bytes)
  m.host_activation_bytes = tl.host_bytes;
  m.peak_phase = tl.peak_phase;
  p.peak_vram_bytes = m.weights_bytes + m.trainable_bytes + m.gradient_bytes + m.optimizer_bytes +
                      m.activation_peak_bytes + m.fragmentation_bytes;
  p.usable_vram_bytes = pc.usable_vram_bytes;
  p.smi_extra_bytes = gpu.context_bytes + gpu.library_bytes;
  p.fits = p.peak_vram_bytes + headroom_bytes <= p.usable_vram_bytes;

  TimeBreakdown& t = p.time;
  const double pcie = std::max(1.0, gpu.pcie_bytes_per_s * g.pcie_efficiency);
  const bool full = setup.model_type == ModelType::Full;
  t.forward_s = pc.forward_sum_s + pc.outside_s;
  t.backward_s = pc.backward_sum_s;
  t.backward_s += (full ? 2.0 : 1.0) * coef.backward_factor * pc.outside_s;

  // recompute_s sums in a local (through t it went to memory and back once per block)
  double offload_bytes = 0, recomputed_blocks = 0, recompute_s = t.recompute_s;
  if (fused) {
    // the same sums, formed in the same block order by the fused pass (t.recompute_s starts at 0)
    recompute_s = fig.recompute_s;
    offload_bytes = fig.offload_bytes;
    recomputed_blocks = fig.recomputed_blocks;
  } else {
    const OffloadView o = offload_view(pc, plan);
    int recomputed = 0;
    for (const auto& seg : plan.segments) segment_sums(pc, o, seg, recompute_s, offload_bytes, recomputed);
    recomputed_blocks = recomputed;
  }
  t.recompute_s = recompute_s;
  // out in forward, back in backward
  t.transfer_s = 2 * offload_bytes / pcie * (1 - coef.offload_overlap);
  if (sm.streamed_weights_bytes > 0) {
    const double recomputed_share = recomputed_blocks / std::max<std::size_t>(1, chain.blocks.size());
    const double passes = 2 + recomputed_share;  // forward, backward, and the recompute pass
    t.transfer_s += sm.streamed_weights_bytes * passes / pcie * (1 - coef.stream_overlap);
  }
  const double update_bytes_per_param =
      pc.gpu_coef ? pc.optimizer_update_bytes_per_param : optimizer_info(setup.optimizer).update_bytes_per_param;
  t.optimizer_s = sm.trainable_params * update_bytes_per_param / gpu.mem_bytes_per_s;
  t.overhead_s = g.overhead_s;
  t.compiled = setup.regional_compile;
  p.step_time_s = t.forward_s + t.backward_s + t.recompute_s + t.transfer_s + t.optimizer_s + t.overhead_s;
  if (setup.multi_gpu.active()) apply_multi_gpu(pc, p, headroom_bytes);  // per rank (multi_gpu.hpp)
  return p;
}

}  // namespace

}  // namespace segadvise
