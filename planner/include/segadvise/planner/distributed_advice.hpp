// advise --gpus N: the trainer's multi-GPU setups (strategy x context-parallel degree) each advised
// over its checkpointing schedules; the best is the one training the most samples per second among
// those whose recommended schedule fits (context parallel trains fewer unique samples per step).
#pragma once

#include <string>
#include <vector>

#include "segadvise/planner/advisor.hpp"

namespace segadvise {

struct DistributedOption {
  MultiGpuSetup multi_gpu;       // as the trainer will run it (its rules applied)
  bool runs = true;              // the trainer accepts it
  std::string reason;            // why not, or what would fit
  Candidate candidate;           // the schedule advise recommends for it (when one fits)
  bool fits = false;
  double samples_per_s = 0;      // unique samples per optimizer step / step time
};

struct DistributedAdvice {
  std::vector<DistributedOption> options;
  int best = -1;  // index of the fastest option that fits, -1 when none
};

// Strategies: ddp, fsdp2 (+ CPU offload when nothing else fits), and for full fine-tunes zero1..3
// (+ offload_optimizer); context parallel 1, 2, 4, … dividing the GPUs of one node, where the family
// has a plan. The context's own multi_gpu gives the GPUs, nodes and links.
DistributedAdvice advise_distributed(const Context& ctx);

}  // namespace segadvise
