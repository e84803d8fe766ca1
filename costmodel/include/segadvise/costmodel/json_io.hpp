// JSON at the cost model's edges: coefficients files, and the JSON shape of setups, schedules and
// predictions that every subcommand prints.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "segadvise/io/output_file.hpp"  // write_file_atomically
#include "segadvise/costmodel/types.hpp"

namespace segadvise {

nlohmann::json to_json(const TrainingSetup& s);
nlohmann::json to_json(const Schedule& s);
nlohmann::json to_json(const Prediction& p);
nlohmann::json to_json(const Coefficients& c);

// Throws InputError naming the file and field.
Coefficients coefficients_from_json(const nlohmann::json& j, const std::string& origin);
Coefficients load_coefficients(const std::string& path);

}  // namespace segadvise
