// Multi-GPU output of advise: the strategy x context-parallel options, and the configs the best
// needs: SimpleTuner's keys, an accelerate config YAML and a DeepSpeed JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "segadvise/planner/advisor.hpp"

namespace segadvise::cli {

// num_processes, num_machines, fsdp_*, context_parallel_*, deepspeed_config (inline) for `m`.
nlohmann::ordered_json multi_gpu_simpletuner_keys(const MultiGpuSetup& m, const TrainingSetup& s);
// `accelerate launch --config_file` YAML (num_processes counts every machine's processes).
std::string accelerate_yaml(const MultiGpuSetup& m, const std::string& mixed_precision);
// The DeepSpeed JSON of a ZeRO strategy (null for ddp/fsdp2).
nlohmann::ordered_json deepspeed_config(const MultiGpuSetup& m, int batch);

// "fsdp2+cpu-offload, CP 2 allgather"
std::string option_name(const MultiGpuSetup& m);

class TextFormat;  // text_format.hpp

void print_multi_gpu_advice(std::ostream& out, const AdviceReport& r, const TextFormat& fmt);

}  // namespace segadvise::cli
