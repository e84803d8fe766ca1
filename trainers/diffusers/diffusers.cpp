// The diffusers example scripts' component (trainer.hpp): their knob combinations for a family
// (diffusers.json), the accelerate command line they read, what is left to set by hand, and the line
// written back.
#include <algorithm>
#include <cstdio>

#include "common/trainer_parts.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

using nlohmann::ordered_json;
using namespace plans;

namespace {

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

class Diffusers final : public FactsTrainer {
 public:
  Diffusers() : FactsTrainer("diffusers") {}
  bool detects(const std::string& path) const override {
    return command_line_file(path) && readers::command_line_trainer(path) == "diffusers";
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return diffusers_text(*facts(), fam, c); }
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    return rewrite_flags(r, rewrite_knobs(r, knobs));
  }
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

}  // namespace

const Trainer& diffusers_trainer() {
  static const Diffusers t;
  return t;
}

}  // namespace segadvise
