// A single-GPU prediction made per rank (docs/sources/multi-gpu.md, "dist §n"): the
// engine's model state per rank (distributed.hpp), the step's collectives against the GPU's links,
// and how much of them compute hides. predict() calls apply_multi_gpu when the setup's multi_gpu
// is active; the block chain it gets is already split by context parallel (split_sequence).
#pragma once

#include "segadvise/costmodel/costmodel.hpp"
#include "segadvise/costmodel/distributed.hpp"
#include "segadvise/costmodel/types.hpp"

namespace segadvise {

// What the engine keeps per replica, in its dtypes, for this chain and setup:
//   single/DDP: the single-GPU static memory (bf16 adapters or weights, the optimizer's states);
//     DDP adds buckets as large as the gradients (gradient_as_bucket_view off unless block swap)
//   FSDP2: trainable parameters and their gradients fp32 (accelerate upcasts them), optimizer
//     states fp32 (optimi/bnb/soap fall back to adamw_schedulefree), frozen weights at their dtype
//     and sharded except bnb 4-bit; gathers in bf16, reduce-scatters bf16 gradients
//   ZeRO: bf16 weights and gradients, fp32 master + AdamW moments = 12 B per trainable parameter
//     (DeepSpeed AdamW replaces the trainer's optimizer), buckets of 2 x h^2 bf16 ("auto": h^2)
RankStateInput rank_input(const PreparedChain& pc);

// The intra-node link of `gpu` (NVLink; PCIe when it has none; half PCIe without P2P, every byte
// crossing it twice through host memory) and the run's inter-node network.
LinkSpec link_for(const GpuSpec& gpu, const MultiGpuSetup& mg);

// The chain one context-parallel rank runs: every sequence-proportional figure (saved and
// boundary bytes, transient bytes, FLOPs, launches stay) divided by k. Weights stay.
BlockChain split_sequence(const BlockChain& chain, int k);

// What apply_multi_gpu needs that no plan changes, formed once per prepared chain (prepare() calls it).
struct MultiGpuPlanFree {
  RankStateInput in;
  RankState rank;
  LinkSpec link;
  CommVolume volume;
  CommCost cost;
  double samples_per_step = 0, host_ram_per_node_bytes = 0;
  double attention_s = 0;  // forward and backward attention time, what context parallel may hide under
};
std::shared_ptr<const MultiGpuPlanFree> multi_gpu_plan_free(const PreparedChain& pc);

// Turns the single-GPU prediction `p` of pc's (split) chain into the busiest rank's: model state
// per rank, exposed communication, CPU optimizer step, and MultiGpuInfo.
void apply_multi_gpu(const PreparedChain& pc, Prediction& p, double headroom_bytes);

}  // namespace segadvise
