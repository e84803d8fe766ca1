// SimpleTuner's multi-GPU keys (docs/sources/multi-gpu.md §1, §2) and an accelerate
// config YAML: num_processes, num_machines, fsdp_*, deepspeed_config (inline JSON or a file),
// context_parallel_*, gradient_accumulation_steps, accelerate_config.
#pragma once

#include <string>

#include "segadvise/trainers/simpletuner_reader.hpp"

namespace segadvise {

// GPUs per node (--gpus, num_processes) and nodes (--nodes, num_machines) each at most 65,536, and
// the world (their product) at most 2^20: past the largest training clusters built, and far inside
// the int of MultiGpuSetup::world() (65,536 x 65,536 would wrap to 0, a one-GPU prediction)
constexpr int kMaxGpusPerNode = 1 << 16;
constexpr int kMaxNodes = 1 << 16;
constexpr long long kMaxWorld = 1 << 20;

// Reads the keys of `r.raw` into r.setup.multi_gpu, with the reader's rejections and warnings
// (FSDP with DeepSpeed, FSDP v1 with context parallel, fsdp_activation_checkpointing turning the
// model's checkpointing off, fsdp_limit_all_gathers doing nothing under FSDP2, …): only what depends on
// keys the setup does not hold. What the setup alone decides (FSDP2 with Quanto, LoRA with DeepSpeed,
// context parallel) is multi_gpu_rules.hpp's, which the advisor applies to every prediction.
// `accelerate_yaml`: --accelerate-config ("" : the config's accelerate_config key, if any).
void read_multi_gpu_keys(TrainerRead& r, const std::string& accelerate_yaml, const std::string& cwd);

// The accelerate config YAML's distributed_type, num_processes (all machines), num_machines,
// fsdp_config and deepspeed_config on top of `base`. InputError naming the file and key.
MultiGpuSetup read_accelerate_yaml(const std::string& path, MultiGpuSetup base, std::vector<std::string>& warnings);

}  // namespace segadvise
