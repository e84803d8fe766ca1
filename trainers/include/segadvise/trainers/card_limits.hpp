// What a card cannot run, as the trainer of a setup handles it (trainers/common/card-capabilities.json,
// each response with the trainer's file and line): bf16 on a card without bf16 tensor cores (Turing,
// Volta), a flash attention kernel without the flash-attn 2 kernels (sm < 80), xformers' bf16 below
// sm80, an fp8 matmul without fp8 tensor cores (sm < 89). Applied once where the setup meets the card
// (the advisor's context), for every trainer.
#pragma once

#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

struct CardLimits {
  std::vector<std::string> warnings;    // the run goes on, changed (emulated bf16, another kernel)
  std::vector<std::string> rejections;  // the trainer (or the kernel it calls) stops
};

// Sets setup.matmul_rate_share (1 where nothing is emulated) and returns what the trainer says or does.
// Idempotent: the share is set, not multiplied. A card given only by --vram-gib ("custom") has no known
// capabilities: nothing is applied.
CardLimits apply_card_limits(TrainingSetup& setup, const GpuSpec& gpu);

// The setup runs fp8 matmuls: mixed_precision fp8, base_model_precision fp8-torchao (torchao float8,
// OneTrainer FLOAT_W8A8), TransformerEngine fp8, or a reader's fp8_matmul.
bool runs_fp8_matmul(const TrainingSetup& setup);

// A flash attention kernel (flash-attn, its hub kernels, SDPA's flash backend forced).
bool asks_flash_attention(const std::string& attention);

}  // namespace segadvise
