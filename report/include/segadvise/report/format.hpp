// How figures read in every report: memory in GiB, seconds, byte counts.
#pragma once

#include <string>

namespace segadvise {

// "16.4 GiB" (bytes in, `decimals` after the point)
std::string gib_str(double bytes, int decimals = 1);
// "1.85 s" below ten seconds, "12.3 s" above
std::string secs_str(double s);
// A byte count in the largest unit it reaches of GiB, MiB, KiB, two decimals: "1.50 GiB", "512.00 KiB"
std::string bytes_str(double bytes);
// A measured size: "51.2 MiB" below 0.1 GiB, "1.50 GiB" above
std::string gib_or_mib_str(double bytes);
// "12.50 MiB"
std::string mib_str(double bytes);
// `x` with `decimals` after the point: "16.4"
std::string fixed_str(double x, int decimals);

}  // namespace segadvise
