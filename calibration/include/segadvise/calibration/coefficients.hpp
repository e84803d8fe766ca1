// The fitted coefficients advise, predict and check use: calibration/data/coefficients.json,
// compiled into the binary; `--calibration FILE` selects another file.
#pragma once

#include <string>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

const Coefficients& default_coefficients();
// "" -> the shipped default; otherwise the file (InputError naming it when unreadable).
Coefficients coefficients_for(const std::string& path);
// The starting point of a fit: the built-in defaults (types.hpp) unless a file is named, so a
// calibration is reproducible and does not depend on the previous one.
Coefficients starting_coefficients(const std::string& path);

}  // namespace segadvise
