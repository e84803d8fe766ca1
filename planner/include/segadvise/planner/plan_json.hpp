// An explicit per-block plan as JSON, shared by the planner (which emits optimal plans) and
// `segadvise validate --plan plan.json` (which runs them). No LibTorch.
//
//   {"segments": [{"begin": 0, "end": 2, "mode": "checkpoint", "offload_to_host": false},
//                 {"begin": 2, "end": 3, "mode": "keep"}, ...],
//    "offload_attention": false, "description": "optional"}
//
// mode: keep | checkpoint | checkpoint_ffn. Segments index the block chain in execution order,
// [begin, end), and must cover it exactly once, in order.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

std::string to_string(BlockMode m);
BlockMode parse_block_mode(const std::string& s, const std::string& where);  // InputError

nlohmann::json plan_to_json(const Plan& p);
// n_blocks > 0: the segments must cover [0, n_blocks); InputError naming origin, field and value.
Plan plan_from_json(const nlohmann::json& j, const std::string& origin, int n_blocks = 0);
Plan load_plan(const std::string& path, int n_blocks = 0);

}  // namespace segadvise
