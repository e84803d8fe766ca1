// The grammar of the CLI's `--measured`: `SCHEDULE:SEC:GIB` (sec/step, peak allocated GiB),
// `SCHEDULE:oom` or `SCHEDULE:oom:GIB` (ran out of memory needing at least GIB).
#pragma once

#include <string>

#include "segadvise/costmodel/anchor.hpp"

namespace segadvise {

// Throws InputError naming the text: malformed, unknown schedule, zero/negative/NaN/infinite numbers.
Measurement parse_measurement(const std::string& text);

}  // namespace segadvise
