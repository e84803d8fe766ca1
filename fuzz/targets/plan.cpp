// Per-block plans (validate --plan FILE, advise --plan-out's JSON): any file is a plan or an
// InputError; an accepted plan's segments lie inside the chain, in order, without overlap.
#include <cstdint>
#include <string>

#include "../fuzz_util.hpp"
#include "segadvise/planner/plan_json.hpp"
#include "segadvise/costmodel/types.hpp"

using namespace segadvise;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_scratch("plan.json", data, size);
  constexpr int kBlocks = 57;  // FLUX.1's 19 + 38 blocks
  try {
    const Plan p = load_plan(path, kBlocks);
    int at = 0;
    for (const Segment& s : p.segments) {
      fuzz::require(s.begin >= at && s.begin < s.end && s.end <= kBlocks, "segments in order inside the chain");
      at = s.end;
    }
  } catch (const InputError&) {
  }
  return 0;
}
