// Loads a trainer's facts (trainers/<trainer>/<id>.json, compiled in with every trainer folder's data,
// kTrainerRuleData) and validates every field.
#include "segadvise/trainers/facts.hpp"

#include <algorithm>
#include <cmath>

#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"

namespace segadvise {

namespace {

using nlohmann::json;

std::vector<std::string> strings(const json& j, const char* key, const std::string& where) {
  std::vector<std::string> out;
  if (!j.contains(key)) return out;
  const json& v = j.at(key);
  if (v.is_string()) return {v.get<std::string>()};
  if (!v.is_array()) throw InputError(where + "." + key + ": expected a string or a list of strings");
  for (const auto& x : v) {
    if (!x.is_string()) throw InputError(where + "." + key + ": expected strings, got " + x.dump());
    out.push_back(x.get<std::string>());
  }
  return out;
}

std::string str(const json& j, const char* key, const std::string& where, bool required = false) {
  if (!j.contains(key)) {
    if (required) throw InputError(where + ": missing '" + key + "'");
    return "";
  }
  if (!j.at(key).is_string()) throw InputError(where + "." + key + ": expected a string, got " + j.at(key).dump());
  return j.at(key).get<std::string>();
}

template <typename T>
T num(const json& j, const char* key, T def, const std::string& where) {
  if (!j.contains(key) || j.at(key).is_null()) return def;
  if (!j.at(key).is_number() && !j.at(key).is_boolean())
    throw InputError(where + "." + key + ": expected a number, got " + j.at(key).dump());
  return j.at(key).get<T>();
}

TrainerFamily parse_family_entry(const json& e, const std::string& where) {
  TrainerFamily f;
  f.family = str(e, "family", where, true);
  find_family(f.family);  // an unknown family id is a data error
  f.scripts = strings(e, "scripts", where);
  for (const auto& s : strings(e, "script", where)) f.scripts.push_back(s);
  f.script_verified = num<bool>(e, "script_verified", true, where);
  f.tasks = strings(e, "task", where);
  f.arch = strings(e, "arch", where);
  f.model_types = strings(e, "model_types", where);
  f.name_contains = strings(e, "name_contains", where);
  f.part = str(e, "part", where);
  f.part_offloading = num<bool>(e, "part_offloading", true, where);
  f.layer_offloading = num<bool>(e, "layer_offloading", true, where);
  f.blocks_to_swap_max = num<int>(e, "blocks_to_swap_max", 0, where);
  f.blocks_to_swap_meaning = str(e, "blocks_to_swap_meaning", where);
  if (!f.blocks_to_swap_meaning.empty() && f.blocks_to_swap_meaning != "last_n" &&
      f.blocks_to_swap_meaning != "flux_double_single" && f.blocks_to_swap_meaning != "flux2_ratio")
    throw InputError(where + ".blocks_to_swap_meaning: '" + f.blocks_to_swap_meaning + "' is not last_n, flux_double_single or flux2_ratio");
  f.double_blocks = num<int>(e, "double_blocks", 0, where);
  f.single_blocks = num<int>(e, "single_blocks", 0, where);
  if (f.blocks_to_swap_meaning == "flux2_ratio" && (f.double_blocks <= 0 || f.single_blocks <= 0))
    throw InputError(where + ": blocks_to_swap_meaning flux2_ratio needs double_blocks and single_blocks");
  f.aspect_ratio_buckets = num<bool>(e, "aspect_ratio_buckets", false, where);
  f.quantized_base = num<bool>(e, "quantized_base", false, where);
  f.source = str(e, "source", where, true);
  return f;
}

TrainerFacts parse_trainer(const json& j, const std::string& origin) {
  TrainerFacts t;
  t.origin = origin;
  t.raw = j;
  t.id = str(j, "trainer", origin, true);
  t.name = str(j, "name", origin, true);
  t.commit = str(j, "commit", origin, true);
  t.config_format = str(j, "config_format", origin, true);
  t.notes = str(j, "notes", origin);
  if (!j.contains("keys") || !j.at("keys").is_array()) throw InputError(origin + ": 'keys' must be a list");
  for (std::size_t i = 0; i < j.at("keys").size(); ++i) {
    const json& k = j.at("keys")[i];
    const std::string where = origin + ": keys[" + std::to_string(i) + "]";
    t.keys.push_back({str(k, "name", where, true), str(k, "type", where, true), strings(k, "choices", where),
                      str(k, "source", where, true)});
  }
  if (!j.contains("families") || !j.at("families").is_array()) throw InputError(origin + ": 'families' must be a list");
  for (std::size_t i = 0; i < j.at("families").size(); ++i)
    t.families.push_back(parse_family_entry(j.at("families")[i], origin + ": families[" + std::to_string(i) + "]"));
  return t;
}

}  // namespace

const TrainerFamily* TrainerFacts::find(const Family& fam) const {
  for (const auto& f : families)
    if (f.family == fam.id) return &f;
  return nullptr;
}

const TrainerKey* TrainerFacts::key(const std::string& name) const {
  for (const auto& k : keys)
    if (k.name == name) return &k;
  return nullptr;
}

nlohmann::json trainer_data_file(const std::string& file, std::string* origin) {
  // each folder's files are named <folder>/FILE (cmake/EmbedData.cmake): FILE names one of them
  for (std::size_t i = 0; i < kTrainerRuleDataCount; ++i) {
    const std::string name = kTrainerRuleData[i].name;
    if (name.size() <= file.size() || name.compare(name.size() - file.size() - 1, std::string::npos, "/" + file) != 0) continue;
    const std::string path = "trainers/" + name;
    if (origin) *origin = path;
    return parse_json_text(kTrainerRuleData[i].text, path);
  }
  throw InputError("trainers/*/" + file + ": not compiled in");
}

TrainerFacts load_trainer_facts(const std::string& id) {
  std::string origin;
  const json j = trainer_data_file(id + ".json", &origin);
  TrainerFacts t = parse_trainer(j, origin);
  if (t.id != id) throw InputError(origin + ": 'trainer' is '" + t.id + "', not '" + id + "'");
  return t;
}

std::pair<int, int> musubi_flux2_split(int n, int nd, int ns) {
  if (n <= 0) return {0, 0};
  if (nd == 0) return {0, n};
  if (ns == 0) return {n, 0};
  const double ratio = static_cast<double>(ns) / nd;
  int d = static_cast<int>(std::lround(n / (1.0 + ratio / 2.0)));  // Python round: ties never occur at these counts
  int s = static_cast<int>(std::lround(d * ratio));
  if (nd * 2 < ns) {
    while (d >= 1 && d > nd - 2) --d, s += 2;
  } else {
    while (s >= 2 && s > ns - 2) s -= 2, ++d;
  }
  if (d == 0 && s == 0) (ns >= nd ? s : d) = 1;
  return {d, s};
}

int musubi_swapped_chain_blocks(const TrainerFamily& tf, int n) {
  if (n <= 0) return 0;
  if (tf.blocks_to_swap_meaning == "flux_double_single") return n / 2 + (n - n / 2) * 2 + 1;
  if (tf.blocks_to_swap_meaning == "flux2_ratio") {
    const auto [d, s] = musubi_flux2_split(n, tf.double_blocks, tf.single_blocks);
    return d + s;
  }
  return n;
}

std::vector<int> musubi_swapped_per_list(const TrainerFamily& tf, int n) {
  if (n <= 0) return {};
  if (tf.blocks_to_swap_meaning == "flux_double_single") return {n / 2, (n - n / 2) * 2 + 1};
  if (tf.blocks_to_swap_meaning == "flux2_ratio") {
    const std::pair<int, int> ds = musubi_flux2_split(n, tf.double_blocks, tf.single_blocks);
    return {ds.first, ds.second};
  }
  return {};
}

bool trainer_value_ok(const TrainerKey& key, const json& v, std::string& why) {
  const std::string& t = key.type;
  bool ok = true;
  if (t == "bool") ok = v.is_boolean();
  else if (t == "int") ok = v.is_number_integer();
  else if (t == "float") ok = v.is_number();
  else if (t == "fraction") ok = v.is_number() && v.get<double>() >= 0 && v.get<double>() <= 1;
  else if (t == "string" || t == "enum") ok = v.is_string();
  else if (t == "bool_or_string") ok = v.is_boolean() || v.is_string();  // diffusion-pipe's activation_checkpointing
  else if (t == "int_or_pair") ok = v.is_number_integer() || (v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer());
  else if (t == "int_list") ok = v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number_integer(); });
  else if (t == "int_or_int_list") ok = v.is_number_integer() || (v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_number_integer(); }));
  if (!ok) {
    why = key.name + ": " + v.dump() + " is not a " + t;
    return false;
  }
  if (!key.choices.empty() && v.is_string() &&
      std::find(key.choices.begin(), key.choices.end(), v.get<std::string>()) == key.choices.end()) {
    why = key.name + ": '" + v.get<std::string>() + "' is not one of the accepted values";
    return false;
  }
  return true;
}

}  // namespace segadvise
