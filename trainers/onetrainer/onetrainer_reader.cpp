// OneTrainer config or preset JSON, laid over TrainConfig.default_values() the way BaseConfig.from_dict
// does (facts: trainers/onetrainer/onetrainer.json): per-part checkpointing and offloading since
// 2026-07-05, the migrations a file without __version goes through, FLOAT_32 part defaults.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "onetrainer/onetrainer_migrate.hpp"

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
    return checked_number(*v, where(k), -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
  }
  int integer(const std::string& k, int def) const {
    const auto* v = find(k);
    if (!v) return def;
    if (!v->is_number_integer()) bad(k, "an integer");
    return static_cast<int>(checked_integer(*v, where(k), std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
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
  // the first entry of the model type whose name_contains matches (an entry without one matches any
  // name: SD3.5 Large by its name, else Medium)
  bool typed = false;
  for (const auto& tf : facts.families) {
    if (std::find(tf.model_types.begin(), tf.model_types.end(), mt) == tf.model_types.end()) continue;
    typed = true;
    bool ok = tf.name_contains.empty();
    for (const auto& s : tf.name_contains) ok |= lower(name).find(s) != std::string::npos;
    if (ok) return &find_family(tf.family);
  }
  if (typed) {
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

const nlohmann::json& dtype_entry(const TrainerFacts& facts, const std::string& dtype, const std::string& where) {
  for (const auto& d : facts.raw.at("weight_dtypes"))
    if (d.at("dtype") == dtype) return d;
  throw InputError(where + ": weight_dtype '" + dtype + "' has no segadvise precision (the GGUF types are not modelled)");
}

// optimizer.fused_back_pass as OneTrainer's UI loads it: OPTIMIZER_DEFAULT_PARAMETERS (false for every
// optimizer) overlaid by optimizer_defaults[<optimizer>]; the optimizer object as written where it
// says (scripts/train.py reads it so). `why` says where the value came from.
bool read_fused_back_pass(const Obj& top, const std::string& o_name, std::string& why) {
  const ordered_json* defaults = top.find("optimizer_defaults");
  if (defaults && defaults->is_object() && defaults->contains(o_name) && (*defaults)[o_name].is_object()) {
    const Obj d{(*defaults)[o_name], top.path, "optimizer_defaults." + o_name + "."};
    if (d.find("fused_back_pass")) {
      why = "optimizer_defaults." + o_name + ".fused_back_pass";
      return d.boolean("fused_back_pass", false);
    }
  }
  const ordered_json* opt = top.find("optimizer");
  if (opt && opt->is_object()) {
    const Obj o{*opt, top.path, "optimizer."};
    if (o.find("fused_back_pass")) {
      why = "optimizer.fused_back_pass";
      return o.boolean("fused_back_pass", false);
    }
  }
  why = "OneTrainer's default for " + o_name + " (optimizer_util.py)";
  return false;
}

// A part whose weight_dtype is still NONE after the migrations: no torch dtype (DataType.py), loaded in bf16
std::string none_dtype_note(const std::string& part) {
  return part + ".weight_dtype NONE has no torch dtype (DataType.py): OneTrainer's model loaders load the part in bf16 "
                "(FluxModelLoader.py:125, :167, QwenModelLoader.py:95, ZImageModelLoader.py:99; HFModelLoaderMixin.py:163 keeps the "
                "checkpoint's dtype): predicted in bf16";
}

// optimizer.optimizer: a value of OneTrainer's Optimizer enum (onetrainer.json optimizer_enum) sized by
// the state of what create.py builds for it ("optimizers", "optimizers_as"); any other value cannot be
// set and the default ADAMW runs. Returns the name OneTrainer runs.
std::string read_optimizer(const TrainerFacts& facts, const Obj& top, TrainerRead& r) {
  const ordered_json* opt = top.find("optimizer");
  if (opt && !opt->is_object()) top.bad("optimizer", "an object");
  std::string name = opt ? Obj{*opt, top.path, "optimizer."}.str("optimizer", "ADAMW") : "ADAMW";
  const auto& known = facts.raw.at("optimizer_enum");
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    r.warnings.push_back(top.where("optimizer.optimizer") + " '" + brief_text(name) + "' is not one of OneTrainer's optimizers "
                         "(enum/Optimizer.py): BaseConfig.from_dict cannot set it and keeps the default ADAMW (BaseConfig.py:111-116, "
                         "134-136, TrainConfig.py:150): predicted with ADAMW" +
                         (lower(name).find("8bit") != std::string::npos ? "; bitsandbytes' 8-bit AdamW is ADAMW_8BIT" : ""));
    name = "ADAMW";
  }
  std::map<std::string, std::string> opts;
  for (auto it = facts.raw.at("optimizers").begin(); it != facts.raw.at("optimizers").end(); ++it) opts[it.key()] = it.value();
  const nlohmann::json& as = facts.raw.at("optimizers_as");
  if (as.contains(name)) {
    opts[name] = as.at(name).at("as").get<std::string>();
    r.setup.notes.push_back("optimizer " + name + " sized as " + opts[name] + ": " + as.at(name).at("source").get<std::string>());
  }
  r.setup.optimizer = optimizer_for(name, opts, r.warnings, top.path + ": optimizer.optimizer");
  return name;
}

struct PartRead {
  bool gc = true, act = false;
  double frac = 0;
  bool train = true;
};

PartRead read_part(const TrainerFacts& facts, const Obj& top, const TrainerFamily& tf, int version, bool migrate,
                   const std::string& train_dtype, TrainerRead& r) {
  static const ordered_json empty = ordered_json::object();
  const ordered_json* pj = top.find(tf.part);
  if (pj && !pj->is_object()) top.bad(tf.part, "an object");
  const Obj part{pj ? *pj : empty, top.path, tf.part + "."};
  TrainingSetup& s = r.setup;
  PartRead out;
  out.train = part.boolean("train", true);
  // weight_dtype: FLOAT_32 by default (TrainConfig.py:305). It is the stored weights' dtype only: the
  // activations follow train_dtype (autocast), so FLOAT_32 weights under BFLOAT_16 training store 4
  // bytes per weight and compute in bf16.
  const std::string dtype = part.str("weight_dtype", "FLOAT_32");
  const nlohmann::json& entry = dtype_entry(facts, dtype, part.where("weight_dtype"));
  const std::string prec = entry.at("precision").get<std::string>();
  if (dtype == "NONE") r.warnings.push_back(none_dtype_note(tf.part));
  if (entry.at("bytes").get<double>() < 2 && train_dtype == "FLOAT_32")
    r.warnings.push_back(tf.part + ".weight_dtype " + dtype + " with train_dtype FLOAT_32: the tensors left unquantized (norms, biases, "
                         "embeddings) are cast to the train dtype (HFModelLoaderMixin.py:159-161) and kept in 4 bytes each; counted at 2");
  if (prec == "fp32") {
    if (train_dtype != "FLOAT_32") s.weight_storage_bytes = 4;
    r.warnings.push_back(tf.part + ".weight_dtype " + dtype + (part.find("weight_dtype") ? "" : " (OneTrainer's default when unset, TrainConfig.py:305)") +
                         ": base weights stored in 4 bytes each" +
                         (train_dtype != "FLOAT_32" ? ", computed in train_dtype " + train_dtype : ""));
  } else {
    s.base_precision = prec;
    // quantization.layer_filter_preset "full" (the default, TrainConfig.py:362) quantizes every Linear of
    // the part; a named filter ("blocks": transformer_block, layers, …) every Linear of the blocks
    s.quantize_all_block_linears = true;
  }
  out.gc = part.boolean("gradient_checkpointing", true);
  out.frac = part.number("offload_fraction", 0.0);
  out.act = part.boolean("activation_offloading", false);
  if (out.frac < 0 || out.frac > 1) throw InputError(part.where("offload_fraction") + ": " + std::to_string(out.frac) + " is not within 0..1");
  if (migrate && version < facts.raw.value("config_version", 11)) {
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
    if ((out.frac > 0 && new_frac != out.frac) || (out.act && !new_act))
      r.warnings.push_back("__version " + (top.find("__version") ? std::to_string(version) : std::string("absent")) +
                           ": OneTrainer's __migration_10 overwrites " + tf.part + ".offload_fraction and activation_offloading from the old "
                           "top-level keys (TrainConfig.py:830-842): offload_fraction " + std::to_string(new_frac).substr(0, 4) +
                           ", activation_offloading " + (new_act ? "true" : "false") + "; write \"__version\": 11 (a built-in '#' preset is not migrated)");
    if (part.find("gradient_checkpointing") && out.gc != new_gc)
      r.warnings.push_back("__migration_10 overwrites " + tf.part + ".gradient_checkpointing with the old top-level value");
    out.gc = new_gc;
    out.act = new_act;
    out.frac = new_frac;
  } else {
    for (const auto& k : facts.raw.at("removed_keys"))
      if (top.find(k.at("name").get<std::string>()))
        r.warnings.push_back(k.at("name").get<std::string>() + " no longer exists (" + k.at("source").get<std::string>() +
                             "): OneTrainer drops it silently; set it per part (" + tf.part + ".gradient_checkpointing, .offload_fraction, .activation_offloading)");
  }
  if (!tf.part_offloading && (out.frac > 0 || out.act)) {
    r.warnings.push_back(tf.part + " has no layer or activation offloading in OneTrainer (" + tf.source + "): offload_fraction and activation_offloading are ignored");
    out.frac = 0;
    out.act = false;
  }
  r.schedule = Schedule{};
  r.schedule.checkpointing = out.gc;
  if (out.act && out.gc) r.schedule.backend = Backend::Unsloth;
  // checkpointing_util.py:149-154: a part that offloads (layers or activations) under grad needs checkpointing
  if ((out.act || out.frac > 0) && !out.gc)
    r.rejections.push_back(tf.part + (out.frac > 0 ? ".offload_fraction > 0" : ".activation_offloading") + " without " + tf.part +
                           ".gradient_checkpointing: OneTrainer raises NotImplementedError('offloading requires gradient checkpointing', "
                           "modules/util/checkpointing_util.py:154)");
  if (out.frac > 0) s.layer_offload_fraction = out.frac;
  return out;
}

// The text encoders (the family's, in order: text_encoder, text_encoder_2, …) and the VAE as the model
// setup places them for training (modelSetup/*LoRASetup.py setup_train_device): a text encoder stays on
// the GPU when it trains (train, default true) or an embedding trains or latent_caching is off; the VAE
// when latent_caching is off. Their weights at their weight_dtype, and for a trained one its adapters
// (LoRA) or its own weights (FINE_TUNE) with gradients and optimizer state; activations of a trained
// text encoder are not counted (a short caption through a small model beside the denoiser's).
void read_other_parts(const TrainerFacts& facts, const Obj& top, const Family& fam, const std::string& method, bool latent_caching,
                      TrainerRead& r) {
  static const ordered_json empty = ordered_json::object();
  TrainingSetup& s = r.setup;
  const FamilyPhaseData pd = phase_data(fam);
  const nlohmann::json& te = facts.raw.at("text_encoders");
  const auto& parts = te.at("parts");
  const OptimizerInfo opt = optimizer_info(s.optimizer);
  double kept = 0;
  std::vector<std::string> what;
  TrainerRun& run = r.run.other;
  bool any_te_trained = false;
  for (std::size_t i = 0; i < pd.text_encoders.size() && i < parts.size(); ++i) {
    const std::string name = parts[i].get<std::string>();
    const ordered_json* pj = top.find(name);
    if (pj && !pj->is_object()) top.bad(name, "an object");
    const Obj part{pj ? *pj : empty, top.path, name + "."};
    const TextEncoderSpec& spec = pd.text_encoders[i];
    const std::string dtype = part.str("weight_dtype", te.at("weight_dtype_default").get<std::string>());
    const double per = dtype_entry(facts, dtype, part.where("weight_dtype")).at("bytes").get<double>();
    if (dtype == "NONE") r.warnings.push_back(none_dtype_note(name));
    if (part.find("weight_dtype")) r.run_keys[name + ".weight_dtype"] = dtype;  // FLOAT_32 when unset (TrainConfig.py:305)
    if (run.text_encoder_bytes_per_param.size() <= i) run.text_encoder_bytes_per_param.resize(i + 1, 0);
    run.text_encoder_bytes_per_param[i] = per;
    const bool train = method != "EMBEDDING" && part.boolean("train", te.at("train_default").get<bool>());
    const bool on_gpu = train || method == "EMBEDDING" || !latent_caching;
    if (!on_gpu) continue;
    any_te_trained |= train;
    double bytes = spec.params * per;
    std::string why = train ? "trained" : method == "EMBEDDING" ? "the embedding's gradient runs through it" : "latent_caching false";
    if (train && method == "LORA") {
      // LoRA on its attention (4 linears h->h) and MLP (h->4h->h) linears: rank x 18h per layer [I]
      // (kLoraWidthsPerLayer), in lora_weight_dtype (the denoiser's adapters' dtype, read before this)
      // with gradients in that dtype and the optimizer state
      const double lora = s.lora_rank * kLoraWidthsPerLayer * spec.hidden * spec.layers;
      bytes += lora * (2 * s.adapter_weight_bytes + opt.state_bytes_per_param);
    } else if (train) {
      // its own weights train: gradients in their dtype and the optimizer state
      bytes += spec.params * (per + opt.state_bytes_per_param);
    }
    kept += bytes;
    what.push_back(spec.name + " (" + name + " " + dtype + ", " + why + ")");
    if (train)
      r.warnings.push_back(name + ".train is " + (part.find("train") ? "true" : "true by default (TrainConfig.py)") + ": OneTrainer " +
                           (method == "LORA" ? "trains a LoRA on " : "fine-tunes ") + spec.name +
                           " and keeps it on the GPU through the step (counted); set " + name + ".train false to leave it out");
  }
  if (!latent_caching && pd.has_vae) {
    const ordered_json* vj = top.find("vae");
    const Obj vae{vj && vj->is_object() ? *vj : empty, top.path, "vae."};
    const std::string dtype = vae.str("weight_dtype", "FLOAT_32");
    const double per = dtype_entry(facts, dtype, vae.where("weight_dtype")).at("bytes").get<double>();
    kept += pd.vae.params * per;
    what.push_back("VAE (vae " + dtype + ", latent_caching false)");
  }
  {
    const ordered_json* vj = top.find("vae");
    const Obj vae{vj && vj->is_object() ? *vj : empty, top.path, "vae."};
    run.vae_bytes_per_param = dtype_entry(facts, vae.str("weight_dtype", "FLOAT_32"), vae.where("weight_dtype")).at("bytes").get<double>();
    if (pd.has_vae && vae.find("weight_dtype")) r.run_keys["vae.weight_dtype"] = vae.str("weight_dtype", "FLOAT_32");
  }
  s.kept_model_bytes = kept;
  for (std::size_t i = 0; i < what.size(); ++i) s.kept_models += (i ? ", " : "") + what[i];
  // text outputs are cached with the latents only for text encoders that do not train
  run.text_caching = latent_caching && !any_te_trained && method != "EMBEDDING";
}

}  // namespace

// The concepts' image directories (docs/datasets.md): `concepts` in the config, else the JSON list of its
// `concept_file_name` (default training_concepts/concepts.json, TrainConfig.py:982-987, 1051-1052), tried
// against the working directory and the config's directory; a file not here adds none. A concept's keys
// are those of OneTrainer's ConceptConfig, which is not among the copied sources: `path`, `enabled`,
// `type` (a VALIDATION concept does not train), `include_subdirectories`, `balancing` with
// `balancing_strategy` REPEATS (files x balancing an epoch) or SAMPLES (balancing samples). Bucketed by
// area at `resolution`: OneTrainer's aspect buckets (aspect_ratio_bucketing, default true, :1053) are
// computed in its data loader, not among the copied sources.
void read_concepts(const Obj& top, const std::string& path, const TrainerReadOptions& o,
                   std::pair<int, int> wh, int batch, TrainerRead& r) {
  namespace fs = std::filesystem;
  const ordered_json* list = top.find("concepts");
  ordered_json from_file;
  std::string origin = path;
  if (!list) {
    const std::string name = top.str("concept_file_name", "training_concepts/concepts.json");
    std::error_code ec;
    std::string file;
    for (const fs::path& base : {fs::path(o.cwd), fs::path(path).parent_path()}) {
      const fs::path c = fs::path(name).is_relative() ? base / name : fs::path(name);
      if (fs::is_regular_file(c, ec)) {
        file = c.string();
        break;
      }
    }
    if (file.empty()) {  // the concepts live on the training machine: --dataset can stand for the first
      DatasetSpec d;
      d.id = "concept_file_name";
      d.rule = "area";
      d.width = d.edge = wh.first;
      d.height = wh.second;
      d.batch = batch;
      d.why = "the concept file '" + name + "' is not here: --dataset is counted as one concept at the resolution";
      r.datasets.push_back(d);
      return;
    }
    from_file = read_json_file(file, "OneTrainer concept file");
    r.inputs.push_back(file);
    list = &from_file;
    origin = file;
  }
  if (!list->is_array()) throw InputError(origin + ": concepts: " + brief_text(list->dump()) + " is not a list of concepts");
  const bool bucketing = top.boolean("aspect_ratio_bucketing", true);
  for (std::size_t i = 0; i < list->size(); ++i) {
    const ordered_json& c = (*list)[i];
    const std::string at = "concepts[" + std::to_string(i) + "]";
    if (!c.is_object()) throw InputError(origin + ": " + at + ": " + brief_text(c.dump()) + " is not a concept (an object)");
    const Obj co{c, origin, at + "."};
    if (!co.boolean("enabled", true) || co.str("type", "STANDARD") == "VALIDATION") continue;
    const std::string dir = co.str("path", "");
    if (dir.empty()) continue;
    DatasetSpec d;
    d.id = at + ".path";
    d.dir = dir;
    d.recursive = co.boolean("include_subdirectories", false);
    d.rule = "area";
    d.width = d.edge = wh.first;
    d.height = wh.second;
    d.batch = batch;
    const double balancing = co.number("balancing", 1.0);
    if (!(balancing > 0) || balancing > 1e6) throw InputError(co.where("balancing") + ": " + std::to_string(balancing) + " is not in (0, 1e6]");
    const std::string strategy = co.str("balancing_strategy", "REPEATS");
    if (strategy == "SAMPLES") d.samples = std::max<long long>(1, std::llround(balancing));
    else if (strategy == "REPEATS") d.balancing = balancing;
    else throw InputError(co.where("balancing_strategy") + ": '" + brief_text(strategy) + "' is not REPEATS or SAMPLES");
    d.why = bucketing ? "OneTrainer's aspect buckets (aspect_ratio_bucketing) hold about the resolution's pixels and are not "
                        "modelled: every image is counted at the resolution (about the same tokens)"
                      : "aspect_ratio_bucketing false: every image trains at the resolution";
    r.datasets.push_back(d);
  }
}

double onetrainer_adapter_bytes(const TrainerFacts& facts, const std::string& dtype, const std::string& where) {
  const std::string d = dtype.empty() ? facts.raw.at("text_encoders").at("lora_weight_dtype_default").get<std::string>() : dtype;
  return std::max(2.0, dtype_entry(facts, d, where).at("bytes").get<double>());  // at least bf16's 2 bytes
}

TrainerRead read_onetrainer(const std::string& path, const TrainerReadOptions& o) {
  const TrainerFacts& facts = trainer_facts("onetrainer");
  const ordered_json raw = read_json_file(path, "OneTrainer config");
  if (!raw.is_object()) throw InputError(path + ": expected a JSON object (a OneTrainer config or preset)");
  TrainerRead r;
  r.trainer = "onetrainer";
  r.config_path = path;
  r.inputs = {path};
  // an absent __version is 0: every migration runs (TrainConfig.py:596-610), except for a built-in preset
  const bool preset = onetrainer_built_in_preset(path);
  const int config_version = facts.raw.value("config_version", 11);
  const int version = Obj{raw, path, ""}.integer("__version", preset ? config_version : 0);
  const OneTrainerMigration migrated = preset || version >= config_version ? OneTrainerMigration{raw, {}, ""}
                                                                            : migrate_onetrainer(raw, version, facts);
  const Obj top{migrated.data, path, ""};
  for (const auto& n : migrated.notes) r.warnings.push_back("__version " + std::to_string(version) + ": " + n);
  if (!migrated.failure.empty())
    r.warnings.push_back("OneTrainer cannot load this file: " + migrated.failure + ". Its UI prints the error and loads nothing "
                         "(TopBarController.py:83-104), scripts/train.py stops. Predicted from the file's keys as written, no migration applied; "
                         "\"__version\": 11 (the current version, TrainConfig.py:596) has OneTrainer read it unmigrated");
  const bool migrate = !preset && migrated.failure.empty();  // 4 and 10 as well (read_part)
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
    // the adapters live in lora_weight_dtype (FLOAT_32 by default, TrainConfig.py:1236), their gradients too
    const std::string adapter_dtype = top.str("lora_weight_dtype", "");
    s.adapter_weight_bytes = onetrainer_adapter_bytes(facts, adapter_dtype, top.where("lora_weight_dtype"));
    if (!adapter_dtype.empty()) r.run_keys["lora_weight_dtype"] = adapter_dtype;
    // peft_type LOHA / OFT_2 / LOKR (PeftType, ModelType.py:320-324): OneTrainer's own modules for them are
    // not among the sources read
    const std::string peft = top.str("peft_type", "LORA");
    if (peft == "LORA" && top.boolean("lora_decompose", false))
      r.warnings.push_back("lora_decompose true (DoRA): predicted as a plain LoRA of lora_rank " + std::to_string(s.lora_rank) +
                           "; the magnitude vectors and the adapted weight whose norm DoRA takes each step are not counted");
    if (peft != "LORA")
      r.warnings.push_back("peft_type " + peft + ": predicted as a LoRA of lora_rank " + std::to_string(s.lora_rank) + "; OneTrainer's " + peft +
                           " module is not modelled (its parameter count and the weight delta it forms each step are not counted)");
  } else if (method == "FINE_TUNE") {
    s.model_type = ModelType::Full;
  } else if (method == "EMBEDDING") {
    // textual inversion: a frozen denoiser the gradient runs back through (a LoRA step's memory and
    // time without adapters) to token_count vectors per text encoder
    s.model_type = ModelType::Lora;
    s.lora_rank = 1;  // no adapters: static_memory counts embedding_params instead
  } else {
    throw InputError(top.where("training_method") + ": " + method + " is not predicted by segadvise (LORA, FINE_TUNE and EMBEDDING are)");
  }
  const std::string train_dtype = top.str("train_dtype", "FLOAT_16");
  s.mixed_precision = train_dtype == "BFLOAT_16" ? "bf16" : train_dtype == "FLOAT_16" ? "fp16" : "no";
  if (preset && !top.find("__version"))
    r.warnings.push_back("built-in preset ('#' file name): OneTrainer loads it without migration (TopBarController.py:86-92, "
                         "scripts/train.py:24): its part keys stand as written");
  if (migrate && version < config_version && top.find("__version"))
    r.warnings.push_back("__version " + std::to_string(version) + " < 11: OneTrainer migrates the file first (TrainConfig.py:612-842)");
  const std::string o_name = read_optimizer(facts, top, r);
  std::string fused_from;
  const bool fused_asked = read_fused_back_pass(top, o_name, fused_from);
  const auto& fused_ok = facts.raw.at("optimizer_defaults").at("fused_back_pass_optimizers");
  const bool fused_supported = std::find(fused_ok.begin(), fused_ok.end(), o_name) != fused_ok.end();
  s.fused_back_pass = fused_asked && fused_supported;
  if (fused_asked && !fused_supported)
    r.warnings.push_back(fused_from + " true with " + o_name + ": not known to support the fused back pass (create.py): predicted without it");
  if (s.fused_back_pass)
    r.warnings.push_back(fused_from + " true: each gradient is applied and freed as backward produces it (GenericTrainer.py): about one block's gradients resident");

  const PartRead pr = read_part(facts, top, *tf, version, migrate, train_dtype, r);
  if (top.find("async_offloading") && !top.boolean("async_offloading", true) && pr.frac > 0)
    r.warnings.push_back("async_offloading false: weight transfers do not overlap compute; the predicted step time is optimistic");
  // create.py:140-144: a trained, layer-offloaded part in FINE_TUNE needs an optimizer with fused_back_pass
  if (pr.frac > 0 && pr.train && s.model_type == ModelType::Full && method == "FINE_TUNE" && !s.fused_back_pass)
    r.rejections.push_back("a full fine-tune with " + tf->part + ".offload_fraction > 0 needs an optimizer with fused_back_pass (" + fused_from +
                           " is off or " + o_name + " lacks it): OneTrainer raises RuntimeError (modules/util/create.py:141-144)");
  if (method == "EMBEDDING") {
    // token_count (default 1) vectors of each text encoder's width, fp32 (embedding_weight_dtype)
    const FamilyPhaseData pd = phase_data(fam);
    double params = 0;
    for (const auto& te : pd.text_encoders) params += te.hidden * facts.raw.at("embedding").value("token_count_default", 1);
    s.embedding_params = std::max(1.0, params);
    r.warnings.push_back("training_method EMBEDDING: " + std::to_string(static_cast<long>(s.embedding_params)) +
                         " trained embedding values; the frozen " + tf->part + " is predicted as a LoRA step without adapters");
  }

  s.batch = top.integer("batch_size", 1);
  if (s.batch <= 0) throw InputError(top.where("batch_size") + ": must be positive");
  const auto wh = parse_resolution_string(top.str("resolution", "512"), top.where("resolution"));
  s.width = wh.first;
  s.height = wh.second;
  r.shape_source = std::string("resolution \"") + top.str("resolution", "512") + "\"" + (top.find("resolution") ? "" : " (default, TrainConfig.py:1078)") +
                   ", batch_size " + std::to_string(s.batch) + " (aspect-ratio buckets of that area)";
  read_concepts(top, path, o, wh, s.batch, r);
  const std::string ema = top.str("ema", "OFF");
  s.use_ema = ema != "OFF";
  s.ema_on_gpu = ema == "GPU";
  // the run's phases (trainers/onetrainer/onetrainer.json "phases") and the parts beside the denoiser
  const bool latent_caching = top.boolean("latent_caching", true);
  r.run.other = trainer_run_from_data(facts, r);
  read_other_parts(facts, top, fam, method, latent_caching, r);
  // when it samples and saves (TrainConfig.py:567-586), as written: the run's phases rest on them
  for (const char* key : {"sample_after", "sample_after_unit", "save_every", "save_every_unit"})
    if (const ordered_json* v = top.find(key)) r.run_keys[key] = *v;
  return r;
}

}  // namespace segadvise::readers
