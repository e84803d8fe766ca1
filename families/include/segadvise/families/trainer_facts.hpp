// SimpleTuner's names for the models as data (families/data/trainer/*.json, compiled in): default
// flavours, model_family aliases, frame rates, optimizer aliases and its area bucketing, which the
// family lookup and the resolution rules use. What each trainer reads, rejects and offers is the
// trainers library's (segadvise/trainers/). Each file names its source.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

namespace segadvise {

struct OptimizerAlias {
  std::string as;   // the optimizer of the cost model's table sized alike
  std::string why;  // the state it keeps, for the note
};

// §1.3: in area mode a square crop within `tolerance` of `megapixels` is trained at edge_px².
struct AreaSnap {
  double megapixels = 0;
  int edge_px = 0;
};

struct SimpleTunerFacts {
  std::map<std::string, std::string> default_flavours;  // model_family -> DEFAULT_MODEL_FLAVOUR (§3.1)
  std::map<std::string, std::string> family_aliases;    // model_family alias -> registered family (§3.1)
  std::map<std::string, int> default_framerates;        // model_family -> framerate when unset (§1.5)
  std::map<std::string, OptimizerAlias> optimizer_aliases;  // §2.5
  std::vector<AreaSnap> area_snaps;                         // §1.3 (simpletuner-bucketing.json)
  double area_snap_tolerance_mp = 0;
};

const SimpleTunerFacts& simpletuner_facts();

}  // namespace segadvise
