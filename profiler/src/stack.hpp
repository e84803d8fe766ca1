// Inside the profiler library: the block stack a validation runs (built by executor.cpp), shared
// by the single-process executor and the distributed runner (distributed.cpp).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/profiler/archetypes.hpp"
#include "segadvise/profiler/validate.hpp"

namespace segadvise::profiler {

struct Stack {
  std::vector<Block> blocks;
  std::vector<torch::Tensor> trainable;
  std::vector<bool> attention_offloadable;
  State input;  // leaves that require grad
  torch::Device device = torch::kCPU;
  BlockListSpec first;  // the list of the first block, its shape and build options (stack_input)
  BlockShape shape;
  BuildOptions build;
};

// The first n blocks of the family at the setup's shape, weights seeded from opt.seed.
Stack build_stack(const Family& fam, const TrainingSetup& setup, int n_blocks, const ValidateOptions& opt);
// A fresh input state for the stack (leaves that require grad) drawn from `seed`.
State stack_input(const Stack& st, uint64_t seed);
// One training step's forward and backward under `plan`; gradients accumulate into the adapters and
// the input.
void step(const Stack& st, const Plan& plan);

}  // namespace segadvise::profiler
