#include "segadvise/calibration/ranges.hpp"

#include <nlohmann/json.hpp>

#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"

namespace segadvise {

const RangeModel& default_ranges() {
  static const RangeModel m = [] {
    for (std::size_t i = 0; i < kCalibrationDataCount; ++i)
      if (std::string(kCalibrationData[i].name) == "ranges.json")
        return range_model_from_json(parse_json_text(kCalibrationData[i].text, "calibration/data/ranges.json"),
                                     "calibration/data/ranges.json");
    RangeModel none;  // no bands shipped: every range is the point prediction
    none.source = "none shipped";
    return none;
  }();
  return m;
}

RangeModel ranges_for(const std::string& path) {
  if (path.empty()) return default_ranges();
  // the one checked loader: regular files only, size and nesting limits, errors naming the file
  return range_model_from_json(load_json_file(path, "--ranges"), path);
}

}  // namespace segadvise
