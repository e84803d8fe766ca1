// SimpleTuner's multi-GPU rules (trainers/simpletuner/simpletuner-multi-gpu.json, from
// SimpleTuner bc8e6ab and accelerate, docs/sources/multi-gpu.md): what it rejects, what it silently changes, and its batch
// semantics. The cost model sizes a run (costmodel/multi_gpu.hpp); these decide whether and how
// the trainer runs it at all.
#pragma once

#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise {

struct MultiGpuRuling {
  TrainingSetup setup;                  // with the trainer's silent changes applied
  std::vector<std::string> rejections;  // the trainer stops before training (empty: it runs)
  std::vector<std::string> warnings;    // what it changes or ignores, and the batch it really trains
};

// Rejects: FSDP2 with quanto; LoRA with DeepSpeed; context parallel that does not divide the world,
// on a family without a plan, with an empty plan or one that refuses it. Changes: FSDP2 optimizer
// fallback, fp8-quanto LoRA -> int8-quanto, MiniMax-H3 Ulysses only, offload_param below stage 3
// ignored. Warns: ZeRO-3 disables validation, RamTorch/block swap beside FSDP2/ZeRO unverified.
// One GPU with no multi-GPU setting: the setup back unchanged, nothing said.
MultiGpuRuling multi_gpu_rules(const Family& fam, const TrainingSetup& setup);

// The family's context-parallel support: "plan", "empty", "refused: why", "none".
std::string context_parallel_support(const Family& fam);

// True when the family's context parallel runs all-to-all only (the trainer switches to it).
bool cp_alltoall_only(const Family& fam);

// "train_batch_size 1 per GPU x 4 data-parallel replicas x GA 1 = 4 unique samples per step" (§2)
std::string batch_semantics(const TrainingSetup& setup);

}  // namespace segadvise
