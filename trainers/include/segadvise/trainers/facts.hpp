// What the other trainers (musubi-tuner, ai-toolkit, OneTrainer, diffusers example scripts) can do
// about memory, per family, as data: trainers/<trainer>/<id>.json, each fact with the trainer's
// file and line at the commit docs/sources/trainers.md names. Emitters and config readers consult these
// tables; no trainer fact lives in code.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "segadvise/families/family.hpp"

namespace segadvise {

// One key the trainer reads, with the type of value it accepts.
struct TrainerKey {
  std::string name;  // dotted path for nested formats ("train.dtype", "<part>.offload_fraction")
  std::string type;  // bool | int | float | fraction | string | enum | bool_or_string | int_or_pair | int_list | int_or_int_list
  std::vector<std::string> choices;  // allowed strings (empty: any)
  std::string source;
};

// What the trainer does for one family.
struct TrainerFamily {
  std::string family;  // segadvise family id
  std::vector<std::string> scripts;  // musubi/diffusers training scripts
  bool script_verified = true;
  std::vector<std::string> tasks;         // musubi --task values
  std::vector<std::string> arch;          // ai-toolkit model.arch values
  std::vector<std::string> model_types;   // OneTrainer model_type values
  std::vector<std::string> name_contains;  // model name must contain one of these (lowercase)
  std::string part;                       // OneTrainer denoiser part: unet | prior | transformer
  bool part_offloading = true;            // OneTrainer: the part has layer/activation offloading
  bool layer_offloading = true;           // ai-toolkit: the model class attaches MemoryManager
  int blocks_to_swap_max = 0;             // musubi: asserted maximum (0: block swap not offered)
  std::string blocks_to_swap_meaning;     // musubi: last_n | flux_double_single | flux2_ratio
  int double_blocks = 0, single_blocks = 0;  // musubi flux2_ratio: the model's double and single block counts
  bool aspect_ratio_buckets = false;      // diffusers: the script takes --aspect_ratio_buckets
  bool quantized_base = false;            // diffusers: the script takes a bnb config
  std::string source;
};

struct TrainerFacts {
  std::string id, name, commit, config_format, notes, origin;
  std::vector<TrainerKey> keys;
  std::vector<TrainerFamily> families;
  nlohmann::json raw;  // trainer-specific tables (qtypes, weight_dtypes, dataset_keys, …)

  // The entry for a family (by id), nullptr when the trainer does not train it.
  const TrainerFamily* find(const Family& fam) const;
  const TrainerKey* key(const std::string& name) const;
};

// FILE of a trainer's folder (trainers/<trainer>/FILE, compiled in), parsed; InputError naming it when
// it is not compiled in. `origin` (when given) receives its path for messages.
nlohmann::json trainer_data_file(const std::string& file, std::string* origin = nullptr);
// A trainer's facts file (trainers/<trainer>/<id>.json) parsed and every field validated.
TrainerFacts load_trainer_facts(const std::string& id);

// The facts of the registered trainer `id` (registry.cpp; its component's facts()). Throws InputError
// naming the value and the trainers whose facts are data.
const TrainerFacts& trainer_facts(const std::string& id);

// musubi: how many chain blocks a --blocks_to_swap N swaps (FLUX.1: N//2 double blocks and
// (N - N//2)*2 + 1 single blocks, flux/flux_models.py:956-961; FLUX.2: musubi_flux2_split; otherwise the last N).
int musubi_swapped_chain_blocks(const TrainerFamily& tf, int n);
// Where those blocks are (TrainingSetup::blocks_to_swap_per_list): {double, single} for the split
// rules above, empty for the last N.
std::vector<int> musubi_swapped_per_list(const TrainerFamily& tf, int n);
// FLUX.2's split of --blocks_to_swap N over its double and single blocks (flux_2/flux2_models.py
// enable_block_swap): {double, single}; the model asserts double <= doubles - 2 and single <= singles - 2.
std::pair<int, int> musubi_flux2_split(int n, int doubles, int singles);

// Whether `value` is a valid value for `key` (type and choices); `why` says what is wrong.
bool trainer_value_ok(const TrainerKey& key, const nlohmann::json& value, std::string& why);

}  // namespace segadvise
