// Value types shared by every module: what a training run is (TrainingSetup), what a block costs
// (BlockCost / BlockChain), how the trainer checkpoints it (Plan), what a GPU is (GpuSpec), the
// fitted coefficients, and what the cost model answers (Prediction).
//
// Units are in the names: *_bytes, *_s, *_flops, *_per_s. Nothing here needs LibTorch.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/distributed.hpp"
#include "segadvise/costmodel/kernels.hpp"
#include "segadvise/io/error.hpp"

namespace segadvise {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

struct GpuSpec {
  std::string id;    // catalog key, e.g. "l40s"
  std::string name;  // "NVIDIA L40S 48GB"
  double total_bytes = 0;
  double bf16_flops_per_s = 0;  // dense bf16, fp32 accumulate
  double fp8_flops_per_s = 0;   // dense fp8 (0 when the card has none)
  double mem_bytes_per_s = 0;
  double pcie_bytes_per_s = 0;  // host<->device, one direction, nominal
  // what the kernels reach (kernels.hpp): the practical bf16 matmul ceiling (0: kDefaultMatmulCeilingShare
  // of bf16_flops_per_s), the architecture ("hopper", "ada", "ampere", "blackwell",
  // "blackwell-datacenter", "cdna3": it decides SDPA's attention kernel), the published kernel curves
  double matmul_flops_per_s = 0;
  std::string arch;
  std::shared_ptr<const KernelTable> kernels;
  std::string source;
  // interconnect (multi-GPU): NVLink generation and per-GPU bandwidth one direction (0: none),
  // PCIe generation, whether GPU peer-to-peer works (without it NCCL stages through host memory)
  int nvlink_gen = 0;
  double nvlink_bytes_per_s = 0;
  int pcie_gen = 0;
  bool p2p = true;
  std::string interconnect_source;
  // what the card can run (families/data/gpus.json, sources per card there)
  int sm = 0;                     // compute capability x 10 (86: sm_86); 0 where not published
  bool bf16_native = true;        // bf16 tensor cores (Ampere and later; not Turing, not Volta)
  bool flash_attention_2 = true;  // the flash-attn 2.x kernels build for it (sm80 and later)
  bool fp8_tensor = false;        // fp8 tensor cores (Ada, Hopper, Blackwell)
  // the card has display outputs (GeForce, RTX workstation cards): a desktop may hold memory on it,
  // which the default headroom allows for; datacenter cards (H100, L40S, A10, T4 ...) have none
  bool display = false;
  std::string capability_source;
  // what a process's memory holds besides the caching allocator's segments (families/data/card-memory.json,
  // docs/memory.md): the driver's reservation (nvidia-smi -q "Reserved": the total less what CUDA reports),
  // the CUDA context with lazy module loading, the cuBLAS/cuDNN workspaces outside the allocator, and the
  // share of the total a nearly full allocator cannot place (for a card whose limit was not measured)
  double driver_reserved_bytes = 0;
  double context_bytes = 0;
  double library_bytes = 0;
  double allocator_margin_share = 0;
  bool custom_total = false;  // --vram-gib gave it another total than the catalog's
};

// model_type: a LoRA/LyCORIS adapter on a frozen base, or a full fine-tune.
enum class ModelType { Lora, Full };
// lora_type: PEFT LoRA, or a LyCORIS adapter (estimated as LoKr).
enum class LoraType { Standard, Lycoris };
std::string to_string(ModelType t);  // "lora" | "full" (the trainer's words; JSON output uses them)
std::string to_string(LoraType t);   // "standard" | "lycoris"
// The trainer's word as an enum; anything else throws InputError "<where> is 'x'; expected one of
// lora, full". `where` names the input and the field: "f.json: field 'example.model_type'".
ModelType parse_model_type(const std::string& s, const std::string& where);
LoraType parse_lora_type(const std::string& s, const std::string& where);

// Everything that changes memory or time. Defaults are SimpleTuner's (its field registry, docs/sources/simpletuner.md §0).
struct TrainingSetup {
  std::string model_id;  // families/ id
  // The config does not name the model: the family was guessed, from what (a path, a model name, the
  // trainer's default). "" : the config (or --model) names it. A guessed family is never printed with the
  // family's model confidence alone (report/output.cpp).
  std::string family_guessed_from;
  // The dataset file that gives the shape is not on this machine: the shape below is assumed, and from
  // what ("" : read from the config and its dataset). An assumed shape is never printed with the family's
  // model confidence alone (report/output.cpp).
  std::string shape_assumed_from;
  int width = 1024;      // trained size after bucketing, pixels
  int height = 1024;
  int frames = 1;        // video frames after the family's frame rule
  int batch = 1;
  int text_tokens = -1;  // -1: the family's own
  std::string base_precision = "no_change";  // base_model_precision (or bf16 / int8-sdnq-hadamard)
  bool sdnq_hadamard = false;
  std::string mixed_precision = "bf16";
  ModelType model_type = ModelType::Lora;
  LoraType lora_type = LoraType::Standard;
  int lora_rank = 16;
  // LyCORIS LoKr as the config's lycoris_config sets it (docs/sources/simpletuner.md §2.4): the factor
  // of a block's attention Linears and of its FFN Linears, from the classes apply_preset targets (0: not
  // targeted; -1: the most balanced factorization), and w2 in full (lokr_full_matrix, or lokr_linear_dim
  // at least half its larger side) or at rank lokr_linear_dim. lokr_read false: the targets are not
  // known and a LyCORIS adapter is the estimate kLycorisParamsPerWidth.
  bool lokr_read = false;
  int lokr_attention_factor = 0, lokr_ffn_factor = 0;
  bool lokr_full_matrix = false;
  int lokr_linear_dim = 4;
  std::string optimizer = "adamw_bf16";
  bool ramtorch = false;
  double ramtorch_percent = 100;
  int blocks_to_swap = 0;      // musubi_blocks_to_swap
  // Where the swapped blocks are, when not the last blocks_to_swap of the whole chain: the trailing
  // blocks of each of the chain's last lists, in chain order (FLUX-style swap code moves the last d
  // double and the last s single blocks: {d, s}; their sum is blocks_to_swap). Empty: the chain's last N.
  std::vector<int> blocks_to_swap_per_list;
  bool group_offload = false;  // enable_group_offload
  std::string attention = "diffusers";
  // dynamo_use_regional_compilation: the sweep measured that checkpointing inside compiled blocks
  // neither lowers the peak nor adds recompute time (Krea 2, MageFlow, Cosmos 3); see realize()
  bool regional_compile = false;
  bool use_ema = false;
  bool ema_on_gpu = false;
  MultiGpuSetup multi_gpu;  // one GPU unless a multi-GPU flag or key says otherwise
  // The trainer that runs it (simpletuner, musubi, ai-toolkit, onetrainer, diffusers): its setup
  // rules (segadvise/trainers/setup_rules.hpp) judge every prediction of the setup.
  std::string trainer = "simpletuner";
  // Mixture of experts held as whole transformers (Wan 2.2 A14B: a high- and a low-noise DiT of the
  // chain's layout). One expert runs per step, so activations and gradients are one expert's; every
  // expert's weights are resident unless the idle ones wait on the host, and each trained expert
  // keeps its adapter and optimizer state. trained_experts 0: all of them.
  int experts = 1;
  bool idle_experts_on_host = false;
  int trained_experts = 0;
  // Control/reference images whose latents join the image sequence (FLUX.1 Kontext, Qwen-Image-Edit):
  // the transformer sees image tokens x (1 + reference_images).
  int reference_images = 0;
  bool quantized_full_allowed = false;  // SimpleTuner's i_know_what_i_am_doing / controlnet: a full fine-tune of a quantized base runs
  // Set by other trainers' readers where they differ from SimpleTuner (0 / false: SimpleTuner's rule).
  // Bytes per stored unquantized base weight when the trainer stores weights apart from the compute
  // dtype (OneTrainer's <part>.weight_dtype FLOAT_32 under train_dtype BFLOAT_16: 4, activations stay 2);
  // a full fine-tune's gradients have the weights' dtype. 0: weight_dtype_bytes (the compute dtype).
  double weight_storage_bytes = 0;
  // Bytes per adapter (LoRA) parameter, and so per adapter gradient, when the trainer keeps adapters apart
  // from the compute dtype (OneTrainer's lora_weight_dtype, FLOAT_32 by default: 4). 0: bf16, as
  // SimpleTuner casts them to weight_dtype.
  double adapter_weight_bytes = 0;
  // The fused back pass (OneTrainer optimizer.fused_back_pass, musubi --fused_backward_pass): each
  // parameter is stepped and its gradient freed as backward produces it, so about one block's
  // gradients are resident, not the model's.
  bool fused_back_pass = false;
  // What the card makes of the setup (trainers/card_limits.hpp, set where the setup meets the card):
  // the share of the card's matmul and attention rates the run reaches (bf16 emulated on a card
  // without bf16 tensor cores: well below 1), and whether the trainer runs fp8 matmuls (torchao
  // float8 training, torch._scaled_mm), which need fp8 tensor cores.
  double matmul_rate_share = 1;
  bool fp8_matmul = false;
  // ai-toolkit's train.unload_text_encoder without cached embeddings: the text encoder waits on the CPU
  // and the job trains on its trigger word (or a blank prompt) alone (SDTrainer.py hook_before_train_loop);
  // its plans keep that choice rather than caching the captions' embeddings. Not read by the cost model.
  bool text_encoder_unloaded = false;
  // OneTrainer's layer offload (LayerOffloadConductor): this share of the blocks' weight BYTES stays on
  // the host; the GPU keeps a static cache of the rest (at least two blocks), 0: none.
  double layer_offload_fraction = 0;
  // The quantizer converts every Linear of the blocks, the modulation (adaLN) ones too (OneTrainer's
  // quantization layer filter "full" or "blocks"; ai-toolkit's quantize_model, toolkit/util/quantize.py):
  // block weights at the quantized width. false: the analyzer's quantizable share (modulation kept at
  // the weight dtype, as SimpleTuner's quantizers do).
  bool quantize_all_block_linears = false;
  // Other models the trainer keeps on the GPU through the step (text encoders it trains or does not
  // unload, the VAE when latents are not cached, ai-toolkit's accuracy-recovery adapter): their
  // weights, adapters, gradients and optimizer state, counted with the base weights; `kept_models`
  // says what they are.
  double kept_model_bytes = 0;
  std::string kept_models;
  // The training script the config runs (a diffusers example): the plans keep it where the trainer's
  // data lists it for the family. Not read by the cost model.
  std::string script;
  // Textual inversion (OneTrainer EMBEDDING): this many trained embedding values (fp32) in place of
  // adapters; the frozen base is run as a LoRA step is (backward through it), 0: none.
  double embedding_params = 0;
  // Pipeline parallelism (diffusion-pipe's pipeline_stages, DeepSpeed's PipelineModule): the blocks are
  // split over this many GPUs, and the prediction is the busiest GPU's, the first stage: ceil(blocks /
  // stages) blocks (the split taken as even) with everything outside the blocks, and the activations of
  // min(stages, pipeline_micro_batches) micro-batches in flight (a 1F1B schedule). 1: no pipeline.
  int pipeline_stages = 1;
  int pipeline_micro_batches = 1;
  std::vector<std::string> notes;  // how the setup was derived, shown to the user
  // the operating system the run is on: "windows" (the driver's sysmem fallback, WDDM) or "" (Linux,
  // or not said); host_os_from: what said so (--os, a .bat/.ps1 launch script, Windows paths: a guess)
  std::string host_os;
  std::string host_os_from;
  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: one growing segment per stream instead of a
  // segment per large allocation, so the allocator's slack falls (allocator_slack_share); _from: what said so
  bool expandable_segments = false;
  std::string expandable_segments_from;
};

// One block instance as the cost model sees it. Derivations live in families/analyzer.cpp.
struct BlockCost {
  std::string list;   // trainer attribute, e.g. "transformer_blocks"
  int index = 0;      // index inside its list
  // running counters over checkpointable blocks, as the trainer counts them for per-block
  // selection: within blocks of the same list name, and over the whole chain (-1: not checkpointable)
  int list_position = -1;
  int global_position = -1;
  std::string kind;   // dit_cross, mmdit_double, …
  bool checkpointable = true;  // the trainer's checkpointing covers it
  bool attention_offloadable = false;
  bool has_ffn_boundary = true;
  double saved_attention_bytes = 0;  // tensors autograd keeps for backward, attention side
  double saved_ffn_bytes = 0;        // FFN side
  double saved_rest_bytes = 0;       // norms, modulation, residual bookkeeping
  double ffn_input_bytes = 0;  // what FFN-only checkpointing keeps instead of the FFN side
  double boundary_bytes = 0;   // state entering the block: hidden (+ text, + carried skips)
  // skip tensors alive when the block starts (part of boundary_bytes): the chain holds them until
  // they are popped whatever the schedule (BlockChain::outside_activation_bytes counts them once),
  // so a checkpoint that saves them as inputs adds no memory for them
  double carried_skip_bytes = 0;
  double skip_push_bytes = 0;  // skip tensor this block pushes for a later block (U-Net style)
  double skip_pop_bytes = 0;   // skip bytes this block consumes (last pushed, first popped)
  double transient_bytes = 0;  // short-lived workspace while it runs (largest intermediate)
  double matmul_flops = 0;     // forward, dense linear layers
  double ffn_matmul_flops = 0;  // part of matmul_flops on the FFN side
  double attention_flops = 0;  // forward, QK^T and PV
  // its shape for the kernel tables (kernels.hpp): keys per query and head dim of the fused attention
  // calls (flop-weighted geometric means), and the part of attention_flops linear-attention kernels do
  // (plain matmul and elementwise kernels, no fused attention: timed as unfused attention)
  double attention_keys = 0, head_dim = 0, linear_attention_flops = 0;
  double params = 0;           // base weights
  double quantizable_params = 0;  // linear weights a quantizer converts
  double quantizable_ffn_params = 0;  // of those, the FFN's (ffn_kept_by_quanto)
  // of the others, the adaLN modulation Linears: TorchAO and fp8-native convert them too (every
  // nn.Linear with no name filter), Quanto by its name filter (below), SDNQ's skip keys not (counted at
  // the weight dtype: docs/calibration.md); the rest (convolutions) no quantizer
  double modulation_params = 0;
  // Quanto's name filter (converted_params), set by the analyzer from the family's module names and
  // SimpleTuner's exclude list for it: no list, every Linear converted, the modulation too; a list
  // that matches the modulation's name (sd3's and flux's `*norm*` on AdaLayerNormZero's
  // `norm1.linear`) keeps it. Default: kept.
  bool modulation_kept_by_quanto = true;
  // Quanto's exclude list names the FFN (Wan's `*ffn*`): its Linears stay at the weight dtype
  bool ffn_kept_by_quanto = false;
  double ffn_linears = 0;  // of quantizable_linears, the FFN's
  double lora_params = 0;      // trainable adapter parameters in this block
  double launches = 0;         // forward kernel launches (host-bound time floor)
  // Linear layers a quantizer converts, each one call per forward (and one per backward): a quantized
  // call adds host work (tensor-subclass dispatch, activation quantize kernels) the bf16 call lacks
  double quantizable_linears = 0;
  // Inputs of the block's quantizable Linear layers, by side (for calibration): a quantized
  // Linear's autograd keeps them (plus scaled copies) where a frozen bf16 Linear keeps nothing; the
  // cost model adds them times Coefficients::quantized_input_scale[precision] when the chain's
  // linears are quantized (BlockChain::quantized_kernel).
  double linear_input_attention_bytes = 0;
  double linear_input_ffn_bytes = 0;
  // A weight-only quantized Linear (PrecisionInfo::upcast_weight) multiplies by an upcast copy of its
  // weight at the activation dtype, and autograd keeps that copy for the input's gradient: the bytes
  // of those copies, by side (the adaLN modulation's with the rest), live wherever the block's saved
  // tensors are (a kept block holds them until its backward, a checkpointed one only while it is
  // recomputed); 0 for other precisions.
  double upcast_weight_attention_bytes = 0;
  double upcast_weight_ffn_bytes = 0;
  double upcast_weight_rest_bytes = 0;
  bool measured = false;       // bytes come from a profile: fitted activation scales do not apply
  double measured_forward_s = 0;   // from a profile taken on the target GPU (0: use the roofline)
  double measured_backward_s = 0;
  double measured_ffn_forward_s = 0;  // the FFN side's forward alone (what -ffn backends recompute)

  double saved_bytes() const { return saved_attention_bytes + saved_ffn_bytes + saved_rest_bytes; }
};

struct BlockChain {
  std::string model_id;
  std::vector<BlockCost> blocks;  // in the trainer's execution order
  double tokens_image = 0;        // per sample
  double tokens_text = 0;
  double outside_params = 0;      // embedders, heads, refiners not described as blocks
  double outside_activation_bytes = 0;  // embedder/head/loss activations, always retained
  double outside_matmul_flops = 0;
  double activation_dtype_bytes = 2;  // bf16 / fp16 activations; 4 when mixed_precision is no
  // precision_key() of the base when its block linears are quantized, "" otherwise (bf16 base, or
  // RamTorch: TorchAO/fp8-native never convert RamTorch modules, SimpleTuner training/quantisation/__init__.py)
  std::string quantized_kernel;
  std::string source = "static";  // static | profile:<file>
};

enum class Backend { Torch, TorchFfn, Unsloth, UnslothFfn };
std::string to_string(Backend b);
Backend parse_backend(const std::string& s);  // throws InputError
inline bool is_ffn(Backend b) { return b == Backend::TorchFfn || b == Backend::UnslothFfn; }
inline bool is_unsloth(Backend b) { return b == Backend::Unsloth || b == Backend::UnslothFfn; }

// The trainer's knobs, as a user writes them.
struct Schedule {
  bool checkpointing = true;
  int interval = 0;  // 0 or 1: unset (every block)
  int stride = 0;    // 0: unset
  Backend backend = Backend::Torch;
  bool offload_attention = false;

  // The sweep's names: none, layer, intervalK, segK-strideS, activation-offload,
  // segK-strideS-offload; a backend suffix "+unsloth" etc. is accepted too.
  std::string name() const;
  static Schedule parse(const std::string& name);  // throws InputError
};

// What the trainer really does with a Schedule on a family: each block kept, or checkpointed in a
// segment (one checkpoint call over [begin, end)), or FFN-only checkpointed.
enum class BlockMode { Keep, Checkpoint, CheckpointFfn };

struct Segment {
  int begin = 0;  // block indices into BlockChain::blocks, [begin, end)
  int end = 0;
  BlockMode mode = BlockMode::Keep;
  bool offload_to_host = false;  // unsloth: the checkpoint's saved inputs live in pinned host memory
};

struct Plan {
  std::vector<Segment> segments;  // cover every block exactly once, in order
  bool offload_attention = false;
  std::string description;
};

// A schedule the trainer ignores or rejects is a value with a reason, never a silent prediction.
struct PlanResult {
  bool supported = true;
  std::string reason;  // why not, or what the trainer changes (a warning)
  std::vector<std::string> warnings;
  Plan plan;
};

// Fitted coefficients (calibration/). Defaults are physically plausible starting points.
struct GpuCoefficients {
  // starting values: typical eager-PyTorch figures (the fit starts here; from a much faster guess
  // Levenberg-Marquardt settles in a basin where the host-launch floor never binds)
  // shares of the kernel tables' figures (kernels.hpp) eager training reaches, per kernel class
  double matmul_efficiency = 0.7;      // achieved / practical matmul ceiling at the block's matmul size
  double attention_efficiency = 0.7;   // achieved / the attention kernel's published rate (<= 2: the
                                       // curves are H100's, scaled to other cards by their matmul ceiling)
  double elementwise_efficiency = 0.5; // achieved / nameplate memory bandwidth on elementwise kernels
  double overhead_s = 0.1;             // fixed per step: data, loss, bookkeeping
  double pcie_efficiency = 0.6;        // achieved / nominal host<->device
  double reserve_bytes = 2.0 * kGiB;   // context + allocator reserve + what the driver keeps
};

struct Coefficients {
  std::map<std::string, GpuCoefficients> gpu;  // by GpuSpec::id
  GpuCoefficients default_gpu;
  // Saved-activation scale per block kind and side ("dit_cross.attention"), default 1.
  std::map<std::string, double> activation_scale;
  // Matmul time multiplier per base precision (quantized kernels, dequantization), default 1.
  std::map<std::string, double> matmul_time_factor;
  // Saved-activation multiplier of quantized Linear inputs per precision key (0 when absent):
  // dynamic-activation fp8 keeps its inputs and their fp8 copies for backward.
  std::map<std::string, double> quantized_input_scale;
  // Dequantization work per quantized matmul call, in passes over the layer's weights at memory
  // bandwidth (2 B/param), per precision key (0 when absent). Quantized training kernels rebuild
  // the weight on every call, a cost that scales with parameters, not tokens.
  std::map<std::string, double> dequant_passes;
  // Host time per quantized Linear call, per precision key (0 when absent): Python tensor-subclass
  // dispatch plus the kernels that quantize the activation and rescale the output (TorchAO, SDNQ,
  // quanto). Host work: it bounds a block's time from below like kernel launches, on any GPU.
  std::map<std::string, double> quantized_call_s;
  // a matmul's backward time per gradient it forms / its forward time (input gradients for a frozen
  // base; input and weight gradients for a full fine-tune: twice); 1 when the kernels run as fast
  double backward_factor = 1.0;
  double fragmentation = 0.08;         // allocator slack as a fraction of the activation peak
  double offload_overlap = 0.5;        // share of activation offload transfer hidden by compute
  // share of streamed weights' transfer (RamTorch, block swap, group offload) hidden by compute: each
  // mechanism copies the next block's weights while the current one runs, as far as its hooks allow
  double stream_overlap = 0.0;
  double launch_s = 80e-6;             // host time per kernel launch (eager PyTorch), any GPU
  // host time of a block's backward / its forward launches: autograd's C++ engine launches the
  // backward kernels without the forward's Python module code (the sweep's host-bound SD 1.x, SDXL
  // and LTXVideo runs take 1.7x as long with every block recomputed: backward host ~0.4x forward)
  double backward_host_ratio = kBackwardLaunchesPerForward;
  // host time a checkpointed block adds to its recompute pass, per unit of its forward host time:
  // non-reentrant torch.utils.checkpoint runs a Python saved-tensor hook for every tensor the block
  // saves (pack in the forward, pack again in the recompute, unpack in the backward) and re-enters
  // the block's Python module code. The recompute pass of a block is never shorter than
  // (1 + checkpoint_host_ratio) x its forward host time: on a fast card the hooks, not the kernels,
  // set the cost of checkpointing (the sweep's H100 `layer` - `none` gaps are 1.2-3.3x the re-run
  // forward; the L40S's, whose blocks are bound by their kernels, ~1x). Not fitted (calibrate.cpp
  // says why): 0 unless a coefficients file sets it
  double checkpoint_host_ratio = 0.0;
  double offload_share_checkpointed = 1.0;  // attention bytes offloaded from kept blocks when checkpointing is on
  // attention offload under checkpointing: blocks' worth of attention tensors the offload machinery
  // holds on the device at once (copies in flight, pooled buffers; at most offload_pin_memory_max_buckets, 12)
  double offload_staging_blocks = 0.0;
  std::string source = "built-in defaults";

  const GpuCoefficients& for_gpu(const std::string& id) const;
  double scale(const std::string& kind, const std::string& side) const;
  double time_factor(const std::string& precision) const;
  double input_scale(const std::string& precision) const;    // 0 when absent
  double dequant(const std::string& precision) const;        // 0 when absent
  double call_s(const std::string& precision) const;         // 0 when absent or bf16
};

struct MemoryBreakdown {
  double weights_bytes = 0;        // resident base weights at their precision (with other_models_bytes)
  double other_models_bytes = 0;   // of weights_bytes: other models kept on the GPU (TrainingSetup::kept_model_bytes)
  double streamed_weights_bytes = 0;  // weights on the host (RamTorch / block swap), not counted in peak
  double trainable_bytes = 0;      // LoRA / LyCORIS / full parameters
  double gradient_bytes = 0;
  double optimizer_bytes = 0;
  double activation_peak_bytes = 0;  // timeline peak of retained + working activations
  // of activation_peak_bytes: the upcast weight copies of a weight-only quantizer
  // (BlockCost::upcast_weight_attention_bytes) live at the peak. Exact bytes, not an estimate: no
  // allocator fragmentation on them, and anchors and ranges take them with the weights.
  double upcast_weight_bytes = 0;
  double fragmentation_bytes = 0;  // allocator slack on the rest of the activation peak
  double reserve_bytes = 0;        // CUDA context, allocator reserve
  double host_activation_bytes = 0;  // offloaded to pinned host memory
  // multi-GPU (0 on one GPU): unsharded weights in flight (FSDP2/ZeRO-3), reducer buckets, and
  // model state offloaded to the host per rank (FSDP2 CPU offload, ZeRO offload)
  double gathered_bytes = 0;
  double bucket_bytes = 0;
  double host_state_bytes = 0;
  std::string peak_phase;          // where the activation peak happens
};

struct TimeBreakdown {
  double forward_s = 0;
  double backward_s = 0;
  double recompute_s = 0;
  double transfer_s = 0;  // exposed host<->device traffic (offload, streaming)
  double optimizer_s = 0;
  double overhead_s = 0;
  double communication_s = 0;  // multi-GPU: collectives and offload traffic compute does not hide
  // the blocks run regionally compiled (dynamo): the step is not eager PyTorch's kernels and launches,
  // and its time range is of its own kind (range_stratum)
  bool compiled = false;
};

// What a multi-GPU prediction adds: the rank's setup and the step's communication, all per rank.
struct MultiGpuInfo {
  bool active = false;
  int world = 1;
  int shard_ranks = 1;
  CommVolume volume;          // payload bytes per optimizer step
  CommCost cost;              // on the link, before overlap
  double host_optimizer_s = 0;  // optimizer step on the CPU (offloaded optimizer state)
  double samples_per_step = 0;  // unique samples per optimizer step over all ranks (dist §2)
  // host RAM one node needs: its ranks' offloaded state, or at load time a full CPU copy of the
  // model per rank (FSDP2 without cpu_ram_efficient_loading, DeepSpeed without zero.Init, dist §3)
  double host_ram_per_node_bytes = 0;
};

struct Prediction {
  bool supported = true;
  std::string reason;
  bool fits = false;
  double peak_vram_bytes = 0;     // the reserved peak (torch.cuda.max_memory_reserved)
  double usable_vram_bytes = 0;   // what the card leaves the reserved peak (card_overhead)
  // what nvidia-smi shows above the reserved peak: the CUDA context and the library workspaces
  double smi_extra_bytes = 0;
  double step_time_s = 0;
  MemoryBreakdown memory;
  TimeBreakdown time;
  MultiGpuInfo multi_gpu;
  std::vector<std::string> warnings;
};

}  // namespace segadvise
