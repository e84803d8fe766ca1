// Coefficients files (--calibration FILE): any file is coefficients or an InputError; accepted
// coefficients give finite, non-negative predictions for a shipped family.
#include <cstdint>
#include <string>

#include "../predict_check.hpp"
#include "segadvise/calibration/coefficients.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Family& fam = find_family("flux");
  static const TrainingSetup setup = default_setup(fam);
  static const BlockChain chain = analyze(fam, setup);
  const std::string path = fuzz::write_scratch("coefficients.json", data, size);
  Coefficients coef;
  try {
    coef = coefficients_for(path);
  } catch (const InputError&) {
    return 0;
  }
  fuzz::check_setup(fam, setup, chain, coef);
  return 0;
}
