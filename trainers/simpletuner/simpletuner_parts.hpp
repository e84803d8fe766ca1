// What the files of the SimpleTuner reader share among themselves: a config's keys as the trainer reads
// them, and the data-backend steps read_simpletuner_config takes. Not a public interface: only
// trainers/simpletuner/*.cpp include it.
#pragma once

#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "segadvise/families/family.hpp"
#include "segadvise/io/error.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/trainer_config.hpp"

namespace segadvise::simpletuner {

using nlohmann::ordered_json;

std::string type_name(const ordered_json& v);
std::string value_str(const ordered_json& v);
bool digit_string(const std::string& s);

// Keys with or without a leading `--` (§0). The last spelling in the file wins, as argparse keeps
// the last occurrence of an option.
class Fields {
 public:
  Fields(const ordered_json& obj, std::string origin) : origin_(std::move(origin)) {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      std::string k = it.key();
      const std::string norm = k.rfind("--", 0) == 0 ? k.substr(2) : k;
      if (map_.count(norm) && map_[norm].first != k)
        duplicates.push_back(norm);
      map_[norm] = {k, &it.value()};
    }
  }
  std::vector<std::string> duplicates;

  bool has(const std::string& k) const {
    auto it = map_.find(k);
    return it != map_.end() && !it->second.second->is_null();
  }
  const ordered_json* get(const std::string& k) const {
    auto it = map_.find(k);
    return (it == map_.end() || it->second.second->is_null()) ? nullptr : it->second.second;
  }
  std::string where(const std::string& k) const {
    auto it = map_.find(k);
    return origin_ + ": " + brief_text(it == map_.end() ? k : it->second.first);
  }
  [[noreturn]] void bad(const std::string& k, const std::string& expected) const {
    throw InputError(where(k) + ": expected " + expected + ", got " + type_name(*get(k)) + " " + value_str(*get(k)));
  }

  std::string str(const std::string& k, const std::string& def) const {
    const ordered_json* v = get(k);
    if (!v) return def;
    if (v->is_string()) return v->get<std::string>();
    bad(k, "a string");
  }
  bool boolean(const std::string& k, bool def) const {
    const ordered_json* v = get(k);
    if (!v) return def;
    if (const std::optional<bool> b = config_bool(*v)) return *b;
    bad(k, "true or false");
  }
  // finite numbers in [lo, hi]: JSON numbers and numeric strings ("NaN", "inf" are errors)
  double number(const std::string& k, double def, double lo = -std::numeric_limits<double>::max(),
                double hi = std::numeric_limits<double>::max()) const {
    const ordered_json* v = get(k);
    if (!v) return def;
    if (!v->is_number() && !v->is_string()) bad(k, "a number");
    return checked_number(*v, where(k), lo, hi, NumericText::Accept);
  }
  // integers in [lo, hi]: JSON ints, floats with an integral value, digit strings (argparse's int());
  // a value past the range is an error, never wrapped
  long long integer(const std::string& k, long long def, long long lo, long long hi) const {
    const ordered_json* v = get(k);
    if (!v) return def;
    if (!v->is_number() && !(v->is_string() && digit_string(v->get<std::string>()))) bad(k, "an integer");
    return checked_integer(*v, where(k), lo, hi, NumericText::Accept);
  }

 private:
  std::string origin_;
  std::map<std::string, std::pair<std::string, const ordered_json*>> map_;
};

// the model_family as written, else (--model named it) the family's own
inline std::string model_family_name(const Fields& cfg, const Family& fam) {
  return cfg.has("model_family") ? cfg.str("model_family", "") : fam.trainer_family;
}

// `v` with {model_family} and {output_dir} filled in where they are known.
std::string fill_placeholders(std::string v, const std::string& model_family, const std::string& output_dir);

// The formats a SimpleTuner config is written in (simpletuner_formats.cpp): by its file name (config.env,
// *.env; *.json, *.json.txt, a .txt holding a JSON object; *.toml); None: not one of them.
enum class ConfigFormat { None, Json, Env, Toml };
ConfigFormat config_format(const std::string& path);

// A config file read into the keys the trainer's argument parser receives (without `--`), with what
// reading it said: keys the format's loader ignores, a legacy config.env's family and rejections.
struct ConfigFile {
  ordered_json keys = ordered_json::object();
  int indent = 4;
  ConfigFormat format = ConfigFormat::Json;
  std::vector<std::string> warnings;
  std::vector<std::string> rejections;  // the trainer stops (a legacy train.sh's required variable unset)
  std::string default_family;           // the legacy train.sh's family when the file names none
};
// InputError naming the file, the line and the value for bad input.
ConfigFile load_config_file(const std::string& path);

// data backends (§1): the file, and every backend that trains
void read_backends(const Fields& cfg, const std::string& path, const Family& fam, const TrainerReadOptions& opt, TrainerRead& r);
// the trained shape: the largest per-step activation load (pixels x frames x batch) over the backends
void apply_largest_backend(const Family& fam, TrainerRead& r);

}  // namespace segadvise::simpletuner
