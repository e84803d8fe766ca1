// ai-toolkit job YAML (config.process[0]: model, train, network, datasets), read as
// toolkit/config_modules.py reads it (facts: trainers/data/ai-toolkit.json).
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "segadvise/costmodel/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/families/analyzer.hpp"

namespace segadvise::readers {

namespace {

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
std::string resolve_arch(const Yaml& y, const YAML::Node& model) {
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
  return "sd1";
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

std::string precision_for_qtype(const TrainerFacts& facts, const std::string& qtype, const std::string& where) {
  std::string known;
  for (const auto& q : facts.raw.at("qtypes")) {
    if (q.at("qtype") == qtype) return q.at("precision").get<std::string>();
    known += (known.empty() ? "" : ", ") + q.at("qtype").get<std::string>();
  }
  throw InputError(where + ": qtype '" + qtype + "' has no segadvise precision (known: " + known + ")");
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

TrainerRead read_ai_toolkit_job(const std::string& path, const TrainerReadOptions& o) {
  const TrainerFacts& facts = trainer_facts("ai-toolkit");
  const YAML::Node root = load_yaml_file(path, "ai-toolkit config");
  const Yaml y{path};
  if (!root.IsMap())
    throw InputError(path + ": the top level is not a mapping (an ai-toolkit job has config: process: - {model: …, train: …})");
  const YAML::Node config = root["config"];
  if (config && !config.IsMap())
    throw InputError(path + ": config: not a mapping (an ai-toolkit job has config: process: - {model: …, train: …})");
  const YAML::Node process = config ? config["process"] : YAML::Node();
  if (!process || !process.IsSequence() || process.size() == 0)
    throw InputError(path + ": config.process: missing or not a list (an ai-toolkit job has config: process: - {model: …, train: …})");
  TrainerRead r;
  r.trainer = "ai-toolkit";
  r.config_path = path;
  r.inputs = {path};
  const YAML::Node p = process[0];
  if (process.size() > 1) r.warnings.push_back("config.process has " + std::to_string(process.size()) + " entries: the first is read");
  const YAML::Node model = p["model"], train = p["train"] ? p["train"] : YAML::Node(YAML::NodeType::Map),
                   network = p["network"];
  if (!model || !model.IsMap()) throw InputError(path + ": config.process[0].model: missing (model.name_or_path is required, config_modules.py:628)");
  const std::string name = y.get<std::string>(model, "name_or_path", "", "model.name_or_path");
  if (name.empty()) throw InputError(y.where(model, "model.name_or_path") + ": missing (required, config_modules.py:628)");
  const std::string arch = resolve_arch(y, model);
  const Family& fam = choose_family(o, family_for_arch(facts, arch, name),
                                    path + ": model.arch '" + arch + "' (" + name + ") has no segadvise family");
  start_setup(r, fam, "ai-toolkit");
  const TrainerFamily* tf = facts.find(fam);
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

  // weight offloading: only where the model class attaches the MemoryManager
  bool offload = y.get<bool>(model, "layer_offloading", y.get<bool>(model, "auto_memory", false, "model.auto_memory"), "model.layer_offloading");
  const double pct = y.get<double>(model, "layer_offloading_transformer_percent", 1.0, "model.layer_offloading_transformer_percent");
  if (pct < 0 || pct > 1)
    throw InputError(y.where(model["layer_offloading_transformer_percent"], "model.layer_offloading_transformer_percent") + ": " + std::to_string(pct) + " is not within 0..1");
  const bool offload_acts = offload && tf && tf->layer_offloading;
  if (offload && !offload_acts)
    r.warnings.push_back("model.layer_offloading does nothing on " + fam.name + " (" + (tf ? tf->source : "not in ai-toolkit's attach list") + "): predicted without it");
  if (offload_acts && pct > 0) {
    s.ramtorch = true;
    s.ramtorch_percent = pct * 100;
  }

  // quantizer: qfloat8 (quanto) unless layer_offloading rewrites it to float8 = torchao (config_modules.py:714-715)
  if (y.get<bool>(model, "quantize", false, "model.quantize")) {
    std::string qtype = y.get<std::string>(model, "qtype", "qfloat8", "model.qtype");
    qtype = qtype.substr(0, qtype.find('|'));
    if (offload && qtype == "qfloat8") {
      qtype = "float8";
      r.warnings.push_back("model.qtype qfloat8 with layer_offloading is rewritten to float8: torchao Float8WeightOnlyConfig, not quanto (config_modules.py:714-715)");
    }
    s.base_precision = precision_for_qtype(facts, qtype, y.where(model, "model.qtype"));
  }

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
  const std::map<std::string, std::string> opts = {{"adamw", "adamw"}, {"adamw8bit", "adamw8bit"}, {"adam8bit", "adamw8bit"},
                                                   {"adafactor", "adafactor"}, {"prodigy", "prodigy"}, {"lion", "lion"},
                                                   {"lion8bit", "bnb-lion8bit"}, {"sgd", "sgd"}, {"automagic", "adafactor"}};
  s.optimizer = optimizer_for(lower(y.get<std::string>(train, "optimizer", "adamw", "train.optimizer")), opts, r.warnings, path + ": train.optimizer");
  if (train["ema_config"] && train["ema_config"].IsMap()) s.use_ema = y.get<bool>(train["ema_config"], "use_ema", false, "train.ema_config.use_ema");
  if (y.get<bool>(model, "low_vram", false, "model.low_vram"))
    r.warnings.push_back("model.low_vram keeps the text side on the CPU while quantizing: not modelled (the transformer's memory is unchanged)");
  read_shape(y, p, r, s.batch);
  return r;
}

}  // namespace

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
