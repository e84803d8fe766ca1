// OneTrainer config or preset JSON, laid over TrainConfig.default_values() the way BaseConfig.from_dict
// does (facts: trainers/data/onetrainer.json): per-part checkpointing and offloading since
// 2026-07-05, the migrations a file without __version goes through, FLOAT_32 part defaults.
#include <algorithm>
#include <limits>
#include <sstream>

#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise::readers {

namespace {

using nlohmann::ordered_json;

struct Obj {
  const ordered_json& j;
  std::string path, prefix;
  std::string where(const std::string& k) const { return path + ": " + prefix + k; }
  const ordered_json* find(const std::string& k) const {
    auto it = j.find(k);
    return (it == j.end() || it->is_null()) ? nullptr : &*it;
  }
  [[noreturn]] void bad(const std::string& k, const char* expected) const {
    throw InputError(where(k) + ": " + find(k)->dump() + " is not " + expected);
  }
  bool boolean(const std::string& k, bool def) const {
    const auto* v = find(k);
    if (!v) return def;
    if (!v->is_boolean()) bad(k, "true or false");
    return v->get<bool>();
  }
  double number(const std::string& k, double def) const {
    const auto* v = find(k);
    if (!v) return def;
    if (!v->is_number()) bad(k, "a number");
    return v->get<double>();
  }
  int integer(const std::string& k, int def) const {
    const auto* v = find(k);
    if (!v) return def;
    if (!v->is_number_integer()) bad(k, "an integer");
    return v->get<int>();
  }
  std::string str(const std::string& k, const std::string& def) const {
    const auto* v = find(k);
    if (!v) return def;
    if (!v->is_string()) bad(k, "a string");
    return v->get<std::string>();
  }
};

const Family* family_for_model_type(const TrainerFacts& facts, const std::string& mt, const std::string& name,
                                    std::string& why_not) {
  for (const auto& tf : facts.families) {
    if (std::find(tf.model_types.begin(), tf.model_types.end(), mt) == tf.model_types.end()) continue;
    bool ok = tf.name_contains.empty();
    for (const auto& s : tf.name_contains) ok |= lower(name).find(s) != std::string::npos;
    if (ok) return &find_family(tf.family);
    why_not = "model_type " + mt + " '" + name + "' is not a variant segadvise models";
    return nullptr;
  }
  for (const auto& n : facts.raw.at("not_modelled"))
    if (n.at("model_type") == mt) why_not = "model_type " + mt + ": " + n.at("why").get<std::string>();
  if (why_not.empty()) why_not = "model_type '" + mt + "' is not a OneTrainer model type segadvise knows";
  return nullptr;
}

// "512", "1024x768", "512,768,1024": the largest area (W, H)
std::pair<int, int> parse_resolution_string(const std::string& v, const std::string& where) {
  std::pair<int, int> best{0, 0};
  std::stringstream ss(v);
  std::string part;
  while (std::getline(ss, part, ',')) {
    part.erase(std::remove(part.begin(), part.end(), ' '), part.end());
    const auto x = lower(part).find('x');
    // non-positive sizes get the message below; past 65,536 px is out of range, never wrapped
    const int w = to_int(part.substr(0, x), where, std::numeric_limits<int>::min(), kMaxEdgePixels);
    const int h = x == std::string::npos ? w : to_int(part.substr(x + 1), where, std::numeric_limits<int>::min(), kMaxEdgePixels);
    if (w <= 0 || h <= 0) throw InputError(where + ": '" + v + "' has a size that is not positive");
    if (static_cast<long>(w) * h > static_cast<long>(best.first) * best.second) best = {w, h};
  }
  if (best.first == 0) throw InputError(where + ": '" + v + "' names no size");
  return best;
}

std::string precision_for_dtype(const TrainerFacts& facts, const std::string& dtype, const std::string& where) {
  for (const auto& d : facts.raw.at("weight_dtypes"))
    if (d.at("dtype") == dtype) return d.at("precision").get<std::string>();
  throw InputError(where + ": weight_dtype '" + dtype + "' has no segadvise precision (GGUF and NONE are not modelled)");
}

void read_part(const TrainerFacts& facts, const Obj& top, const TrainerFamily& tf, int version, TrainerRead& r) {
  static const ordered_json empty = ordered_json::object();
  const ordered_json* pj = top.find(tf.part);
  if (pj && !pj->is_object()) top.bad(tf.part, "an object");
  const Obj part{pj ? *pj : empty, top.path, tf.part + "."};
  TrainingSetup& s = r.setup;
  // weight_dtype: FLOAT_32 by default (TrainConfig.py:305)
  const std::string dtype = part.str("weight_dtype", "FLOAT_32");
  const std::string prec = precision_for_dtype(facts, dtype, part.where("weight_dtype"));
  if (prec == "fp32") {
    s.mixed_precision = "no";
    r.warnings.push_back(tf.part + ".weight_dtype " + dtype + (part.find("weight_dtype") ? "" : " (OneTrainer's default when unset, TrainConfig.py:305)") +
                         ": base weights 4 bytes each; predicted with fp32 activations too (an upper bound)");
  } else {
    s.base_precision = prec;
  }
  bool gc = part.boolean("gradient_checkpointing", true);
  double frac = part.number("offload_fraction", 0.0);
  bool act = part.boolean("activation_offloading", false);
  if (frac < 0 || frac > 1) throw InputError(part.where("offload_fraction") + ": " + std::to_string(frac) + " is not within 0..1");
  if (version < facts.raw.value("config_version", 11)) {
    // The migrations from `version` on (an absent __version is 0, every migration). __migration_4
    // (TrainConfig.py:752-762) pops the top-level gradient_checkpointing (default true): "ON" for anything
    // truthy (a non-empty string, even "OFF"), "OFF" for false. __migration_10 (:830-842) then overwrites
    // every part from the old top-level keys: checkpointing = (mode != "OFF"), activation offloading =
    // (mode == CPU_OFFLOADED and enable_activation_offloading, default true), offload fraction =
    // layer_offload_fraction (default 0) only with CPU_OFFLOADED.
    const ordered_json* old = top.find("gradient_checkpointing");
    std::string mode = old && old->is_string() ? old->get<std::string>() : "ON";
    if (version < 5) {
      const bool truthy = !old || (old->is_boolean() ? old->get<bool>() : old->is_string() ? !old->get<std::string>().empty() : true);
      if (old && old->is_string() && old->get<std::string>() != "ON")
        r.warnings.push_back("__version " + std::to_string(version) + ": __migration_4 turns gradient_checkpointing " + old->dump() +
                             " into on (TrainConfig.py:752-762); write \"__version\": 11 and " + tf.part + ".gradient_checkpointing");
      mode = truthy ? "ON" : "OFF";
    }
    const bool old_act = top.boolean("enable_activation_offloading", true);
    const double old_frac = top.number("layer_offload_fraction", 0.0);
    const bool new_gc = mode != "OFF", new_act = mode == "CPU_OFFLOADED" && old_act;
    const double new_frac = mode == "CPU_OFFLOADED" ? old_frac : 0.0;
    if ((frac > 0 && new_frac != frac) || (act && !new_act))
      r.warnings.push_back("__version " + (top.find("__version") ? std::to_string(version) : std::string("absent")) +
                           ": OneTrainer's __migration_10 overwrites " + tf.part + ".offload_fraction and activation_offloading from the old "
                           "top-level keys (TrainConfig.py:830-842): offload_fraction " + std::to_string(new_frac).substr(0, 4) +
                           ", activation_offloading " + (new_act ? "true" : "false") + "; write \"__version\": 11");
    if (part.find("gradient_checkpointing") && gc != new_gc)
      r.warnings.push_back("__migration_10 overwrites " + tf.part + ".gradient_checkpointing with the old top-level value");
    gc = new_gc;
    act = new_act;
    frac = new_frac;
  } else {
    for (const auto& k : facts.raw.at("removed_keys"))
      if (top.find(k.at("name").get<std::string>()))
        r.warnings.push_back(k.at("name").get<std::string>() + " no longer exists (" + k.at("source").get<std::string>() +
                             "): OneTrainer drops it silently; set it per part (" + tf.part + ".gradient_checkpointing, .offload_fraction, .activation_offloading)");
  }
  if (!tf.part_offloading && (frac > 0 || act)) {
    r.warnings.push_back(tf.part + " has no layer or activation offloading in OneTrainer (" + tf.source + "): offload_fraction and activation_offloading are ignored");
    frac = 0;
    act = false;
  }
  r.schedule = Schedule{};
  r.schedule.checkpointing = gc;
  if (act && gc) r.schedule.backend = Backend::Unsloth;
  if (act && !gc) r.warnings.push_back(tf.part + ".activation_offloading without gradient_checkpointing: predicted as no checkpointing, activations on the GPU");
  if (frac > 0) {
    s.ramtorch = true;
    s.ramtorch_percent = frac * 100;
  }
  if (frac > 0 && s.model_type == ModelType::Full) {
    const ordered_json* opt = top.find("optimizer");
    const bool fused = opt && opt->is_object() && Obj{*opt, top.path, "optimizer."}.boolean("fused_back_pass", false);
    if (!fused)
      r.rejections.push_back("a full fine-tune with " + tf.part + ".offload_fraction > 0 needs optimizer.fused_back_pass: OneTrainer raises RuntimeError (modules/util/create.py:141-144)");
  }
}

}  // namespace

TrainerRead read_onetrainer(const std::string& path, const TrainerReadOptions& o) {
  const TrainerFacts& facts = trainer_facts("onetrainer");
  const ordered_json raw = read_json_file(path, "OneTrainer config");
  if (!raw.is_object()) throw InputError(path + ": expected a JSON object (a OneTrainer config or preset)");
  const Obj top{raw, path, ""};
  TrainerRead r;
  r.trainer = "onetrainer";
  r.config_path = path;
  r.inputs = {path};
  const std::string mt = top.str("model_type", "STABLE_DIFFUSION_15");
  const std::string name = top.str("base_model_name", "stable-diffusion-v1-5/stable-diffusion-v1-5");
  std::string why_not;
  const Family* found = family_for_model_type(facts, mt, name, why_not);
  const Family& fam = choose_family(o, found, path + ": " + why_not);
  start_setup(r, fam, "OneTrainer");
  const TrainerFamily* tf = facts.find(fam);
  if (!tf) throw InputError(path + ": OneTrainer does not train " + fam.name + " (no model_type for it)");
  TrainingSetup& s = r.setup;

  const std::string method = top.str("training_method", "FINE_TUNE");
  if (method == "LORA") {
    s.model_type = ModelType::Lora;
    s.lora_rank = top.integer("lora_rank", 16);
  } else if (method == "FINE_TUNE") {
    s.model_type = ModelType::Full;
  } else {
    throw InputError(top.where("training_method") + ": " + method + " is not predicted by segadvise (LORA and FINE_TUNE are)");
  }
  const std::string train_dtype = top.str("train_dtype", "FLOAT_16");
  s.mixed_precision = train_dtype == "BFLOAT_16" ? "bf16" : train_dtype == "FLOAT_16" ? "fp16" : "no";
  // an absent __version is 0: every migration runs (TrainConfig.py:596-610)
  const int version = top.integer("__version", 0);
  if (version < facts.raw.value("config_version", 11) && top.find("__version"))
    r.warnings.push_back("__version " + std::to_string(version) + " < 11: OneTrainer migrates the file first (TrainConfig.py:612-842)");
  read_part(facts, top, *tf, version, r);
  if (top.find("async_offloading") && !top.boolean("async_offloading", true) && s.ramtorch)
    r.warnings.push_back("async_offloading false: weight transfers do not overlap compute; the predicted step time is optimistic");

  s.batch = top.integer("batch_size", 1);
  if (s.batch <= 0) throw InputError(top.where("batch_size") + ": must be positive");
  const auto wh = parse_resolution_string(top.str("resolution", "512"), top.where("resolution"));
  s.width = wh.first;
  s.height = wh.second;
  r.shape_source = std::string("resolution \"") + top.str("resolution", "512") + "\"" + (top.find("resolution") ? "" : " (default, TrainConfig.py:1078)") +
                   ", batch_size " + std::to_string(s.batch) + " (aspect-ratio buckets of that area)";
  std::map<std::string, std::string> opts;
  for (auto it = facts.raw.at("optimizers").begin(); it != facts.raw.at("optimizers").end(); ++it) opts[it.key()] = it.value();
  const ordered_json* opt = top.find("optimizer");
  const std::string o_name = opt && opt->is_object() ? Obj{*opt, path, "optimizer."}.str("optimizer", "ADAMW") : "ADAMW";
  s.optimizer = optimizer_for(o_name, opts, r.warnings, path + ": optimizer.optimizer");
  const std::string ema = top.str("ema", "OFF");
  s.use_ema = ema != "OFF";
  s.ema_on_gpu = ema == "GPU";
  return r;
}

}  // namespace segadvise::readers
