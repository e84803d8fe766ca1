#include "segadvise/families/trainer_facts.hpp"

#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/costmodel/json_input.hpp"

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
    return f;
  }();
  return facts;
}

const EmitterFacts& emitter_facts() {
  static const EmitterFacts facts = [] {
    const json j = trainer_file("emitters.json");
    const std::string origin = "families/data/trainer/emitters.json";
    const FieldReader r{j, origin, ""};
    EmitterFacts f;
    const json* list = r.get("trainers", true);
    if (!list->is_array()) r.fail("trainers", "must be a list");
    for (std::size_t i = 0; i < list->size(); ++i) {
      const FieldReader t{(*list)[i], origin, "trainers[" + std::to_string(i) + "]."};
      EmitterTrainer e;
      e.id = t.str("id", "", true);
      e.name = t.str("name", "", true);
      e.format = t.str("format", "", true);
      t.one_of("format", e.format, {"flags", "yaml", "json"});
      for (const auto& fam : t.strings("families")) e.families.insert(fam);
      f.trainers.push_back(e);
    }
    f.denoiser_part = string_map(r, "denoiser_part");
    f.denoiser_part_default = r.str("denoiser_part_default", "", true);
    return f;
  }();
  return facts;
}

}  // namespace segadvise
