#include "segadvise/calibration/coefficients.hpp"

#include <nlohmann/json.hpp>

#include "segadvise/costmodel/embedded.hpp"

#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/json_io.hpp"

namespace segadvise {


const Coefficients& default_coefficients() {
  static const Coefficients c = [] {
    for (std::size_t i = 0; i < kCalibrationDataCount; ++i)
      if (std::string(kCalibrationData[i].name) == "coefficients.json")
        return coefficients_from_json(
            parse_json_text(kCalibrationData[i].text, "calibration/data/coefficients.json"),
            "calibration/data/coefficients.json");
    return Coefficients{};
  }();
  return c;
}

Coefficients coefficients_for(const std::string& path) {
  if (path.empty()) return default_coefficients();
  return load_coefficients(path);
}

Coefficients starting_coefficients(const std::string& path) {
  if (!path.empty()) return coefficients_for(path);
  Coefficients c;
  c.source = "built-in starting values";
  return c;
}

}  // namespace segadvise
