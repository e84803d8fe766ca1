// kohya-ss sd-scripts' component (trainer.hpp): its knob combinations for a family (sd-scripts.json),
// the `accelerate launch` line and dataset TOML it reads, what is left to set by hand, and the user's
// own file written back with only the memory flags changed.
#include <algorithm>
#include <sstream>

#include "common/trainer_parts.hpp"
#include "sd_scripts/sd_scripts_parts.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

using nlohmann::ordered_json;
using namespace plans;

namespace {

using readers::sd_scripts_parts::kNoLatentCache;
using readers::sd_scripts_parts::kNoTextCache;

bool noted(const TrainingSetup& s, const char* mark) { return std::find(s.notes.begin(), s.notes.end(), mark) != s.notes.end(); }

// the script a plan runs: the user's where it trains the family, else the family's LoRA or full fine-tune script
std::string plan_script(const TrainerFacts& facts, const TrainerFamily& tf, const TrainingSetup& user) {
  const nlohmann::json& scripts = facts.raw.at("scripts");
  if (!user.script.empty() && std::find(tf.scripts.begin(), tf.scripts.end(), user.script) != tf.scripts.end()) return user.script;
  const bool want_lora = user.model_type != ModelType::Full;
  for (const auto& s : tf.scripts)
    if (scripts.contains(s) && scripts.at(s).at("lora").get<bool>() == want_lora) return s;
  return tf.scripts.empty() ? "" : tf.scripts.front();
}

std::vector<KnobCombo> sd_scripts(const TrainerFacts& facts, const Family& fam, const TrainerFamily& tf, const TrainingSetup& user,
                                  std::vector<std::string>& notes) {
  const FieldReader plans = plans_of(facts);
  const std::string script = plan_script(facts, tf, user);
  const nlohmann::json& se = facts.raw.at("scripts").at(script);
  const bool lora = se.at("lora").get<bool>();
  TrainingSetup base = plain(user);
  base.mixed_precision = "bf16";  // --mixed_precision bf16 is emitted
  base.script = script;
  base.model_type = lora ? ModelType::Lora : ModelType::Full;
  if (!lora && user.model_type != ModelType::Full) notes.push_back(script + " is a full fine-tune: planned as one");
  if (lora && user.model_type == ModelType::Full) notes.push_back(script + " trains a LoRA: planned as LoRA rank " + std::to_string(base.lora_rank));
  // the user's optimizer where sd-scripts has it (its default AdamW unwritten)
  std::string optimizer_type;
  for (const auto& [name, ours] : facts.raw.at("optimizers").at("builtin").items())
    if (ours == user.optimizer && optimizer_type.empty() && name != "adamw") optimizer_type = name;
  if (optimizer_type.empty() && user.optimizer != "adamw" && user.optimizer != "adamw_bf16")
    notes.push_back("the optimizer " + user.optimizer + " has no sd-scripts --optimizer_type: predicted with its default AdamW");
  if (optimizer_type.empty()) base.optimizer = "adamw";
  const bool adafactor = base.optimizer == "adafactor";
  // what the plans cache: latents always (to disk, the VAE then leaves the GPU), text-encoder outputs
  // where the script has the flag and no text encoder trains; the dataset's caption options may refuse either
  const bool latents = !noted(user, kNoLatentCache);
  const bool te_flag = readers::sd_scripts_parts::script_defines(script, "cache_text_encoder_outputs");
  const bool text_ok = te_flag && !noted(user, kNoTextCache);
  // text-encoder training searched on and off where the user trains it and the script has the switch
  // (--network_train_unet_only, --train_text_encoder; train_db.py trains it without one)
  const bool te_switch = lora || readers::sd_scripts_parts::script_defines(script, "train_text_encoder");
  const bool user_trains_te = te_switch && (user.kept_models.find("(trained)") != std::string::npos ||
                                            std::any_of(user.notes.begin(), user.notes.end(), [](const std::string& n) { return n.rfind("the text encoder", 0) == 0; }));
  // precision: LoRA scripts' --fp8_base (float8 weights upcast per layer), HunyuanImage's --fp8_scaled
  const bool fp8_ok = lora && (se.value("fp8_base", false) || se.value("fp8_scaled", false));
  const std::string fp8_key = se.value("fp8_scaled", false) ? "fp8_scaled" : "fp8_base";
  const std::string fp8_precision = plans.str("fp8_base_precision", "", true);
  std::vector<int> swaps = {0};
  const int max = tf.blocks_to_swap_max;
  if (max > 0 && se.value("block_swap", "") != "" && se.value("block_swap", "") != "ignored") {
    swaps.clear();
    for (const double q : numbers(plans, "blocks_to_swap_quarters", 0, 4)) swaps.push_back(static_cast<int>(q) * max / 4);
    swaps.erase(std::unique(swaps.begin(), swaps.end()), swaps.end());
  }
  const bool cpu_ckpt = se.value("cpu_offload_checkpointing", false);
  const bool fused = !lora && se.value("fused_backward_pass", false) && adafactor;
  const bool blockwise = !lora && se.value("blockwise_fused_optimizers", false) && !adafactor;
  const FamilyPhaseData pd = phase_data(fam);
  nlohmann::json fe = nlohmann::json::object();  // the family's entry in sd-scripts.json
  for (const auto& e : facts.raw.at("families"))
    if (e.at("family") == fam.id) fe = e;
  std::vector<KnobCombo> out;
  for (int te = 0; te < (user_trains_te ? 2 : 1); ++te)
    for (int fp8 = 0; fp8 < (fp8_ok ? 2 : 1); ++fp8)
      for (int fb = 0; fb < (fused || blockwise ? 2 : 1); ++fb)
        for (int gc = 0; gc < (cpu_ckpt ? 3 : 2); ++gc)
          for (int n : swaps) {
            if (gc == 2 && n > 0) continue;  // refused together (flux_train_network.py:77-79)
            const bool trains_te = user_trains_te && te == 0;
            KnobCombo c;
            if (fe.contains("checkpoint_name")) c.knobs["pretrained_model_name_or_path"] = "/path/to/" + fe.at("checkpoint_name").get<std::string>();
            if (fam.id == "chroma") {
              c.knobs["model_type"] = "chroma";
              c.knobs["apply_t5_attn_mask"] = true;  // required for Chroma (flux_train_network.py:54)
            }
            if (fam.id == "sd2x") c.knobs["v2"] = true;
            c.knobs["sdpa"] = true;
            c.knobs["mixed_precision"] = "bf16";
            if (!lora) c.knobs["full_bf16"] = true;
            if (!optimizer_type.empty()) c.knobs["optimizer_type"] = optimizer_type;
            if (fused) c.knobs["fused_backward_pass"] = fb == 1;
            if (blockwise) c.knobs["blockwise_fused_optimizers"] = fb == 1;
            c.knobs["gradient_checkpointing"] = gc >= 1;
            if (cpu_ckpt) c.knobs["cpu_offload_checkpointing"] = gc == 2;
            if (n > 0) c.knobs["blocks_to_swap"] = n;
            if (fp8_ok) c.knobs[fp8_key] = fp8 == 1;
            if (latents) c.knobs["cache_latents_to_disk"] = true;
            const bool cache_te = text_ok && !trains_te;
            if (te_flag) {
              c.knobs["cache_text_encoder_outputs"] = cache_te;
              c.knobs["cache_text_encoder_outputs_to_disk"] = cache_te;
            }
            if (lora) {
              if (se.contains("network_module")) c.knobs["network_module"] = se.at("network_module");
              c.knobs["network_dim"] = base.lora_rank;
              c.knobs["network_train_unet_only"] = !trains_te;
            } else if (user_trains_te) {
              c.knobs["train_text_encoder"] = trains_te;
            }
            c.setup = base;
            c.setup.fused_back_pass = fb == 1;
            readers::sd_scripts_parts::set_swapped_blocks(c.setup, tf, se, n);
            c.setup.base_precision = fp8 == 1 ? fp8_precision : "no_change";
            if (lora) c.setup.adapter_weight_bytes = 4;  // the network stays float32 (no --full_bf16 on a LoRA plan)
            // beside the model: the text encoders where they encode each batch or train, the VAE without cached latents
            double kept = 0;
            std::string what;
            if (!cache_te && pd.known)
              for (const auto& t : pd.text_encoders) {
                kept += t.params * (fp8 == 1 && fp8_key == "fp8_base" ? 1 : 2);
                what += (what.empty() ? "" : ", ") + t.name + (trains_te ? " (trained)" : " (encodes each batch)");
              }
            if (!latents && pd.has_vae) {
              kept += pd.vae.params * 2;
              what += (what.empty() ? "" : ", ") + std::string("VAE (encodes each batch)");
            }
            c.setup.kept_model_bytes = kept;
            c.setup.kept_models = what;
            c.schedule = sched(gc >= 1, gc == 2 ? Backend::Unsloth : Backend::Torch);
            c.label = gc == 0 ? "no checkpointing" : gc == 1 ? "gradient checkpointing" : "checkpointing + CPU offload";
            if (n > 0) c.label += ", --blocks_to_swap " + std::to_string(n);
            if (fp8 == 1) c.label += ", --" + fp8_key;
            if (fb == 1) c.label += fused ? ", --fused_backward_pass" : ", --blockwise_fused_optimizers";
            if (user_trains_te) c.label += trains_te ? ", text encoder trained" : ", text encoder frozen";
            out.push_back(c);
          }
  notes.push_back("sd-scripts " + script + (lora ? "" : " (full fine-tune, --full_bf16)") + "; latents " +
                  (latents ? "cached to disk" : "encoded each batch (the dataset's color_aug/random_crop refuse caching)") +
                  (te_flag ? std::string(", text-encoder outputs ") + (text_ok ? "cached where no text encoder trains" : "not cached (the dataset's caption options refuse it)") : ""));
  if (max <= 0) notes.push_back("sd-scripts has no block swap for " + fam.name);
  return out;
}

std::string sd_scripts_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const TrainerFamily* tf = facts.find(fam);
  const std::string script = !s.script.empty() ? s.script : tf ? plan_script(facts, *tf, s) : "train_network.py";
  std::ostringstream o;
  o << "# the training command (or the same keys in a --config_file TOML)\n";
  o << "accelerate launch --num_cpu_threads_per_process 1 " << script << " " << flag_line(c.knobs) << " --dataset_config dataset.toml\n";
  o << "# dataset.toml: the shape this was planned for (library/config_util.py)\n[general]\nenable_bucket = true\n\n[[datasets]]\nresolution = ["
    << s.width << ", " << s.height << "]\nbatch_size = " << s.batch << "\n";
  // the buckets must bracket the resolution (library/train_util.py:766-771; defaults 256 and 1024)
  if (std::max(s.width, s.height) > 1024) o << "max_bucket_reso = " << (std::max(s.width, s.height) + 63) / 64 * 64 << "\n";
  if (std::min(s.width, s.height) < 256) o << "min_bucket_reso = " << std::min(s.width, s.height) / 64 * 64 << "\n";
  o << "\n  [[datasets.subsets]]\n  image_dir = \"/path/to/images\"\n  num_repeats = 1\n";
  return o.str();
}

class SdScripts final : public FactsTrainer {
 public:
  SdScripts() : FactsTrainer("sd-scripts") {}
  bool detects(const std::string& path) const override {
    if (extension(path) == ".toml") return readers::sd_scripts_toml(path);
    return command_line_file(path) && readers::command_line_trainer(path) == "sd-scripts";
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return sd_scripts_text(*facts(), fam, c); }
  std::vector<std::string> manual_steps(const Family& fam) const override {
    const TrainerFamily* tf = facts()->find(fam);
    const std::string script = tf && !tf->scripts.empty() ? tf->scripts.front() : "the training script";
    return {"run " + script + " with these flags",
            "--pretrained_model_name_or_path and the text-encoder / VAE paths (--clip_l, --t5xxl, --ae, … as the script names them)",
            "--network_module (the LoRA module for this architecture, e.g. networks.lora_flux) for a LoRA script",
            "the images' image_dir in dataset.toml", "--output_dir, --output_name, --learning_rate, --max_train_epochs or --max_train_steps"};
  }
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    return rewrite_flags(r, rewrite_knobs(r, knobs));
  }
  nlohmann::ordered_json memory_knobs(const TrainerRead& r, const nlohmann::ordered_json& plan) const override {
    nlohmann::ordered_json k = knobs_of(plan, {"gradient_checkpointing", "cpu_offload_checkpointing", "blocks_to_swap", "fp8_base", "fp8_scaled",
                                               "full_bf16", "fused_backward_pass", "blockwise_fused_optimizers", "network_train_unet_only",
                                               "train_text_encoder", "cache_latents_to_disk", "cache_text_encoder_outputs",
                                               "cache_text_encoder_outputs_to_disk"});
    keep_mixed_precision(r, plan, k);
    // flags that would undo the plan's: --split_mode sets a swap, --fp8_base_unet an fp8 base, the
    // unsloth offload a checkpointing the plan does not choose
    if (k.contains("blocks_to_swap") || plan.contains("cpu_offload_checkpointing")) k["split_mode"] = nullptr;
    if (k.contains("fp8_base") && k.at("fp8_base") == false) k["fp8_base_unet"] = nullptr;
    if (k.contains("gradient_checkpointing")) k["unsloth_offload_checkpointing"] = nullptr;
    for (const auto& key : r.refused_keys)
      if (k.contains(key) && !plan.contains(key)) k[key] = nullptr;
    return k;
  }

 protected:
  TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const override { return readers::read_sd_scripts(path, o); }
  std::vector<KnobCombo> combos(const TrainerFamily& tf, const TrainingSetup& base, std::vector<std::string>& notes) const override {
    return sd_scripts(*facts(), find_family(tf.family), tf, base, notes);
  }
};

}  // namespace

const Trainer& sd_scripts_trainer() {
  static const SdScripts t;
  return t;
}

}  // namespace segadvise
