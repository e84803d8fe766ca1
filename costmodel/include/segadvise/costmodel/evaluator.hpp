// The one cost evaluator: what a block costs under a mode (the live bytes of its forward and
// backward positions, what it retains, what it parks on the host, its recompute and its transfers)
// and the segment walk built from those costs. predict() (the timeline and its sums), PlanScorer,
// the optimal planner's per-decision costs and advise's what-would-fit bound all read them here.
//
// Every figure is formed in one order of additions, the timeline's: a position is
//   below + (the block's terms, added one by one)
// where `below` is the base under every position plus what earlier segments (and earlier blocks of
// the segment) retain. A caller that passes below = 0 gets the segment's own working set, which is
// what the optimal planner adds to a prefix.
#pragma once

#include "segadvise/costmodel/costmodel.hpp"

namespace segadvise {

// What a plan's attention offload makes the same for all of its segments: the share of a kept
// block's attention side that stays on the GPU, the share that moves, and the base under every
// position (the staging copies included).
// With checkpointing on, attention offload frees only part of a kept block's attention side
// (the sweep: Wan 1.3B and SD3 seg2-stride4 lose ~60% of it with offload, none+offload ~all of it).
// Attention offload under checkpointing (the sweep's activation-offload rows: every block
// checkpointed plus offload): the offload hooks sit inside the attention call, so they, not the
// checkpoint, take the attention tensors of checkpointed blocks too; the device keeps copies in
// flight and pooled buffers of a few blocks (offload_staging_blocks x the largest such block).
// The sweep: LTXVideo2 2.3 bf16 48.0 -> 58.4 GiB, LongCat Video 23.7 -> 37.4, Wan 1.3B 4.7 -> 8.8.
struct OffloadView {
  bool on = false;
  double kept_share = 1.0, share = 0.0, base = 0.0;
  double attention_on_gpu(const PreparedChain& pc, int i) const {
    const double a = pc.scaled[i].attention_bytes;
    return (on && pc.chain->blocks[i].attention_offloadable) ? a * kept_share : a;
  }
};

// The view of `plan` (its attention offload, the share that offload moves, the staging copies).
OffloadView offload_view(const PreparedChain& pc, const Plan& plan);
// The view of a plan that checkpoints something, with attention offload on or off, and no base:
// a segment's costs under it are its own (the optimal planner adds base and staging to its budget).
OffloadView checkpointing_view(const PreparedChain& pc, bool attention_offload);

// ---- per-block positions: `below` is everything live under the block (see the top) ----

// Block b's forward: its saved tensors, its transient workspace and its input state.
inline double forward_live(const ScaledBlock& b, double below) {
  return below + b.saved() + b.transient_bytes + b.boundary_bytes;
}
// Block b's backward outside a checkpoint call: its saved tensors (+ the FFN input an FFN-only
// block recomputes from), the gradient of the hidden state in and out, its transient.
inline double backward_live(const ScaledBlock& b, BlockMode mode, double below) {
  const double live_block = mode == BlockMode::CheckpointFfn ? b.saved() + b.ffn_input_bytes : b.saved();
  return below + live_block + 2 * b.boundary_bytes + b.transient_bytes;
}
// Block b's backward inside a checkpoint call starting at `first`: the call's input state, the
// recomputed activations of the call's blocks up to b, the gradients, b's transient.
inline double recomputed_backward_live(const ScaledBlock& first, const ScaledBlock& b, double recomputed,
                                       double below) {
  return below + first.boundary_bytes + recomputed + 2 * b.boundary_bytes + b.transient_bytes;
}

// What block b leaves on the GPU after its forward in a segment that is no checkpoint call (returned;
// a call leaves only its input state, once for the call), with `attention_on_gpu` of its attention
// side still there (OffloadView); what it parks in host memory is added to `host`.
//   Keep      attention on the GPU + FFN + rest side
//   FFN-only  attention on the GPU + rest side, and the FFN's input (on the host with an unsloth backend)
inline double block_kept_bytes(const ScaledBlock& b, double attention_on_gpu, BlockMode mode, bool to_host,
                               double& host) {
  host += b.attention_bytes - attention_on_gpu;
  if (mode == BlockMode::Keep) return attention_on_gpu + b.ffn_bytes + b.rest_bytes;
  const double kept = attention_on_gpu + b.rest_bytes;
  if (to_host) {
    host += b.ffn_input_bytes;
    return kept;
  }
  return kept + b.ffn_input_bytes;
}

// ---- the segment walk ----

// A sink keeping only the largest position (for a peak nobody names). A maximum does not depend on
// which position held it, so it is PeakSink's (costmodel.cpp), bit for bit.
struct MaxSink {
  double peak = 0;
  void operator()(int, int, double live) { peak = live > peak ? live : peak; }
};

// Segment s forward, on top of `before` (what earlier segments retain): its blocks' positions, what
// it moves to the host (added to `host`), and what it leaves behind on the GPU (returned).
template <class Sink>
inline double segment_forward(const PreparedChain& pc, const OffloadView& o, const Segment& s, double before,
                              double& host, Sink& note) {
  const ScaledBlock* sb = pc.scaled.data();
  double seg_retained = 0;
  for (int i = s.begin; i < s.end; ++i) {
    const ScaledBlock& b = sb[i];
    note(0, i, forward_live(b, o.base + before + seg_retained));
    if (s.mode != BlockMode::Checkpoint)
      seg_retained += block_kept_bytes(b, o.attention_on_gpu(pc, i), s.mode, s.offload_to_host, host);
  }
  if (s.mode == BlockMode::Checkpoint) {
    if (s.offload_to_host)
      host += sb[s.begin].boundary_bytes;
    else
      seg_retained += sb[s.begin].boundary_bytes;
  }
  return seg_retained;
}

// Segment s backward, while the segments before it retain `before` bytes (the forward's prefix sum,
// not the total less what later segments freed: the same bytes, and a plan's figures then depend
// on its segments in order only, which lets PlanScorer reuse the walk of a plan sharing its first
// segments): its blocks' positions, last block first.
template <class Sink>
inline void segment_backward(const PreparedChain& pc, const OffloadView& o, const Segment& s, double before,
                             Sink& note) {
  const ScaledBlock* sb = pc.scaled.data();
  if (s.mode == BlockMode::Checkpoint) {
    // recompute the whole segment, then back-propagate from its last block
    double recomputed = 0;
    for (int i = s.begin; i < s.end; ++i) recomputed += sb[i].saved();
    for (int i = s.end - 1; i >= s.begin; --i) {
      note(1, i, recomputed_backward_live(sb[s.begin], sb[i], recomputed, o.base + before));
      recomputed -= sb[i].saved();
    }
    return;
  }
  for (int i = s.end - 1; i >= s.begin; --i) {
    // blocks of this segment after i are already freed; blocks before i still hold theirs
    // (offloaded attention comes back for block i's own backward)
    double earlier_in_segment = 0;
    for (int k = s.begin; k < i; ++k)
      earlier_in_segment += o.attention_on_gpu(pc, k) + sb[k].rest_bytes +
                            (s.mode == BlockMode::Keep ? sb[k].ffn_bytes : (s.offload_to_host ? 0 : sb[k].ffn_input_bytes));
    note(2, i, backward_live(sb[i], s.mode, o.base + before + earlier_in_segment));
  }
}

// predict()'s sums over segment s: recompute time, bytes moved over PCIe, recomputed blocks
inline void segment_sums(const PreparedChain& pc, const OffloadView& o, const Segment& s, double& recompute_s,
                         double& offload_bytes, int& recomputed) {
  const auto& blocks = pc.chain->blocks;
  for (int i = s.begin; i < s.end; ++i) {
    if (s.mode == BlockMode::Checkpoint) {
      recompute_s += pc.recompute_s[i];
      // the offload hooks take a checkpointed block's attention tensors in forward (see
      // OffloadView); they come back for the recompute
      if (o.on && blocks[i].attention_offloadable) offload_bytes += pc.scaled[i].attention_bytes;
      continue;
    }
    if (s.mode == BlockMode::CheckpointFfn) {
      recompute_s += pc.ffn_recompute_s[i];
      if (s.offload_to_host) offload_bytes += blocks[i].ffn_input_bytes;
    }
    if (o.on && blocks[i].attention_offloadable) offload_bytes += pc.scaled[i].attention_bytes * o.share;
  }
  if (s.mode == BlockMode::Checkpoint && s.offload_to_host) offload_bytes += pc.scaled[s.begin].boundary_bytes;
  if (s.mode != BlockMode::Keep) recomputed += s.end - s.begin;
}

// ---- a segment's costs on their own ----

// Exposed PCIe seconds per byte moved out in forward and back for backward (the part compute does
// not hide), and the streamed weights' seconds per recomputed block (a recompute pass streams the
// block's weights again): predict()'s transfer terms, per unit.
struct TransferRates {
  double offload_s_per_byte = 0;
  double stream_s_per_recomputed_block = 0;
};
TransferRates transfer_rates(const PreparedChain& pc);

// What segment s costs under view o on top of nothing: the largest live bytes of its positions
// (add the base and what the segments before it retain for the timeline's figure), what it leaves
// on the GPU and on the host, its recompute, the bytes it moves and the blocks it recomputes,
// each formed as the segment walk and predict() form them.
struct SegmentCost {
  double working_bytes = 0;
  double retained_bytes = 0;
  double host_bytes = 0;
  double recompute_s = 0;
  double offload_bytes = 0;
  int recomputed_blocks = 0;
};
SegmentCost segment_cost(const PreparedChain& pc, const OffloadView& o, const Segment& s);

// The step time segment s adds against keeping its blocks without offload, block by block: each
// block's recompute (whole block, or its FFN for FFN-only), its streamed weights again when it is
// recomputed, its attention tensors over PCIe under offload (all of a checkpointed block's, the
// view's share of another's), an FFN-only block's input on the host; then a checkpoint call's input
// state on the host. Recompute times compute_scale, transfers times transfer_scale (an anchor's
// scales; 1 leaves every sum as it is). predict() sums the same terms over the whole plan.
double segment_added_s(const PreparedChain& pc, const OffloadView& o, const Segment& s, const TransferRates& r,
                       double compute_scale = 1.0, double transfer_scale = 1.0);

// The smallest forward position any schedule visits at block i: nothing retained below it, the
// chain's outside activations only (every timeline passes through it; its sums as the walk's).
inline double least_forward_live(const PreparedChain& pc, int i) {
  return forward_live(pc.scaled[i], pc.chain->outside_activation_bytes);
}

}  // namespace segadvise
