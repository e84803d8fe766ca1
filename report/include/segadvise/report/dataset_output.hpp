// check's dataset (planner/dataset_check.hpp) as the report shows it.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "segadvise/planner/dataset_check.hpp"

namespace segadvise::cli {

class TextFormat;  // text_format.hpp
// The buckets' table (check's table and markdown output), and which would not fit the next smaller card.
void print_buckets(std::ostream& out, const DatasetView& d, const std::string& gpu, const TextFormat& fmt);
// The buckets and the dataset read, as check's JSON keys "buckets" and "dataset".
void add_buckets_json(nlohmann::json& check, const DatasetView& d);

}  // namespace segadvise::cli
