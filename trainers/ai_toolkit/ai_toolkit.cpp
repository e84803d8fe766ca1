// ai-toolkit's component (trainer.hpp): its knob combinations for a family (ai-toolkit.json), the job
// YAML it reads, what is left to set by hand, and its job written back.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>

#include "common/trainer_parts.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

using nlohmann::ordered_json;
using namespace plans;

namespace {

std::vector<KnobCombo> ai_toolkit(const TrainerFacts& facts, const TrainerFamily& tf, const TrainingSetup& user,
                                  std::vector<std::string>& notes) {
  const FieldReader plans = plans_of(facts);
  std::string qtype = plans.str("qtype", "", true);
  const std::string qtype_offloaded_default = plans.str("qtype_with_layer_offloading", "", true);
  // the user's precision when ai-toolkit has it (int8-quanto -> qint8, int8-torchao -> int8, …), else
  // the qtype storing the nearest bytes per weight (qfloat8 on a tie)
  if (quantized(user)) {
    const double want = precision_info(user.base_precision).bytes_per_param;
    double best = 1e9;
    for (const auto& e : facts.raw.at("qtypes")) {
      const std::string p = e.at("precision").get<std::string>();
      const PrecisionInfo pi = precision_info(p);
      if (!pi.quantized) continue;
      const double d = p == user.base_precision ? -1 : std::abs(pi.bytes_per_param - want);
      if (d < best - 1e-9 || (std::abs(d - best) < 1e-9 && e.at("qtype") == plans.str("qtype", "", true))) {
        best = d;
        qtype = e.at("qtype").get<std::string>();
      }
    }
  }
  // layer offloading rewrites only qfloat8 (to torchao float8, config_modules.py:714-715)
  const std::string qtype_offloaded = qtype == plans.str("qtype", "", true) ? qtype_offloaded_default : qtype;
  const std::string q_precision = precision_for(facts, "qtypes", "qtype", qtype);
  const std::string q_offloaded_precision = precision_for(facts, "qtypes", "qtype", qtype_offloaded);
  const nlohmann::json* fe = nullptr;
  for (const auto& e : facts.raw.at("families"))
    if (e.at("family") == tf.family) fe = &e;
  TrainingSetup base = plain(user);
  // the emitted job caches latents and text embeddings (datasets[].cache_latents_to_disk,
  // cache_text_embeddings): neither the VAE nor the text encoder stays on the GPU (SDTrainer.py)
  base.kept_model_bytes = 0;
  base.kept_models.clear();
  if (fe && fe->value("experts", 1) > 1) {
    base.experts = fe->value("experts", 1);
    if (base.trained_experts <= 0) base.trained_experts = base.experts;
  } else {
    base.experts = 1;
    base.trained_experts = 0;
  }
  if (fe && fe->value("control_in_sequence", false)) base.reference_images = std::max(1, base.reference_images);
  else base.reference_images = 0;
  base.mixed_precision = "bf16";  // train.dtype bf16 is emitted
  const bool q = quantized(user);
  std::vector<int> pcts = {0};
  if (tf.layer_offloading) {
    pcts.clear();
    for (const double p : numbers(plans, "layer_offloading_percents", 0, 100)) pcts.push_back(static_cast<int>(p));
  }
  else notes.push_back("model.layer_offloading does nothing on this family in ai-toolkit (" + tf.source + "): not offered");
  if (q && tf.layer_offloading) notes.push_back("quantizer: model.qtype qfloat8 is optimum-quanto; with layer_offloading ai-toolkit uses float8 = torchao "
                         "Float8WeightOnlyConfig instead (config_modules.py:714-715), and the emitted qtype says so");
  // the user's optimizer, which the plan is predicted with (train.optimizer, default adamw,
  // config_modules.py:387: a full fine-tune's adafactor state is a quarter of AdamW's); its first
  // ai-toolkit name, unwritten where that is the default
  std::string optimizer;
  for (const auto& [name, ours] : readers::ai_toolkit_optimizers())
    if (ours == user.optimizer) {
      if (name != "adamw") optimizer = name;
      break;
    }
  std::vector<KnobCombo> out;
  // two experts: the idle one on the GPU, or on the CPU with model.low_vram (wan22_14b_model.py)
  const int low_vram_options = base.experts > 1 ? 2 : 1;
  for (int lv = 0; lv < low_vram_options; ++lv)
  for (int gc = 0; gc < 2; ++gc)
    for (int pct : pcts) {
      KnobCombo c;
      c.setup = base;
      if (base.experts > 1) {
        c.setup.idle_experts_on_host = lv == 1;
        c.knobs["model.low_vram"] = lv == 1;
      }
      c.knobs["train.dtype"] = "bf16";  // default fp32 (config_modules.py:395)
      if (!optimizer.empty()) c.knobs["train.optimizer"] = optimizer;
      if (base.use_ema) c.knobs["train.ema_config.use_ema"] = true;  // the EMA it is predicted with (default off)
      c.knobs["train.gradient_checkpointing"] = gc == 1;
      // the plan keeps neither the text encoder nor the VAE on the GPU (kept_model_bytes 0): both
      // caches on (config_modules.py:564-566, 1004-1006); "datasets[].K" is K on every dataset
      // a job that unloads its text encoder (train.unload_text_encoder, trigger-word training) keeps
      // that key: caching the captions' embeddings instead would change what it trains
      if (user.text_encoder_unloaded) c.knobs["train.unload_text_encoder"] = true;
      else c.knobs["train.cache_text_embeddings"] = true;
      c.knobs["datasets[].cache_latents_to_disk"] = true;
      c.setup.quantize_all_block_linears = q;  // quantize_model converts every Linear of a block (quantize.py)
      if (q) {
        c.knobs["model.quantize"] = true;
        c.knobs["model.qtype"] = pct > 0 ? qtype_offloaded : qtype;
        c.setup.base_precision = pct > 0 ? q_offloaded_precision : q_precision;
      } else {
        c.setup.base_precision = "no_change";
      }
      if (pct > 0) {
        c.knobs["model.layer_offloading"] = true;
        c.knobs["model.layer_offloading_transformer_percent"] = pct / 100.0;
        c.setup.ramtorch = true;
        c.setup.ramtorch_percent = pct;
      }
      c.schedule = sched(gc == 1);
      c.label = std::string(gc ? "gradient checkpointing" : "no checkpointing") + (pct > 0 ? ", " + std::to_string(pct) + "% of layers offloaded" : "") +
                (base.experts > 1 && lv == 1 ? ", low_vram (idle expert on the CPU)" : "");
      out.push_back(c);
    }
  if (q) note_precision(user, q_precision, "ai-toolkit", notes);
  if (user.text_encoder_unloaded)
    notes.push_back("the ai-toolkit job caches latents (datasets[].cache_latents_to_disk) and keeps train.unload_text_encoder: the VAE "
                    "and the text encoder leave the GPU before training, which runs on the trigger word alone (SDTrainer.py hook_before_train_loop)");
  else
    notes.push_back("the ai-toolkit job caches latents and text embeddings (datasets[].cache_latents_to_disk, cache_text_embeddings): "
                    "the VAE and the text encoder leave the GPU before training (SDTrainer.py hook_before_train_loop)");
  return out;
}

void yaml_scalar(std::ostringstream& o, const ordered_json& v) {
  if (v.is_string()) o << '"' << v.get<std::string>() << '"';
  else o << v.dump();
}

// The knobs under `section.` ("train.ema_config.use_ema" -> ema_config: {use_ema: …}) as YAML block
// mappings, `indent` spaces in
void yaml_section(std::ostringstream& o, const ordered_json& knobs, const std::string& section, int indent) {
  ordered_json tree = ordered_json::object();
  for (auto it = knobs.begin(); it != knobs.end(); ++it)
    if (it.key().rfind(section + ".", 0) == 0) set_dotted_key(tree, it.key().substr(section.size() + 1), it.value());
  const std::function<void(const ordered_json&, int)> write = [&](const ordered_json& j, int in) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      o << std::string(in, ' ') << it.key() << ":";
      if (it.value().is_object()) {
        o << "\n";
        write(it.value(), in + 2);
      } else {
        o << " ";
        yaml_scalar(o, it.value());
        o << "\n";
      }
    }
  };
  write(tree, indent);
}

std::string ai_toolkit_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  // model.arch always: without it ai-toolkit runs sd1 (config_modules.py:799-821); the name where the
  // arch alone does not decide the model (a placeholder that names it, e.g. Wan 2.1 14B vs 1.3B)
  std::string arch, name = "/path/to/model";
  for (const auto& e : facts.raw.at("families")) {
    if (e.at("family") != fam.id) continue;
    arch = e.contains("emit_arch") ? e.at("emit_arch").get<std::string>() : e.at("arch").at(0).get<std::string>();
    if (e.contains("name_or_path")) name = e.at("name_or_path").get<std::string>();
    break;
  }
  std::ostringstream o;
  o << "job: extension\nconfig:\n  name: \"segadvise_plan\"\n  process:\n    - type: \"sd_trainer\"\n      model:\n"
    << "        name_or_path: \"" << name << "\"\n";
  if (!arch.empty()) o << "        arch: \"" << arch << "\"\n";
  yaml_section(o, c.knobs, "model", 8);
  o << "      train:\n        batch_size: " << s.batch << "\n";
  yaml_section(o, c.knobs, "train", 8);
  bool samples = false;  // the sample size a job's run is predicted with (its prompts are the user's)
  for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it) samples |= it.key().rfind("sample.", 0) == 0;
  if (samples) {
    o << "      sample:\n";
    yaml_section(o, c.knobs, "sample", 8);
  }
  if (s.model_type == ModelType::Lora)
    o << "      network:\n        type: \"lora\"\n        linear: " << s.lora_rank << "\n        linear_alpha: " << s.lora_rank << "\n";
  o << "      datasets:\n        - folder_path: \"/path/to/images\"\n          resolution: [" << square_edge_for_area(s.width, s.height) << "]\n"
    << "          cache_latents_to_disk: true\n";
  if (!c.knobs.contains("train.unload_text_encoder")) o << "          cache_text_embeddings: true\n";
  if (s.reference_images > 0) {
    if (s.reference_images == 1) o << "          control_path: \"/path/to/control_images\"\n";
    else
      for (int i = 1; i <= std::min(3, s.reference_images); ++i) o << "          control_path_" << i << ": \"/path/to/control_images_" << i << "\"\n";
  }
  if (fam.modality == "video") o << "          num_frames: " << s.frames << "\n";
  return o.str();
}

YAML::Node to_yaml(const ordered_json& v) {
  if (v.is_boolean()) return YAML::Node(v.get<bool>());
  if (v.is_number_integer()) return YAML::Node(v.get<long>());
  if (v.is_number()) return YAML::Node(v.get<double>());
  YAML::Node n(scalar_text(v));
  n.SetTag("!");  // a string: written quoted (emit_yaml)
  return n;
}

// `n` as yaml-cpp read it, with each scalar that was quoted in the file quoted again (its tag "!"):
// a plain emit writes version: '1.0' back as the float 1.0 and name: "1e3" as a number
void emit_yaml(YAML::Emitter& e, const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map:
      if (n.Style() == YAML::EmitterStyle::Flow) e << YAML::Flow;
      e << YAML::BeginMap;
      for (const auto& kv : n) {
        e << YAML::Key;
        emit_yaml(e, kv.first);
        e << YAML::Value;
        emit_yaml(e, kv.second);
      }
      e << YAML::EndMap;
      break;
    case YAML::NodeType::Sequence:
      if (n.Style() == YAML::EmitterStyle::Flow) e << YAML::Flow;
      e << YAML::BeginSeq;
      for (const auto& x : n) emit_yaml(e, x);
      e << YAML::EndSeq;
      break;
    case YAML::NodeType::Scalar:
      if (n.Tag() == "!") e << YAML::DoubleQuoted;
      e << n.Scalar();
      break;
    default:
      e << YAML::Null;
  }
}

Rewritten rewrite_yaml(const TrainerRead& r, const ordered_json& knobs) {
  YAML::Node root = load_yaml_file(r.config_path, "config");
  YAML::Node p = root["config"]["process"][0];
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    const std::string& k = it.key();
    const auto dot = k.find('.');
    if (dot == std::string::npos) continue;
    if (k.substr(0, dot) == "datasets[]") {  // datasets[].K: K on every dataset of the process
      YAML::Node ds = p["datasets"];
      if (!ds.IsSequence()) continue;
      for (std::size_t i = 0; i < ds.size(); ++i) {
        YAML::Node d = ds[i];
        if (it.value().is_null()) d.remove(k.substr(dot + 1));
        else d[k.substr(dot + 1)] = to_yaml(it.value());
      }
      continue;
    }
    // section.key or section.sub.key (train.ema_config.use_ema): the mappings on the way are made
    YAML::Node at = p;
    std::string rest = k;
    for (std::size_t d = rest.find('.'); d != std::string::npos; d = rest.find('.')) {
      const std::string part = rest.substr(0, d);
      if (it.value().is_null() && !(at[part] && at[part].IsMap())) break;
      at.reset(at[part]);  // rebinds (operator= would overwrite the node it refers to)
      rest = rest.substr(d + 1);
    }
    if (rest.find('.') != std::string::npos) continue;  // nothing to remove
    if (it.value().is_null()) at.remove(rest);
    else at[rest] = to_yaml(it.value());
  }
  YAML::Emitter e;
  emit_yaml(e, root);
  Rewritten out;
  out.text = std::string("---\n") + e.c_str() + "\n";
  out.notes.push_back("yaml-cpp does not keep comments: the written job has none of the original's comments (keys and values are kept)");
  return out;
}

class AiToolkit final : public FactsTrainer {
 public:
  AiToolkit() : FactsTrainer("ai-toolkit") {}
  bool detects(const std::string& path) const override {
    const std::string ext = extension(path);
    return ext == ".yaml" || ext == ".yml";
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return ai_toolkit_text(*facts(), fam, c); }
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    return rewrite_yaml(r, rewrite_knobs(r, knobs));
  }
  std::vector<std::string> manual_steps(const Family&) const override {
    return {"model.name_or_path (the emitted one names the model ai-toolkit downloads; model.arch is set)", "datasets[].folder_path", "config.name, training_folder",
            "train.steps, train.lr", "the sample section"};
  }
  // train.unload_text_encoder goes where the plan caches the embeddings instead (a family whose text
  // encoder encodes the control images stops on it, config_modules.py:1502-1504)
  nlohmann::ordered_json memory_knobs(const TrainerRead&, const nlohmann::ordered_json& plan) const override {
    nlohmann::ordered_json k = knobs_of(plan, {"train.gradient_checkpointing", "train.dtype", "model.layer_offloading",
                                               "model.layer_offloading_transformer_percent", "train.cache_text_embeddings",
                                               "datasets[].cache_latents_to_disk", "train.unload_text_encoder"});
    if (plan.contains("model.quantize")) k["model.quantize"] = plan.at("model.quantize");
    if (plan.contains("model.qtype")) k["model.qtype"] = plan.at("model.qtype");
    if (plan.contains("model.low_vram")) k["model.low_vram"] = plan.at("model.low_vram");
    if (!plan.contains("model.layer_offloading")) k["model.layer_offloading"] = false;
    return k;
  }

 protected:
  TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const override {
    return readers::read_ai_toolkit(path, o);
  }
  std::vector<KnobCombo> combos(const TrainerFamily& tf, const TrainingSetup& base,
                                std::vector<std::string>& notes) const override {
    return ai_toolkit(*facts(), tf, base, notes);
  }

 public:
  // An unquantized job that does not fit: model.quantize with the default qtype (qfloat8; float8 with
  // layer offloading, config_modules.py:687, 714-715) is ai-toolkit's next knob
  std::vector<KnobCombo> fallback_space(const Family& fam, const TrainingSetup& base,
                                        std::vector<std::string>& notes) const override {
    if (quantized(base) || !facts()->find(fam)) return {};
    TrainingSetup q = base;
    const std::string qtype = plans_of(*facts()).str("qtype", "", true);
    q.base_precision = precision_for(*facts(), "qtypes", "qtype", qtype);
    std::vector<std::string> scratch;  // the quantized plans' own notes repeat the unquantized ones
    std::vector<KnobCombo> out = knob_space(fam, q, scratch);
    for (auto& c : out) c.label = "model.quantize (" + c.knobs.value("model.qtype", qtype) + "), " + c.label;
    notes.push_back("nothing fits with confidence at the job's precision: ai-toolkit's model.quantize (qtype " + qtype +
                    ", float8 with layer_offloading) is searched too");
    return out;
  }
};

}  // namespace

const Trainer& ai_toolkit_trainer() {
  static const AiToolkit t;
  return t;
}

}  // namespace segadvise
