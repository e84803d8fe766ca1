// `segadvise validate`: real training steps of a family's block stack, executed with a Plan exactly as
// the trainer's checkpointing would (profiler/src/executor.cpp), measured for peak memory and step
// time. No LibTorch in this header.
#pragma once

#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise::profiler {

struct ValidateOptions {
  std::string device = "cpu";
  int steps = 3;    // measured optimizer steps (median reported)
  int warmup = 1;   // steps run first and not measured
  int blocks = 0;   // first N blocks of the chain (0: all)
  double learning_rate = 1e-4;
  uint64_t seed = 1234;
  bool quiet = false;
};

struct ValidateRun {
  std::string plan_description;
  double peak_bytes = 0;         // device peak during a measured step, everything included
  double static_bytes = 0;       // live before the step: weights, adapters, grads, optimizer state, input
  double host_peak_bytes = 0;    // offloaded tensors in host memory (peak)
  double step_s = 0;             // median
  std::vector<double> step_times_s;
};

// Runs `plan` over the first opt.blocks blocks of the family at the setup's shape. `plan` indexes
// those blocks (realize() over the truncated chain). Throws InputError on OOM or an unsupported
// stack (skip tensors).
ValidateRun run_validation(const Family& fam, const TrainingSetup& setup, const Plan& plan, const ValidateOptions& opt);

// Gradients of one step under `plan` against the same step without checkpointing: the largest
// difference over the adapters' and the input's gradients, relative to the largest gradient.
struct GradientCheck {
  double max_abs_diff = 0;
  double max_abs_grad = 0;
  double relative() const { return max_abs_grad > 0 ? max_abs_diff / max_abs_grad : max_abs_diff; }
  int tensors = 0;
};
GradientCheck compare_gradients(const Family& fam, const TrainingSetup& setup, const Plan& plan,
                                const ValidateOptions& opt);

// Host memcpy bandwidth (CPU: what "offload to host" costs here), bytes per second.
double host_copy_bytes_per_s();

// What the cost model needs to predict a validation run on this machine's CPU:
// - the chain of the first n blocks, nothing outside them (the executor runs only blocks);
// - a "cpu" GpuSpec (host memory, memcpy bandwidth for offload; block times come from a profile);
// - coefficients for it: no reserve or fragmentation (the allocator hook counts exact bytes, there
//   is no caching allocator), no fixed overhead, and offload copies that no compute hides (a CPU
//   memcpy is synchronous).
BlockChain validation_chain(const Family& fam, const TrainingSetup& setup, int n_blocks);
GpuSpec cpu_gpu_spec();
void use_cpu_coefficients(Coefficients& coef);

}  // namespace segadvise::profiler
