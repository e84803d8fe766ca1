// Per-rank model state and communication per optimizer step; the rules are in distributed.hpp.
#include "segadvise/costmodel/distributed.hpp"

#include <algorithm>
#include <cmath>

#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/types.hpp"

namespace segadvise {

std::string to_string(Strategy s) {
  switch (s) {
    case Strategy::single: return "single";
    case Strategy::ddp: return "ddp";
    case Strategy::fsdp2: return "fsdp2";
    case Strategy::zero1: return "zero1";
    case Strategy::zero2: return "zero2";
    case Strategy::zero3: return "zero3";
  }
  return "single";
}

Strategy parse_strategy(const std::string& s, const std::string& where) {
  for (Strategy v : {Strategy::single, Strategy::ddp, Strategy::fsdp2, Strategy::zero1, Strategy::zero2,
                     Strategy::zero3})
    if (s == to_string(v)) return v;
  throw InputError(where + " is '" + brief_text(s) + "'; expected one of single, ddp, fsdp2, zero1, zero2, zero3");
}

int zero_stage(Strategy s) {
  switch (s) {
    case Strategy::zero1: return 1;
    case Strategy::zero2: return 2;
    case Strategy::zero3:
    case Strategy::fsdp2: return 3;
    default: return 0;
  }
}

bool shards_weights(Strategy s) { return s == Strategy::zero3 || s == Strategy::fsdp2; }

std::string to_string(CpComm c) { return c == CpComm::alltoall ? "alltoall" : "allgather"; }

CpComm parse_cp_comm(const std::string& s, const std::string& where) {
  if (s == "allgather") return CpComm::allgather;
  if (s == "alltoall") return CpComm::alltoall;
  throw InputError(where + " is '" + brief_text(s) + "'; expected one of allgather, alltoall");
}

double shard_bytes(double bytes, int ranks, double element_bytes) {
  if (ranks <= 1 || bytes <= 0) return std::max(bytes, 0.0);
  const double elem = element_bytes > 0 ? element_bytes : 1;
  const double elements = std::ceil(bytes / elem);
  return std::ceil(elements / ranks) * elem;
}

double ring_factor_allreduce(int ranks) { return ranks <= 1 ? 0 : 2.0 * (ranks - 1) / ranks; }
double ring_factor_gather(int ranks) { return ranks <= 1 ? 0 : double(ranks - 1) / ranks; }

namespace {

void check_input(const RankStateInput& in) {
  if (in.world < 1) throw InputError("ranks: world is " + std::to_string(in.world) + "; expected >= 1");
  if (in.context_parallel < 1 || in.world % in.context_parallel != 0)
    throw InputError("ranks: context_parallel is " + std::to_string(in.context_parallel) +
                     "; it must be >= 1 and divide the world size " + std::to_string(in.world));
  if (in.grad_accumulation < 1)
    throw InputError("ranks: grad_accumulation is " + std::to_string(in.grad_accumulation) + "; expected >= 1");
}

double gathered_bytes(const RankStateInput& in) {
  return in.gathered_weight_bytes > 0 ? in.gathered_weight_bytes
                                      : in.frozen_weight_bytes + in.trainable_weight_bytes;
}
double reduce_bytes(const RankStateInput& in) { return in.reduce_grad_bytes > 0 ? in.reduce_grad_bytes : in.grad_bytes; }
double trainable_compute(const RankStateInput& in) {
  return in.trainable_compute_bytes > 0 ? in.trainable_compute_bytes : in.trainable_weight_bytes;
}

// ZeRO/FSDP shards: weights (stage 3), gradients (stage >= 2), optimizer state (stage >= 1)
double sharded_weights(const RankStateInput& in, int n) {
  return shard_bytes(in.frozen_weight_bytes, n, in.frozen_element_bytes) +
         shard_bytes(in.trainable_weight_bytes, n, in.trainable_element_bytes);
}

// the unsharded working set of a weight-sharding strategy (dist §3): two units in flight plus the
// never-resharded root, or every unit when reshard_after_forward is off; FSDP2 with GA > 1 keeps
// full-size accumulated gradients between micro-steps
double in_flight(const RankStateInput& in) {
  double b = 0;
  if (in.strategy == Strategy::fsdp2 && !in.reshard_after_forward)
    b = gathered_bytes(in);
  else
    b = kGatheredUnitsInFlight * in.largest_unit_weight_bytes + (in.strategy == Strategy::fsdp2 ? in.root_weight_bytes : 0);
  if (in.strategy == Strategy::fsdp2 && in.grad_accumulation > 1) b += reduce_bytes(in);
  return b;
}

void place_zero(const RankStateInput& in, int n, RankState& r) {
  const int stage = zero_stage(in.strategy);
  const double opt = shard_bytes(in.optimizer_state_bytes, n, in.optimizer_element_bytes);
  const double grads = stage >= 2 ? shard_bytes(in.grad_bytes, n, in.grad_element_bytes) : in.grad_bytes;
  const double weights = stage >= 3 ? sharded_weights(in, n) : in.frozen_weight_bytes + in.trainable_weight_bytes;
  const bool cpu_all = in.strategy == Strategy::fsdp2 && in.fsdp_cpu_offload;
  const bool opt_host = cpu_all || (in.strategy != Strategy::fsdp2 && in.offload_optimizer);
  const bool grads_host = cpu_all || (opt_host && stage >= 2);  // ZeRO-2/3 offload: gradient partitions too
  const bool weights_host = cpu_all || (in.strategy == Strategy::zero3 && in.offload_param);
  (opt_host ? r.host_bytes : r.optimizer_bytes) += opt;
  (grads_host ? r.host_bytes : r.grads_bytes) += grads;
  (weights_host ? r.host_bytes : r.weights_bytes) += weights;
  if (stage >= 3) r.gathered_in_flight_bytes = in_flight(in);
  if (stage >= 2) r.gathered_in_flight_bytes += in.largest_unit_grad_bytes;
  if (in.strategy != Strategy::fsdp2) r.buckets_bytes = in.bucket_bytes;
}

}  // namespace

RankState rank_state(const RankStateInput& in) {
  check_input(in);
  RankState r;
  r.weights_bytes = in.replicated_weight_bytes;
  const bool replicated = in.strategy == Strategy::single || in.strategy == Strategy::ddp;
  if (replicated) {
    r.weights_bytes += in.frozen_weight_bytes + in.trainable_weight_bytes;
    r.grads_bytes = in.grad_bytes;
    r.optimizer_bytes = in.optimizer_state_bytes;
    // accelerate wraps the model in DDP only with more than one process
    if (in.strategy == Strategy::ddp && in.world > 1) r.buckets_bytes = in.bucket_bytes;
    return r;
  }
  // FSDP2 shards over the whole world (accelerate flattens dp_shard x cp into the FSDP mesh, dist
  // §1.4 [I]); DeepSpeed's data-parallel group is the world too
  r.shard_ranks = in.world;
  place_zero(in, in.world, r);
  return r;
}

namespace {

void add_dp(const RankStateInput& in, CommVolume& v) {
  const double m = in.grad_accumulation;
  const double g = gathered_bytes(in), rg = reduce_bytes(in), tc = trainable_compute(in);
  const int n = in.world;
  switch (in.strategy) {
    case Strategy::single: break;
    case Strategy::ddp: v.allreduce_bytes = rg; break;  // no_sync on micro-steps: once per step
    case Strategy::zero1:  // no_sync too; updated bf16 params all-gathered (ZeRO §7.2.1: 2Ψ like DDP)
      v.reduce_scatter_bytes = rg;
      v.allgather_bytes = tc;
      break;
    case Strategy::zero2:  // ZeRO >= 2 reduces every micro-step (accelerate no_sync, dist §2)
      v.reduce_scatter_bytes = rg * m;
      v.allgather_bytes = tc;
      break;
    case Strategy::zero3:  // forward and backward gather per micro-step (ZeRO §7.2.2: 3Ψ)
      v.allgather_bytes = 2 * g * m;
      v.reduce_scatter_bytes = rg * m;
      break;
    case Strategy::fsdp2: {  // root gathered once; units again in backward unless kept; RS once
      const double units = std::max(g - in.root_weight_bytes, 0.0);
      v.allgather_bytes = m * (in.root_weight_bytes + units * (in.reshard_after_forward ? 2 : 1));
      v.reduce_scatter_bytes = rg;
      break;
    }
  }
  // offload traffic: shards come in before each gather, gradient shards go out, updated params in
  const double w_shard = sharded_weights(in, n), g_shard = shard_bytes(in.grad_bytes, n, in.grad_element_bytes);
  if (in.strategy == Strategy::fsdp2 && in.fsdp_cpu_offload)
    v.host_transfer_bytes = m * w_shard * (in.reshard_after_forward ? 2 : 1) + g_shard;
  if (in.strategy != Strategy::fsdp2 && in.strategy != Strategy::ddp && in.strategy != Strategy::single) {
    if (in.offload_optimizer) v.host_transfer_bytes += g_shard + shard_bytes(tc, n);
    if (in.strategy == Strategy::zero3 && in.offload_param) v.host_transfer_bytes += 2 * m * w_shard;
  }
}

// per attention call over the full sequence: Ulysses hands its q, k, v and output shards (4 x S/K)
// in forward and their gradients in backward; ring attention gathers K and V (2 x S) per forward
// and circulates K/V and reduces dK/dV in backward (4 x S)
void add_cp(const RankStateInput& in, CommVolume& v) {
  const int k = in.context_parallel;
  if (k <= 1) return;
  const double m = in.grad_accumulation, layers = in.cp_attention_layers, s = in.cp_sequence_bytes;
  if (in.cp_comm == CpComm::alltoall)
    v.alltoall_bytes = m * layers * 4 * (s / k) * (in.cp_forward_passes + 1);
  else
    v.cp_allgather_bytes = m * layers * s * (2 * in.cp_forward_passes + 4);
}

}  // namespace

CommVolume comm_per_step(const RankStateInput& in) {
  check_input(in);
  CommVolume v;
  v.dp_ranks = in.world;
  v.cp_ranks = in.context_parallel;
  if (in.world > 1) add_dp(in, v);
  add_cp(in, v);
  return v;
}

namespace {
double group_bytes_per_s(const LinkSpec& link, int ranks, int nodes) {
  const bool spans = nodes > 1 && ranks > link.gpus_per_node;
  if (!spans) return link.intra_node_bytes_per_s;
  return std::min(link.intra_node_bytes_per_s, link.inter_node_bytes_per_s);
}

double seconds(double wire, double bytes_per_s, const char* which) {
  if (wire <= 0) return 0;
  if (!(bytes_per_s > 0))
    throw InputError(std::string("link: ") + which + " bandwidth is 0; a multi-GPU plan needs it");
  return wire / bytes_per_s;
}
}  // namespace

CommCost comm_cost(const CommVolume& v, const LinkSpec& link, int nodes) {
  CommCost c;
  const double dp_wire = (v.allgather_bytes + v.reduce_scatter_bytes) * ring_factor_gather(v.dp_ranks) +
                         v.allreduce_bytes * ring_factor_allreduce(v.dp_ranks);
  const double cp_wire = (v.alltoall_bytes + v.cp_allgather_bytes) * ring_factor_gather(v.cp_ranks);
  c.wire_bytes = dp_wire + cp_wire;
  const double eff = link.efficiency > 0 ? link.efficiency : kCommEfficiency;
  c.dp_time_s = seconds(dp_wire, group_bytes_per_s(link, v.dp_ranks, nodes) * eff, "data-parallel");
  c.cp_time_s = seconds(cp_wire, group_bytes_per_s(link, v.cp_ranks, nodes) * eff, "context-parallel");
  if (link.pcie_bytes_per_s > 0) c.host_transfer_s = v.host_transfer_bytes / link.pcie_bytes_per_s;
  return c;
}

}  // namespace segadvise
