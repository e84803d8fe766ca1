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

// What a user's run adds to a peak's range beyond the model's (calibration/data/published-band.json,
// written by scripts/fit-published-band.py from published figures, docs/memory.md): which quantity the
// figure is (allocated .. nvidia-smi) is in the model's figures; what differs between a sweep run and a
// user's (trainer version, attention backend, allocator settings, the card, what the user measured and
// when) widens the allocated range's lower end by lo_factor and the nvidia-smi range's upper end by hi_factor.
struct PublishedBand {
  double lo_factor = 1, hi_factor = 1;
  int figures = 0;
  std::string source;
};
const PublishedBand& published_band();

}  // namespace segadvise
