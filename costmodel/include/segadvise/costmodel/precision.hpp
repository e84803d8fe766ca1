// Base-model precisions and optimizers: bytes per parameter, and which kernels run.
// Source: SimpleTuner bc8e6ab helpers/training/__init__.py and training/quantisation/__init__.py
// (docs/sources/simpletuner.md §2.1, §2.2), copied into
// costmodel/src/precision.cpp with the derivation of every number.
#pragma once

#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

struct PrecisionInfo {
  std::string name;                 // base_model_precision value
  bool quantized = false;
  double bytes_per_param = 2;       // quantized linear weights, scales included
  std::string kernel;               // time-factor key: bf16, int8-sdnq, fp8-torchao, …
  std::string backend;              // quanto, torchao, sdnq, bnb, native, transformerengine
  // weight-only: each call upcasts the stored weight to the activation dtype and runs a plain matmul
  // on the copy, which autograd keeps for backward (BlockCost::upcast_weight_attention_bytes)
  bool upcast_weight = false;
};

// Accepts every base_model_precision the trainer lists plus "bf16" (= no_change) and
// "int8-sdnq-hadamard" (= int8-sdnq with sdnq_use_hadamard). Throws InputError naming the value.
PrecisionInfo precision_info(const std::string& name);
std::vector<std::string> precision_names();

// The key the fitted matmul time factors are stored under: the precision, with "-hadamard" when
// SDNQ's Hadamard rotation is on ("bf16" for an unquantized base).
std::string precision_key(const TrainingSetup& setup);

struct OptimizerInfo {
  std::string name;
  double state_bytes_per_param = 4;  // optimizer state per trainable parameter
  double update_bytes_per_param = 16;  // bytes read+written per parameter in one step
};
OptimizerInfo optimizer_info(const std::string& name);  // throws InputError with nearest names
std::vector<std::string> optimizer_names();

// bytes of a weight/activation element for the run's weight_dtype (§2.1)
double weight_dtype_bytes(const TrainingSetup& setup);
// Bytes per stored unquantized base weight: TrainingSetup::weight_storage_bytes when a trainer sets it,
// else weight_dtype_bytes (activations keep weight_dtype_bytes either way).
double stored_weight_bytes(const TrainingSetup& setup);

// Nearest names by edit distance, for "did you mean" messages.
std::vector<std::string> nearest_names(const std::string& wanted, const std::vector<std::string>& names,
                                       std::size_t max_count = 3);

}  // namespace segadvise
