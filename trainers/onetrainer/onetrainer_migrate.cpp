// OneTrainer's migration chain as BaseConfig.from_dict runs it on a user config's raw dict (facts:
// trainers/onetrainer/onetrainer.json "migrations"): the migrations that change what is predicted,
// applied in order from the file's __version. Migrations 4 and 10 (checkpointing and offloading, per
// part) are read by read_onetrainer's part reader from the same top-level keys.
#include <algorithm>

#include "onetrainer/onetrainer_migrate.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise::readers {

namespace {

using nlohmann::ordered_json;

std::string str_of(const nlohmann::json& j) { return j.get<std::string>(); }

// __migration_0 (TrainConfig.py:612-630): a top-level optimizer value and the optimizer_* keys become
// the optimizer object; optimizer_defaults is keyed by the optimizer's value, which must be hashable
bool migration_0(ordered_json& d, std::string& failure) {
  ordered_json settings = ordered_json::object(), out = ordered_json::object();
  for (auto it = d.begin(); it != d.end(); ++it) {
    const std::string& k = it.key();
    if (k == "optimizer") settings["optimizer"] = it.value();
    else if (k.rfind("optimizer", 0) == 0) settings[k.rfind("optimizer_", 0) == 0 ? k.substr(10) : k] = it.value();  // removeprefix
    else out[k] = it.value();
  }
  if (settings.contains("optimizer")) {
    if (settings["optimizer"].is_object() || settings["optimizer"].is_array()) {
      failure = "__migration_0 keys optimizer_defaults by the top-level optimizer, here an object (TypeError: unhashable, TrainConfig.py:624-628)";
      return false;
    }
    out["optimizer"] = settings;
    out["optimizer_defaults"] = ordered_json::object();
    if (settings["optimizer"].is_string()) out["optimizer_defaults"][settings["optimizer"].get<std::string>()] = settings;
  }
  d = out;
  return true;
}

// __migration_1 (TrainConfig.py:632-720): the parts created empty, the old flat keys moved into them
bool migration_1(ordered_json& d, const nlohmann::json& m, std::string& failure) {
  ordered_json out = ordered_json::object();
  for (const auto& p : m.at("parts")) out[str_of(p)] = ordered_json::object();
  out["embeddings"] = ordered_json::array({ordered_json::object()});
  const nlohmann::json& keys = m.at("keys");
  for (auto it = d.begin(); it != d.end(); ++it) {
    if (!keys.contains(it.key())) {
      out[it.key()] = it.value();
      continue;
    }
    const std::string part = str_of(keys.at(it.key())[0]), field = str_of(keys.at(it.key())[1]);
    if (!out[part].is_object()) {
      failure = "__migration_1 moves " + it.key() + " into " + part + ", which the file sets to " + brief_text(out[part].dump()) +
                " (TypeError, TrainConfig.py:632-720)";
      return false;
    }
    out[part][field] = it.value();
  }
  d = out;
  return true;
}

// __migration_5 (TrainConfig.py:766-774): save_after / save_after_unit renamed save_every / save_every_unit
void migration_5(ordered_json& d) {
  for (const char* k : {"save_after", "save_after_unit"}) {
    if (!d.contains(k)) continue;
    const std::string to = std::string("save_every") + (std::string(k).size() > 10 ? "_unit" : "");
    d[to] = d[k];
    d.erase(k);
  }
}

// __migration_8 (TrainConfig.py:800-806): transformer = prior, except for Stable Cascade and Würstchen
bool migration_8(ordered_json& d, const nlohmann::json& m, std::string& failure, std::vector<std::string>& notes) {
  if (!d.contains("model_type")) {
    failure = "__migration_8 reads data['model_type'], which the file lacks (KeyError, TrainConfig.py:803)";
    return false;
  }
  const auto& keep = m.at("keep_prior");
  if (d["model_type"].is_string() && std::find(keep.begin(), keep.end(), d["model_type"].get<std::string>()) != keep.end()) return true;
  if (!d.contains("prior")) {
    failure = "__migration_8 copies data['prior'] to transformer, and the file has no prior (KeyError, TrainConfig.py:804)";
    return false;
  }
  if (d.contains("transformer") && d["transformer"] != d["prior"])
    notes.push_back("__migration_8 replaces the file's transformer with its prior (TrainConfig.py:800-806)");
  else
    notes.push_back("__migration_8 moves prior to transformer (TrainConfig.py:800-806)");
  d["transformer"] = d["prior"];
  return true;
}

// __migration_9 (TrainConfig.py:808-828): each part's weight_dtype NONE takes the top-level weight_dtype,
// which is then popped
bool migration_9(ordered_json& d, const nlohmann::json& m, std::string& failure, std::vector<std::string>& notes) {
  std::vector<std::string> filled;
  for (const auto& pj : m.at("parts")) {
    const std::string part = str_of(pj);
    if (!d.contains(part)) continue;
    ordered_json& p = d[part];
    if (!p.is_object() || !p.contains("weight_dtype")) {
      failure = "__migration_9 reads " + part + "['weight_dtype'] of every part the file has, and its " + part +
                " has none (KeyError, TrainConfig.py:811-812)";
      return false;
    }
    if (p["weight_dtype"] != "NONE") continue;
    if (!d.contains("weight_dtype")) {
      failure = "__migration_9 fills " + part + ".weight_dtype NONE from the top-level weight_dtype, which the file lacks (KeyError, TrainConfig.py:813)";
      return false;
    }
    p["weight_dtype"] = d["weight_dtype"];
    filled.push_back(part);
  }
  if (!d.contains("weight_dtype")) {
    failure = "__migration_9 pops the top-level weight_dtype, which the file lacks (KeyError, TrainConfig.py:826)";
    return false;
  }
  if (!filled.empty()) {
    std::string parts;
    for (const auto& p : filled) parts += (parts.empty() ? "" : ", ") + p;
    notes.push_back("__migration_9 gives the weight_dtype NONE of " + parts + " the top-level weight_dtype " + d["weight_dtype"].dump() +
                    " (TrainConfig.py:808-828)");
  }
  d.erase("weight_dtype");
  return true;
}

}  // namespace

bool onetrainer_built_in_preset(const std::string& path) {
  const std::string name = file_name(path);
  return !name.empty() && name[0] == '#' && name != "#.json";
}

OneTrainerMigration migrate_onetrainer(const ordered_json& raw, int version, const TrainerFacts& facts) {
  const nlohmann::json& m = facts.raw.at("migrations");
  const int current = facts.raw.value("config_version", 11);
  OneTrainerMigration out;
  out.data = raw;
  bool ok = true;
  // migrations 2-4, 6, 7 and 10 change nothing segadvise reads here (4 and 10: read_part, from the
  // top-level keys they consume)
  for (int v = std::max(0, version); ok && v < current; ++v) {
    if (v == 0) ok = migration_0(out.data, out.failure);
    else if (v == 1) ok = migration_1(out.data, m.at("migration_1"), out.failure);
    else if (v == 5) migration_5(out.data);
    else if (v == 8) ok = migration_8(out.data, m.at("migration_8"), out.failure, out.notes);
    else if (v == 9) ok = migration_9(out.data, m.at("migration_9"), out.failure, out.notes);
  }
  if (!ok) {
    out.data = raw;
    out.notes.clear();
  }
  return out;
}

}  // namespace segadvise::readers
