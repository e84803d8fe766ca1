// Data files compiled into the binary by cmake/embed_data.cmake (families/data, trainers/data, calibration/data),
// so segadvise needs no data path at run time.
#pragma once

#include <cstddef>

namespace segadvise {

struct EmbeddedFile {
  const char* name;  // file name inside its data folder
  const char* text;
};

// The generated tables (one per data folder).
extern const EmbeddedFile kEmbeddedData[];  // families/data
extern const std::size_t kEmbeddedDataCount;
extern const EmbeddedFile kTrainerRuleData[];  // trainers/*/*.json (each trainer's facts, named <folder>/FILE)
extern const std::size_t kTrainerRuleDataCount;
extern const EmbeddedFile kCalibrationData[];  // calibration/data
extern const std::size_t kCalibrationDataCount;
extern const EmbeddedFile kRunPhaseData[];  // trainers/common/phases (text encoders, VAEs, validation rules)
extern const std::size_t kRunPhaseDataCount;
extern const EmbeddedFile kPlannerData[];  // planner/data (planner/CMakeLists.txt)
extern const std::size_t kPlannerDataCount;

}  // namespace segadvise
