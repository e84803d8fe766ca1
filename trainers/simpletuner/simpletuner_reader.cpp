// SimpleTuner config.json -> TrainingSetup + Schedule, as the trainer reads it.
// Every rule cites SimpleTuner bc8e6ab (sections as in docs/sources/simpletuner.md).
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/multi_gpu_config.hpp"
#include "segadvise/trainers/setup_rules.hpp"

#include <algorithm>
#include <map>

#include "segadvise/costmodel/constants.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include "simpletuner/simpletuner_parts.hpp"

namespace segadvise {

using nlohmann::ordered_json;
using namespace simpletuner;

namespace simpletuner {

std::string type_name(const ordered_json& v) { return v.type_name(); }

std::string value_str(const ordered_json& v) { return brief(v); }

bool digit_string(const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), ::isdigit); }

}  // namespace simpletuner

std::optional<bool> config_bool(const ordered_json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    std::transform(s.begin(), s.end(), s.begin(), ::tolower);
    if (s == "true" || s == "1" || s == "yes") return true;
    if (s == "false" || s == "0" || s == "no" || s.empty()) return false;
  }
  if (v.is_number_integer()) return v.get<long long>() != 0;
  return std::nullopt;
}

namespace {

// DEFAULT_MODEL_FLAVOUR per family (§3.1), used when a config leaves model_flavour unset
// (trainers/simpletuner/simpletuner.json).
const std::map<std::string, std::string>& default_flavours() { return simpletuner_facts().default_flavours; }

}  // namespace

ordered_json read_json_file(const std::string& path, const std::string& what) {
  return load_ordered_json_file(path, what);
}

namespace {

const Family& resolve_family(const Fields& cfg, const std::string& path, const std::string& model,
                             std::vector<std::string>& warnings) {
  // --model names the family (TrainerReadOptions::model); a model_family it differs from is overridden
  if (!model.empty()) {
    const Family& f = find_family(model);
    if (cfg.has("model_family") && lower(cfg.str("model_family", "")) != f.trainer_family)
      warnings.push_back(cfg.where("model_family") + ": '" + brief_text(cfg.str("model_family", "")) +
                         "' overridden by --model " + brief_text(model) + " (" + f.name + ")");
    return f;
  }
  // model_family is a required field (field_registry/sections/model.py:61-71, ValidationRule REQUIRED;
  // cmd_args.py:494-495 makes it a required argparse option): the trainer stops without it
  if (!cfg.has("model_family"))
    throw InputError(path + ": model_family: missing (SimpleTuner requires it: field_registry/sections/model.py:61-71); "
                     "pass --model FAMILY (segadvise list models) to name the model this config trains");
  const std::string mf = cfg.str("model_family", "");
  std::string flavour = cfg.str("model_flavour", "");
  if (mf == "infinitetalk") {
    // InfiniteTalk is Wan 2.1 I2V-14B with audio cross-attention adapters; it inherits Wan's
    // checkpointing and frame rule (§1.5, §3.2). The adapters are not in families/data.
    warnings.push_back(path + ": model_family infinitetalk is modelled as Wan 2.1 I2V 14B (its base): the audio "
                       "cross-attention adapters and audio encoder are not counted, so peak and time are lower bounds");
    return find_family_by_trainer("wan", "i2v-14b-2.1", path);
  }
  if (mf == "deepfloyd")
    throw InputError(cfg.where("model_family") +
                     ": deepfloyd is not modelled: DeepFloyd IF's U-Net channel widths are not in the references "
                     "(known: pixel space, T5-XXL capped at 77 tokens, flavour sizes I-M 400M, I-L 900M, I-XL 4.3B, II-M "
                     "450M, II-L 1.2B; DeepFloyd/IF-I-XL-v1.0 and IF-II-L-v1.0 model cards)");
  if (!flavour.empty()) return find_family_by_trainer(mf, flavour, path);
  const auto it = default_flavours().find(mf);
  if (it == default_flavours().end()) {
    const Family& f = find_family_by_trainer(mf, "", path);  // names the nearest families
    // a family only other trainers train (FramePack, HunyuanImage-2.1, the original HunyuanVideo): no
    // model class of SimpleTuner's registers that name
    if (!simpletuner_facts().family_aliases.count(lower(mf)))
      warnings.push_back(cfg.where("model_family") + ": '" + brief_text(mf) + "' is not a model_family SimpleTuner@bc8e6ab registers "
                         "(trainers/simpletuner/simpletuner.json default_flavours, from each models/<family>/model.py): "
                         "SimpleTuner has no model for it; predicted as " + f.name + ", which other trainers train");
    return f;
  }
  try {
    return find_family_by_trainer(mf, it->second, path);
  } catch (const InputError&) {
    const std::string pretrained = cfg.str("pretrained_model_name_or_path", "");
    if (pretrained.empty())
      throw InputError(path + ": model_flavour unset, so the trainer uses " + mf + "'s default flavour '" +
                       it->second + "', which is not modelled; set model_flavour to one that is (segadvise list models)");
    const Family& f = find_family_by_trainer(mf, "", path);
    warnings.push_back(path + ": model_flavour unset (the trainer's default '" + it->second +
                       "' is not modelled); pretrained_model_name_or_path '" + pretrained + "' taken as " + f.name);
    return f;
  }
}

// optimizer (§2.5): SimpleTuner names the cost model's table lacks are sized like one it has
// (trainers/simpletuner/simpletuner.json)
void read_optimizer(const Fields& cfg, TrainingSetup& s) {
  s.optimizer = cfg.str("optimizer", "adamw_bf16");
  const auto& kAlias = simpletuner_facts().optimizer_aliases;
  bool known = true;
  try {
    optimizer_info(s.optimizer);
  } catch (const InputError&) {
    known = false;
  }
  const auto it = kAlias.find(s.optimizer);
  if (known) {
    // the cost model sizes it itself
  } else if (it != kAlias.end()) {
    s.notes.push_back("optimizer " + s.optimizer + " sized as " + it->second.as + " (" + it->second.why + ")");
    s.optimizer = it->second.as;
  } else if (s.optimizer.rfind("adamw_schedulefree", 0) == 0) {
    s.notes.push_back("optimizer " + s.optimizer + " sized as adamw_schedulefree");
    s.optimizer = "adamw_schedulefree";
  }
  try {
    optimizer_info(s.optimizer);
  } catch (const InputError& e) {
    throw InputError(cfg.where("optimizer") + ": " + e.what());
  }
}

// base_model_precision, sdnq_use_hadamard and the combinations the trainer stops on
void read_precision(const Fields& cfg, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  std::string precision = cfg.str("base_model_precision", "no_change");
  try {
    if (precision_info(precision).backend == "ostris")  // ai-toolkit's quantizers, not a SimpleTuner choice
      throw InputError("'" + precision + "' is an ai-toolkit qtype (model.qtype), not a SimpleTuner base_model_precision");
  } catch (const InputError& e) {
    throw InputError(cfg.where("base_model_precision") + ": " + e.what());
  }
  if (precision == "bf16") precision = "no_change";
  // flavours whose checkpoint is already low precision (trainers/simpletuner/simpletuner-setup.json)
  const std::string flavour = cfg.str("model_flavour", "");
  for (const FlavourPrecision& f : flavour_precisions()) {
    if (precision != "no_change" || !f.matches(fam.trainer_family, flavour)) continue;
    if (!f.unless.empty() && cfg.boolean(f.unless, false)) continue;
    precision = f.precision;
    std::string note = f.note;
    const auto at = note.find("{flavour}");
    if (at != std::string::npos) note.replace(at, 9, flavour);
    s.notes.push_back(note);
  }
  s.base_precision = precision;
  const bool hadamard = cfg.boolean("sdnq_use_hadamard", false);
  if (hadamard && precision_info(precision).backend == "sdnq") s.sdnq_hadamard = true;
  else if (hadamard)
    r.warnings.push_back(cfg.where("sdnq_use_hadamard") + ": only used with an SDNQ base_model_precision (here " +
                         precision + "): ignored");
  s.trainer = "simpletuner";
  for (const auto& key : quantized_full_override_keys())
    if (cfg.boolean(key, false)) s.quantized_full_allowed = true;
  // the combinations the trainer stops on: the rule predict and advise apply too (setup_rules.hpp)
  for (auto& why : setup_rejections(fam, s)) r.rejections.push_back(std::move(why));
}

// training (§0 defaults: model_type full, lora_type standard, rank 16, adamw_bf16, bf16)
void read_training(const Fields& cfg, const std::string& path, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  s.model_type = parse_model_type(cfg.str("model_type", "full"), cfg.where("model_type"));
  if (!cfg.has("model_type")) r.warnings.push_back(path + ": model_type unset: the trainer's default is a full fine-tune");
  s.lora_type = parse_lora_type(cfg.str("lora_type", "standard"), cfg.where("lora_type"));
  const long long rank = cfg.integer("lora_rank", 16, -kMaxLoraRank, kMaxLoraRank);
  if (rank <= 0) throw InputError(cfg.where("lora_rank") + ": must be positive, got " + std::to_string(rank));
  s.lora_rank = static_cast<int>(rank);
  s.mixed_precision = cfg.str("mixed_precision", "bf16");
  if (s.mixed_precision != "bf16" && s.mixed_precision != "fp16" && s.mixed_precision != "no" && s.mixed_precision != "fp8")
    throw InputError(cfg.where("mixed_precision") + ": '" + brief_text(s.mixed_precision) + "' is not one of no, fp16, bf16, fp8");
  read_optimizer(cfg, s);
  read_precision(cfg, fam, r);
}

// LyCORIS (§2.4): the config file is read as the trainer hands it to the library. LoKr's size follows
// from its factors, full_matrix and linear_dim on the classes apply_preset targets, resolved against the
// family's module classes (resolve_lokr); what cannot be resolved keeps the estimate, with a warning.
void read_lycoris(const Fields& cfg, const std::string& path, const Family& fam, const TrainerReadOptions& opt, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  if (!cfg.has("lycoris_config"))
    throw InputError(path + ": lycoris_config: missing (lora_type lycoris needs the LyCORIS config file)");
  const std::string ly = resolve_config_path(
      fill_placeholders(cfg.str("lycoris_config", ""), model_family_name(cfg, fam), cfg.str("output_dir", "")),
      "lycoris_config", path, opt.cwd, &r.warnings);
  const ordered_json lj = read_json_file(ly, "lycoris_config");
  if (!lj.is_object()) throw InputError("lycoris_config '" + ly + "': expected an object, got " + type_name(lj));
  const Fields lf(lj, ly);
  if (!lf.has("algo")) throw InputError(ly + ": algo: missing (the trainer requires it)");
  LycorisPreset preset;
  preset.algo = lf.str("algo", "");
  auto factor_of = [](const Fields& f, const std::string& key, int def) {
    const long long v = f.integer(key, def, -1, kMaxModelDim);
    if (v == 0) throw InputError(f.where(key) + ": must be -1 (the most balanced factorization) or positive, got 0");
    return static_cast<int>(v);
  };
  preset.factor = factor_of(lf, "factor", -1);
  preset.full_matrix = lf.boolean("full_matrix", false);
  // the trainer reads linear_dim (default 4) and requires it unless full_matrix is set
  if (!preset.full_matrix && !lf.has("linear_dim"))
    throw InputError(ly + ": linear_dim: missing (the trainer requires it unless full_matrix is true)");
  preset.linear_dim = static_cast<int>(lf.integer("linear_dim", 4, 1, 1LL << 30));
  if (const ordered_json* ap = lf.get("apply_preset")) {
    if (!ap->is_object()) lf.bad("apply_preset", "an object");
    const Fields pf(*ap, ly + ": apply_preset");
    const ordered_json* tm = pf.get("target_module");
    const ordered_json* mam = pf.get("module_algo_map");
    if (mam && !mam->is_object()) pf.bad("module_algo_map", "an object");
    if (tm && !tm->is_array()) pf.bad("target_module", "a list of module class names");
    for (const ordered_json& name : tm ? *tm : ordered_json::array()) {
      if (!name.is_string()) throw InputError(pf.where("target_module") + ": expected class names, got " + value_str(name));
      const std::string cls = name.get<std::string>();
      int factor = preset.factor;
      if (mam && mam->contains(cls)) {
        const ordered_json& m = (*mam)[cls];
        if (!m.is_object()) throw InputError(pf.where("module_algo_map") + "." + cls + ": expected an object");
        factor = factor_of(Fields(m, pf.where("module_algo_map") + "." + cls), "factor", preset.factor);
      }
      preset.targets.push_back({cls, factor});
    }
  }
  std::vector<std::string> absent;
  const std::string why = resolve_lokr(fam, preset, s, absent);
  for (const std::string& cls : absent)
    s.notes.push_back(ly + ": target_module '" + cls + "' is no module class of " + fam.id +
                      "'s blocks: nothing adapted there");
  std::string shape;
  if (why.empty()) {
    auto part = [](int f) { return f == 0 ? std::string("not adapted") : f < 0 ? std::string("factor -1") : "factor " + std::to_string(f); };
    shape = ": attention " + part(s.lokr_attention_factor) + ", FFN " + part(s.lokr_ffn_factor) +
            (s.lokr_full_matrix ? ", full w2" : ", w2 rank " + std::to_string(s.lokr_linear_dim));
  }
  s.notes.push_back("LyCORIS " + preset.algo + shape + " (" + ly + ")");
  if (!why.empty())
    r.warnings.push_back(ly + ": " + why + ": trainable parameters are estimated as LoKr factor 16 on the family's "
                         "LoRA targets (small next to the base weights)");
}

// weight streaming (§2.6), EMA, attention and compilation
void read_streaming(const Fields& cfg, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  s.ramtorch = cfg.boolean("ramtorch", false);
  s.ramtorch_percent = cfg.number("ramtorch_transformer_percent", 100, -1e6, 1e6);
  if (s.ramtorch_percent < 0 || s.ramtorch_percent > 100)
    throw InputError(cfg.where("ramtorch_transformer_percent") + ": must be 0..100, got " + std::to_string(s.ramtorch_percent));
  const long long swap = cfg.integer("musubi_blocks_to_swap", 0, -kMaxBlocksToSwap, kMaxBlocksToSwap);
  if (swap < 0)
    r.rejections.push_back("musubi_blocks_to_swap " + std::to_string(swap) + ": negative, the trainer stops");
  s.blocks_to_swap = static_cast<int>(std::max(0LL, swap));
  const int max_swap = fam.checkpointing.max_swappable_blocks;
  if (max_swap > 0 && s.blocks_to_swap > max_swap) {
    r.warnings.push_back(cfg.where("musubi_blocks_to_swap") + ": " + std::to_string(s.blocks_to_swap) +
                         " is clamped by the trainer to " + std::to_string(max_swap));
    s.blocks_to_swap = max_swap;
  }
  s.group_offload = cfg.boolean("enable_group_offload", false);
  if (s.ramtorch && s.blocks_to_swap > 0)
    r.rejections.push_back("ramtorch with musubi_blocks_to_swap " + std::to_string(s.blocks_to_swap) +
                           ": the trainer exits (use one or the other)");
  if (s.ramtorch && s.group_offload)
    r.rejections.push_back("ramtorch with enable_group_offload: the trainer raises an error");
  s.use_ema = cfg.boolean("use_ema", false);
  s.ema_on_gpu = s.use_ema && cfg.str("ema_device", "cpu") == "accelerator";
  s.attention = cfg.str("attention_mechanism", "diffusers");
  s.regional_compile = cfg.boolean("dynamo_use_regional_compilation", false) &&
                       cfg.str("dynamo_backend", "inductor") != "no";
  if (s.attention.rfind("sageattention", 0) == 0) {
    const std::string usage = cfg.str("sageattention_usage", "inference");
    if (usage.find("train") == std::string::npos)
      r.warnings.push_back(cfg.where("attention_mechanism") + ": " + s.attention +
                           " applies to inference only unless sageattention_usage includes training");
  }
}

// schedule (§2.7, §4)
void read_schedule(const Fields& cfg, const Family& fam, TrainerRead& r) {
  Schedule& sc = r.schedule;
  sc.checkpointing = cfg.boolean("gradient_checkpointing", true);
  const long long interval = cfg.integer("gradient_checkpointing_interval", 0, -kMaxScheduleStep, kMaxScheduleStep);
  const long long stride = cfg.integer("gradient_checkpointing_segment_stride", 0, -kMaxScheduleStep, kMaxScheduleStep);
  if (cfg.has("gradient_checkpointing_interval") && interval <= 0)
    r.rejections.push_back("gradient_checkpointing_interval " + std::to_string(interval) + ": the trainer raises an error (must be >= 1)");
  if (cfg.has("gradient_checkpointing_segment_stride") && stride <= 0)
    r.rejections.push_back("gradient_checkpointing_segment_stride " + std::to_string(stride) +
                           ": the trainer raises an error (must be a positive integer)");
  if (interval == 1)
    r.warnings.push_back(cfg.where("gradient_checkpointing_interval") + ": 1 is treated as unset (every block checkpointed)");
  sc.interval = interval > 1 ? static_cast<int>(interval) : 0;
  sc.stride = stride > 0 ? static_cast<int>(stride) : 0;
  const std::string backend = cfg.str("gradient_checkpointing_backend", "torch");
  try {
    sc.backend = parse_backend(backend);
  } catch (const InputError&) {
    r.warnings.push_back(cfg.where("gradient_checkpointing_backend") + ": '" + backend +
                         "' is not a backend the trainer knows: it falls back to torch");
    sc.backend = Backend::Torch;
  }
  sc.offload_attention = cfg.boolean("gradient_checkpointing_offload_attention", false);
  if (sc.checkpointing && is_unsloth(sc.backend) && !fam.checkpointing.backend_setter) {
    // no setter: Diffusers' torch checkpoint runs, the key is a silent no-op (§3.2, inferred there)
    r.warnings.push_back(cfg.where("gradient_checkpointing_backend") + ": " + to_string(sc.backend) + " has no effect on " +
                         fam.name + " (no backend setter: torch checkpointing runs); predicted as " +
                         (is_ffn(sc.backend) ? "torch-ffn" : "torch"));
    sc.backend = is_ffn(sc.backend) ? Backend::TorchFfn : Backend::Torch;
  }
  if (!sc.checkpointing) {
    for (const char* k : {"gradient_checkpointing_interval", "gradient_checkpointing_segment_stride"})
      if (cfg.has(k)) r.warnings.push_back(cfg.where(k) + ": ignored, gradient_checkpointing is false");
    if (cfg.has("gradient_checkpointing_backend") && sc.backend != Backend::Torch)
      r.warnings.push_back(cfg.where("gradient_checkpointing_backend") + ": ignored, gradient_checkpointing is false");
    sc.interval = sc.stride = 0;
    sc.backend = Backend::Torch;
  }
  // On the segmented path blocks [kS, kS+N) form one checkpoint call, S the stride, N by default
  // (SimpleTuner's segmented checkpointing, checkpoint_sequential_state; docs/sources/simpletuner.md
  // §3.2): a stride equal to the interval is the plain interval, and is named so (advise writes interval
  // K with that stride, simpletuner_keys). On the per-block path a stride changes the blocks: kept.
  if (sc.checkpointing && sc.interval > 1 && sc.stride == sc.interval &&
      interval_path(fam, sc, r.setup).rule == IntervalRule::Segmented)
    sc.stride = 0;
  if (cfg.boolean("gradient_checkpointing_offload_attention_prefetch", false) && !sc.offload_attention)
    r.warnings.push_back(cfg.where("gradient_checkpointing_offload_attention_prefetch") +
                         ": turned off by the trainer without gradient_checkpointing_offload_attention");
}
}  // namespace

TrainerRead read_simpletuner_config(const std::string& path, const TrainerReadOptions& opt) {
  TrainerRead r;
  r.trainer = "simpletuner";
  r.config_path = path;
  // config.json, config.json.txt, config.env (current or legacy): the keys the trainer's parser gets
  ConfigFile file = load_config_file(path);
  // a legacy config.env naming no family: the legacy trainer's default, a guess (--model names it)
  const bool guessed = opt.model.empty() && !file.default_family.empty();
  if (guessed) file.keys["model_family"] = file.default_family;
  r.raw = std::move(file.keys);
  r.indent = file.indent;
  r.warnings = std::move(file.warnings);
  r.rejections = std::move(file.rejections);
  const Fields cfg(r.raw, path);
  for (const auto& d : cfg.duplicates)
    r.warnings.push_back(path + ": " + d + " is written both with and without `--`: the later one is used");

  const Family& fam = resolve_family(cfg, path, opt.model, r.warnings);
  for (const NotModelled& n : simpletuner_not_modelled())  // trainers/simpletuner/simpletuner-setup.json
    if (fam.trainer_family == n.model_family && cfg.str(n.key, "") == n.value) throw InputError(cfg.where(n.key) + ": " + n.why);
  r.family = &fam;
  r.run = read_run_setup(r.raw, path);
  TrainingSetup& s = r.setup;
  s = TrainingSetup{};
  s.model_id = fam.id;
  s.notes.clear();
  s.notes.push_back("from " + path);
  if (guessed)
    s.family_guessed_from = "the legacy train.sh's default " + file.default_family +
                            " (the config.env names no family: trainer.py:262-263 at SimpleTuner c1d20f5b)";
  read_training(cfg, path, fam, r);
  if (s.lora_type == LoraType::Lycoris && s.model_type == ModelType::Lora) read_lycoris(cfg, path, fam, opt, r);
  read_streaming(cfg, fam, r);
  read_schedule(cfg, fam, r);
  read_backends(cfg, path, fam, opt, r);
  const bool assumed = !s.shape_assumed_from.empty();  // the file is not on this machine (assume_backend)
  if (!assumed) apply_largest_backend(fam, r);
  read_multi_gpu_keys(r, opt.accelerate_config, opt.cwd);  // num_processes, fsdp_*, deepspeed_config, …
  r.inputs = {r.config_path};
  if (!assumed) r.inputs.push_back(r.data_backend_path);
  if (!assumed) r.shape_source = r.backends.front().note;
  return r;
}

}  // namespace segadvise
