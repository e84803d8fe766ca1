// Limits and fixed figures, in one place, each with its reason. Input limits are also stated in
// README ("Reliability") and families/FORMAT.md.
#pragma once

#include <cstddef>

#include "segadvise/io/limits.hpp"  // the input file limits

namespace segadvise {

// ---- family files (families/FORMAT.md "Limits") ----
constexpr int kMaxBlockLists = 256;         // block lists per family (Stable Cascade C has 192)
constexpr int kMaxBlocksPerList = 1024;     // `count` of one list
constexpr int kMaxBlocks = 4096;            // blocks over all lists
constexpr int kMaxModelDim = 1 << 20;       // hidden, heads, head_dim, ffn_hidden, text_hidden, experts
constexpr double kMaxTokenScale = 1024;     // token_scale: a list runs on at most 1024x the latent tokens
constexpr int kMaxGeometryFactor = 1024;    // vae_spatial/temporal, patch sizes, alignment
constexpr int kMaxTextTokens = 1 << 20;     // text_tokens, audio_tokens
constexpr double kMaxParams = 1e15;         // params_published, params_per_block

// ---- GPUs: the largest card memory accepted (--vram-gib, gpus.json) ----
constexpr double kMaxVramGib = 4096;

// ---- training setups (flags, configs, measured runs, family examples) ----
constexpr int kMaxEdgePixels = 1 << 16;     // a width or height: 65,536 px
constexpr int kMaxFrames = 1 << 16;         // frames of one sample
constexpr int kMaxBatch = 1 << 16;          // samples in one step
constexpr int kMaxLoraRank = 1 << 16;       // LoRA rank
constexpr int kMaxScheduleStep = 1 << 16;   // gradient_checkpointing_interval / _segment_stride
constexpr int kMaxFramerate = 1000;         // frames per second of a video backend
constexpr int kMaxBlocksToSwap = 1 << 16;   // musubi_blocks_to_swap

// ---- coefficients files: every fitted factor, time and scale is far below this ----
constexpr double kMaxCoefficient = 1e6;

// ---- profiles (families/src/profile.cpp) ----
constexpr double kMaxProfileBytes = 1e15;   // one saved-activation figure of one block: 1 PB
constexpr double kMaxProfileTokens = 1e9;   // tokens a block was profiled at

// ---- bytes of a value ----
constexpr double kBf16Bytes = 2;  // bf16 / fp16 weights, activations and LoRA adapters
constexpr double kFp32Bytes = 4;  // fp32 weights and activations (mixed_precision no)

// ---- multi-GPU (costmodel/src/distributed.cpp) ----
// Achieved NCCL bus bandwidth / nominal link bandwidth. NCCL-tests report bus bandwidth against which
// ring all-reduce on NVLink/NVSwitch typically reaches 75-85% of the per-direction link figure; 0.8 is
// an assumption in that range (no multi-GPU run was measured for this project), kept in one place.
constexpr double kCommEfficiency = 0.8;
// FSDP2 keeps up to two all-gather outputs alive in forward (PyTorch PR #128884) and prefetches one
// block ahead in backward: two units' unsharded weights in flight (dist §3). ZeRO-3's prefetch is
// modelled the same.
constexpr double kGatheredUnitsInFlight = 2;
// A transformer block holds about 12 h^2 parameters (q, k, v, out 4 h^2; a 4h MLP 8 h^2: the count
// N ~ 12 n_layer d_model^2 of Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1),
// so h^2 ~ the largest block's parameters / 12: DeepSpeed's "auto" reduce bucket of h^2 elements
// (costmodel/src/multi_gpu.cpp)
constexpr double kBlockParamsPerHiddenSquared = 12;

// An optimizer step on the CPU (ZeRO offload_optimizer, FSDP2 CPU offload) streams per parameter
// the fp32 master, two moments and the fp32 gradient in (16 B) and master and moments out (12 B),
// plus the bf16 parameter for the copy back (2 B): 30 B. At the ~20 GB/s a CPU Adam sustains on a
// workstation's DRAM (dual-channel DDR5 ~60 GB/s peak, a third of it reached by a vectorised
// update over arrays far larger than cache; an assumption, not a measurement) that is the time.
constexpr double kHostAdamBytesPerParam = 30;
constexpr double kHostOptimizerBytesPerS = 20e9;

// ---- cost model (costmodel/src/costmodel.cpp) ----
// Flash-attention backward recomputes the scores and computes dQ, dK, dV: about 2.5 forward passes
// of the attention FLOPs (FlashAttention-2 paper, Dao 2023, §3.1: backward ~2.5x forward).
constexpr double kAttentionBackwardPasses = 2.5;
// autograd launches a backward kernel or two per forward op: the starting value of the fitted
// Coefficients::backward_host_ratio (backward host time / forward host time of a block)
constexpr double kBackwardLaunchesPerForward = 2;
// weight streaming (RamTorch, block swap) double-buffers: the block running and the next one in
// flight, each as large as the largest streamed block, stay resident
constexpr double kStreamedBlockBuffers = 2;
// OneTrainer's static layer cache on the GPU: its cache tensors are sized with "no more than 10%
// overhead" over the loaded layers' bytes (LayerOffloadConductor.py StaticLayerAllocator.allocate_cache,
// Nerogar/OneTrainer@23df383); the upper end is counted.
constexpr double kLayerOffloadCacheOverhead = 0.10;
// ... and it holds at most 10 cache tensors, each adding at most one largest tensor of the loaded
// layers (the same StaticLayerAllocator.allocate_cache)
constexpr double kLayerOffloadCacheTensors = 10;
// A LoRA of rank r on a transformer layer's attention (4 Linears h -> h: r x 2h each) and MLP
// (h -> 4h and 4h -> h: r x 5h each) holds r x 18h parameters (trainers/onetrainer/onetrainer_reader.cpp:
// a trained text encoder)
constexpr double kLoraWidthsPerLayer = 18;

// ---- static analyzer (families/src/analyzer.cpp; its header comment derives the counts) ----
constexpr int kDefaultHeadDim = 64;  // head width when a family gives neither heads nor head_dim
// SDXL's timestep embedding width: every ResnetBlock2D projects it (time_emb_proj: 1280 -> c)
constexpr int kUnetTimeEmbeddingWidth = 1280;
// Forward kernel launches per sub-layer in eager PyTorch (counted in the analyzer's header comment):
constexpr double kAttentionLaunches = 24;       // norm, modulation, 4 projections, RoPE, SDPA, gate, residual
constexpr double kQkNormLaunches = 4;           // the q and k RMSNorms
constexpr double kCrossAttentionLaunches = 15;  // norm, 4 projections, SDPA, reshapes, residual
constexpr double kFfnLaunches = 8;              // norm, activation, gate, residual, + one per projection
constexpr double kConvBlockLaunches = 12;       // ResNet and conv-FFN (GLUMBConv) blocks
constexpr double kLoraLaunches = 5;             // per adapted Linear: dropout, A, B, scale, add (PEFT)
constexpr double kLycorisLaunches = 4;          // per adapted Linear: LyCORIS builds its delta weight
// LoKr factor-16 adapters hold about (in + out) x 4 parameters per Linear (an estimate; the trainer's
// LyCORIS presets default to factor 16)
constexpr double kLycorisParamsPerWidth = 4;
// outside the blocks: patch embedding, final norm/projection and the loss keep a few hidden-sized
// tensors per latent token; the embedding and the head are Linears of patch_features <-> hidden
// (a 2x2 patch of 16 latent channels: 64 features)
constexpr double kOutsideActivationTensors = 4;
constexpr double kPatchFeatures = 64;

// ---- bucketing (families/src/geometry.cpp; SimpleTuner image_manipulation/training_sample.py) ----
// area mode: the square crops that snap to usual sizes are data
// (trainers/simpletuner/simpletuner-bucketing.json)
// aspect_bucket_rounding: aspects are rounded to 2 decimals before bucketing
constexpr double kAspectRoundingScale = 100;

// The caching allocator's slack (reserved - allocated) as a share of the activation peak with
// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: 0.02-0.05 for fixed shapes or with expandable
// segments (the project's reference notes on consumer GPUs, section (a): torchtune #1185 peak 16.39 ->
// 10.83 GiB with it; compressed-tensors #587 2.4% reserved-but-unallocated); the upper end is taken.
// The default allocator's share is the calibration's fitted `fragmentation`.
constexpr double kExpandableSegmentsSlack = 0.05;

// ---- planner (planner/src/advisor.cpp) ----
// Long chains (Stable Cascade's 192 micro-blocks) cap a checkpoint call at 32 blocks so advise
// stays interactive (0.26 s -> a few ms there); no trainer schedule of such a family uses longer
// segments, so the optimum is still never worse than the trainer's best.
constexpr std::size_t kLongChainBlocks = 64;
constexpr int kLongChainMaxSegmentBlocks = 32;
constexpr int kParetoFrontPlans = 16;  // optimal plans on the printed Pareto front
// The optimal planner's grid bound (planner/src/optimal.cpp, build_grid): time cells x decisions
// per grid is held near kOptimalGridWork (Kandinsky 5 image's 52 blocks: ~720 cells; Stable
// Cascade's 192 micro-blocks capped at 32-block calls: ~160; a 4,096-block chain: the minimum),
// within [kOptimalGridMinCells, kOptimalGridMaxCells]. A finer grid (2^22 or 2^23 with up to 2,048
// or 4,096 cells) saves no instructions of a whole advise.
constexpr double kOptimalGridWork = 1 << 21;
constexpr int kOptimalGridMinCells = 32;
constexpr int kOptimalGridMaxCells = 1024;

}  // namespace segadvise
