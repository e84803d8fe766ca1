// Profiles: block costs measured by `segadvise profile` (the LibTorch profiler, its own
// executable). Loading and applying them needs no LibTorch. Format: profiler/PROFILE_FORMAT.md.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise {

struct ProfiledKind {
  std::string list;  // block list name the measurement stands for
  std::string kind;
  double tokens = 0;  // total tokens (image + text, x batch) the block ran over
  double saved_attention_bytes = 0, saved_ffn_bytes = 0, saved_rest_bytes = 0;
  double boundary_bytes = 0;
  double transient_bytes = 0;
  // time fit t(tokens) = linear * tokens + quadratic * tokens^2 (seconds)
  double forward_linear_s = 0, forward_quadratic_s = 0;
  double backward_linear_s = 0, backward_quadratic_s = 0;
  double ffn_forward_linear_s = 0, ffn_forward_quadratic_s = 0;  // the FFN parts alone (optional)
  bool extrapolated = false;
  std::vector<double> measured_tokens;  // token counts actually run (several when extrapolated)
};

// Host<->device copy bandwidth measured with the CUDA runtime (0: not measured, e.g. on CPU).
struct PcieBandwidth {
  double h2d_pinned_bytes_per_s = 0, d2h_pinned_bytes_per_s = 0;
  double h2d_pageable_bytes_per_s = 0, d2h_pageable_bytes_per_s = 0;
  bool measured() const { return h2d_pinned_bytes_per_s > 0 && d2h_pinned_bytes_per_s > 0; }
};

struct Profile {
  std::string path;
  std::string family;     // Family::id
  std::string precision;  // base_model_precision key (precision_key)
  std::string device;     // "cpu" or the CUDA device name
  std::string gpu_id;     // catalog id of the device when it matched one; "cpu" on CPU; "" unmatched
  std::string dtype;
  std::string torch_version;
  double tokens_image = 0, tokens_text = 0;
  int batch = 1;
  std::string attention_backend;  // the attention kernel that ran
  std::string created_by;         // "segadvise-torch <version>"
  PcieBandwidth pcie;
  std::vector<std::string> notes;
  std::vector<ProfiledKind> kinds;
};

// The JSON document parse_profile reads (profiler/PROFILE_FORMAT.md).
nlohmann::json profile_to_json(const Profile& p);

Profile load_profile(const std::string& path);  // InputError naming file and field
Profile parse_profile(const nlohmann::json& j, const std::string& origin);

// Every profiled (list, kind) must be a block list of `fam` with that kind (InputError otherwise:
// a profile of another build of the family would silently fall back to static costs).
void check_profile_kinds(const Profile& p, const Family& fam);

// Replaces the static bytes of every block whose list the profile measured, scaled linearly to the
// setup's token count (flash-style attention saves O(tokens)); times are used only when the profile
// was taken on the GPU the prediction is for. Refuses another family or precision (InputError).
void apply_profile(const Profile& p, const Family& fam, const TrainingSetup& setup, BlockChain& chain,
                   const std::string& target_gpu_id = "");

// A profile taken on the target GPU with measured host<->device bandwidth: the GPU's PCIe figure
// becomes the measured pinned bandwidth (stored as measured / pcie_efficiency, so that the cost
// model's nominal x efficiency gives back what was measured). No change otherwise.
void apply_profile_bandwidth(const Profile& p, double pcie_efficiency, GpuSpec& gpu);

}  // namespace segadvise
