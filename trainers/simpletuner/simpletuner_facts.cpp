#include "segadvise/trainers/simpletuner_facts.hpp"

#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

namespace {

using nlohmann::json;

std::map<std::string, std::string> string_map(const FieldReader& r, const std::string& field) {
  std::map<std::string, std::string> out;
  const json* m = r.get(field, true);
  if (!m->is_object()) r.fail(field, "must be an object");
  const FieldReader sub = r.sub(field, true);
  for (auto it = m->begin(); it != m->end(); ++it) out[it.key()] = sub.str(it.key(), "", true);
  return out;
}

void read_area_snaps(SimpleTunerFacts& f) {
  std::string origin;
  const json j = trainer_data_file("simpletuner-bucketing.json", &origin);
  const FieldReader r{j, origin, ""};
  r.str("source", "", true);
  f.area_snaps.tolerance_mp = r.num("area_snap_tolerance_mp", 0, true, 0, 1);
  const json* snaps = r.get("area_snaps", true);
  if (!snaps->is_array() || snaps->empty()) r.fail("area_snaps", "must be a non-empty list");
  for (std::size_t i = 0; i < snaps->size(); ++i) {
    const FieldReader s{(*snaps)[i], origin, "area_snaps[" + std::to_string(i) + "]."};
    f.area_snaps.snaps.push_back({s.num("megapixels", 0, true, 0.01, 1e3), s.integer("edge_px", 0, true, 1, kMaxEdgePixels)});
  }
}

}  // namespace

const SimpleTunerFacts& simpletuner_facts() {
  static const SimpleTunerFacts facts = [] {
    std::string origin;
    const json j = trainer_data_file("simpletuner.json", &origin);
    const FieldReader r{j, origin, ""};
    SimpleTunerFacts f;
    f.default_flavours = string_map(r, "default_flavours");
    f.family_aliases = string_map(r, "family_aliases");
    const FieldReader rates = r.sub("default_framerates", true);
    for (auto it = j["default_framerates"].begin(); it != j["default_framerates"].end(); ++it)
      f.default_framerates[it.key()] = rates.integer(it.key(), 0, true, 1, kMaxFramerate);
    const FieldReader opts = r.sub("optimizer_aliases", true);
    for (auto it = j["optimizer_aliases"].begin(); it != j["optimizer_aliases"].end(); ++it) {
      const FieldReader o = opts.sub(it.key(), true);
      f.optimizer_aliases[it.key()] = OptimizerAlias{o.str("as", "", true), o.str("why", "", true)};
    }
    const FieldReader refs = r.sub("reference_latents_in_sequence", true);
    refs.str("source", "", true);
    f.reference_latents_in_sequence = refs.strings("flavours");
    read_area_snaps(f);
    return f;
  }();
  return facts;
}

ResolvedSize bucket_size(double resolution, const std::string& type, int alignment, double aspect, bool crop_square) {
  return bucket_size(resolution, type, alignment, aspect, crop_square, simpletuner_facts().area_snaps);
}

const Family& find_family_by_trainer(const std::string& model_family, const std::string& model_flavour,
                                     const std::string& origin) {
  // the trainer registers a few alias names for the same class (SimpleTuner models/model_metadata.json)
  const auto& aliases = simpletuner_facts().family_aliases;
  const auto it = aliases.find(lower(model_family));
  return find_family_by_model_family(model_family, model_flavour, origin, it == aliases.end() ? "" : it->second);
}

namespace {

// The alias a `model_family:model_flavour` name starts with (nullptr: none); a path to a model's own
// JSON file is never one
const std::string* alias_of(const std::string& name, std::string& model_family, std::string& flavour) {
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") return nullptr;
  const std::string lowered = lower(name);
  const auto colon = lowered.find(':');
  if (colon == std::string::npos) return nullptr;
  model_family = lowered.substr(0, colon);
  flavour = lowered.substr(colon + 1);
  const auto& aliases = simpletuner_facts().family_aliases;
  const auto it = aliases.find(model_family);
  return it == aliases.end() ? nullptr : &it->second;
}

}  // namespace

const Family& find_model(const std::string& name) {
  std::string model_family, flavour;
  if (alias_of(name, model_family, flavour)) return find_family_by_trainer(model_family, flavour, "--model");
  return find_family(name);
}

std::string model_name(const std::string& name) {
  std::string model_family, flavour;
  const std::string* as = alias_of(name, model_family, flavour);
  return as ? *as + ":" + flavour : name;
}

}  // namespace segadvise
