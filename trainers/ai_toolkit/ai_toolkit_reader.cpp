// ai-toolkit job YAML (config.process[0]: model, train, network, datasets), read as
// toolkit/config_modules.py reads it (facts: trainers/ai_toolkit/ai-toolkit.json).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/phases.hpp"

namespace segadvise::readers {

namespace {

// names what TrainingSetup::kept_model_bytes holds (its `kept_models`)
void add_kept_model(TrainingSetup& s, const std::string& what) {
  s.kept_models += (s.kept_models.empty() ? "" : " + ") + what;
}

struct Yaml {
  std::string path;
  std::string where(const YAML::Node& n, const std::string& key) const {
    return path + ":" + std::to_string(n.Mark().line + 1) + ": " + key;
  }
  template <typename T>
  T get(const YAML::Node& parent, const char* key, T def, const std::string& dotted) const {
    const YAML::Node n = parent[key];
    if (!n || n.IsNull()) return def;
    try {
      if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "not a scalar");
      return n.as<T>();
    } catch (const YAML::Exception&) {
      throw InputError(where(n, dotted) + ": '" + brief_text(YAML::Dump(n)) + "' is not " + kind<T>());
    }
  }
  template <typename T>
  static const char* kind() {
    if (std::is_same<T, bool>::value) return "true or false";
    if (std::is_same<T, int>::value) return "an integer";
    if (std::is_same<T, double>::value) return "a number";
    return "a string";
  }
};

// model.arch as ModelConfig resolves it (config_modules.py:766-821): arch, else the is_* flags, else sd1
// (`defaulted` then true)
std::string resolve_arch(const Yaml& y, const YAML::Node& model, bool& defaulted) {
  defaulted = false;
  std::string arch = y.get<std::string>(model, "arch", "", "model.arch");
  if (!arch.empty()) {
    arch = arch.substr(0, arch.find(':'));
    return arch == "flex1" ? "flux" : arch;
  }
  static const std::vector<std::pair<const char*, const char*>> flags = {
      {"is_v2", "sd2"},       {"is_v3", "sd3"},           {"is_xl", "sdxl"},         {"is_pixart", "pixart"},
      {"is_pixart_sigma", "pixart_sigma"}, {"is_auraflow", "auraflow"}, {"is_flux", "flux"}, {"is_lumina2", "lumina2"},
      {"is_vega", "vega"},    {"is_ssd", "ssd"}};
  for (const auto& f : flags)
    if (y.get<bool>(model, f.first, false, std::string("model.") + f.first)) return f.second;
  defaulted = true;
  return "sd1";
}

// The arch of the first name_guesses entry (ai-toolkit.json) whose `contains` is in the model path
// (lower-cased, '_' read as '-'), with that entry's source; nullptr when none
const nlohmann::json* guess_arch(const TrainerFacts& facts, const std::string& name) {
  std::string n = lower(name);
  std::replace(n.begin(), n.end(), '_', '-');
  for (const auto& e : facts.raw.at("name_guesses").at("entries"))
    if (n.find(e.at("contains").get<std::string>()) != std::string::npos) return &e;
  return nullptr;
}

// The keys of the model, train and network sections ai-toolkit never reads (ai-toolkit.json known_keys),
// listed in one warning: they change nothing
void warn_unknown_keys(const Yaml& y, const YAML::Node& p, const TrainerFacts& facts, TrainerRead& r) {
  const nlohmann::json& known = facts.raw.at("known_keys");
  std::vector<std::string> unknown;
  std::string sources;
  for (const char* section : {"model", "train", "network"}) {
    const YAML::Node n = p[section];
    if (!n || !n.IsMap()) continue;
    const auto& keys = known.at(section).at("keys");
    bool any = false;
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string k = it->first.as<std::string>();
      if (std::find(keys.begin(), keys.end(), k) != keys.end()) continue;
      unknown.push_back(std::string(section) + "." + k + " (line " + std::to_string(it->first.Mark().line + 1) + ")");
      any = true;
    }
    if (any) sources += (sources.empty() ? "" : ", ") + known.at(section).at("source").get<std::string>();
  }
  if (unknown.empty()) return;
  std::string list;
  for (const auto& u : unknown) list += (list.empty() ? "" : ", ") + u;
  r.warnings.push_back(y.path + ": keys ai-toolkit does not have, never read and so without effect: " + list + " (the keys it reads: " +
                       sources + ")");
}

const Family* family_for_arch(const TrainerFacts& facts, const std::string& arch, const std::string& name) {
  const std::string lname = lower(name);
  const Family* fallback = nullptr;
  for (const auto& tf : facts.families) {
    if (std::find(tf.arch.begin(), tf.arch.end(), arch) == tf.arch.end()) continue;
    if (tf.name_contains.empty()) fallback = &find_family(tf.family);
    for (const auto& s : tf.name_contains)
      if (lname.find(s) != std::string::npos) return &find_family(tf.family);
  }
  return fallback;
}

// a qtype as ai-toolkit resolves it (toolkit/util/quantize.py get_qtype): its entry in "qtypes"
const nlohmann::json& qtype_entry(const TrainerFacts& facts, const std::string& qtype, const std::string& where) {
  std::string known;
  for (const auto& q : facts.raw.at("qtypes")) {
    if (q.at("qtype") == qtype) return q;
    known += (known.empty() ? "" : ", ") + q.at("qtype").get<std::string>();
  }
  throw InputError(where + ": qtype '" + brief_text(qtype) + "' is not one ai-toolkit quantizes with (known: " + known + ")");
}

// The bytes of the tensors in a .safetensors file, from its header (8 bytes of little-endian length,
// then a JSON object of name -> {dtype, shape, data_offsets}); -1 when the file is not there.
double safetensors_tensor_bytes(const std::string& path, const std::string& where) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return -1;
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8] = {};
  if (!in.read(reinterpret_cast<char*>(len), 8)) throw InputError(where + ": '" + brief_text(path) + "' is not a safetensors file (no header)");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n == 0 || n > (100u << 20)) throw InputError(where + ": '" + brief_text(path) + "' is not a safetensors file (header length " + std::to_string(n) + ")");
  std::string header(static_cast<std::size_t>(n), '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n))) throw InputError(where + ": '" + brief_text(path) + "': safetensors header cut short");
  double bytes = 0;
  try {
    const nlohmann::json h = nlohmann::json::parse(header);
    for (auto it = h.begin(); it != h.end(); ++it) {
      if (it.key() == "__metadata__") continue;
      const auto& off = it.value().at("data_offsets");
      bytes += off.at(1).get<double>() - off.at(0).get<double>();
    }
  } catch (const nlohmann::json::exception& e) {
    throw InputError(where + ": '" + brief_text(path) + "': not a safetensors header (" + e.what() + ")");
  }
  return bytes;
}

// the family entry's trainer-specific fields (experts, control_in_sequence) in trainers/ai_toolkit/ai-toolkit.json
const nlohmann::json* family_entry(const TrainerFacts& facts, const Family& fam) {
  for (const auto& e : facts.raw.at("families"))
    if (e.at("family") == fam.id) return &e;
  return nullptr;
}

// the number of control images of a dataset: control_path (a path or a list) and control_path_1..3
// (config_modules.py:961-982)
int control_images(const Yaml& y, const YAML::Node& d, const std::string& at) {
  int n = 0;
  const YAML::Node cp = d["control_path"];
  if (cp && cp.IsSequence()) n = static_cast<int>(cp.size());
  else if (!y.get<std::string>(d, "control_path", "", at + ".control_path").empty()) n = 1;
  for (const char* k : {"control_path_1", "control_path_2", "control_path_3"})
    if (!y.get<std::string>(d, k, "", at + "." + k).empty()) ++n;
  return n;
}

// datasets[i].folder_path, where set: one DatasetSpec for each of its resolutions, each its own dataset
// (preprocess_dataset_raw_config, config_modules.py:1097-1112), bucketed by area (docs/datasets.md):
// ai-toolkit's aspect buckets (buckets: true, bucket_tolerance 64, config_modules.py:949-950) are made
// around resolution x resolution pixels, and their list is not among the copied sources, so every sample
// counts at that square; num_frames > 1 reads the folder's videos, each trained as num_frames frames
// (shrink_video_to_frames, :1054-1058); every file num_repeats times an epoch (:1002).
void add_folder_datasets(const Yaml& y, const YAML::Node& d, const std::string& at, const std::vector<int>& sizes, int frames,
                         int batch, TrainerRead& r) {
  const std::string folder = y.get<std::string>(d, "folder_path", "", at + ".folder_path");
  if (folder.empty()) return;
  const int repeats = y.get<int>(d, "num_repeats", 1, at + ".num_repeats");
  if (repeats < 1 || repeats > (1 << 16))
    throw InputError(y.where(d["num_repeats"], at + ".num_repeats") + ": " + std::to_string(repeats) + " is not in [1, 65536]");
  for (int edge : sizes) {
    DatasetSpec ds;
    ds.id = at + ".folder_path" + (sizes.size() > 1 ? " at " + std::to_string(edge) : "");
    ds.dir = folder;
    ds.rule = "area";
    ds.width = ds.height = ds.edge = edge;
    ds.frames = frames;
    ds.dataset_type = frames > 1 ? "video" : "image";
    ds.batch = batch;
    ds.repeats = repeats;
    ds.why = "ai-toolkit's aspect buckets hold about " + std::to_string(edge) + "x" + std::to_string(edge) +
             " pixels and their list is not modelled: every sample is counted at that square (about the same tokens)";
    r.datasets.push_back(ds);
  }
}

void read_shape(const Yaml& y, const YAML::Node& process, TrainerRead& r, int train_batch) {
  const YAML::Node datasets = process["datasets"];
  int edge = 512, frames = 1, batch = train_batch;
  std::string from = "datasets[].resolution unset: 512 (config_modules.py:947)";
  if (datasets && datasets.IsSequence()) {
    double best_tokens = -1;
    for (std::size_t i = 0; i < datasets.size(); ++i) {
      const YAML::Node d = datasets[i];
      const std::string at = "datasets[" + std::to_string(i) + "]";
      std::vector<int> sizes;
      const YAML::Node res = d["resolution"];
      if (res && res.IsSequence()) {
        for (std::size_t k = 0; k < res.size(); ++k) {
          try {
            sizes.push_back(res[k].as<int>());
          } catch (const YAML::Exception&) {
            throw InputError(y.where(res[k], at + ".resolution") + ": '" + brief_text(YAML::Dump(res[k])) + "' is not an integer");
          }
        }
      } else {
        sizes.push_back(y.get<int>(d, "resolution", 512, at + ".resolution"));
      }
      const int f = y.get<int>(d, "num_frames", 1, at + ".num_frames");
      const int b = y.get<int>(d, "batch_size", train_batch, at + ".batch_size");
      // the setup limits (constants.hpp), and the size product in double: 65,536^2 x frames x batch is past an int
      const auto in_range = [&](const char* key, int v, int hi) {
        if (v < 1 || v > hi)
          throw InputError(y.where(d[key] ? d[key] : d, at + "." + key) + ": " + std::to_string(v) + " is not in [1, " +
                           std::to_string(hi) + "]");
      };
      in_range("num_frames", f, kMaxFrames);
      in_range("batch_size", b, kMaxBatch);
      for (int sz : sizes) in_range("resolution", sz, kMaxEdgePixels);
      add_folder_datasets(y, d, at, sizes, f, b, r);
      for (int s : sizes) {
        in_range("resolution", s, kMaxEdgePixels);
        const double tokens = double(s) * s / 64 * f * b;
        if (tokens > best_tokens) {
          best_tokens = tokens;
          edge = s, frames = f, batch = b;
          from = at + ".resolution " + std::to_string(s) + (sizes.size() > 1 ? " (the largest of its sizes: each size is its own dataset, config_modules.py:1097-1112)" : "");
        }
      }
    }
  }
  r.setup.width = r.setup.height = edge;
  if (frames > 1) {
    if (r.family->modality != "video") throw InputError(r.config_path + ": datasets[].num_frames " + std::to_string(frames) + ": " + r.family->name + " trains on images");
    r.setup.frames = frames;  // ai-toolkit's own frame handling is not recorded: the value as written
  }
  r.setup.batch = batch;
  r.shape_source = from + ", " + std::to_string(frames) + " frame(s), batch " + std::to_string(batch) +
                   " (ai-toolkit buckets around resolution x resolution pixels)";
}

}  // namespace

namespace {

// The job's first process (only trainer processes train, jobs/process/__init__.py: a generate job, process
// type to_folder, an extract or a merge job runs no training step)
YAML::Node training_process(const Yaml& y, const YAML::Node& root, const TrainerFacts& facts, TrainerRead& r) {
  const std::string& path = y.path;
  if (!root.IsMap())
    throw InputError(path + ": the top level is not a mapping (an ai-toolkit job has config: process: - {model: …, train: …})");
  const YAML::Node config = root["config"];
  if (config && !config.IsMap())
    throw InputError(path + ": config: not a mapping (an ai-toolkit job has config: process: - {model: …, train: …})");
  const YAML::Node process = config ? config["process"] : YAML::Node();
  if (!process || !process.IsSequence() || process.size() == 0)
    throw InputError(path + ": config.process: missing or not a list (an ai-toolkit job has config: process: - {model: …, train: …})");
  const YAML::Node p = process[0];
  const std::string job = lower(y.get<std::string>(root, "job", "", "job"));
  const std::string ptype = p.IsMap() ? lower(y.get<std::string>(p, "type", "", "config.process[0].type")) : "";
  for (const auto& nt : facts.raw.at("not_training")) {
    const std::string what = nt.at("value").get<std::string>();
    if ((nt.at("key") == "job" && job == what) || (nt.at("key") == "process.type" && ptype == what))
      throw InputError(path + ": " + (nt.at("key") == "job" ? "job '" + job + "'" : "config.process[0].type '" + ptype + "'") +
                       " is " + nt.at("why").get<std::string>() + ", not a training run: nothing to predict");
  }
  if (process.size() > 1) r.warnings.push_back("config.process has " + std::to_string(process.size()) + " entries: the first is read");
  return p;
}

// train.dtype: the precision it trains in
void read_dtype(const Yaml& y, const YAML::Node& train, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  // precision: train.dtype (default fp32) overrides the model dtype (BaseSDTrainProcess.py:117)
  const std::string dtype = lower(y.get<std::string>(train, "dtype", "fp32", "train.dtype"));
  if (dtype == "bf16" || dtype == "bfloat16") s.mixed_precision = "bf16";
  else if (dtype == "fp16" || dtype == "float16") s.mixed_precision = "fp16";
  else if (dtype == "fp32" || dtype == "float32" || dtype == "float") {
    s.mixed_precision = "no";
    if (!train["dtype"]) r.warnings.push_back("train.dtype is unset: ai-toolkit trains in fp32 (config_modules.py:395), weights and activations 4 bytes; write dtype: bf16");
  } else {
    throw InputError(y.where(train["dtype"], "train.dtype") + ": '" + dtype + "' is not fp32, bf16 or fp16");
  }
}

// What the job's model section does to the weights: layer offloading and the quantizer
struct WeightKeys {
  bool offload = false;       // model.layer_offloading (or auto_memory)
  bool offload_acts = false;  // and the family's model class attaches the MemoryManager
  bool quantize = false;
  std::string ara;            // the accuracy-recovery adapter
};

void read_layer_offloading(const Yaml& y, const YAML::Node& model, const TrainerFamily* tf, const Family& fam, WeightKeys& w,
                           TrainerRead& r) {
  TrainingSetup& s = r.setup;
  // weight offloading: only where the model class attaches the MemoryManager
  w.offload = y.get<bool>(model, "layer_offloading", y.get<bool>(model, "auto_memory", false, "model.auto_memory"), "model.layer_offloading");
  const double pct = y.get<double>(model, "layer_offloading_transformer_percent", 1.0, "model.layer_offloading_transformer_percent");
  if (pct < 0 || pct > 1)
    throw InputError(y.where(model["layer_offloading_transformer_percent"], "model.layer_offloading_transformer_percent") + ": " + std::to_string(pct) + " is not within 0..1");
  w.offload_acts = w.offload && tf && tf->layer_offloading;
  if (w.offload && !w.offload_acts)
    r.warnings.push_back("model.layer_offloading does nothing on " + fam.name + " (" + (tf ? tf->source : "not in ai-toolkit's attach list") + "): predicted without it");
  if (w.offload_acts && pct > 0) {
    s.ramtorch = true;
    s.ramtorch_percent = pct * 100;
  }
}

void read_quantizer(const Yaml& y, const YAML::Node& model, const TrainerFacts& facts, WeightKeys& w, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  // quantizer: qfloat8 (quanto) unless layer_offloading rewrites it to float8 = torchao (config_modules.py:714-715);
  // "qtype|adapter" names an accuracy-recovery adapter (config_modules.py:742-743)
  w.quantize = y.get<bool>(model, "quantize", false, "model.quantize");
  if (w.quantize) {
    std::string qtype = y.get<std::string>(model, "qtype", "qfloat8", "model.qtype");
    if (qtype.find('|') != std::string::npos) {
      w.ara = qtype.substr(qtype.find('|') + 1);
      qtype = qtype.substr(0, qtype.find('|'));
    }
    if (w.ara.empty()) w.ara = y.get<std::string>(model, "accuracy_recovery_adapter", "", "model.accuracy_recovery_adapter");
    if (w.offload && qtype == "qfloat8") {
      qtype = "float8";
      r.warnings.push_back("model.qtype qfloat8 with layer_offloading is rewritten to float8: torchao Float8WeightOnlyConfig, not quanto (config_modules.py:714-715)");
    }
    const nlohmann::json& q = qtype_entry(facts, qtype, y.where(model, "model.qtype"));
    s.base_precision = q.at("precision").get<std::string>();
    s.quantize_all_block_linears = true;  // quantize_model: every Linear of each transformer block (quantize.py)
    if (q.contains("note")) r.warnings.push_back("model.qtype " + qtype + ": " + q.at("note").get<std::string>());
    if (!w.ara.empty()) {
      // quantize.py quantize_model: the adapter's layers get the qtype, every other layer uint8, which
      // UIntXQuantizer never converts (uintx_quant.py can_quantize): they stay bf16
      r.warnings.push_back("model.qtype " + qtype + " with the accuracy-recovery adapter '" + brief_text(w.ara) +
                           "': the layers it covers are quantized to " + qtype + " (taken as every block Linear, as the quantizer "
                           "would without it), the rest asked for uint8, which ai-toolkit leaves in bf16 (uintx_quant.py)");
    }
  }
  if (!w.ara.empty() && !w.quantize)
    r.warnings.push_back("model.accuracy_recovery_adapter without model.quantize: ai-toolkit loads it only while quantizing (quantize.py quantize_model): ignored");
}

// batch, checkpointing, the adapter, the optimizer and its EMA
void read_training(const Yaml& y, const YAML::Node& train, const YAML::Node& network, TrainerRead& r) {
  const std::string& path = y.path;
  TrainingSetup& s = r.setup;
  // checkpointing: every block, default on (config_modules.py:413)
  s.batch = y.get<int>(train, "batch_size", 1, "train.batch_size");
  if (s.batch <= 0) throw InputError(y.where(train["batch_size"], "train.batch_size") + ": must be positive");
  r.schedule = Schedule{};
  r.schedule.checkpointing = y.get<bool>(train, "gradient_checkpointing", true, "train.gradient_checkpointing");

  // adapter: network section present -> LoRA (rank, else linear, else 4: config_modules.py:172-182)
  if (network && network.IsMap()) {
    const std::string type = lower(y.get<std::string>(network, "type", "lora", "network.type"));
    s.model_type = ModelType::Lora;
    s.lora_rank = y.get<int>(network, "rank", y.get<int>(network, "linear", 4, "network.linear"), "network.rank");
    if (type != "lora") {
      s.lora_type = LoraType::Lycoris;
      r.warnings.push_back("network.type '" + type + "': predicted as a LyCORIS adapter of rank " + std::to_string(s.lora_rank));
    }
  } else {
    s.model_type = ModelType::Full;
  }
  const std::map<std::string, std::string> opts(ai_toolkit_optimizers().begin(), ai_toolkit_optimizers().end());
  s.optimizer = optimizer_for(lower(y.get<std::string>(train, "optimizer", "adamw", "train.optimizer")), opts, r.warnings, path + ": train.optimizer");
  if (train["ema_config"] && train["ema_config"].IsMap()) s.use_ema = y.get<bool>(train["ema_config"], "use_ema", false, "train.ema_config.use_ema");
}

// Whether every dataset of the process sets `a` (or `b`)
bool all_datasets(const Yaml& y, const YAML::Node& datasets, const char* a, const char* b) {
  const bool many = datasets && datasets.IsSequence() && datasets.size() > 0;
  if (!many) return false;
  for (std::size_t i = 0; i < datasets.size(); ++i) {
    const std::string at = "datasets[" + std::to_string(i) + "]";
    if (!y.get<bool>(datasets[i], a, false, at + "." + a) && !(b && y.get<bool>(datasets[i], b, false, at + "." + b))) return false;
  }
  return true;
}

void read_experts(const Yaml& y, const YAML::Node& model, const nlohmann::json* fe, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const YAML::Node kwargs = model["model_kwargs"] && model["model_kwargs"].IsMap() ? model["model_kwargs"] : YAML::Node(YAML::NodeType::Map);

  // Wan 2.2 A14B: two experts, both on the GPU unless low_vram (wan22_14b_model.py load_model), LoRA on
  // each unless train_high_noise / train_low_noise is false
  const bool low_vram = y.get<bool>(model, "low_vram", false, "model.low_vram");
  if (fe && fe->value("experts", 1) > 1) {
    s.experts = fe->value("experts", 1);
    const bool high = y.get<bool>(kwargs, "train_high_noise", true, "model.model_kwargs.train_high_noise");
    const bool lowx = y.get<bool>(kwargs, "train_low_noise", true, "model.model_kwargs.train_low_noise");
    if (!high && !lowx)
      throw InputError(y.where(kwargs, "model.model_kwargs") + ": train_high_noise and train_low_noise both false: ai-toolkit stops (wan22_14b_model.py:205-208)");
    s.trained_experts = (high ? 1 : 0) + (lowx ? 1 : 0);
    s.idle_experts_on_host = low_vram;
    s.notes.push_back(std::to_string(s.experts) + " experts (high and low noise), one runs per step; " +
                      (low_vram ? "low_vram: the idle one waits on the CPU" : "both on the GPU") + "; " +
                      std::to_string(s.trained_experts) + " trained (wan22_14b_model.py)");
  } else if (low_vram) {
    r.warnings.push_back("model.low_vram keeps the text side on the CPU while quantizing: not modelled (the transformer's memory is unchanged)");
  }
}

void read_control_images(const Yaml& y, const YAML::Node& datasets, const nlohmann::json* fe, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const bool many = datasets && datasets.IsSequence() && datasets.size() > 0;
  // edit models: each control image's latents join the image sequence (flux_kontext.py, qwen_image_edit.py)
  if (fe && fe->value("control_in_sequence", false)) {
    int controls = 0;
    if (many)
      for (std::size_t i = 0; i < datasets.size(); ++i) controls = std::max(controls, control_images(y, datasets[i], "datasets[" + std::to_string(i) + "]"));
    if (controls == 0) {
      r.warnings.push_back(fam.name + " trains on control images and no datasets[].control_path is set: predicted with one control image in the sequence");
      controls = 1;
    }
    s.reference_images = controls;
    s.notes.push_back(std::to_string(controls) + " control image(s): their latents join the image tokens (x" + std::to_string(1 + controls) + ")");
  }
}

void read_kept_models(const Yaml& y, const YAML::Node& model, const YAML::Node& train, const YAML::Node& datasets, const TrainerFacts& facts,
                      const nlohmann::json* fe, const Family& fam, const WeightKeys& w, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const bool quantize = w.quantize, offload = w.offload, offload_acts = w.offload_acts;
  // what else stays on the GPU through the step (SDTrainer.py hook_before_train_loop): the text encoder
  // unless unloaded or its embeddings cached, the VAE unless the latents are cached
  const FamilyPhaseData pd = phase_data(fam);
  const bool unload_te = y.get<bool>(train, "unload_text_encoder", false, "train.unload_text_encoder");
  if (unload_te && fe && fe->value("text_encoder_encodes_control", false))
    r.rejections.push_back("train.unload_text_encoder with " + fam.name + ": ai-toolkit stops, its control images are encoded with the prompt (config_modules.py:1502-1504)");
  const bool cache_te = y.get<bool>(train, "cache_text_embeddings", false, "train.cache_text_embeddings") ||
                        all_datasets(y, datasets, "cache_text_embeddings", nullptr);
  const bool cache_latents = all_datasets(y, datasets, "cache_latents", "cache_latents_to_disk");
  s.text_encoder_unloaded = unload_te && !cache_te && !(fe && fe->value("text_encoder_encodes_control", false));
  if (y.get<bool>(train, "train_text_encoder", false, "train.train_text_encoder") && (unload_te || cache_te))
    r.rejections.push_back(std::string("train.train_text_encoder with ") + (unload_te ? "train.unload_text_encoder" : "cache_text_embeddings") +
                           ": ai-toolkit stops, 'Cannot unload text encoder if training text encoder' (SDTrainer.py:351-355)");
  // the text encoder's quantization as the job writes it, which its caching and sampling are predicted with
  if (model && model["quantize_te"]) r.run_keys["model.quantize_te"] = y.get<bool>(model, "quantize_te", quantize, "model.quantize_te");
  if (model && model["qtype_te"]) r.run_keys["model.qtype_te"] = y.get<std::string>(model, "qtype_te", "qfloat8", "model.qtype_te");
  if (!pd.known) {
    r.warnings.push_back("no text-encoder or VAE data for " + fam.name + ": only the transformer is counted on the GPU");
  } else {
    if (!unload_te && !cache_te && !pd.text_encoders.empty()) {
      const bool quantize_te = y.get<bool>(model, "quantize_te", quantize, "model.quantize_te");
      std::string te_precision = "no_change";
      if (quantize_te) {
        std::string qte = y.get<std::string>(model, "qtype_te", "qfloat8", "model.qtype_te");
        if (offload && qte == "qfloat8") qte = "float8";
        te_precision = qtype_entry(facts, qte.substr(0, qte.find('|')), y.where(model, "model.qtype_te")).at("precision").get<std::string>();
      }
      double te_share = 1;
      if (offload_acts) te_share = 1 - y.get<double>(model, "layer_offloading_text_encoder_percent", 1.0, "model.layer_offloading_text_encoder_percent");
      double te = 0;
      std::string names;
      for (const auto& t : pd.text_encoders) {
        te += text_encoder_bytes(t, te_precision) * te_share;
        names += (names.empty() ? "" : " + ") + t.name;
      }
      s.kept_model_bytes += te;
      add_kept_model(s, "text encoder (" + names + ")");
      s.notes.push_back("text encoder on the GPU through the step (" + names + ", " + (quantize_te ? te_precision : std::string("bf16")) +
                        (te_share < 1 ? ", " + std::to_string(static_cast<int>(std::lround(te_share * 100))) + "% resident" : std::string()) +
                        "): " + std::to_string(te / (1 << 30)).substr(0, 5) + " GiB (neither train.unload_text_encoder nor cache_text_embeddings)");
    }
    if (!cache_latents && pd.has_vae) {
      const double vae = pd.vae.params * pd.vae.dtype_bytes;
      s.kept_model_bytes += vae;
      add_kept_model(s, "VAE (" + pd.vae.name + ")");
      s.notes.push_back("VAE on the GPU through the step (" + pd.vae.name + "): " + std::to_string(vae / (1 << 30)).substr(0, 5) +
                        " GiB (latents not cached: datasets[].cache_latents / cache_latents_to_disk)");
    }
  }
}

void read_accuracy_recovery_adapter(const Yaml& y, const YAML::Node& model, const TrainerFacts& facts, const Family& fam,
                                    const WeightKeys& w, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const std::string& ara = w.ara;
  const bool quantize = w.quantize;
  // the accuracy-recovery adapter sits on the GPU beside the quantized weights (quantize.py: force_to device)
  const double ara_file_bytes = !ara.empty() && quantize ? safetensors_tensor_bytes(ara, y.where(model, "model.qtype")) : -1;
  if (ara_file_bytes >= 0) {
    // a local adapter: its own tensors, loaded in the model dtype (bf16: the file's bytes when it is bf16)
    s.kept_model_bytes += ara_file_bytes * std::max(1, s.experts);
    add_kept_model(s, "accuracy-recovery adapter");
    s.notes.push_back("accuracy-recovery adapter on the GPU: " + std::to_string(ara_file_bytes / (1 << 20)).substr(0, 6) +
                      " MiB, the tensors of " + ara);
  } else if (!ara.empty() && quantize) {
    const int ara_rank = facts.raw.at("accuracy_recovery_adapter").at("assumed_rank").get<int>();
    TrainingSetup at_rank = s;
    at_rank.model_type = ModelType::Lora;
    at_rank.lora_type = LoraType::Standard;
    at_rank.lora_rank = ara_rank;
    at_rank.experts = 1;
    double lora = 0;
    for (const auto& b : analyze(fam, at_rank).blocks) lora += b.lora_params;
    s.kept_model_bytes += lora * 2 * std::max(1, s.experts);
    add_kept_model(s, "accuracy-recovery adapter");
    s.notes.push_back("accuracy-recovery adapter on the GPU: taken as rank " + std::to_string(ara_rank) +
                      " over the LoRA targets (" + facts.raw.at("accuracy_recovery_adapter").at("source").get<std::string>() + ")");
  }
}

void read_run(const Yaml& y, const YAML::Node& p, const TrainerFacts& facts, TrainerRead& r) {
  const std::string& path = y.path;
  // the run's phases by its keys (ai-toolkit.json "phases"); the samples at the sample section's size
  // (SampleConfig: width 512, height 512, num_frames 1 by default, config_modules.py:84-98), which a
  // plan printed for this job carries
  r.run.other = trainer_run_from_data(facts, r);
  const YAML::Node sample = p["sample"];
  if (sample && sample.IsMap()) {
    TrainerRun& run = r.run.other;
    run.sample_width = y.get<int>(sample, "width", 512, "sample.width");
    run.sample_height = y.get<int>(sample, "height", 512, "sample.height");
    run.sample_frames = y.get<int>(sample, "num_frames", 1, "sample.num_frames");
    for (const int v : {run.sample_width, run.sample_height})
      if (v < 8 || v > kMaxEdgePixels) throw InputError(path + ": sample.width/height " + std::to_string(v) + " is out of range (8.." + std::to_string(kMaxEdgePixels) + ")");
    if (run.sample_frames < 1 || run.sample_frames > kMaxFrames) throw InputError(path + ": sample.num_frames " + std::to_string(run.sample_frames) + " is out of range");
    r.run_keys["sample.width"] = run.sample_width;
    r.run_keys["sample.height"] = run.sample_height;
    if (run.sample_frames > 1) r.run_keys["sample.num_frames"] = run.sample_frames;
  }
}

TrainerRead read_ai_toolkit_job(const std::string& path, const TrainerReadOptions& o) {
  const TrainerFacts& facts = trainer_facts("ai-toolkit");
  const YAML::Node root = load_yaml_file(path, "ai-toolkit config");
  const Yaml y{path};
  TrainerRead r;
  r.trainer = "ai-toolkit";
  r.config_path = path;
  r.inputs = {path};
  const YAML::Node p = training_process(y, root, facts, r);
  const YAML::Node model = p["model"], train = p["train"] ? p["train"] : YAML::Node(YAML::NodeType::Map),
                   network = p["network"];
  if (!model || !model.IsMap()) throw InputError(path + ": config.process[0].model: missing (model.name_or_path is required, config_modules.py:628)");
  const std::string name = y.get<std::string>(model, "name_or_path", "", "model.name_or_path");
  if (name.empty()) throw InputError(y.where(model, "model.name_or_path") + ": missing (required, config_modules.py:628)");
  bool defaulted = false;
  std::string arch = resolve_arch(y, model, defaulted);
  // no arch and no is_* flag: ai-toolkit runs sd1 whatever the path names; the family the path names is
  // predicted instead, as a guess (segadvise's, from name_guesses), and said so
  std::string guessed_from, guess_warning;
  if (defaulted && o.model.empty()) {
    const nlohmann::json* g = guess_arch(facts, name);
    const std::string loads = "ai-toolkit as published runs arch sd1 (no model.arch and no is_* flag, config_modules.py:799-821) with the "
                              "legacy StableDiffusion class (toolkit/util/get_model.py:44-50), which loads '" + brief_text(name) +
                              "' as a StableDiffusionPipeline (stable_diffusion_model.py:961-965)";
    if (g && g->at("arch") != "sd1") {
      arch = g->at("arch").get<std::string>();
      guessed_from = "the model path '" + brief_text(name) + "'";
      guess_warning = "model: " + loads + ", which is not that model's pipeline: predicted as the model the path names (a guess), "
                      "which ai-toolkit trains with `arch: " + arch + "` (" + g->at("source").get<std::string>() + ")";
    } else if (!g) {
      guessed_from = "ai-toolkit's default arch sd1 (no model.arch, no is_* flag; the path '" + brief_text(name) + "' names no model segadvise knows)";
      guess_warning = "model: " + loads + ": predicted as SD 1.x, ai-toolkit's default; if the path holds another model, write its arch";
    }
  }
  const Family& fam = choose_family(o, family_for_arch(facts, arch, name),
                                    path + ": model.arch '" + arch + "' (" + name + ") has no segadvise family");
  start_setup(r, fam, "ai-toolkit");
  r.setup.family_guessed_from = guessed_from;
  if (!guess_warning.empty()) r.warnings.push_back(guess_warning);
  warn_unknown_keys(y, p, facts, r);
  const TrainerFamily* tf = facts.find(fam);

  read_dtype(y, train, r);
  WeightKeys w;
  read_layer_offloading(y, model, tf, fam, w, r);
  read_quantizer(y, model, facts, w, r);
  read_training(y, train, network, r);
  read_shape(y, p, r, r.setup.batch);
  const YAML::Node datasets = p["datasets"];
  const nlohmann::json* fe = family_entry(facts, fam);
  read_experts(y, model, fe, r);
  read_control_images(y, datasets, fe, fam, r);
  read_kept_models(y, model, train, datasets, facts, fe, fam, w, r);
  read_accuracy_recovery_adapter(y, model, facts, fam, w, r);
  read_run(y, p, facts, r);
  return r;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& ai_toolkit_optimizers() {
  static const std::vector<std::pair<std::string, std::string>> t = {
      {"adamw", "adamw"},         {"adamw8bit", "adamw8bit"}, {"adam8bit", "adamw8bit"}, {"adafactor", "adafactor"},
      {"prodigy", "prodigy"},     {"lion", "lion"},           {"lion8bit", "bnb-lion8bit"}, {"sgd", "sgd"},
      {"automagic", "adafactor"}};
  return t;
}

// A node of another kind than the job's layout (a scalar where a mapping belongs, …) is an InputError
// naming the file and the line yaml-cpp reports, never a yaml-cpp exception.
TrainerRead read_ai_toolkit(const std::string& path, const TrainerReadOptions& o) {
  try {
    return read_ai_toolkit_job(path, o);
  } catch (const YAML::Exception& e) {
    throw InputError(path + (e.mark.is_null() ? std::string() : ":" + std::to_string(e.mark.line + 1)) +
                     ": not an ai-toolkit job as the trainer reads it (" + e.msg + ")");
  }
}

}  // namespace segadvise::readers
