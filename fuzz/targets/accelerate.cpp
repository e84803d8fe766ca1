// accelerate config YAML (--accelerate-config, a SimpleTuner config's accelerate_config): any text is
// a multi-GPU setup or an InputError, and an accepted one has a world of 1..kMaxWorld ranks.
#include <cstdint>
#include <string>
#include <vector>

#include "../fuzz_util.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/trainers/multi_gpu_config.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("accelerate.yaml", data, size);
  try {
    std::vector<std::string> warnings;
    const MultiGpuSetup m = read_accelerate_yaml(path, MultiGpuSetup{}, warnings);
    fuzz::require(m.gpus_per_node >= 1 && m.nodes >= 1, "GPUs per node and nodes at least 1");
    fuzz::require(static_cast<long long>(m.gpus_per_node) * m.nodes <= kMaxWorld, "world within kMaxWorld");
    fuzz::require(m.grad_accumulation >= 1, "gradient accumulation at least 1");
  } catch (const InputError&) {
  }
  return 0;
}
