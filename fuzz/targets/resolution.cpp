// --resolution strings (parse_resolution): byte 0 picks a shipped family, byte 1 the resolution
// type, the rest is the string. Accepted sizes are positive and give finite token counts.
#include <cstdint>
#include <string>

#include "../predict_check.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  static const char* kTypes[] = {"pixel", "pixel_area", "area"};
  const auto& fams = builtin_families();
  const Family& fam = fams[data[0] % fams.size()];
  const std::string type = kTypes[data[1] % 3];
  const std::string arg(reinterpret_cast<const char*>(data) + 2, size - 2);
  ResolvedSize r;
  try {
    r = parse_resolution(arg, type, fam, 1.0);
  } catch (const InputError&) {
    return 0;
  }
  fuzz::require(r.width > 0 && r.height > 0, "an accepted resolution is positive");
  const TokenGeometry g = token_geometry(fam, r.width, r.height, 1);
  fuzz::require(fuzz::finite_non_negative(g.image_tokens), "image tokens finite");
  return 0;
}
