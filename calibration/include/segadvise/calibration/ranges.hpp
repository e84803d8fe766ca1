// The 90% range bands advise, predict and check put around every prediction:
// calibration/data/ranges.json, written by `segadvise accuracy --leave-family-out --anchor layer
// --write-ranges calibration/data/ranges.json` and compiled into the binary; `--ranges FILE` selects
// another file. Regenerate it whenever the coefficients are refitted.
#pragma once

#include <string>

#include "segadvise/costmodel/anchor.hpp"

namespace segadvise {

const RangeModel& default_ranges();
// "" -> the shipped bands; otherwise the file (InputError naming it and the field)
RangeModel ranges_for(const std::string& path);

}  // namespace segadvise
