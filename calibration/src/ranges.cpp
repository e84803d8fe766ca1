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

const PublishedBand& published_band() {
  static const PublishedBand b = [] {
    PublishedBand out;
    out.source = "none shipped";
    for (std::size_t i = 0; i < kCalibrationDataCount; ++i) {
      if (std::string(kCalibrationData[i].name) != "published-band.json") continue;
      const std::string file = "calibration/data/published-band.json";
      const nlohmann::json j = parse_json_text(kCalibrationData[i].text, file);
      const FieldReader r{j, file, ""};
      out.lo_factor = r.num("lo_factor", 1, true, 0.05, 1);
      out.hi_factor = r.num("hi_factor", 1, true, 1, 20);
      out.figures = r.integer("figures", 0, true, 0, 1000000);
      out.source = r.str("source", file);
    }
    return out;
  }();
  return b;
}

RangeModel ranges_for(const std::string& path) {
  if (path.empty()) return default_ranges();
  // the one checked loader: regular files only, size and nesting limits, errors naming the file
  return range_model_from_json(load_json_file(path, "--ranges"), path);
}

}  // namespace segadvise
