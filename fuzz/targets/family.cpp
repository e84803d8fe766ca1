// User family files (--model my-model.json): any document is a family or an InputError; an accepted
// family analyzes at its example setup to finite, non-negative predictions.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "../predict_check.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Family fam;
  try {
    const auto j = nlohmann::json::parse(data, data + size);
    fam = parse_family(j, "fuzz-family.json");
  } catch (const nlohmann::json::parse_error&) {
    return 0;
  } catch (const InputError&) {
    return 0;
  }
  TrainingSetup setup;
  BlockChain chain;
  try {
    setup = default_setup(fam);
    chain = analyze(fam, setup);
  } catch (const InputError&) {
    return 0;
  }
  fuzz::check_setup(fam, setup, chain);
  return 0;
}
