#include "segadvise/costmodel/evaluator.hpp"

#include <algorithm>

namespace segadvise {

OffloadView offload_view(const PreparedChain& pc, const Plan& plan) {
  OffloadView o;
  o.on = plan.offload_attention;
  o.kept_share = o.on ? 1 - offload_share(plan, *pc.coef) : 1.0;
  o.share = o.on ? offload_share(plan, *pc.coef) : 0.0;
  const auto& blocks = pc.chain->blocks;
  double staging = 0;
  if (o.on)
    for (const auto& s : plan.segments)
      if (s.mode != BlockMode::Keep)
        for (int i = s.begin; i < s.end; ++i)
          if (blocks[i].attention_offloadable) staging = std::max(staging, pc.scaled[i].attention_bytes);
  o.base = pc.chain->outside_activation_bytes + pc.coef->offload_staging_blocks * staging;
  return o;
}

OffloadView checkpointing_view(const PreparedChain& pc, bool attention_offload) {
  OffloadView o;
  o.on = attention_offload;
  // offload_share() of a plan that checkpoints a block, formed as there
  o.kept_share = o.on ? 1 - pc.coef->offload_share_checkpointed : 1.0;
  o.share = o.on ? pc.coef->offload_share_checkpointed : 0.0;
  return o;
}

TransferRates transfer_rates(const PreparedChain& pc) {
  TransferRates r;
  const GpuCoefficients& g = pc.gpu_coef ? *pc.gpu_coef : pc.coef->for_gpu(pc.gpu->id);
  const double pcie = std::max(1.0, pc.gpu->pcie_bytes_per_s * g.pcie_efficiency);
  r.offload_s_per_byte = 2.0 / pcie * (1 - pc.coef->offload_overlap);
  const double streamed = pc.static_memory.streamed_weights_bytes;
  const int n = static_cast<int>(pc.chain->blocks.size());
  r.stream_s_per_recomputed_block =
      streamed > 0 ? streamed / pcie * (1 - pc.coef->stream_overlap) / std::max(1, n) : 0.0;
  return r;
}

SegmentCost segment_cost(const PreparedChain& pc, const OffloadView& o, const Segment& s) {
  SegmentCost c;
  MaxSink max;
  c.retained_bytes = segment_forward(pc, o, s, 0.0, c.host_bytes, max);
  segment_backward(pc, o, s, 0.0, max);
  c.working_bytes = max.peak;
  segment_sums(pc, o, s, c.recompute_s, c.offload_bytes, c.recomputed_blocks);
  return c;
}

double segment_added_s(const PreparedChain& pc, const OffloadView& o, const Segment& s, const TransferRates& r,
                       double compute_scale, double transfer_scale) {
  const auto& blocks = pc.chain->blocks;
  const double per_byte = r.offload_s_per_byte, stream = r.stream_s_per_recomputed_block;
  const double cs = compute_scale, ts = transfer_scale;
  // a kept or FFN-only block's attention share over PCIe
  auto attention_s = [&](int i) {
    return (o.on && blocks[i].attention_offloadable) ? pc.scaled[i].attention_bytes * o.share * per_byte : 0.0;
  };
  double t = 0;
  if (s.mode == BlockMode::Keep) {
    for (int i = s.begin; i < s.end; ++i) t += ts * attention_s(i);
  } else if (s.mode == BlockMode::CheckpointFfn) {
    for (int i = s.begin; i < s.end; ++i)
      t += cs * pc.ffn_recompute_s[i] + ts * stream + ts * attention_s(i) +
           ts * (s.offload_to_host ? blocks[i].ffn_input_bytes * per_byte : 0.0);
  } else {
    for (int i = s.begin; i < s.end; ++i)
      t += cs * pc.recompute_s[i] + ts * stream +
           ts * ((o.on && blocks[i].attention_offloadable) ? pc.scaled[i].attention_bytes * per_byte : 0.0);
    if (s.offload_to_host) t = t + ts * (pc.scaled[s.begin].boundary_bytes * per_byte);
  }
  return t;
}

}  // namespace segadvise
