#include "segadvise/calibration/ranges.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "segadvise/costmodel/embedded.hpp"

namespace segadvise {

const RangeModel& default_ranges() {
  static const RangeModel m = [] {
    for (std::size_t i = 0; i < kCalibrationDataCount; ++i)
      if (std::string(kCalibrationData[i].name) == "ranges.json")
        return range_model_from_json(nlohmann::json::parse(kCalibrationData[i].text), "calibration/data/ranges.json");
    RangeModel none;  // no bands shipped: every range is the point prediction
    none.source = "none shipped";
    return none;
  }();
  return m;
}

RangeModel ranges_for(const std::string& path) {
  if (path.empty()) return default_ranges();
  std::ifstream in(path);
  if (!in) throw InputError("--ranges '" + path + "': cannot read the file");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": not JSON (" + e.what() + ")");
  }
  return range_model_from_json(j, path);
}

}  // namespace segadvise
