#include "segadvise/report/format.hpp"

#include <cstdio>

#include "segadvise/costmodel/types.hpp"

namespace segadvise {

std::string gib_str(double bytes, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f GiB", decimals, bytes / kGiB);
  return buf;
}

std::string fixed_str(double x, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

std::string secs_str(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f s" : "%.1f s", s);
  return buf;
}

std::string bytes_str(double bytes) {
  char buf[48];
  if (bytes >= kGiB) std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);
  else if (bytes >= kMiB) std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / kMiB);
  else std::snprintf(buf, sizeof buf, "%.2f KiB", bytes / 1024.0);
  return buf;
}

std::string gib_or_mib_str(double bytes) {
  char buf[32];
  if (bytes < 0.1 * kGiB) std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / kMiB);
  else std::snprintf(buf, sizeof buf, "%.2f GiB", bytes / kGiB);
  return buf;
}

std::string mib_str(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", bytes / kMiB);
  return buf;
}

}  // namespace segadvise
