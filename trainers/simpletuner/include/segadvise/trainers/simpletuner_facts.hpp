// SimpleTuner's names for the models as data (trainers/simpletuner/simpletuner.json and
// simpletuner-bucketing.json, compiled in): default flavours, model_family aliases, frame rates,
// optimizer aliases and its area bucketing, and the family lookup and bucket sizes that use them.
// Each file names its source.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "segadvise/families/analyzer.hpp"
#include "segadvise/families/family.hpp"

namespace segadvise {

struct OptimizerAlias {
  std::string as;   // the optimizer of the cost model's table sized alike
  std::string why;  // the state it keeps, for the note
};

struct SimpleTunerFacts {
  std::map<std::string, std::string> default_flavours;  // model_family -> DEFAULT_MODEL_FLAVOUR (§3.1)
  std::map<std::string, std::string> family_aliases;    // model_family alias -> registered family (§3.1)
  std::map<std::string, int> default_framerates;        // model_family -> framerate when unset (§1.5)
  std::map<std::string, OptimizerAlias> optimizer_aliases;  // §2.5
  AreaSnaps area_snaps;                                     // §1.3 (simpletuner-bucketing.json)
  // "model_family:model_flavour" whose reference conditioning latents join the image tokens
  std::vector<std::string> reference_latents_in_sequence;
};

const SimpleTunerFacts& simpletuner_facts();

// The size SimpleTuner trains a sample at (families' bucket_size with its area snaps, §1.3).
ResolvedSize bucket_size(double resolution, const std::string& type, int alignment, double aspect, bool crop_square);

// The family of a SimpleTuner config's `model_family` + `model_flavour` ("" flavour: the default), where
// model_family may be one of the names SimpleTuner registers for another's class (family_aliases).
// InputError naming `origin`, the value and the nearest names.
const Family& find_family_by_trainer(const std::string& model_family, const std::string& model_flavour,
                                     const std::string& origin);

// --model: find_family, where a `model_family:model_flavour` name may use SimpleTuner's aliases.
const Family& find_model(const std::string& name);
// `name` with such an alias replaced by the model_family it stands for (else unchanged), once
// find_model has taken it: find_family(model_name(name)) is then find_model(name).
std::string model_name(const std::string& name);

}  // namespace segadvise
