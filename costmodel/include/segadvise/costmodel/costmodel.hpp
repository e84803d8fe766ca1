// The cost model: (chain, plan, setup, GPU, coefficients) -> Prediction.
// Peak VRAM comes from a simulated forward/backward activation timeline, step time from a roofline
// with fitted efficiencies. What a block costs under a mode and the segment walk are the one
// evaluator's (evaluator.hpp); derivations are in costmodel/src/costmodel.cpp.
#pragma once

#include <memory>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

// One point of the activation timeline (bytes live on the GPU just then).
struct TimelinePoint {
  std::string phase;  // "forward block 3", "backward segment [4,6)"
  double live_bytes = 0;
};

struct ActivationTimeline {
  double peak_bytes = 0;
  std::string peak_phase;
  double retained_after_forward_bytes = 0;
  double host_bytes = 0;  // peak bytes parked in host memory (offload)
  std::vector<TimelinePoint> points;  // filled when asked (tests, insight tables)
};

// Saved bytes of one block after the fitted per-kind scales (profiled blocks are not scaled);
// boundary_bytes here excludes skip tensors the chain holds anyway (BlockCost::carried_skip_bytes).
struct ScaledBlock {
  double attention_bytes = 0, ffn_bytes = 0, rest_bytes = 0, ffn_input_bytes = 0, boundary_bytes = 0,
         transient_bytes = 0;
  double saved() const { return attention_bytes + ffn_bytes + rest_bytes; }
};
ScaledBlock scaled(const BlockCost& b, const Coefficients& coef);
// Share of a kept block's attention-side bytes attention offload moves to the host: all of it
// without checkpointing, coef.offload_share_checkpointed when the plan checkpoints anything.
double offload_share(const Plan& plan, const Coefficients& coef);
// with the chain's quantized kernel (BlockChain::quantized_kernel): adds quantized Linear inputs
ScaledBlock scaled(const BlockCost& b, const Coefficients& coef, const std::string& quantized_kernel);

ActivationTimeline simulate_activations(const BlockChain& chain, const Plan& plan, const Coefficients& coef,
                                        bool keep_points = false);

struct StaticMemory {
  double weights_bytes = 0;  // with other_models_bytes
  double other_models_bytes = 0;
  double streamed_weights_bytes = 0;
  double trainable_params = 0;
  double trainable_bytes = 0;
  double gradient_bytes = 0;
  double optimizer_bytes = 0;
};
StaticMemory static_memory(const BlockChain& chain, const TrainingSetup& setup);

// Bytes per quantizable parameter as stored (the quantized width; TransformerEngine keeps bf16 storage
// for full runs), and one block's stored weight bytes: what static_memory counts per block.
double quantizable_param_bytes(const TrainingSetup& setup);
double block_weight_bytes(const BlockCost& b, const TrainingSetup& setup);
// The parameters of a block the run's quantizer converts (0 for an unquantized base): the quantizable
// Linears its name filter lets through (quantized_linear_params), plus the adaLN modulation where the
// filter lets it through (TorchAO and fp8-native always), or every parameter when the trainer's plan
// converts whole blocks (block_weight_bytes stores these at the quantized width).
double converted_params(const BlockCost& b, const TrainingSetup& setup);
// Of the block's quantizable Linears, the parameters and the Linear layers a quantized run converts
// (all of them but an FFN that Quanto's family exclude list keeps: BlockCost::ffn_kept_by_quanto);
// the quantized matmul time, dequantization and per-call dispatch count these.
double quantized_linear_params(const BlockCost& b, const TrainingSetup& setup);
double quantized_linears(const BlockCost& b, const TrainingSetup& setup);

// One block's GPU work per kernel class and its host time per pass (costmodel.cpp, "block_kernel_times").
struct BlockKernelTimes {
  double matmul_s = 0, matmul_backward_s = 0;        // forward, and backward (input gradients; + weights)
  double attention_s = 0, attention_backward_s = 0;  // fused (or unfused) attention kernels
  double elementwise_s = 0;                          // forward; backward is twice it
  double dequant_s = 0;                              // quantized weight rebuilds per pass
  double host_forward_s = 0, host_backward_s = 0;    // launches + quantized calls
  double matmul_size_share = 1;                      // share of the ceiling the block's matmul size reaches
  AttentionKernel kernel = AttentionKernel::Fa2;
};
BlockKernelTimes block_kernel_times(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu,
                                    const Coefficients& coef);

// Per-block forward times in seconds (kernel classes, never under the host floor), used by the planner too.
// host time of one pass over the block: launches x launch_multiple + quantized Linear calls
double block_host_s(const BlockCost& b, const TrainingSetup& setup, const Coefficients& coef, double launch_multiple);
double block_forward_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef);
double block_backward_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef);
// The recompute pass of a checkpointed block: its forward's GPU work, never under
// (1 + Coefficients::checkpoint_host_ratio) x its forward host time; a profile's own forward time
// where it measured one (the measurement ran the block as the trainer does)
double block_recompute_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu, const Coefficients& coef);
double block_ffn_recompute_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu,
                             const Coefficients& coef);
double block_ffn_forward_s(const BlockCost& b, const TrainingSetup& setup, const GpuSpec& gpu,
                           const Coefficients& coef);

Prediction predict(const BlockChain& chain, const Plan& plan, const TrainingSetup& setup, const GpuSpec& gpu,
                   const Coefficients& coef, double headroom_bytes);

// A card's memory as nvidia-smi counts it: total = driver reservation + the process's CUDA context +
// library workspaces outside the caching allocator + the allocator's reserved segments + free. The
// reserved peak may reach total less the first three and the allocator's margin at the limit (what a
// nearly full allocator cannot place: its rounding, the request that fails). On a card whose limit the
// calibration measured (GpuCoefficients::reserve_bytes: total less the highest reserved peak or OOM
// point seen there) the margin is what that envelope leaves beyond the other three; elsewhere it is
// the card's allocator_margin_share of the total. docs/memory.md.
struct CardOverhead {
  double total_bytes = 0;
  double driver_reserved_bytes = 0;
  double context_bytes = 0;
  double library_bytes = 0;
  double allocator_margin_bytes = 0;
  bool margin_measured = false;  // from the card's measured envelope, not the share rule
  // what the reserved peak may use, never below 0
  double usable_bytes() const;
  // what nvidia-smi shows beyond the reserved peak
  double smi_extra_bytes() const { return context_bytes + library_bytes; }
};
CardOverhead card_overhead(const GpuSpec& gpu, const Coefficients& coef);

// The allocator's slack as a share of the activation peak: the fitted `fragmentation`, or with
// expandable segments at most kExpandableSegmentsSlack.
double allocator_slack_share(const TrainingSetup& setup, const Coefficients& coef);

// The memory kept free for what else uses the card when the user does not say (--headroom-gib): on a card
// with display outputs an idle desktop's share, 0.5 GiB (Linux desktops 0.2-0.6 GB, Windows 0.3-0.5 GB
// idle; browsers and Electron apps take 1-4 GB more: docs/memory.md), on a datacenter card nothing.
double default_headroom_bytes(const GpuSpec& gpu);
// why: "default: a card with display outputs …"
std::string default_headroom_reason(const GpuSpec& gpu);

// Memory the reserved peak may use on `gpu` (card_overhead(...).usable_bytes()). Headroom comes off this.
double usable_vram_bytes(const GpuSpec& gpu, const Coefficients& coef);

// Everything about a chain that does not depend on the schedule, computed once: advise evaluates
// thousands of schedules over the same chain. Holds references: keep the inputs alive.
struct MultiGpuPlanFree;  // multi_gpu.hpp

struct PreparedChain {
  const BlockChain* chain = nullptr;
  const TrainingSetup* setup = nullptr;
  const GpuSpec* gpu = nullptr;
  const Coefficients* coef = nullptr;
  std::vector<ScaledBlock> scaled;     // per block, after the fitted scales
  std::vector<double> forward_s;       // per block roofline (or measured) forward time
  std::vector<double> ffn_forward_s;   // FFN part of it (recomputed by -ffn backends)
  // what recomputing the block costs (block_recompute_s: its forward, never under the checkpoint
  // machinery's host time), and the FFN side's for -ffn backends
  std::vector<double> recompute_s;
  std::vector<double> ffn_recompute_s;
  std::vector<double> attention_s;     // attention part of it
  std::vector<double> backward_s;      // per block backward time
  double forward_sum_s = 0;            // sum of forward_s, in block order (the same for every plan)
  double backward_sum_s = 0;           // sum of backward_s, in block order
  StaticMemory static_memory;
  double outside_s = 0;
  double usable_vram_bytes = 0;
  const GpuCoefficients* gpu_coef = nullptr;  // coef->for_gpu(gpu->id), looked up once
  double optimizer_update_bytes_per_param = 0;  // optimizer_info(setup->optimizer), looked up once
  // on several GPUs, what no plan changes: the rank's model state, the step's collectives and
  // their cost (advise predicts thousands of plans of one setup; per plan, this was ~80% of it)
  std::shared_ptr<const MultiGpuPlanFree> multi_gpu;
  // the same chain without the upcast weight copies (set only when some block has them): the
  // difference between the two peaks is MemoryBreakdown::upcast_weight_bytes
  std::shared_ptr<const PreparedChain> without_upcast_copies;
};
PreparedChain prepare(const BlockChain& chain, const TrainingSetup& setup, const GpuSpec& gpu,
                      const Coefficients& coef);
ActivationTimeline simulate_activations(const PreparedChain& pc, const Plan& plan, bool keep_points = false);
Prediction predict(const PreparedChain& pc, const Plan& plan, double headroom_bytes);
// predict() without naming the peak's phase (memory.peak_phase stays empty): every figure is the
// same, bit for bit; advise scores thousands of plans and names only those it prints.
Prediction predict_figures(const PreparedChain& pc, const Plan& plan, double headroom_bytes);
// predict_figures() of plan after plan, bit for bit. A plan is walked from the first segment where
// it differs from the previous plan walked (under the same attention offload: the share it moves
// and its staging copies): its figures before that segment are the previous plan's (the timeline's
// sums run over the segments in order, and a segment's backward needs only what the segments before
// it retain). advise scores ~18k per-block
// plans for Stable Cascade's 192 micro-blocks and ~10k segmented plans for MiniMax H3, in an order
// where consecutive plans share their first segments (an interval with its strides, rising). One
// scorer per thread and per prepared chain.
class PlanScorer {
 public:
  explicit PlanScorer(const PreparedChain& pc) : pc_(&pc) {}
  Prediction figures(const Plan& plan, double headroom_bytes);
  // the segment the last figures() resumed its walk at (0: walked from the start)
  std::size_t resumed_at() const { return resumed_at_; }

  // the running sums before a segment
  struct State {
    double retained = 0, host = 0, recompute_s = 0, offload_bytes = 0, peak = 0;
    int recomputed = 0;
  };

 private:
  const PreparedChain* pc_;
  std::vector<Segment> walked_;  // the last plan walked
  bool walked_single_ = false;   // it was of one-block segments without attention offload
  double walked_view_[3] = {0, 0, 0};  // its attention offload: on, the share moved, the base
  std::vector<State> states_;    // states_[j]: its sums before segment j
  std::size_t resumed_at_ = 0;
};

// A prediction for a schedule the trainer ignores or rejects.
Prediction unsupported_prediction(const std::string& reason);

}  // namespace segadvise
