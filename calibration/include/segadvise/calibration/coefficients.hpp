// The fitted coefficients advise, predict and check use: calibration/data/coefficients.json,
// compiled into the binary; `--calibration FILE` selects another file.
#pragma once

#include <string>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

const Coefficients& default_coefficients();
// "" -> the shipped default; otherwise the file (InputError naming it when unreadable).
Coefficients coefficients_for(const std::string& path);

}  // namespace segadvise
