// The JSON shape of setups, schedules and predictions that every command prints.
#pragma once

#include <nlohmann/json.hpp>

#include "segadvise/io/output_file.hpp"  // write_file_atomically
#include "segadvise/costmodel/types.hpp"

namespace segadvise {

nlohmann::json to_json(const TrainingSetup& s);
nlohmann::json to_json(const Schedule& s);
nlohmann::json to_json(const Prediction& p);

}  // namespace segadvise
