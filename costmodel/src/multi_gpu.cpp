// Per-rank prediction on several GPUs; the rules are in multi_gpu.hpp and distributed.hpp.
#include "segadvise/costmodel/multi_gpu.hpp"

#include <algorithm>
#include <memory>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise {

namespace {

// FSDP2 upcasts trainable parameters to fp32 (dist §3), so optimizers keeping states in the
// parameter dtype keep them fp32; optimi-*, bnb-* and soap fall back to adamw_schedulefree (§1.2)
double fsdp2_optimizer_bytes_per_param(const std::string& name) {
  const bool fallback = name.rfind("optimi-", 0) == 0 || name.rfind("bnb-", 0) == 0 || name == "soap";
  if (fallback) return optimizer_info("adamw_schedulefree").state_bytes_per_param;
  if (name == "adamw_bf16") return 2 * optimizer_info(name).state_bytes_per_param;  // bf16 -> fp32 states
  return optimizer_info(name).state_bytes_per_param;
}

struct Replica {
  double frozen = 0, trainable_params = 0, largest_unit = 0, root = 0, largest_block_params = 0;
  double largest_unit_trainable_params = 0;
};

Replica replica(const PreparedChain& pc) {
  const BlockChain& chain = *pc.chain;
  const TrainingSetup& setup = *pc.setup;
  const StaticMemory& sm = pc.static_memory;
  const double dtype = weight_dtype_bytes(setup);
  Replica r;
  r.trainable_params = sm.trainable_params;
  const bool full = setup.model_type == ModelType::Full;
  r.frozen = full ? std::max(0.0, sm.weights_bytes - sm.trainable_params * dtype) : sm.weights_bytes;
  for (const auto& b : chain.blocks) {
    r.largest_unit = std::max(r.largest_unit, block_weight_bytes(b, setup) + b.lora_params * kBf16Bytes);
    r.largest_block_params = std::max(r.largest_block_params, b.params);
    const double trainable = setup.model_type == ModelType::Full ? b.params : b.lora_params;
    r.largest_unit_trainable_params = std::max(r.largest_unit_trainable_params, trainable);
  }
  r.root = chain.outside_params * dtype;
  return r;
}

void fill_fsdp2(const PreparedChain& pc, const Replica& rep, RankStateInput& in) {
  const TrainingSetup& setup = *pc.setup;
  const double pt = rep.trainable_params;
  const bool full = setup.model_type == ModelType::Full;
  const bool bnb4 = precision_info(setup.base_precision).backend == "bnb";
  // full: every weight trainable (fp32); LoRA: the frozen base at its dtype, adapters fp32
  const double frozen = full ? rep.frozen : pc.static_memory.weights_bytes;
  (bnb4 ? in.replicated_weight_bytes : in.frozen_weight_bytes) = frozen;
  in.trainable_weight_bytes = pt * kFp32Bytes;
  in.grad_bytes = pt * kFp32Bytes;
  in.optimizer_state_bytes = pt * fsdp2_optimizer_bytes_per_param(setup.optimizer);
  in.trainable_element_bytes = in.grad_element_bytes = in.optimizer_element_bytes = kFp32Bytes;
  in.gathered_weight_bytes = (bnb4 ? 0 : frozen) + pt * kBf16Bytes;
  in.trainable_compute_bytes = pt * kBf16Bytes;
  in.reduce_grad_bytes = pt * kBf16Bytes;
}

void fill_zero(const Replica& rep, RankStateInput& in) {
  const double pt = rep.trainable_params;
  in.frozen_weight_bytes = rep.frozen;
  in.trainable_weight_bytes = pt * kBf16Bytes;
  in.grad_bytes = pt * kBf16Bytes;
  in.optimizer_state_bytes = pt * (kFp32Bytes + 2 * kFp32Bytes);  // master + m + v (ZeRO paper K = 12)
  in.optimizer_element_bytes = kFp32Bytes;
  // "auto" reduce bucket h^2 elements (dist §1.3), double-buffered; h^2 from the largest block's
  // parameters (kBlockParamsPerHiddenSquared)
  in.bucket_bytes = 2 * kBf16Bytes * rep.largest_block_params / kBlockParamsPerHiddenSquared;
}

}  // namespace

RankStateInput rank_input(const PreparedChain& pc) {
  const TrainingSetup& setup = *pc.setup;
  const MultiGpuSetup& mg = setup.multi_gpu;
  const StaticMemory& sm = pc.static_memory;
  const Replica rep = replica(pc);
  RankStateInput in;
  in.world = mg.world();
  in.strategy = mg.strategy;
  in.fsdp_cpu_offload = mg.fsdp_cpu_offload;
  in.offload_optimizer = mg.offload_optimizer;
  in.offload_param = mg.offload_param;
  in.reshard_after_forward = mg.reshard_after_forward;
  in.grad_accumulation = mg.grad_accumulation;
  in.context_parallel = mg.context_parallel;
  in.cp_comm = mg.cp_comm;
  in.largest_unit_weight_bytes = rep.largest_unit;
  in.largest_unit_grad_bytes = rep.largest_unit_trainable_params * kBf16Bytes;  // before its reduce-scatter
  in.root_weight_bytes = rep.root;
  if (mg.strategy == Strategy::fsdp2) {
    fill_fsdp2(pc, rep, in);
  } else if (zero_stage(mg.strategy) > 0) {
    fill_zero(rep, in);
  } else {
    const bool full = setup.model_type == ModelType::Full;
    in.frozen_weight_bytes = full ? rep.frozen : sm.weights_bytes;
    in.trainable_weight_bytes = full ? rep.trainable_params * weight_dtype_bytes(setup) : sm.trainable_bytes;
    in.grad_bytes = sm.gradient_bytes;
    in.optimizer_state_bytes = sm.optimizer_bytes;
    // gradient_as_bucket_view is on only with block swap (dist §1.5): otherwise buckets copy the grads
    in.bucket_bytes = setup.blocks_to_swap > 0 ? 0 : sm.gradient_bytes;
  }
  // context parallel: one self-attention per block over the whole (unsplit) sequence
  const BlockChain& chain = *pc.chain;
  int layers = 0;
  for (const auto& b : chain.blocks) layers += b.checkpointable && b.attention_flops > 0;
  in.cp_attention_layers = layers;
  const double tokens = (chain.tokens_image + chain.tokens_text) * setup.batch;
  in.cp_sequence_bytes = tokens * mg.hidden * chain.activation_dtype_bytes;
  return in;
}

LinkSpec link_for(const GpuSpec& gpu, const MultiGpuSetup& mg) {
  LinkSpec l;
  const double pcie = gpu.pcie_bytes_per_s;
  l.intra_node_bytes_per_s = gpu.nvlink_bytes_per_s > 0 ? gpu.nvlink_bytes_per_s : (gpu.p2p ? pcie : pcie / 2);
  l.inter_node_bytes_per_s = mg.inter_node_bytes_per_s;
  l.gpus_per_node = mg.gpus_per_node;
  l.pcie_bytes_per_s = pcie;
  return l;
}

BlockChain split_sequence(const BlockChain& chain, int k) {
  if (k <= 1) return chain;
  BlockChain c = chain;
  const double f = 1.0 / k;
  for (auto& b : c.blocks) {
    for (double* x : {&b.saved_attention_bytes, &b.saved_ffn_bytes, &b.saved_rest_bytes, &b.ffn_input_bytes,
                      &b.boundary_bytes, &b.carried_skip_bytes, &b.skip_push_bytes, &b.skip_pop_bytes,
                      &b.transient_bytes, &b.matmul_flops, &b.ffn_matmul_flops, &b.attention_flops,
                      &b.linear_input_attention_bytes, &b.linear_input_ffn_bytes, &b.measured_forward_s,
                      &b.measured_backward_s, &b.measured_ffn_forward_s})
      *x *= f;
  }
  c.outside_activation_bytes *= f;
  c.outside_matmul_flops *= f;
  return c;
}

namespace {

// the unsharded weights that cannot be prefetched behind compute: the first unit (and the root)
double first_gather_s(const RankStateInput& in, const LinkSpec& link, int nodes) {
  CommVolume v;
  v.dp_ranks = in.world;
  v.allgather_bytes = in.largest_unit_weight_bytes + (in.strategy == Strategy::fsdp2 ? in.root_weight_bytes : 0);
  return comm_cost(v, link, nodes).dp_time_s;
}

// Overlap (dist §4): DDP and ZeRO-1/2 reduce gradients in buckets during backward, ZeRO-1/2 gather
// the updated parameters after the step (exposed); FSDP2/ZeRO-3 prefetch units behind forward and
// backward compute, all but the first gather; Ulysses all-to-all sits on the attention's critical
// path; ring attention overlaps its K/V passes with the attention compute.
double exposed_s(const RankStateInput& in, const CommVolume& v, const LinkSpec& link, int nodes,
                 const Prediction& p, double attention_s) {
  const double backward = p.time.backward_s + p.time.recompute_s;
  const double compute = p.time.forward_s + backward;
  double dp = 0;
  if (shards_weights(in.strategy)) {
    dp = std::max(0.0, comm_cost(v, link, nodes).dp_time_s - compute) + first_gather_s(in, link, nodes);
  } else {
    CommVolume reduce = v, gather = v;
    reduce.allgather_bytes = 0;
    gather.reduce_scatter_bytes = gather.allreduce_bytes = 0;
    dp = std::max(0.0, comm_cost(reduce, link, nodes).dp_time_s - backward) + comm_cost(gather, link, nodes).dp_time_s;
  }
  CommVolume cp;
  cp.cp_ranks = v.cp_ranks;
  cp.alltoall_bytes = v.alltoall_bytes;
  cp.cp_allgather_bytes = v.cp_allgather_bytes;
  const double cp_s = comm_cost(cp, link, nodes).cp_time_s;
  const double cp_exposed = in.cp_comm == CpComm::alltoall ? cp_s : std::max(0.0, cp_s - attention_s);
  return dp + cp_exposed + comm_cost(v, link, nodes).host_transfer_s;
}

bool optimizer_on_host(const RankStateInput& in) {
  return (in.strategy == Strategy::fsdp2 && in.fsdp_cpu_offload) ||
         (zero_stage(in.strategy) > 0 && in.strategy != Strategy::fsdp2 && in.offload_optimizer);
}

// unique samples per optimizer step (dist §2): per-GPU batch x data replicas x GA; context-parallel
// ranks of one replica share a sample
double samples_per_step(const TrainingSetup& s) {
  const MultiGpuSetup& mg = s.multi_gpu;
  return double(s.batch) * (mg.world() / std::max(1, mg.context_parallel)) * mg.grad_accumulation;
}

void set_memory(const RankStateInput& in, const RankState& r, Prediction& p) {
  MemoryBreakdown& m = p.memory;
  const bool sharded = shards_weights(in.strategy) && !(in.strategy == Strategy::fsdp2 && in.fsdp_cpu_offload) &&
                       !(in.strategy == Strategy::zero3 && in.offload_param);
  const bool weights_home = r.weights_bytes > 0;
  double trainable = 0;
  if (weights_home)
    trainable = sharded ? shard_bytes(in.trainable_weight_bytes, r.shard_ranks, in.trainable_element_bytes)
                        : in.trainable_weight_bytes;
  m.trainable_bytes = std::min(trainable, r.weights_bytes);
  m.weights_bytes = r.weights_bytes - m.trainable_bytes;
  m.gradient_bytes = r.grads_bytes;
  m.optimizer_bytes = r.optimizer_bytes;
  m.gathered_bytes = r.gathered_in_flight_bytes;
  m.bucket_bytes = r.buckets_bytes;
  m.host_state_bytes = r.host_bytes;
  p.peak_vram_bytes = r.total_bytes() + m.activation_peak_bytes + m.fragmentation_bytes;
}

}  // namespace

std::shared_ptr<const MultiGpuPlanFree> multi_gpu_plan_free(const PreparedChain& pc) {
  const TrainingSetup& setup = *pc.setup;
  const MultiGpuSetup& mg = setup.multi_gpu;
  auto f = std::make_shared<MultiGpuPlanFree>();
  f->in = rank_input(pc);
  f->rank = rank_state(f->in);
  f->link = link_for(*pc.gpu, mg);
  f->volume = comm_per_step(f->in);
  f->cost = comm_cost(f->volume, f->link, mg.nodes);
  f->samples_per_step = samples_per_step(setup);
  const double full_copy = shards_weights(f->in.strategy) || zero_stage(f->in.strategy) > 0
                               ? pc.static_memory.weights_bytes + pc.static_memory.trainable_bytes
                               : 0;
  f->host_ram_per_node_bytes = mg.gpus_per_node * std::max(f->rank.host_bytes, full_copy);
  for (double a : pc.attention_s) f->attention_s += a;
  f->attention_s *= 1 + kAttentionBackwardPasses;
  return f;
}

void apply_multi_gpu(const PreparedChain& pc, Prediction& p, double headroom_bytes) {
  const MultiGpuPlanFree& f = pc.multi_gpu ? *pc.multi_gpu : *multi_gpu_plan_free(pc);
  const MultiGpuSetup& mg = pc.setup->multi_gpu;
  const RankStateInput& in = f.in;
  const RankState& r = f.rank;
  set_memory(in, r, p);
  p.fits = p.peak_vram_bytes + headroom_bytes <= p.usable_vram_bytes;

  MultiGpuInfo& info = p.multi_gpu;
  info.active = true;
  info.world = in.world;
  info.shard_ranks = r.shard_ranks;
  info.volume = f.volume;
  info.cost = f.cost;
  info.samples_per_step = f.samples_per_step;
  info.host_ram_per_node_bytes = f.host_ram_per_node_bytes;
  TimeBreakdown& t = p.time;
  t.communication_s = exposed_s(in, info.volume, f.link, mg.nodes, p, f.attention_s);
  if (optimizer_on_host(in)) {
    const double params = pc.static_memory.trainable_params / r.shard_ranks;
    info.host_optimizer_s = params * kHostAdamBytesPerParam / kHostOptimizerBytesPerS;
    t.optimizer_s = info.host_optimizer_s;
  }
  // per micro-step compute repeats GA times in one optimizer step; the rest once
  const double ga = mg.grad_accumulation;
  p.step_time_s = ga * (t.forward_s + t.backward_s + t.recompute_s + t.transfer_s) + t.optimizer_s +
                  t.overhead_s + t.communication_s;
}

}  // namespace segadvise
