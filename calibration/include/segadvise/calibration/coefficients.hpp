// The fitted coefficients advise, predict and check use: calibration/data/coefficients.json,
// compiled into the binary; `--calibration FILE` selects another file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

// The coefficients file's JSON (what calibrate writes, what --calibration reads).
nlohmann::json to_json(const Coefficients& c);
// Throws InputError naming the file and field.
Coefficients coefficients_from_json(const nlohmann::json& j, const std::string& origin);
Coefficients load_coefficients(const std::string& path);

const Coefficients& default_coefficients();
// "" -> the shipped default; otherwise the file (InputError naming it when unreadable).
Coefficients coefficients_for(const std::string& path);
// The starting point of a fit: the built-in defaults (types.hpp) unless a file is named, so a
// calibration is reproducible and does not depend on the previous one.
Coefficients starting_coefficients(const std::string& path);

}  // namespace segadvise
