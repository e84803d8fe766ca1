#include "segadvise/planner/measured_text.hpp"

#include <cmath>
#include <string>
#include <vector>

namespace segadvise {

namespace {

InputError bad(const std::string& text, const std::string& why) {
  return InputError("--measured '" + text + "': " + why);
}

// a positive finite number filling the whole field
double positive_number(const std::string& text, const std::string& field, const std::string& what) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(field, &used);
  } catch (const std::exception&) {
    throw bad(text, what + " '" + field + "' is not a number");
  }
  if (used != field.size()) throw bad(text, what + " '" + field + "' is not a number");
  if (!std::isfinite(v) || v <= 0) throw bad(text, what + " must be a positive finite number, not '" + field + "'");
  return v;
}

std::vector<std::string> split_colons(const std::string& s) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == ':') out.emplace_back();
    else out.back() += c;
  }
  return out;
}

}  // namespace

Measurement parse_measurement(const std::string& text) {
  const std::vector<std::string> f = split_colons(text);
  Measurement m;
  m.text = text;
  const bool oom = (f.size() == 2 || f.size() == 3) && (f[1] == "oom" || f[1] == "OOM");
  if (f.size() != 3 && !oom)
    throw bad(text, "expected SCHEDULE:SEC:GIB (sec/step and peak GiB, e.g. layer:1.85:16.2), SCHEDULE:oom or "
                    "SCHEDULE:oom:GIB (ran out of memory needing at least GIB)");
  if (f[0].empty()) throw bad(text, "no schedule before the first ':'");
  try {
    m.schedule = Schedule::parse(f[0]);
  } catch (const InputError& e) {
    throw bad(text, e.what());
  }
  if (oom) {
    m.oom = true;
    if (f.size() == 3) m.oom_need_bytes = positive_number(text, f[2], "needed GiB") * kGiB;
    return m;
  }
  m.step_time_s = positive_number(text, f[1], "sec/step");
  m.peak_vram_bytes = positive_number(text, f[2], "peak GiB") * kGiB;
  return m;
}

}  // namespace segadvise
