// The advisor's search policy as data (planner/data/search.json, compiled in): which setups the
// what-would-fit search tries when nothing fits, and how far long sequences enumerate intervals.
// Loaded once through the checked JSON reader; a bad value is an InputError naming file and field.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace segadvise {

struct WhatWouldFitPolicy {
  int batch_divisor = 2;                            // batch / d, / d^2, … down to 1
  std::vector<double> resolution_scales;            // edges x scale, in (0, 1), in order
  std::vector<std::pair<int, int>> frame_fractions; // frames x num / den (integer), num < den
  std::vector<std::string> quantized_precisions;    // base_model_precision values, in order
  double ramtorch_percent = 100;                    // ramtorch_transformer_percent when streaming
};

struct SearchPolicy {
  std::string source;
  WhatWouldFitPolicy what_would_fit;
  int long_sequence_blocks = 256;       // a checkpointed sequence longer than this …
  int long_sequence_max_interval = 32;  // … enumerates intervals and strides up to this
};

SearchPolicy parse_search_policy(const nlohmann::json& j, const std::string& origin);
const SearchPolicy& search_policy();  // planner/data/search.json

}  // namespace segadvise
