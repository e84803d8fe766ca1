// diffusion-pipe's component (trainer.hpp): its knob combinations for a family (diffusion-pipe.json), the
// main TOML and dataset TOML it reads, what is left to set by hand, and the user's TOML written back.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "common/trainer_parts.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

using nlohmann::json;
using nlohmann::ordered_json;
using namespace plans;

namespace {

// the [model] type entry of a family (the first whose family it is)
const json* type_entry(const TrainerFacts& facts, const std::string& family) {
  for (const auto& e : facts.raw.at("model_types").at("types"))
    if (e.at("family").is_string() && e.at("family") == family) return &e;
  if (family.rfind("wan", 0) == 0)
    for (const auto& e : facts.raw.at("model_types").at("types"))
      if (e.value("by_checkpoint", false)) return &e;
  for (const auto& g : facts.raw.at("name_guesses").items())
    if (g.value().is_array())
      for (const auto& n : g.value())
        if (n.at("family") == family)
          for (const auto& e : facts.raw.at("model_types").at("types"))
            if (e.value("by_name", "") == g.key()) return &e;
  return nullptr;
}

std::string float8_key(const json* te) { return te ? te->value("float8_key", "") : ""; }

std::vector<KnobCombo> combos(const TrainerFacts& facts, const TrainerFamily& tf, const TrainingSetup& user, bool float8,
                              std::vector<std::string>& notes) {
  const json* te = type_entry(facts, tf.family);
  TrainingSetup base = plain(user);
  base.pipeline_stages = user.pipeline_stages;
  base.pipeline_micro_batches = user.pipeline_micro_batches;
  base.adapter_weight_bytes = user.adapter_weight_bytes;
  base.weight_storage_bytes = user.weight_storage_bytes;
  base.fused_back_pass = user.fused_back_pass;
  base.kept_model_bytes = user.kept_model_bytes;
  base.kept_models = user.kept_models;
  const std::string fkey = float8_key(te);
  const std::string fp8 = facts.raw.at("dtypes").at("float8_precision").get<std::string>();
  const bool user_fp8 = quantized(user);
  if (float8 && (fkey.empty() || user_fp8)) return {};
  base.base_precision = user_fp8 || float8 ? fp8 : "no_change";
  if (user_fp8 && fkey.empty()) {
    base.base_precision = "no_change";
    notes.push_back("this model reads no transformer_dtype: planned with its weights in dtype");
  }
  if (float8) notes.push_back("[model] " + fkey + " = 'float8' searched: " + facts.raw.at("dtypes").at("float8_note").get<std::string>());
  const bool lora = user.model_type == ModelType::Lora;
  std::vector<int> swaps = {0};
  const int max = tf.blocks_to_swap_max;
  if (max > 0 && lora) {
    swaps.clear();
    for (const double q : numbers(plans_of(facts), "blocks_to_swap_quarters", 0, 4)) swaps.push_back(static_cast<int>(q) * max / 4);
  } else if (max <= 0) {
    notes.push_back("diffusion-pipe has no block swap for this model (" + tf.source + ")");
  } else {
    notes.push_back("block swap needs an [adapter] (train.py:578): not offered for a full fine-tune");
  }
  swaps.erase(std::unique(swaps.begin(), swaps.end()), swaps.end());
  // pipeline_stages over the divisors of the GPUs the run uses (its own stage count)
  std::vector<int> stages;
  for (int p = 1; p <= std::max(1, user.pipeline_stages); ++p)
    if (std::max(1, user.pipeline_stages) % p == 0) stages.push_back(p);
  std::vector<KnobCombo> out;
  for (const int p : stages)
    for (int gc = 0; gc < 3; ++gc)
      for (const int n : swaps) {
        if (n > 0 && p > 1) continue;  // train.py:577
        KnobCombo c;
        c.knobs["activation_checkpointing"] = gc == 0 ? ordered_json(false) : gc == 1 ? ordered_json(true) : ordered_json("unsloth");
        c.knobs["blocks_to_swap"] = n;
        c.knobs["pipeline_stages"] = p;
        if (float8 || (user_fp8 && !fkey.empty())) c.knobs["model." + fkey] = "float8";
        // the text encoder kept through the step (cache_text_embeddings false) is part of what was predicted
        if (user.kept_model_bytes > 0) c.knobs["model.cache_text_embeddings"] = false;
        c.setup = base;
        c.setup.pipeline_stages = p;
        c.setup.blocks_to_swap = musubi_swapped_chain_blocks(tf, n);
        c.schedule = sched(gc >= 1, gc == 2 ? Backend::Unsloth : Backend::Torch);
        c.label = gc == 0 ? "no checkpointing" : gc == 1 ? "activation_checkpointing" : "activation_checkpointing 'unsloth'";
        if (n > 0) c.label += ", blocks_to_swap " + std::to_string(n);
        if (p > 1) c.label += ", pipeline_stages " + std::to_string(p);
        if (float8) c.label += ", float8";
        out.push_back(c);
      }
  if (user.pipeline_stages > 1)
    notes.push_back("pipeline_stages searched over the divisors of the run's " + std::to_string(user.pipeline_stages) +
                    " GPUs; the rest are data-parallel copies (each GPU's memory predicted for the first stage)");
  return out;
}

std::string toml_value(const ordered_json& v) { return v.is_string() ? "'" + v.get<std::string>() + "'" : v.dump(); }

std::string dp_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const json* te = type_entry(facts, fam.id);
  std::ostringstream o;
  o << "# main.toml: deepspeed --num_gpus " << std::max(1, s.pipeline_stages) << " train.py --deepspeed --config main.toml\n";
  o << "# planned for " << s.width << "x" << s.height << (s.frames > 1 ? ", " + std::to_string(s.frames) + " frames" : "") << ", micro-batch "
    << s.batch << "\n";
  o << "output_dir = '/path/to/output'\ndataset = 'dataset.toml'\nepochs = 100\nsave_every_n_epochs = 10\n";
  o << "micro_batch_size_per_gpu = " << s.batch << "\n";
  o << "gradient_accumulation_steps = " << std::max(1, s.pipeline_micro_batches) << "\n";
  for (const auto& [k, v] : c.knobs.items())
    if (k.find('.') == std::string::npos) o << k << " = " << toml_value(v) << "\n";
  // the checkpoint path names the variant where the reader takes it from the name (wan_variants, name_guesses)
  o << "\n[model]\ntype = '" << (te ? te->at("type").get<std::string>() : fam.id) << "'\n";
  if (te && te->value("by_checkpoint", false)) o << "ckpt_path = '/path/to/" << fam.id << "'\n";
  else if (te && te->value("comfy", false)) o << "diffusion_model = '/path/to/" << fam.id << ".safetensors'\nvae = '/path/to/vae.safetensors'\n";
  else o << "diffusers_path = '/path/to/" << fam.id << "'\n";
  o << "dtype = '" << (s.mixed_precision == "no" ? "float32" : s.mixed_precision == "fp16" ? "float16" : "bfloat16") << "'\n";
  for (const auto& [k, v] : c.knobs.items())
    if (k.rfind("model.", 0) == 0) o << k.substr(6) << " = " << toml_value(v) << "\n";
  if (s.model_type == ModelType::Lora)
    o << "\n[adapter]\ntype = '" << (s.lora_type == LoraType::Lycoris ? "lokr" : "lora") << "'\nrank = " << s.lora_rank << "\ndtype = '" << (s.adapter_weight_bytes == 4 ? "float32" : "bfloat16") << "'\n";
  // the optimizer type read as the plan's optimizer: the type of that name first, then the first mapped to it
  std::string opt;
  const json& builtin = facts.raw.at("optimizers").at("builtin");
  if (builtin.contains(s.optimizer)) opt = s.optimizer;
  for (const auto& [name, e] : builtin.items())
    if (opt.empty() && (e.at("optimizer") == s.optimizer || e.value("bf16", "") == s.optimizer)) opt = name;
  for (const auto& [name, e] : facts.raw.at("optimizers").at("classes").items())
    if (opt.empty() && e.at("optimizer") == s.optimizer) opt = name;
  if (opt.empty()) opt = "adamw";
  o << "\n[optimizer]\ntype = '" << opt << "'\nlr = 2e-5\n";
  // size_buckets [[W, H, frames]] train at exactly the planned shape (utils/dataset.py:460-466)
  o << "\n# dataset.toml: the shape this was planned for (utils/dataset.py)\nsize_buckets = [[" << s.width << ", " << s.height << ", "
    << std::max(1, s.frames) << "]]\n";
  o << "\n[[directory]]\npath = '/path/to/data'\nnum_repeats = 1\n";
  return o.str();
}

class DiffusionPipe final : public FactsTrainer {
 public:
  DiffusionPipe() : FactsTrainer("diffusion-pipe") {}
  bool detects(const std::string& path) const override {
    const std::string ext = extension(path);
    if (ext == ".toml") return main_toml(path);
    if (!command_line_file(path)) return false;
    // a command running diffusion-pipe's train.py with --deepspeed (train.py:41-58)
    const std::string text = read_text_file(path, "launch script");
    for (const ShellCommand& c : read_shell_script(text, path).commands) {
      bool script = false;
      for (const ShellWord& w : c.words) {
        if (readers::script_name(w.text) == "train.py") script = true;
        else if (script && w.text == "--deepspeed") return true;
      }
    }
    return false;
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return dp_text(*facts(), fam, c); }
  std::vector<std::string> manual_steps(const Family& fam) const override {
    const json* te = type_entry(*facts(), fam.id);
    std::vector<std::string> steps = {"save the first part as main.toml and the part after '# dataset.toml' as dataset.toml",
                                      "[model]: the checkpoint paths " + std::string(te ? "of " + te->at("module").get<std::string>() : "the model file reads"),
                                      "output_dir, epochs, save_every_n_epochs, [optimizer] lr",
                                      "dataset.toml [[directory]] path (images or videos with .txt captions)"};
    if (te && te->value("by_checkpoint", false)) steps.push_back("ckpt_path: the Wan checkpoint folder whose config.json names this variant (models/wan/wan.py:80-174)");
    steps.push_back("run: deepspeed --num_gpus N train.py --deepspeed --config main.toml (latents and text embeddings are cached first, in the same run)");
    return steps;
  }
  nlohmann::ordered_json memory_knobs(const TrainerRead& r, const nlohmann::ordered_json& plan) const override {
    ordered_json k = ordered_json::object();
    for (const auto& [key, v] : plan.items()) k[key] = v;
    // blocks_to_swap 0 is the trainer's default: the key removed; pipeline_stages and the float8 dtype as
    // the file has them are left as written (its own spelling, float8_e5m2 say)
    if (k.contains("blocks_to_swap") && k["blocks_to_swap"] == 0) k["blocks_to_swap"] = nullptr;
    if (k.contains("pipeline_stages") && k["pipeline_stages"] == std::max(1, r.setup.pipeline_stages)) k.erase("pipeline_stages");
    for (const char* dtype : {"model.transformer_dtype", "model.diffusion_model_dtype"})
      if (k.contains(dtype) && quantized(r.setup)) k.erase(dtype);
    k.erase("model.cache_text_embeddings");
    // activation_checkpointing as the file already runs it is left as written
    const ordered_json ac = !r.schedule.checkpointing ? ordered_json(false)
                            : r.schedule.backend == Backend::Unsloth ? ordered_json("unsloth") : ordered_json(true);
    if (k.contains("activation_checkpointing") && k["activation_checkpointing"] == ac) k.erase("activation_checkpointing");
    return k;
  }
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    // a launch script's memory keys live in its --config TOML: that file is written back
    const std::string file = r.config_file.empty() ? r.config_path : r.config_file;
    Rewritten out;
    out.text = read_text_file(file, "diffusion-pipe config");
    if (!r.config_file.empty()) out.notes.push_back("the launch script's --config TOML " + file + " written back (its memory keys live there)");
    const ordered_json k = rewrite_knobs(r, knobs);
    // top-level keys, and [model] transformer_dtype / [adapter] alpha inside their tables (set_toml_key's table.key)
    for (const auto& [key, v] : k.items()) out.text = set_toml_key(out.text, key, v);
    return out;
  }

 protected:
  TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const override { return readers::read_diffusion_pipe(path, o); }
  std::vector<KnobCombo> combos(const TrainerFamily& tf, const TrainingSetup& base, std::vector<std::string>& notes) const override {
    return ::segadvise::combos(*facts(), tf, base, false, notes);
  }

 public:
  std::vector<KnobCombo> fallback_space(const Family& fam, const TrainingSetup& base, std::vector<std::string>& notes) const override {
    const TrainerFamily* tf = facts()->find(fam);
    if (!tf) return {};
    std::vector<KnobCombo> out = ::segadvise::combos(*facts(), *tf, base, true, notes);
    for (auto& c : out) c.setup.trainer = id();
    return out;
  }

 private:
  // a main TOML: a [model] table with a type (train.py:310; its reader names what else is missing)
  static bool main_toml(const std::string& path) {
    const std::string text = read_text_file(path, "TOML config");
    bool model = false, type = false, dataset = false, in_model = false, in_table = false;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      const std::size_t i = line.find_first_not_of(" \t");
      if (i == std::string::npos || line[i] == '#') continue;
      if (line[i] == '[') {
        in_table = true;
        in_model = line.compare(i, 7, "[model]") == 0;
        model |= in_model;
        continue;
      }
      const std::size_t eq = line.find('=');
      if (eq == std::string::npos) continue;
      std::string key = line.substr(i, eq - i);
      while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
      if (in_model && key == "type") type = true;
      if (!in_table && key == "resolutions") dataset = true;
    }
    // a dataset TOML alone (top-level resolutions, or [[directory]]) is claimed so its reader can say
    // which file to pass instead
    return (model && type) || (!model && (dataset || text.find("[[directory]]") != std::string::npos));
  }
};

}  // namespace

const Trainer& diffusion_pipe_trainer() {
  static const DiffusionPipe t;
  return t;
}

}  // namespace segadvise
