// LibTorch plumbing shared by the profiler and the checkpoint executor:
// - device memory accounting: on CPU an allocator hook (c10::SetCPUAllocator) keeps exact live and
//   peak bytes; on CUDA the caching allocator's statistics;
// - saved-tensor hooks from C++: LibTorch 1.13 has no C++ API for them, but SavedVariable asks the
//   default autograd Engine for default hooks, and the default engine is replaceable
//   (set_default_engine_stub) — PyTorch's Python engine does exactly this. Our engine hands out the
//   hooks of the innermost HookSink in scope on this thread.
// - "host memory" on CPU: allocations made inside a HostScope are counted as host, not device, so
//   offloading to host can be validated on a CPU-only machine.
#pragma once

#include <torch/csrc/autograd/saved_variable_hooks.h>
#include <torch/torch.h>

#include <memory>

namespace segadvise::profiler {

struct Memory {
  static void reset_peak(const torch::Device& d);
  static double live_bytes(const torch::Device& d);  // device bytes allocated now
  static double peak_bytes(const torch::Device& d);  // since reset_peak
  static double host_live_bytes();                   // CPU HostScope allocations live now
  static void empty_cache(const torch::Device& d);
  static bool cpu_hooked();
};

// While alive, CPU allocations on this thread count as host memory.
class HostScope {
 public:
  HostScope();
  ~HostScope();

 private:
  bool prev_;
};

class HookSink {
 public:
  virtual ~HookSink() = default;
  virtual std::unique_ptr<torch::autograd::SavedVariableHooks> make_hooks() = 0;
};

// Installs `sink` (nullptr: no hooks) for the saved tensors created on this thread while alive.
class SinkScope {
 public:
  explicit SinkScope(HookSink* sink);
  ~SinkScope();

 private:
  HookSink* prev_;
};

// Copies a tensor to host memory (pinned when the source is on CUDA).
torch::Tensor to_host(const torch::Tensor& t);
torch::Tensor to_device(const torch::Tensor& host, const torch::Device& d);

// RNG state of the device (dropout masks must repeat in a checkpoint's recompute).
struct RngState {
  torch::Tensor cpu, cuda;
  static RngState capture(const torch::Device& d);
  void restore(const torch::Device& d) const;
};

void synchronize(const torch::Device& d);

}  // namespace segadvise::profiler
