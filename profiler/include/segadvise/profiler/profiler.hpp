// `segadvise profile`: measures each block kind of a family with LibTorch on this machine's device.
// This header needs no LibTorch (the CLI layer and the tests include it); the work is in
// profiler/src/measure.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/families/profile.hpp"

namespace segadvise::profiler {

struct ProfileOptions {
  std::string device = "cpu";  // cpu | cuda
  int max_tokens = 0;          // --tokens: most tokens one pass may run (0: the target shape, or what fits)
  int warmup = 1;
  int repeats = 3;
  bool quiet = false;  // no progress on stderr
};

// One block list measured at one shape.
struct ListMeasurement {
  std::string list, kind;
  double tokens = 0;  // list_tokens x batch (U-Net levels unscaled), the count apply_profile uses
  double saved_attention_bytes = 0, saved_ffn_bytes = 0, saved_rest_bytes = 0;
  double boundary_bytes = 0;
  double transient_bytes = 0;
  double forward_s = 0, backward_s = 0;  // medians
  double ffn_forward_s = 0;              // the FFN parts of the forward alone (median)
  // cross-check on CPU: bytes the allocator hook saw retained after forward (new allocations,
  // minus the output), against the saved-tensor hooks' count of the same (-1 on CUDA)
  double allocator_retained_bytes = -1, hooks_retained_bytes = 0;
  double frozen_params = 0, trainable_params = 0;
  double saved_bytes() const { return saved_attention_bytes + saved_ffn_bytes + saved_rest_bytes; }
};

// Measures one list at the setup's shape (scale < 1: the stream's grid shrunk to that share of the
// tokens). Throws InputError on out-of-memory, naming the list, kind and shape.
ListMeasurement measure_list(const Family& fam, const BlockListSpec& spec, const TrainingSetup& setup,
                             const ProfileOptions& opt, double scale = 1.0);

// The whole profile: every distinct block list, extrapolated from smaller shapes when the target
// is larger than --tokens (or than the device holds).
Profile run_profile(const Family& fam, const TrainingSetup& setup, const ProfileOptions& opt);

// Host<->device bandwidth, pinned and pageable, both directions (zeros on CPU).
PcieBandwidth measure_pcie_on(const std::string& device);

// Device description for the profile ("cpu: Intel(R) Xeon(R) …" or the CUDA device name).
std::string device_name(const std::string& device);
std::string torch_version();
bool cuda_available();

// Installs the LibTorch hooks (the CPU allocator hook, the engine that carries saved-tensor hooks).
// Idempotent; every entry point calls it.
void install_hooks();

}  // namespace segadvise::profiler
