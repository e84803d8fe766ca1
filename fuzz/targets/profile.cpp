// Profiles (--profile FILE): any file is a profile or an InputError; an accepted profile applied to
// its (shipped) family at the example setup gives finite, non-negative predictions.
#include <cstdint>
#include <string>

#include "../predict_check.hpp"
#include "segadvise/families/profile.hpp"

using namespace segadvise;

namespace {
const Family* shipped(const std::string& id) {
  for (const auto& f : builtin_families())
    if (f.id == id) return &f;
  return nullptr;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("profile.json", data, size);
  try {
    const Profile p = load_profile(path);
    const Family* fam = shipped(p.family);
    if (!fam) return 0;
    TrainingSetup setup = default_setup(*fam);
    setup.base_precision = p.precision;
    BlockChain chain = analyze(*fam, setup);
    apply_profile(p, *fam, setup, chain, "h100");  // measured times count when the profile is from an H100
    fuzz::check_setup(*fam, setup, chain);
  } catch (const InputError&) {
  }
  return 0;
}
