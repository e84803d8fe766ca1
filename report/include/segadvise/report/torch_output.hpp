// What segadvise-torch prints (profile, validate, validate --gpus N) as text and JSON. The profiler's
// own result types link LibTorch, so the executable copies what is printed into these plain values.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "segadvise/costmodel/distributed.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise::cli {

class TextFormat;  // text_format.hpp

// profile: each block kind measured, beside the static estimate of its saved activations.
struct ProfiledKind {
  std::string list, kind;
  double tokens = 0;
  double saved_bytes = 0, static_saved_bytes = 0;
  double forward_s = 0, backward_s = 0;
  bool extrapolated = false;
};
struct ProfileSummary {
  std::vector<ProfiledKind> kinds;
  std::string output;  // the profile file written
  std::string device, dtype, torch_version, attention_backend;
};
// The table (always the table layout), then where the profile went.
void print_profile_summary(std::ostream& out, const ProfileSummary& s);

// validate: each plan predicted, then run.
struct ValidatedPlan {
  std::string schedule, description, reason;
  bool supported = true;  // false: not run, `reason` says why
  Prediction predicted;
  double measured_peak_bytes = 0, measured_host_peak_bytes = 0;
  double measured_step_s = 0;  // median
  std::vector<double> measured_step_times_s;
};
struct ValidationView {
  const Family* family = nullptr;
  TrainingSetup setup;
  int blocks = 0;  // the first N blocks run
  std::string device, torch_version;
  std::string profile;  // where the prediction's block costs come from
  int steps = 0, warmup = 0;
  std::vector<ValidatedPlan> plans;
};
nlohmann::json validation_json(const ValidationView& v);
void print_validation(std::ostream& out, const ValidationView& v, const TextFormat& fmt);

// validate --gpus N: each strategy's predicted model state and payloads against its ranks' runs.
struct DistributedRun {
  Strategy strategy = Strategy::ddp;
  RankState predicted;
  CommVolume predicted_comm;
  // the busiest rank's peak and its payloads per collective (the last step)
  double measured_peak_bytes = 0;
  double allgather_bytes = 0, reduce_scatter_bytes = 0, allreduce_bytes = 0;
  bool comm_equal = false;  // every rank handed the predicted payload to each collective
  // rank 0, step 1, against one process
  bool gradients_bit_equal = false;
  double grad_max_abs_diff = 0, grad_max_abs = 0;
  double step_s = 0;  // the slowest rank's
  nlohmann::json ranks = nlohmann::json::array();  // every rank's result file, as written
};
struct DistributedView {
  const Family* family = nullptr;
  TrainingSetup setup;  // one rank's
  int gpus = 1, blocks = 0, steps = 0;
  std::string device, torch_version;
  std::vector<DistributedRun> runs;
};
nlohmann::json distributed_validation_json(const DistributedView& v);
void print_distributed_validation(std::ostream& out, const DistributedView& v, const TextFormat& fmt);

}  // namespace segadvise::cli
