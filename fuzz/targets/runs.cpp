// Measured-run files (calibrate/accuracy --runs FILE, JSON or CSV): any file is a dataset or an
// InputError. Input starting with '{' or '[' is written as .json, anything else as .csv.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "../fuzz_util.hpp"
#include "segadvise/calibration/dataset.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::size_t i = 0;
  while (i < size && (data[i] == ' ' || data[i] == '\n' || data[i] == '\t' || data[i] == '\r')) ++i;
  const bool json = i < size && (data[i] == '{' || data[i] == '[');
  const std::string path = fuzz::write_scratch(json ? "runs.json" : "runs.csv", data, size);
  try {
    const Dataset d = load_dataset(path);
    for (const auto& r : d.runs) (void)to_json(r).dump();
  } catch (const InputError&) {
  }
  return 0;
}
