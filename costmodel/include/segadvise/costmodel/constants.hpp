// Limits and fixed figures, in one place, each with its reason. Input limits are also stated in
// README ("Reliability") and families/FORMAT.md.
#pragma once

#include <cstddef>

namespace segadvise {

// ---- input files (every JSON loader goes through load_json_file) ----
// The largest input file read: the biggest real input (the built-in measured runs) is ~200 KiB, a
// SimpleTuner config a few KiB; 64 MiB leaves room for generated files and bounds memory and time.
constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;
// Deepest nesting of arrays/objects. Real inputs nest at most 5 deep (a profile's fit objects);
// the limit keeps every recursive walk of a document (dump, destruction, our readers) shallow.
constexpr int kMaxJsonDepth = 64;
// Keys in one document. The largest real document (measured runs) has ~25,000 keys.
constexpr std::size_t kMaxJsonKeys = 100000;
// Keys in one object. Configs keep their key order (nlohmann::ordered_json), whose insertion looks
// keys up linearly: n keys cost n^2/2 comparisons, so one object is capped (10,000 -> 5e7, ~0.1 s).
constexpr std::size_t kMaxKeysPerObject = 10000;
// Characters of an offending value echoed in an error message (then "…").
constexpr std::size_t kMaxEchoChars = 64;

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

}  // namespace segadvise
