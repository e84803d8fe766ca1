#include "segadvise/families/trainer_facts.hpp"

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"

namespace segadvise {

namespace {

using nlohmann::json;

json trainer_file(const std::string& name) {
  for (std::size_t i = 0; i < kTrainerDataCount; ++i)
    if (name == kTrainerData[i].name) return parse_json_text(kTrainerData[i].text, "families/data/trainer/" + name);
  throw InputError("families/data/trainer/" + name + ": not compiled in");
}

std::map<std::string, std::string> string_map(const FieldReader& r, const std::string& field) {
  std::map<std::string, std::string> out;
  const json* m = r.get(field, true);
  if (!m->is_object()) r.fail(field, "must be an object");
  const FieldReader sub = r.sub(field, true);
  for (auto it = m->begin(); it != m->end(); ++it) out[it.key()] = sub.str(it.key(), "", true);
  return out;
}

void read_area_snaps(SimpleTunerFacts& f) {
  const std::string origin = "families/data/trainer/simpletuner-bucketing.json";
  const json j = trainer_file("simpletuner-bucketing.json");
  const FieldReader r{j, origin, ""};
  r.str("source", "", true);
  f.area_snap_tolerance_mp = r.num("area_snap_tolerance_mp", 0, true, 0, 1);
  const json* snaps = r.get("area_snaps", true);
  if (!snaps->is_array() || snaps->empty()) r.fail("area_snaps", "must be a non-empty list");
  for (std::size_t i = 0; i < snaps->size(); ++i) {
    const FieldReader s{(*snaps)[i], origin, "area_snaps[" + std::to_string(i) + "]."};
    f.area_snaps.push_back({s.num("megapixels", 0, true, 0.01, 1e3), s.integer("edge_px", 0, true, 1, kMaxEdgePixels)});
  }
}

}  // namespace

const SimpleTunerFacts& simpletuner_facts() {
  static const SimpleTunerFacts facts = [] {
    const json j = trainer_file("simpletuner.json");
    const FieldReader r{j, "families/data/trainer/simpletuner.json", ""};
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
    read_area_snaps(f);
    return f;
  }();
  return facts;
}

}  // namespace segadvise
