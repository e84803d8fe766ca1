// Measured training runs: the data the coefficients are fitted to and accuracy is measured on.
// Format (JSON or CSV, one row per run): docs/calibration.md. The shipped dataset is
// calibration/data/measured-runs.json, a copy of the SimpleTuner sweep (source named in the file).
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

struct MeasuredRun {
  std::string id;           // "<file>#<row>" (row counted from 1), or the row's own "id"
  std::string family_name;  // label of the family as the source names it ("Wan 2.1 T2V 1.3B")
  std::string example;      // trainer example whose config produced it
  std::string model;        // model_family[:model_flavour], e.g. "wan:t2v-480p-1.3b-2.1"
  std::string family_id;    // segadvise family id when known ("" : found from `model`)
  int text_tokens = -1;     // -1: the family's
  int regional_compile = -1;  // dynamo_use_regional_compilation: -1 unknown (off), 0/1
  std::string gpu;          // GPU catalog id or alias (h100, l40s, …)
  int width = 0, height = 0, frames = 0, batch = 0;  // 0: the family example's
  std::optional<LoraType> lora_type;  // unset: the example's
  int lora_rank = 0;        // 0: the example's
  std::string optimizer;    // "": the example's
  int ramtorch = -1;        // -1: the example's, 0/1
  std::string mixed_precision = "bf16";
  std::string precision = "bf16";  // bf16, int8-sdnq-hadamard, fp8-torchao, fp8wo-torchao, fp8-native,
                                   // bf16-upcast, or any base_model_precision
  std::string mode;         // schedule: none, layer, interval2, seg2-stride4, activation-offload, …
  std::string backend = "torch";  // gradient_checkpointing_backend
  std::string variant = "main";   // main | backend | no-compile | any label of a setup variation
  std::string status;       // ok | oom | failed | unsupported | not_run
  double sec_per_step = 0;  // ok rows
  double peak_gib = 0;      // ok rows
  double oom_at_gib = 0;    // oom rows, when the trainer reported it (0: unknown)
};

struct Dataset {
  std::string source;  // where the measurements come from
  std::string origin;  // file it was read from
  std::vector<MeasuredRun> runs;
};

// Reads a .json ({"source", "runs"|"cases": [...]}, or a bare list) or a .csv file (header row with
// the same field names). Throws InputError naming the file, row and field of anything wrong.
Dataset load_dataset(const std::string& path);
Dataset parse_dataset_json(const nlohmann::json& j, const std::string& origin);
Dataset parse_dataset_csv(const std::string& text, const std::string& origin);
// The shipped dataset (compiled in).
const Dataset& builtin_dataset();
// "" -> the shipped dataset; otherwise the file; several files are concatenated.
Dataset dataset_for(const std::vector<std::string>& paths);

nlohmann::json to_json(const MeasuredRun& r);

}  // namespace segadvise
