// Per-rank model-state bytes and communication of one optimizer step under the distributed engines
// SimpleTuner runs on (docs/sources/multi-gpu.md, cited below as "dist §n"): accelerate
// DDP, PyTorch FSDP2 (fully_shard), DeepSpeed ZeRO-1/2/3, and diffusers context parallel.
//
// The caller (the cost model, the CPU validator) states the bytes the engine really keeps, in the
// dtype it keeps them in; this file only decides which of them are sharded, replicated, gathered
// or offloaded, and what each rank hands to collectives. Activations are not here: they depend on
// the micro-batch and are never sharded by DDP/FSDP/ZeRO (dist §3); context parallel divides the
// sequence-proportional part, which the caller does by planning the chain at tokens / K.
//
// Sharding (dist §3, ZeRO paper §5):
//   single, ddp: everything replicated (DDP also keeps gradient buckets: bucket_bytes)
//   zero1: optimizer state (fp32 master + moments, as optimizer_state_bytes) / N
//   zero2: + gradients / N
//   zero3, fsdp2: + weights / N, plus the unsharded working set in flight
// Uneven shards: every sharded quantity is split by ceil division in elements of its own size,
// the busiest rank (rank 0) holding ceil(elements / N) elements, as FSDP2 chunks dim 0 and
// DeepSpeed pads its flat buffer to a multiple of N. shard_bytes() is that rule.
//
// Payload vs wire: CommVolume holds PAYLOAD bytes per rank per optimizer step: the size of the
// full (unsharded) tensor each collective produces or reduces, summed over calls. What crosses a
// link is wire_bytes(): ring factors 2(N-1)/N for all-reduce, (N-1)/N for all-gather,
// reduce-scatter and all-to-all (NCCL-tests PERFORMANCE.md, dist §4).
#pragma once

#include <string>

#include "segadvise/costmodel/constants.hpp"

namespace segadvise {

enum class Strategy { single, ddp, fsdp2, zero1, zero2, zero3 };
std::string to_string(Strategy s);  // "single" | "ddp" | "fsdp2" | "zero1" | "zero2" | "zero3"
// The word as an enum; anything else throws InputError "<where> is 'x'; expected one of …".
Strategy parse_strategy(const std::string& s, const std::string& where);
int zero_stage(Strategy s);  // 1/2/3 for zeroN, 3 for fsdp2 (same sharding), 0 otherwise
bool shards_weights(Strategy s);  // zero3, fsdp2

// diffusers context parallel: allgather = ring attention (K/V all-gathered over the CP group),
// alltoall = Ulysses (q/k/v and the output re-sharded from sequence to heads and back).
enum class CpComm { allgather, alltoall };
std::string to_string(CpComm c);
CpComm parse_cp_comm(const std::string& s, const std::string& where);

struct RankStateInput {
  int world = 1;  // ranks over all nodes
  Strategy strategy = Strategy::single;
  bool fsdp_cpu_offload = false;   // FSDP2 CPUOffloadPolicy: shards of weights, grads, optimizer on host
  bool offload_optimizer = false;  // ZeRO offload_optimizer device cpu|nvme (stages 1-3)
  bool offload_param = false;      // ZeRO offload_param (stage 3 only, else ignored)
  bool reshard_after_forward = true;  // fsdp_reshard_after_forward
  int grad_accumulation = 1;       // micro-steps per optimizer step

  // Model state of one full replica, in the dtype the engine keeps each in (dist §3: FSDP2 keeps
  // trainable parameters fp32, frozen ones at their dtype; DeepSpeed keeps bf16 weights + fp32 master).
  double frozen_weight_bytes = 0;
  double trainable_weight_bytes = 0;
  double grad_bytes = 0;
  double optimizer_state_bytes = 0;  // moments (+ fp32 master copy where the engine keeps one)
  // element sizes for ceil-division sharding (1 = split at byte granularity)
  double frozen_element_bytes = 1;
  double trainable_element_bytes = 1;
  double grad_element_bytes = 1;
  double optimizer_element_bytes = 1;
  // weights every rank keeps whole whatever the strategy (bnb Params4bit under FSDP2: ignored_params)
  double replicated_weight_bytes = 0;
  // one unit's unsharded gradient, alive from its backward until its reduce-scatter (FSDP2's unsharded
  // grad, ZeRO's ipg bucket): added in flight for stages >= 2 (0 = not counted). Measured by the CPU
  // validator (wip-gloo): without it zero2/zero3/fsdp2 full fine-tunes came out one unit low.
  double largest_unit_grad_bytes = 0;

  // What moves: all sharded weights in the compute dtype (one full all-gather of every unit; 0 =
  // frozen + trainable), the part of it in the never-resharded FSDP root (embedders, heads), the
  // trainable weights in compute dtype (ZeRO-1/2 all-gather updated params; 0 = trainable_weight_bytes),
  // and gradients in the reduce dtype (0 = grad_bytes).
  double gathered_weight_bytes = 0;
  double root_weight_bytes = 0;
  double trainable_compute_bytes = 0;
  double reduce_grad_bytes = 0;
  double largest_unit_weight_bytes = 0;  // one FSDP unit / ZeRO-3 block gathered, compute dtype
  double bucket_bytes = 0;  // DDP reducer buckets (= grads when gradient_as_bucket_view is off) / ZeRO buckets

  // context parallel: K ranks split one sample's sequence (K divides world)
  int context_parallel = 1;
  CpComm cp_comm = CpComm::allgather;
  int cp_attention_layers = 0;   // attention calls per forward over the whole sequence
  double cp_sequence_bytes = 0;  // one q-sized tensor of the FULL sequence (batch x S x h x dtype)
  double cp_forward_passes = 1;  // forward executions per micro-step (1 + recomputed share)
};

// Bytes one rank holds on its GPU (and on the host) for model state.
struct RankState {
  double weights_bytes = 0;     // resident (sharded or replicated) weights, frozen + trainable
  double grads_bytes = 0;
  double optimizer_bytes = 0;
  double gathered_in_flight_bytes = 0;  // unsharded working set: gathered units, root, accumulated grads
  double buckets_bytes = 0;
  double host_bytes = 0;        // offloaded shards in pinned host memory, per rank
  int shard_ranks = 1;          // ranks one replica is sharded over (world / CP under FSDP2 + CP)
  double total_bytes() const {
    return weights_bytes + grads_bytes + optimizer_bytes + gathered_in_flight_bytes + buckets_bytes;
  }
};
RankState rank_state(const RankStateInput& in);

// Payload bytes one rank hands to collectives per optimizer step (see the header comment).
struct CommVolume {
  double allgather_bytes = 0;       // data-parallel group: FSDP2/ZeRO-3 units, ZeRO-1/2 updated params
  double reduce_scatter_bytes = 0;  // data-parallel group: gradients (sharded strategies)
  double allreduce_bytes = 0;       // data-parallel group: gradients (DDP)
  double alltoall_bytes = 0;        // CP group, Ulysses
  double cp_allgather_bytes = 0;    // CP group, ring attention (K/V forward, dK/dV backward)
  double host_transfer_bytes = 0;   // PCIe both directions: offloaded shards in, gradients out
  int dp_ranks = 1;                 // ranks of the data-parallel collectives
  int cp_ranks = 1;                 // ranks of the CP collectives
  double total_payload_bytes() const {
    return allgather_bytes + reduce_scatter_bytes + allreduce_bytes + alltoall_bytes + cp_allgather_bytes;
  }
};
CommVolume comm_per_step(const RankStateInput& in);

// Busiest rank's share of `bytes` split over `ranks` in elements of `element_bytes`.
double shard_bytes(double bytes, int ranks, double element_bytes = 1);
// Ring factor of one collective over `ranks`: 2(N-1)/N all-reduce, (N-1)/N the others, 0 for N=1.
double ring_factor_allreduce(int ranks);
double ring_factor_gather(int ranks);

// The links a step's collectives cross. Bandwidths are one direction, per GPU (NCCL bus bandwidth).
struct LinkSpec {
  double intra_node_bytes_per_s = 0;  // NVLink (or PCIe when the card has none; staged without P2P)
  double inter_node_bytes_per_s = 0;  // network per GPU, used when a group spans nodes
  int gpus_per_node = 1;
  double efficiency = kCommEfficiency;  // achieved / nominal bus bandwidth
  double pcie_bytes_per_s = 0;        // host<->device, for host_transfer_bytes (0: not timed)
};

struct CommCost {
  double wire_bytes = 0;        // bytes each rank sends over the step (ring factors applied)
  double dp_time_s = 0;         // data-parallel collectives (overlappable with compute)
  double cp_time_s = 0;         // context-parallel collectives (on the attention's critical path)
  double host_transfer_s = 0;   // offload traffic
  double total_s() const { return dp_time_s + cp_time_s + host_transfer_s; }
};
// CP groups are consecutive ranks, so they stay inside a node when K <= gpus_per_node; the
// data-parallel group spans every node of the run and is bound by the slower link.
CommCost comm_cost(const CommVolume& v, const LinkSpec& link, int nodes);

// ---- additions after the first API (stable above) ----

// The multi-GPU part of a training setup (flags --gpus/--nodes/--strategy/…, or a config's
// num_processes/num_machines/fsdp_*/deepspeed_config/context_parallel_*). The default is one GPU
// with nothing distributed, and then every prediction is the single-GPU one, unchanged.
struct MultiGpuSetup {
  int gpus_per_node = 1;   // processes per node (SimpleTuner num_processes, dist §1.1)
  int nodes = 1;           // num_machines
  Strategy strategy = Strategy::single;
  bool fsdp_cpu_offload = false;
  bool offload_optimizer = false;
  bool offload_param = false;
  bool reshard_after_forward = true;
  bool fsdp_activation_checkpointing = false;
  int grad_accumulation = 1;
  int context_parallel = 1;
  CpComm cp_comm = CpComm::allgather;
  double inter_node_bytes_per_s = 50e9;  // NDR InfiniBand 400 Gb/s per NIC, one direction (dist §4)
  int hidden = 0;  // the model width for CP volumes (the family's; set by the advisor, 0: unknown)
  int world() const { return gpus_per_node * nodes; }
  bool active() const { return world() > 1 || strategy != Strategy::single || context_parallel > 1; }
};

}  // namespace segadvise
