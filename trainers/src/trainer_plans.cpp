// The five trainers' components (trainer.hpp): what each offers for memory (its knob combinations,
// from trainers/data/<id>.json where a knob depends on the family), the config lines it reads, what
// is left to set by hand, its plan, and the registry.
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_plans.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <cmath>
#include <sstream>

#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/phases.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/setup_rules.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"

namespace segadvise {

using nlohmann::ordered_json;

namespace {

Schedule sched(bool ck, Backend b = Backend::Torch) {
  Schedule s;
  s.checkpointing = ck;
  s.backend = b;
  return s;
}

TrainingSetup plain(const TrainingSetup& base) {
  TrainingSetup s = base;
  s.sdnq_hadamard = false;
  s.ramtorch = false;
  s.ramtorch_percent = 100;
  s.blocks_to_swap = 0;
  s.group_offload = false;
  s.quantize_all_block_linears = false;  // ai-toolkit's quantizer coverage: set by its own plan only
  s.adapter_weight_bytes = 0;            // OneTrainer's lora_weight_dtype: set by its own plan only
  s.weight_storage_bytes = 0;            // float32 weights under autocast: set by a plan that writes them
  return s;
}

bool quantized(const TrainingSetup& s) { return precision_info(s.base_precision).quantized; }

// The grid and mappings segadvise plans a trainer with: the "plans" object of trainers/data/<id>.json.
FieldReader plans_of(const TrainerFacts& facts) {
  return FieldReader{facts.raw, facts.origin, ""}.sub("plans", true);
}

std::vector<double> numbers(const FieldReader& r, const std::string& field, double lo, double hi) {
  const nlohmann::json* v = r.get(field, true);
  if (!v->is_array() || v->empty()) r.fail(field, "must be a non-empty list of numbers");
  std::vector<double> out;
  for (const auto& x : *v) out.push_back(checked_number(x, r.where(field), lo, hi));
  return out;
}

// The segadvise precision a trainer's own value maps to (`table`: a list of {key: value, "precision": p}).
std::string precision_for(const TrainerFacts& facts, const char* table, const char* key, const std::string& value) {
  for (const auto& e : facts.raw.at(table))
    if (e.at(key) == value) return e.at("precision").get<std::string>();
  throw InputError(facts.origin + ": " + table + " has no " + key + " '" + value + "'");
}

void note_precision(const TrainingSetup& user, const std::string& as, const std::string& trainer, std::vector<std::string>& notes) {
  if (user.base_precision == as || (!quantized(user) && as == "no_change")) return;
  notes.push_back("the base precision " + precision_key(user) + " has no equivalent in " + trainer + ": predicted with " +
                  (as == "no_change" ? std::string("a bf16 base") : as) + " (its nearest knob)");
}

std::vector<KnobCombo> musubi(const TrainerFacts& facts, const TrainerFamily& tf, const TrainingSetup& user,
                              std::vector<std::string>& notes) {
  const FieldReader plans = plans_of(facts);
  TrainingSetup base = plain(user);
  base.mixed_precision = "bf16";  // --mixed_precision bf16 is emitted
  const nlohmann::json* fe = nullptr;
  for (const auto& e : facts.raw.at("families"))
    if (e.at("family") == tf.family) fe = &e;
  // a full fine-tune where the family has musubi's full fine-tune script (qwen_image_train.py,
  // zimage_train.py): the DiT trains in bf16 with --full_bf16 (else float32), no fp8 base, Adafactor's
  // fused backward pass searched below; elsewhere the *_train_network.py scripts train a LoRA
  std::string full_script;
  if (user.model_type == ModelType::Full && fe && fe->contains("full_finetune_scripts") && !fe->at("full_finetune_scripts").empty())
    full_script = fe->at("full_finetune_scripts").at(0).get<std::string>();
  const bool full = !full_script.empty();
  const bool fp8_ignored = fe && fe->value("fp8_base_ignored", false);
  const bool fp8 = quantized(user) && !fp8_ignored && !full;
  if (quantized(user) && fp8_ignored)
    notes.push_back("musubi-tuner's script for this model ignores --fp8_base and has no --fp8_scaled (" + tf.source + "): planned with bf16 weights");
  base.base_precision = fp8 ? plans.str("fp8_base_precision", "", true) : "no_change";
  if (!fp8_ignored) note_precision(user, base.base_precision, "musubi-tuner", notes);
  // two DiTs (Wan 2.2): both on the GPU, or the idle one on the CPU with --offload_inactive_dit, which
  // musubi refuses with block swap (wan_train_network.py:82-86)
  const bool two_dits = fe && fe->value("second_dit", false) && base.experts > 1;
  if (two_dits) base.idle_experts_on_host = false;
  // a full fine-tune trains the DiT in bf16 with --full_bf16 (the user's, or a bf16 setup's), else in
  // float32 under --mixed_precision bf16's autocast (zimage_train.py:106-107)
  const bool full_bf16 = full && user.mixed_precision == "bf16" && user.weight_storage_bytes <= 0;
  if (full && !full_bf16) base.weight_storage_bytes = 4;
  // the user's optimizer where musubi has it (--optimizer_type; its default adamw unwritten)
  std::string optimizer_type;
  for (const auto& [name, ours] : readers::musubi_optimizers())
    if (ours == user.optimizer) {
      if (name != "adamw") optimizer_type = name;
      break;
    }
  if (optimizer_type.empty() && user.optimizer != "adamw")
    notes.push_back("the optimizer " + user.optimizer + " has no musubi-tuner --optimizer_type: predicted with its default AdamW");
  if (optimizer_type.empty()) base.optimizer = "adamw";
  if (fe && fe->value("control_in_sequence", false)) base.reference_images = std::max(1, base.reference_images);
  base.kept_model_bytes = 0;  // musubi caches latents and text-encoder outputs before training (a separate step)
  base.kept_models.clear();
  std::vector<int> swaps = {0};
  const int max = tf.blocks_to_swap_max;
  if (max > 0) {
    swaps.clear();
    for (const double q : numbers(plans, "blocks_to_swap_quarters", 0, 4)) swaps.push_back(static_cast<int>(q) * max / 4);
  } else notes.push_back("musubi-tuner's block-swap maximum for this model is not recorded: block swap is not offered");
  swaps.erase(std::unique(swaps.begin(), swaps.end()), swaps.end());
  std::vector<KnobCombo> out;
  // Adafactor's --fused_backward_pass on a full fine-tune: each gradient applied and freed as it is
  // produced (about one layer's resident), searched on and off
  const bool fused_search = full && base.optimizer == "adafactor";
  for (int fused = 0; fused < (fused_search ? 2 : 1); ++fused)
  for (int idle_off = 0; idle_off < (two_dits ? 2 : 1); ++idle_off)
  for (int gc = 0; gc < 3; ++gc)
    for (int n : swaps) {
      if (idle_off && n > 0) continue;
      KnobCombo c;
      // --task picks the model config (wan_train_network.py:723, default t2v-14B: Wan 1.3B needs it)
      if (!tf.tasks.empty()) c.knobs["task"] = tf.tasks.front();
      if (two_dits) c.knobs["dit_high_noise"] = "/path/to/high_noise_dit.safetensors";
      if (idle_off) c.knobs["offload_inactive_dit"] = true;
      c.knobs["sdpa"] = true;  // one attention flag is required (trainer_base.py:1513)
      c.knobs["mixed_precision"] = "bf16";
      if (full_bf16) c.knobs["full_bf16"] = true;
      if (!optimizer_type.empty()) c.knobs["optimizer_type"] = optimizer_type;
      if (fused_search) c.knobs["fused_backward_pass"] = fused == 1;
      c.knobs["gradient_checkpointing"] = gc >= 1;
      if (gc == 2) c.knobs["gradient_checkpointing_cpu_offload"] = true;
      if (n > 0) c.knobs["blocks_to_swap"] = n;
      if (fp8) {
        c.knobs["fp8_base"] = true;
        if (!(fe && fe->value("no_fp8_scaled", false))) c.knobs["fp8_scaled"] = true;
      }
      if (base.model_type == ModelType::Lora) c.knobs["network_dim"] = base.lora_rank;
      c.setup = base;
      if (!full) c.setup.model_type = ModelType::Lora;
      c.setup.idle_experts_on_host = idle_off == 1;
      c.setup.fused_back_pass = fused == 1;
      c.setup.blocks_to_swap = musubi_swapped_chain_blocks(tf, n);
      c.schedule = sched(gc >= 1, gc == 2 ? Backend::Unsloth : Backend::Torch);
      c.label = gc == 0 ? "no checkpointing" : gc == 1 ? "gradient checkpointing" : "checkpointing + CPU offload";
      if (n > 0) c.label += ", --blocks_to_swap " + std::to_string(n);
      if (idle_off) c.label += ", --offload_inactive_dit";
      if (fused) c.label += ", --fused_backward_pass";
      out.push_back(c);
    }
  if (full)
    notes.push_back("a full fine-tune: " + full_script + (full_bf16 ? " with --full_bf16" : " (float32 weights under bf16 autocast: no --full_bf16)") +
                    (fused_search ? "; Adafactor's --fused_backward_pass searched" : "; --fused_backward_pass patches Adafactor only: not offered"));
  else if (user.model_type == ModelType::Full) notes.push_back("musubi-tuner's *_train_network.py scripts train a LoRA: planned as LoRA rank " + std::to_string(base.lora_rank));
  return out;
}

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

// BFLOAT_16 explicitly for an unquantized base: a part's default is FLOAT_32
std::string onetrainer_dtype(const TrainerFacts& facts, const TrainingSetup& user, std::string& precision) {
  // a quantized precision OneTrainer has a DataType for (INT_8, FLOAT_W8A8, …) stays that DataType
  if (quantized(user))
    for (const auto& e : facts.raw.at("weight_dtypes"))
      if (e.at("precision") == user.base_precision) {
        precision = user.base_precision;
        return e.at("dtype").get<std::string>();
      }
  const FieldReader plans = plans_of(facts);
  const std::string dtype = plans.str(user.base_precision == "nf4-bnb" ? "weight_dtype_nf4"
                                      : quantized(user)                ? "weight_dtype_quantized"
                                                                       : "weight_dtype_unquantized",
                                      "", true);
  precision = precision_for(facts, "weight_dtypes", "dtype", dtype);
  return dtype;
}

// The OneTrainer name of a segadvise optimizer (its "optimizers" table), "" when none maps to it.
std::string onetrainer_optimizer(const TrainerFacts& facts, const std::string& optimizer) {
  for (auto it = facts.raw.at("optimizers").begin(); it != facts.raw.at("optimizers").end(); ++it)
    if (it.value() == optimizer) return it.key();
  return "";
}

// The models kept beside the denoiser (TrainingSetup::kept_models, ", "-separated) less the VAE's entry
std::string without_vae(const std::string& kept) {
  std::string out;
  for (std::size_t b = 0; b < kept.size();) {
    const std::size_t e = std::min(kept.find(", ", b), kept.size());
    const std::string item = kept.substr(b, e - b);
    if (item.rfind("VAE", 0) != 0) out += (out.empty() ? "" : ", ") + item;
    b = e + 2;
  }
  return out;
}

// OneTrainer's memory knobs for the family's denoiser part: checkpointing, offload_fraction (by bytes),
// activation offloading, and for a full fine-tune the fused back pass. Every plan caches latents and
// leaves the text encoders untrained (the text encoders then leave the GPU, setup_train_device) and
// never offloads without checkpointing (OneTrainer raises NotImplementedError, checkpointing_util.py:154).
std::vector<KnobCombo> onetrainer(const TrainerFacts& facts, const Family& fam, const TrainerFamily& tf,
                                  const TrainingSetup& user, std::vector<std::string>& notes) {
  TrainingSetup base = plain(user);
  base.mixed_precision = "bf16";  // train_dtype BFLOAT_16 is emitted, and the part's weight_dtype (plain: no FLOAT_32 storage)
  // the adapters in lora_weight_dtype: a OneTrainer config's own (its key carried as read), else the
  // FLOAT_32 default the emitted file leaves unset (TrainConfig.py:1236)
  base.adapter_weight_bytes = user.adapter_weight_bytes > 0 ? user.adapter_weight_bytes
                                                            : readers::onetrainer_adapter_bytes(facts, "", facts.origin + ": lora_weight_dtype");
  base.layer_offload_fraction = 0;
  base.fused_back_pass = false;
  // text encoders untrained, latents cached: nothing beside the denoiser; an embedding (textual
  // inversion) trains through the text encoders, which OneTrainer keeps on the GPU: what it keeps
  // stays as read, latent caching as the user has it
  const bool embedding = user.embedding_params > 0;
  const bool latent_caching = !embedding || user.kept_models.find("VAE") == std::string::npos;
  if (!embedding) {
    base.kept_model_bytes = 0;
    base.kept_models.clear();
  }
  std::string precision;
  const std::string dtype = onetrainer_dtype(facts, user, precision);
  base.base_precision = precision;
  base.quantize_all_block_linears = quantized(base);  // quantization.layer_filter_preset "full" (default)
  note_precision(user, precision, "OneTrainer", notes);
  const std::string& part = tf.part;
  std::vector<double> fracs = {0};
  if (tf.part_offloading) fracs = numbers(plans_of(facts), "offload_fractions", 0, 1);
  else notes.push_back("OneTrainer's " + part + " has no layer or activation offloading (" + tf.source + "): not offered");
  const bool full = base.model_type == ModelType::Full;
  const std::string ot_opt = onetrainer_optimizer(facts, base.optimizer);
  const auto& fused_ok = facts.raw.at("optimizer_defaults").at("fused_back_pass_optimizers");
  const bool fused_possible = full && std::find(fused_ok.begin(), fused_ok.end(), ot_opt) != fused_ok.end();
  if (full && !fused_possible)
    notes.push_back("optimizer " + base.optimizer + (ot_opt.empty() ? " has no OneTrainer name" : " (" + ot_opt + ") is not known to support fused_back_pass") +
                    ": no fused back pass, so no layer offload for this full fine-tune (create.py:141-144)");
  const FamilyPhaseData pd = phase_data(fam);
  const auto& te_parts = facts.raw.at("text_encoders").at("parts");
  std::vector<KnobCombo> out;
  for (int gc = 0; gc < 2; ++gc)
    for (bool act : {false, true})
      for (double frac : fracs)
        for (bool fused : {false, true}) {
          if (act && (!gc || !tf.part_offloading)) continue;
          if (frac > 0 && !gc) continue;                   // offloading requires gradient checkpointing
          if (fused && !fused_possible) continue;
          if (full && frac > 0 && !fused) continue;        // create.py:141-144
          KnobCombo c;
          c.knobs["__version"] = 11;  // without it every migration runs (TrainConfig.py:752-762, 830-842)
          c.knobs[part + ".weight_dtype"] = dtype;
          c.knobs[part + ".gradient_checkpointing"] = gc == 1;
          c.knobs[part + ".offload_fraction"] = frac;
          c.knobs[part + ".activation_offloading"] = act;
          for (std::size_t i = 0; i < pd.text_encoders.size() && i < te_parts.size(); ++i)
            c.knobs[te_parts[i].get<std::string>() + ".train"] = false;  // a part's train defaults to true (TrainConfig.py)
          c.knobs["latent_caching"] = latent_caching;
          c.knobs["async_offloading"] = true;
          if (base.use_ema) c.knobs["ema"] = base.ema_on_gpu ? "GPU" : "CPU";  // the EMA it is predicted with (default OFF)
          c.knobs["train_dtype"] = "BFLOAT_16";
          if (fused_possible) {
            // the UI lays optimizer_defaults[<optimizer>] over the optimizer (optimizer_util.py change_optimizer),
            // scripts/train.py reads the optimizer object: both say it, on or off (a preset's
            // optimizer_defaults may switch it on where the plan has it off)
            c.knobs["optimizer.optimizer"] = ot_opt;
            c.knobs["optimizer.fused_back_pass"] = fused;
            c.knobs["optimizer_defaults." + ot_opt + ".optimizer"] = ot_opt;
            c.knobs["optimizer_defaults." + ot_opt + ".fused_back_pass"] = fused;
          }
          c.setup = base;
          c.setup.layer_offload_fraction = frac;
          c.setup.fused_back_pass = fused;
          c.schedule = sched(gc == 1, act ? Backend::Unsloth : Backend::Torch);
          std::ostringstream l;
          l << (gc ? "gradient checkpointing" : "no checkpointing");
          if (frac > 0) l << ", " << static_cast<int>(std::lround(frac * 100)) << "% of layer bytes offloaded";
          if (act) l << ", activations offloaded";
          if (fused) l << ", fused back pass";
          c.label = l.str();
          out.push_back(c);
        }
  return out;
}

// The diffusers script a plan runs: the config's own where the family has it and it trains the same
// kind (LoRA or full), else the family's first of that kind ("" when none)
std::string diffusers_script(const TrainerFamily& tf, const TrainingSetup& s) {
  const auto kind = [&s](const std::string& sc) { return (sc.find("lora") != std::string::npos) == (s.model_type == ModelType::Lora); };
  if (!s.script.empty() && std::find(tf.scripts.begin(), tf.scripts.end(), s.script) != tf.scripts.end() && kind(s.script)) return s.script;
  for (const auto& sc : tf.scripts)
    if (kind(sc)) return sc;
  return "";
}

// `use_8bit_adam`: the plans run --use_8bit_adam whatever the user's optimizer (Diffusers::fallback_space)
std::vector<KnobCombo> diffusers(const TrainerFacts& facts, const TrainerFamily& tf, const TrainingSetup& user,
                                 std::vector<std::string>& notes, bool use_8bit_adam = false) {
  TrainingSetup base = plain(user);
  // --mixed_precision is written: the user's fp16 or bf16, else (float32, accelerate's default) bf16
  base.mixed_precision = user.mixed_precision == "fp16" ? "fp16" : "bf16";
  if (user.mixed_precision == "no")
    notes.push_back("--mixed_precision bf16 is planned: without it accelerate trains in float32 (its default 'no'), twice the bytes");
  base.base_precision = "no_change";
  note_precision(user, "no_change", "the diffusers example scripts", notes);
  if (base.width != base.height) {
    const int edge = std::max(base.width, base.height);
    const double ratio = double(edge) * edge / (double(base.width) * base.height);
    char buf[160];
    std::snprintf(buf, sizeof buf, "--resolution is one int: the script trains a %dx%d square (%.2fx the tokens of %dx%d); planned for that square",
                  edge, edge, ratio, base.width, base.height);
    notes.push_back(buf);
    if (tf.aspect_ratio_buckets) notes.push_back("this script also takes --aspect_ratio_buckets for non-square training (not emitted; its value format is not recorded)");
    base.width = base.height = edge;
  }
  // the script's own memory flags (diffusers.json script_flags): --cache_latents frees the VAE it keeps
  // (bf16, the plan's --mixed_precision), --offload brings the VAE and the text encoders to the GPU only
  // to encode (nothing of them through the step)
  const std::string script = diffusers_script(tf, base);  // the script the emitted line runs
  const nlohmann::json& sf_all = facts.raw.at("script_flags");
  const auto has = [&](const char* flag) {
    if (!sf_all.contains(script)) return false;
    const auto& f = sf_all.at(script).at("flags");
    return std::find(f.begin(), f.end(), flag) != f.end();
  };
  // a full fine-tune script trains in float32 (diffusers.json full_finetune), with the user's EMA where
  // the script has --use_ema
  const bool ema = base.use_ema && has("use_ema");
  if (base.use_ema && !ema) notes.push_back("no EMA is planned: " + (script.empty() ? std::string("the script") : script) + " has no --use_ema");
  readers::diffusers_full_finetune(facts, base, ema);
  const FamilyPhaseData pd = phase_data(find_family(tf.family));
  const bool vae_kept = base.kept_models.find("VAE") != std::string::npos;
  const double vae_bytes = pd.has_vae ? pd.vae.params * (sf_all.contains(script) && sf_all.at(script).value("vae_fp32", false) ? 4 : 2) : 0;
  std::vector<int> mem = {0};  // 0 as read, 1 --cache_latents, 2 --offload
  if (has("cache_latents") && vae_kept) mem.push_back(1);
  if (has("offload") && base.kept_model_bytes > 0) mem.push_back(2);
  // the optimizer the emitted line runs: torch AdamW (the scripts' default, its state in fp32: the
  // trained parameters are cast to fp32, cast_training_params), bitsandbytes AdamW8bit with
  // --use_8bit_adam where the script has it, Prodigy with --optimizer prodigy (the dreambooth scripts;
  // --use_8bit_adam is then ignored, train_dreambooth_lora_flux.py:1404-1418)
  ordered_json opt_knobs = ordered_json::object();
  const bool eight_bit = optimizer_info(user.optimizer).state_bytes_per_param < 4 && user.optimizer.find("adamw") != std::string::npos;
  if ((use_8bit_adam || eight_bit) && has("use_8bit_adam")) {
    base.optimizer = "adamw8bit";
    opt_knobs["use_8bit_adam"] = true;
  } else if (user.optimizer == "prodigy" && has("optimizer")) {
    base.optimizer = "prodigy";
    opt_knobs["optimizer"] = "prodigy";
  } else {
    if (user.optimizer != "adamw")
      notes.push_back("the optimizer " + user.optimizer + " is not one the script runs: predicted with its AdamW (fp32 state)" +
                      std::string(eight_bit ? "; this script has no --use_8bit_adam" : ""));
    base.optimizer = "adamw";
  }
  std::vector<KnobCombo> out;
  for (int m : mem)
    for (int gc = 0; gc < 2; ++gc) {
      KnobCombo c;
      c.knobs["gradient_checkpointing"] = gc == 1;
      for (auto it = opt_knobs.begin(); it != opt_knobs.end(); ++it) c.knobs[it.key()] = it.value();
      if (ema) c.knobs["use_ema"] = true;
      c.knobs["mixed_precision"] = base.mixed_precision;
      c.setup = base;
      if (m == 1) {
        c.knobs["cache_latents"] = true;
        c.setup.kept_model_bytes = std::max(0.0, base.kept_model_bytes - vae_bytes);
        c.setup.kept_models = without_vae(base.kept_models);
      } else if (m == 2) {
        c.knobs["offload"] = true;
        c.setup.kept_model_bytes = 0;
        c.setup.kept_models.clear();
      }
      c.schedule = sched(gc == 1);
      c.label = std::string(gc ? "--gradient_checkpointing" : "no checkpointing") + (m == 1 ? ", --cache_latents" : m == 2 ? ", --offload" : "") +
                (opt_knobs.contains("use_8bit_adam") ? ", --use_8bit_adam" : "");
      out.push_back(c);
    }
  return out;
}

std::string flag_line(const ordered_json& knobs) {
  std::string flags;
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    if (it.value().is_boolean()) {
      if (it.value().get<bool>()) flags += " --" + it.key();
    } else {
      flags += " --" + it.key() + " " + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
    }
  }
  return flags.empty() ? flags : flags.substr(1);
}

std::string musubi_text(const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const TrainerFamily* tf = trainer_facts("musubi").find(fam);
  std::ostringstream o;
  o << "# flags (or the same keys in a --config_file TOML)\n";
  std::string script = tf && !tf->scripts.empty() ? tf->scripts.front() : "";
  if (s.model_type == ModelType::Full)  // the family's full fine-tune script (musubi() plans Full only where it has one)
    for (const auto& e : trainer_facts("musubi").raw.at("families"))
      if (e.at("family") == fam.id && e.contains("full_finetune_scripts") && !e.at("full_finetune_scripts").empty())
        script = e.at("full_finetune_scripts").at(0).get<std::string>();
  if (!script.empty()) o << "python " << script << " ";
  o << flag_line(c.knobs) << " --dataset_config dataset.toml\n";
  o << "# dataset.toml: the shape this was planned for (dataset/config_utils.py)\n[general]\nresolution = [" << s.width << ", "
    << s.height << "]\nbatch_size = " << s.batch << "\nenable_bucket = true\n\n[[datasets]]\n";
  if (fam.modality == "video") o << "video_directory = \"/path/to/videos\"\ntarget_frames = [" << s.frames << "]\nframe_extraction = \"head\"\n";
  else o << "image_directory = \"/path/to/images\"\n";
  if (s.reference_images > 0) o << "control_directory = \"/path/to/control_images\"\n";
  o << "cache_directory = \"/path/to/cache\"\n";
  return o.str();
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

std::string ai_toolkit_text(const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  // model.arch always: without it ai-toolkit runs sd1 (config_modules.py:799-821); the name where the
  // arch alone does not decide the model (a placeholder that names it, e.g. Wan 2.1 14B vs 1.3B)
  std::string arch, name = "/path/to/model";
  for (const auto& e : trainer_facts("ai-toolkit").raw.at("families")) {
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

std::string onetrainer_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const TrainerFamily* tf = facts.find(fam);
  ordered_json j = ordered_json::object();
  j["__version"] = 11;
  j["model_type"] = tf && !tf->model_types.empty() ? tf->model_types.front() : "";
  j["training_method"] = s.embedding_params > 0 ? "EMBEDDING" : s.model_type == ModelType::Lora ? "LORA" : "FINE_TUNE";
  j["base_model_name"] = "/path/to/model";
  j["train_dtype"] = "BFLOAT_16";
  j["resolution"] = std::to_string(square_edge_for_area(s.width, s.height));
  if (fam.modality == "video") j["frames"] = std::to_string(s.frames);
  j["batch_size"] = s.batch;
  if (s.model_type == ModelType::Lora && s.embedding_params <= 0) j["lora_rank"] = s.lora_rank;
  for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it) set_dotted_key(j, it.key(), it.value());
  return j.dump(4) + "\n";
}

std::string diffusers_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const TrainerFamily* tf = facts.find(fam);
  std::string script = tf ? diffusers_script(*tf, s) : "";
  if (script.empty()) script = "train_*.py";
  const std::string flags = flag_line(c.knobs);
  std::string line = "accelerate launch " + script + (flags.empty() ? "" : " " + flags);
  // with prior preservation the step's batch is twice --train_batch_size (the class images join it)
  const int batch = c.knobs.value("with_prior_preservation", false) ? std::max(1, s.batch / 2) : s.batch;
  line += " --resolution " + std::to_string(s.width) + " --train_batch_size " + std::to_string(batch);
  if (s.model_type == ModelType::Lora) line += " --rank " + std::to_string(s.lora_rank);
  return line + "\n";
}

}  // namespace


void check_emit_name(const std::string& name) {
  if (name.empty()) return;
  const auto& n = emitter_names();
  if (std::find(n.begin(), n.end(), name) != n.end()) return;
  std::string near;
  for (const auto& x : nearest_names(name, n)) near += (near.empty() ? "" : ", ") + x;
  throw InputError("--emit: '" + name + "' is not one of simpletuner, musubi, ai-toolkit, onetrainer, diffusers; nearest: " + near);
}

int square_edge_for_area(int width, int height) {
  if (width == height) return width;  // a square is written as planned (ai-toolkit's [632] stays 632)
  const double edge = std::sqrt(double(width) * height);
  return std::max(64, static_cast<int>(std::lround(edge / 64.0)) * 64);
}

// ---- the components ---------------------------------------------------------------------------

namespace {

std::vector<std::string> musubi_manual(const TrainerFamily* tf) {
  const std::string script = tf && !tf->scripts.empty() ? tf->scripts.front() : "the training script";
  return {"run " + script + (tf && !tf->script_verified ? " (script name not verified)" : "") + " with these flags",
          "--dit, --vae and the text-encoder paths", "--network_module (the LoRA module for this architecture)",
          "the dataset's image/video directory and cache_directory in dataset.toml",
          "--output_dir, --output_name, --learning_rate, --max_train_steps", "cache latents and text-encoder outputs first"};
}

// `keys` of `plan` (null where the plan does not set one: the key is removed)
nlohmann::ordered_json knobs_of(const nlohmann::ordered_json& plan, std::initializer_list<const char*> keys) {
  nlohmann::ordered_json k = nlohmann::ordered_json::object();
  for (const char* key : keys) k[key] = plan.contains(key) ? plan.at(key) : nlohmann::ordered_json(nullptr);
  return k;
}

// A command-line plan's --mixed_precision goes into the user's file where it differs from what the file
// trains in (a line without it trains in float32, accelerate's default 'no')
void keep_mixed_precision(const TrainerRead& r, const nlohmann::ordered_json& plan, nlohmann::ordered_json& k) {
  if (plan.contains("mixed_precision") && plan.at("mixed_precision") != r.setup.mixed_precision) k["mixed_precision"] = plan.at("mixed_precision");
}

std::string extension(const std::string& path) { return lower(std::filesystem::path(path).extension().string()); }
bool command_line_file(const std::string& path) {
  const std::string ext = extension(path);
  return ext != ".json" && ext != ".yaml" && ext != ".yml" && ext != ".toml";
}

// The four trainers whose knobs and per-family support are data (trainers/data/<id>.json).
class FactsTrainer : public Trainer {
 public:
  explicit FactsTrainer(std::string id) : id_(std::move(id)) {}
  std::string id() const override { return id_; }
  std::string name() const override { return facts()->name; }
  const TrainerFacts* facts() const override { return &trainer_facts(id_); }
  TrainerRead read(const std::string& path, const TrainerReadOptions& o) const override {
    TrainerRead r = read_file(path, o);
    r.setup.trainer = id_;  // its own rules judge the setup, not SimpleTuner's
    return r;
  }
  std::vector<KnobCombo> knob_space(const Family& fam, const TrainingSetup& base,
                                    std::vector<std::string>& notes) const override {
    const TrainerFamily* tf = facts()->find(fam);
    if (!tf) return {};
    std::vector<KnobCombo> out = combos(*tf, base, notes);
    for (auto& c : out) c.setup.trainer = id_;
    return out;
  }
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    return rewrite_trainer_config(r, knobs);
  }

 protected:
  virtual TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const = 0;
  virtual std::vector<KnobCombo> combos(const TrainerFamily& tf, const TrainingSetup& base,
                                        std::vector<std::string>& notes) const = 0;

 private:
  std::string id_;
};

class Musubi final : public FactsTrainer {
 public:
  Musubi() : FactsTrainer("musubi") {}
  bool detects(const std::string& path) const override {
    return extension(path) == ".toml" || (command_line_file(path) && readers::command_line_trainer(path) == "musubi");
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return musubi_text(fam, c); }
  std::vector<std::string> manual_steps(const Family& fam) const override { return musubi_manual(facts()->find(fam)); }
  nlohmann::ordered_json memory_knobs(const TrainerRead& r, const nlohmann::ordered_json& plan) const override {
    nlohmann::ordered_json k = knobs_of(plan, {"gradient_checkpointing", "gradient_checkpointing_cpu_offload", "blocks_to_swap",
                                               "fp8_base", "fp8_scaled", "offload_inactive_dit", "fused_backward_pass"});
    keep_mixed_precision(r, plan, k);
    for (const auto& x : r.rejections)  // the reader's "no attention flag": the plan's one is added
      if (x.find("no attention flag") != std::string::npos) k["sdpa"] = true;
    // an attention flag musubi refuses for training (--sage_attn) goes with the rewrite: the plan's takes its place
    for (const auto& key : r.refused_keys)
      for (const auto& a : facts()->raw.at("attention_flags").at("flags"))
        if (a == key) k["sdpa"] = true;
    return k;
  }

 protected:
  TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const override {
    return readers::read_musubi(path, o);
  }
  std::vector<KnobCombo> combos(const TrainerFamily& tf, const TrainingSetup& base,
                                std::vector<std::string>& notes) const override {
    return musubi(*facts(), tf, base, notes);
  }
};

class AiToolkit final : public FactsTrainer {
 public:
  AiToolkit() : FactsTrainer("ai-toolkit") {}
  bool detects(const std::string& path) const override {
    const std::string ext = extension(path);
    return ext == ".yaml" || ext == ".yml";
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return ai_toolkit_text(fam, c); }
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

class OneTrainer final : public FactsTrainer {
 public:
  OneTrainer() : FactsTrainer("onetrainer") {}
  bool detects(const std::string& path) const override {
    return extension(path) == ".json" && readers::json_config_trainer(path) == "onetrainer";
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return onetrainer_text(*facts(), fam, c); }
  std::vector<std::string> manual_steps(const Family&) const override {
    return {"base_model_name", "the concepts (concept_file_name)", "output_model_destination and output_model_format",
            "learning_rate, epochs, optimizer"};
  }

 protected:
  TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const override {
    return readers::read_onetrainer(path, o);
  }
  std::vector<KnobCombo> knob_space(const Family& fam, const TrainingSetup& base,
                                    std::vector<std::string>& notes) const override {
    const TrainerFamily* tf = facts()->find(fam);
    if (!tf) return {};
    std::vector<KnobCombo> out = onetrainer(*facts(), fam, *tf, base, notes);
    for (auto& c : out) c.setup.trainer = id();
    return out;
  }
  std::vector<KnobCombo> combos(const TrainerFamily&, const TrainingSetup&, std::vector<std::string>&) const override {
    return {};  // knob_space above (it needs the family's text encoders)
  }

 public:
  // OneTrainer's phase keys (onetrainer.json phases.fixes: sample_after_unit NEVER turns sampling off)
  // are top-level keys of its config, as its plans write theirs: a plan whose sampling is over the card
  // takes the key on
  nlohmann::ordered_json phase_knobs(const std::vector<PhaseFix>& fixes) const override {
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (const PhaseFix& f : fixes)
      if (!f.key.empty() && f.value_json != "null") k[f.key] = nlohmann::ordered_json::parse(f.value_json);
    return k;
  }
};

class Diffusers final : public FactsTrainer {
 public:
  Diffusers() : FactsTrainer("diffusers") {}
  bool detects(const std::string& path) const override {
    return command_line_file(path) && readers::command_line_trainer(path) == "diffusers";
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return diffusers_text(*facts(), fam, c); }
  std::vector<std::string> manual_steps(const Family&) const override {
    return {"--pretrained_model_name_or_path", "--instance_data_dir (or --dataset_name) and --instance_prompt",
            "--output_dir, --learning_rate, --max_train_steps"};
  }
  // the file written back keeps the user's flags beside the plan's (memory_knobs): its caching is the
  // user's, with latents cached where the plan adds --cache_latents (--offload moves the encoders in
  // to encode each batch: nothing cached)
  RunSetup plan_run_setup(const TrainerRead& r, const TrainingSetup&, const nlohmann::ordered_json& knobs) const override {
    RunSetup run = run_setup(r);
    if (knobs.value("cache_latents", false)) run.other.latent_caching = true;
    // a --cache_latents the script does not have goes with the rewrite (refused_keys)
    else if (std::find(r.refused_keys.begin(), r.refused_keys.end(), "cache_latents") != r.refused_keys.end())
      run.other.latent_caching = false;
    return run;
  }
  nlohmann::ordered_json memory_knobs(const TrainerRead& r, const nlohmann::ordered_json& plan) const override {
    // --cache_latents / --offload only added (a plan without them keeps what the user's line has)
    nlohmann::ordered_json k = knobs_of(plan, {"gradient_checkpointing"});
    for (const char* f : {"cache_latents", "offload", "use_8bit_adam", "optimizer"})
      if (plan.contains(f)) k[f] = plan.at(f);
    keep_mixed_precision(r, plan, k);
    return k;
  }
  // Nothing fits with confidence with AdamW: --use_8bit_adam (bitsandbytes AdamW8bit, a quarter of
  // AdamW's state) where the script has it; a change of optimizer the user did not ask for
  std::vector<KnobCombo> fallback_space(const Family& fam, const TrainingSetup& base,
                                        std::vector<std::string>& notes) const override {
    const TrainerFamily* tf = facts()->find(fam);
    if (!tf) return {};
    std::vector<std::string> scratch;  // the plans' own notes repeat the AdamW ones
    std::vector<KnobCombo> plain_plans = diffusers(*facts(), *tf, base, scratch);
    if (plain_plans.empty() || plain_plans.front().setup.optimizer != "adamw") return {};
    std::vector<KnobCombo> out = diffusers(*facts(), *tf, base, scratch, true);
    if (out.empty() || !out.front().knobs.contains("use_8bit_adam")) return {};
    for (auto& c : out) c.setup.trainer = id();
    notes.push_back("nothing fits with confidence with AdamW: the script's --use_8bit_adam (bitsandbytes AdamW8bit) is searched too");
    return out;
  }

 protected:
  TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const override {
    return readers::read_diffusers(path, o);
  }
  std::vector<KnobCombo> combos(const TrainerFamily& tf, const TrainingSetup& base,
                                std::vector<std::string>& notes) const override {
    return diffusers(*facts(), tf, base, notes);
  }
};

// SimpleTuner: its config reader is read_simpletuner_config (the data backends, the run's other
// phases); its schedule space and plan are the advisor's (planner/advisor.hpp), which no knob
// combination here repeats.
class SimpleTuner final : public Trainer {
 public:
  std::string id() const override { return "simpletuner"; }
  std::string name() const override { return "SimpleTuner"; }
  bool detects(const std::string& path) const override {
    return extension(path) == ".json" && readers::json_config_trainer(path) == "simpletuner";
  }
  TrainerRead read(const std::string& path, const TrainerReadOptions& o) const override {
    return read_simpletuner_config(path, o);
  }
  RunSetup run_setup(const TrainerRead& r) const override { return r.run; }
  std::vector<std::string> setup_rejections(const Family& fam, const TrainingSetup& setup) const override {
    return simpletuner_setup_rejections(fam, setup);
  }
  std::vector<KnobCombo> knob_space(const Family&, const TrainingSetup&, std::vector<std::string>&) const override {
    return {};
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override {
    return simpletuner_keys(fam, c.schedule, c.setup).dump(2) + "\n";
  }
  std::vector<std::string> manual_steps(const Family&) const override { return {}; }
  bool plans_are_schedules() const override { return true; }
  nlohmann::ordered_json schedule_knobs(const Schedule& s) const override {
    return nlohmann::ordered_json::parse(schedule_keys(s).dump());
  }
  // a phase's key as the fix gives it (a null value written as null: with_keys)
  nlohmann::ordered_json phase_knobs(const std::vector<PhaseFix>& fixes) const override {
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (const PhaseFix& f : fixes)
      if (!f.key.empty()) k[f.key] = nlohmann::ordered_json::parse(f.value_json);
    return k;
  }
  // `knobs`: SimpleTuner keys, each kept in the file's spelling and place (with_keys)
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    return Rewritten{with_keys(r.raw, knobs).dump(r.indent) + "\n", {}};
  }
};

}  // namespace

std::vector<std::string> Trainer::setup_rejections(const Family&, const TrainingSetup&) const { return {}; }

RunSetup Trainer::run_setup(const TrainerRead& r) const {
  RunSetup run = r.run;
  if (run.other.trainer.empty() && facts()) run.other = trainer_run_from_data(*facts(), r);
  return run;
}

int fastest_fit(const std::vector<TrainerPlan>& plans, const std::function<bool(const TrainerPlan&)>& allowed) {
  int fits = -1, borderline = -1;
  for (std::size_t i = 0; i < plans.size() && fits < 0; ++i) {
    if (allowed && !allowed(plans[i])) continue;
    if (plans[i].verdict == FitVerdict::Fits) fits = static_cast<int>(i);
    else if (borderline < 0 && plans[i].verdict == FitVerdict::Borderline) borderline = static_cast<int>(i);
  }
  return fits >= 0 ? fits : borderline;
}

RunSetup Trainer::plan_run_setup(const TrainerRead& r, const TrainingSetup& plan, const nlohmann::ordered_json&) const {
  RunSetup run = run_setup(r);
  run.other.latent_caching = plan.kept_models.find("VAE") == std::string::npos;
  if (plan.kept_model_bytes <= 0) run.other.latent_caching = run.other.text_caching = true;
  return run;
}

TrainerAdvice Trainer::plan(const Family& fam, const TrainingSetup& setup, const PredictFn& predict,
                            const std::string& headroom) const {
  const TrainerFacts& f = *facts();
  TrainerAdvice a;
  a.trainer = id();
  a.trainer_name = f.name;
  a.config_format = f.config_format;
  a.family_supported = f.find(fam) != nullptr;
  if (!a.family_supported) {
    a.notes.push_back(f.name + " does not train " + fam.name + " (trainers/data/" + id() + ".json): nothing to emit");
    return a;
  }
  if (setup.ramtorch || setup.blocks_to_swap > 0 || setup.group_offload || setup.layer_offload_fraction > 0)
    a.notes.push_back("the config's weight streaming (RamTorch / block swap / group offload / layer offload) is replaced by " + f.name +
                      "'s own knob where it has one");
  const auto evaluate_all = [&](const std::vector<KnobCombo>& combos) {
    for (const auto& c : combos) {
      TrainerPlan p;
      p.label = c.label;
      p.knobs = c.knobs;
      p.schedule = c.schedule;
      p.setup = c.setup;
      const PlanPrediction pp = predict(c.setup, c.schedule);
      p.prediction = pp.prediction;
      p.verdict = pp.prediction.supported ? pp.verdict : FitVerdict::DoesNotFit;
      if (p.prediction.supported) a.plans.push_back(std::move(p));  // a backend the family lacks never counts
    }
    // fastest first; at the same speed the smaller peak (a fused back pass costs no time)
    std::stable_sort(a.plans.begin(), a.plans.end(), [](const TrainerPlan& x, const TrainerPlan& y) {
      if (x.prediction.step_time_s != y.prediction.step_time_s) return x.prediction.step_time_s < y.prediction.step_time_s;
      return x.prediction.peak_vram_bytes < y.prediction.peak_vram_bytes;
    });
    a.smallest = -1;
    for (std::size_t i = 0; i < a.plans.size(); ++i)
      if (a.smallest < 0 || a.plans[i].prediction.peak_vram_bytes < a.plans[a.smallest].prediction.peak_vram_bytes)
        a.smallest = static_cast<int>(i);
    a.best = fastest_fit(a.plans);
    a.verdict = a.best >= 0 ? a.plans[a.best].verdict : FitVerdict::DoesNotFit;
  };
  evaluate_all(knob_space(fam, setup, a.notes));
  // nothing fits with confidence: the trainer's further knobs (a change of precision) are searched too
  if (a.verdict != FitVerdict::Fits) {
    const std::vector<KnobCombo> more = fallback_space(fam, setup, a.notes);
    if (!more.empty()) evaluate_all(more);
  }
  const int shown = a.best >= 0 ? a.best : a.smallest;
  if (shown >= 0) {
    const TrainerPlan& p = a.plans[shown];
    a.config_text = config_text(fam, KnobCombo{p.label, p.knobs, p.schedule, p.setup});
    if (a.best < 0)
      a.notes.push_back("nothing within " + f.name + "'s knobs fits with " + headroom + " headroom; the lines are its smallest plan");
    else if (a.verdict == FitVerdict::Borderline)
      a.notes.push_back("no plan within " + f.name + "'s knobs fits with confidence with " + headroom +
                        " headroom; the lines are its fastest borderline plan (its 90% peak range straddles the usable "
                        "memory: a measured run settles it)");
  }
  a.manual = manual_steps(fam);
  return a;
}

const std::vector<const Trainer*>& all_trainers() {
  static const SimpleTuner simpletuner;
  static const Musubi musubi_trainer;
  static const AiToolkit ai_toolkit_trainer;
  static const OneTrainer onetrainer_trainer;
  static const Diffusers diffusers_trainer;
  static const std::vector<const Trainer*> all = {&simpletuner, &musubi_trainer, &ai_toolkit_trainer,
                                                  &onetrainer_trainer, &diffusers_trainer};
  return all;
}

const Trainer& trainer(const std::string& id) {
  for (const Trainer* t : all_trainers())
    if (t->id() == id) return *t;
  throw InputError("--trainer: '" + id + "' is not one of simpletuner, musubi, ai-toolkit, onetrainer, diffusers");
}

const std::vector<std::string>& emitter_names() {
  static const std::vector<std::string> n = [] {
    std::vector<std::string> out;
    for (const Trainer* t : all_trainers()) out.push_back(t->id());
    return out;
  }();
  return n;
}

std::vector<KnobCombo> trainer_combos(const TrainerFacts& facts, const Family& fam, const TrainingSetup& base,
                                      std::vector<std::string>& notes) {
  return trainer(facts.id).knob_space(fam, base, notes);
}

std::string trainer_config_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  return trainer(facts.id).config_text(fam, c);
}

std::vector<std::string> trainer_manual_steps(const TrainerFacts& facts, const Family& fam) {
  return trainer(facts.id).manual_steps(fam);
}

TrainerAdvice plan_for_trainer(const std::string& id, const Family& fam, const TrainingSetup& setup,
                               const PredictFn& predict, const std::string& headroom) {
  return trainer(id).plan(fam, setup, predict, headroom);
}

}  // namespace segadvise
