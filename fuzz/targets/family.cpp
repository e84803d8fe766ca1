// User family files (--model my-model.json): any document is a family or an InputError; an accepted
// family analyzes at its example setup to finite, non-negative predictions.
#include <cstdint>
#include <string>

#include "../predict_check.hpp"
#include "segadvise/io/json_input.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Family fam;
  try {
    // as find_family reads a user's file: the checked parse (nesting, key counts), then validation
    const auto j = parse_json_text(std::string(reinterpret_cast<const char*>(data), size), "fuzz-family.json");
    fam = parse_family(j, "fuzz-family.json");
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
