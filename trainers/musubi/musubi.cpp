// musubi-tuner's component (trainer.hpp): its knob combinations for a family (musubi.json), the
// command line and dataset TOML it reads, what is left to set by hand, and its file written back.
#include <algorithm>
#include <sstream>

#include "common/trainer_parts.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

using nlohmann::ordered_json;
using namespace plans;

namespace {

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
  // a model whose loader keeps a pre-quantized fp8 checkpoint as it is (musubi.json models.fp8_checkpoints):
  // fp8 weights without a flag, from the --dit file
  const nlohmann::json& fp8_files = facts.raw.at("models").at("fp8_checkpoints");
  const nlohmann::json& kept = fp8_files.at("kept_as_is");
  const bool fp8_file = quantized(user) && fp8_ignored && !full && std::find(kept.begin(), kept.end(), tf.family) != kept.end();
  if (fp8_file)
    notes.push_back("musubi-tuner's script for this model has no fp8 flag but loads a pre-quantized fp8 checkpoint as it is (" +
                    fp8_files.at("source").get<std::string>() + "): planned with fp8 weights, so --dit must be such a file");
  else if (quantized(user) && fp8_ignored)
    notes.push_back("musubi-tuner's script for this model ignores --fp8_base and has no --fp8_scaled (" + tf.source + "): planned with bf16 weights");
  base.base_precision = fp8 || fp8_file ? plans.str("fp8_base_precision", "", true) : "no_change";
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
      // --model_version picks FLUX.2 klein's and Qwen-Image-Edit's model (musubi.json models.model_versions)
      if (fe && fe->contains("model_version")) c.knobs["model_version"] = fe->at("model_version");
      if (two_dits) c.knobs["dit_high_noise"] = "/path/to/high_noise_dit.safetensors";
      if (fp8_file) c.knobs["dit"] = "/path/to/" + tf.family + "_fp8.safetensors";  // the fp8 file it was planned with
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
      c.setup.blocks_to_swap_per_list = musubi_swapped_per_list(tf, n);
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

std::string musubi_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const TrainerFamily* tf = facts.find(fam);
  std::ostringstream o;
  o << "# flags (or the same keys in a --config_file TOML)\n";
  std::string script = tf && !tf->scripts.empty() ? tf->scripts.front() : "";
  if (s.model_type == ModelType::Full)  // the family's full fine-tune script (musubi() plans Full only where it has one)
    for (const auto& e : facts.raw.at("families"))
      if (e.at("family") == fam.id && e.contains("full_finetune_scripts") && !e.at("full_finetune_scripts").empty())
        script = e.at("full_finetune_scripts").at(0).get<std::string>();
  if (!script.empty()) o << "python " << script << " ";
  o << flag_line(c.knobs) << " --dataset_config dataset.toml\n";
  o << "# dataset.toml: the shape this was planned for (dataset/config_utils.py)\n[general]\nresolution = [" << s.width << ", "
    << s.height << "]\nbatch_size = " << s.batch << "\nenable_bucket = true\n\n[[datasets]]\n";
  const nlohmann::json* sections = nullptr;
  for (const auto& e : facts.raw.at("families"))
    if (e.at("family") == fam.id && e.contains("sections")) sections = &e.at("sections");
  if (sections && s.frames > 1) {
    // FramePack: a sample is one section of window = (frames + 3) / 4 latent frames; a clip of
    // window x 4 + 1 frames holds one (musubi.json families[].sections)
    const int window = (s.frames + 3) / 4;
    o << "video_directory = \"/path/to/videos\"\ntarget_frames = [" << window * 4 + 1 << "]\nframe_extraction = \"head\"\n";
    if (window != sections->at("default").get<int>()) o << sections->at("dataset_key").get<std::string>() << " = " << window << "\n";
  } else if (sections) {
    // FramePack's one-frame training: images with their control images (docs/dataset_config.md)
    o << "image_directory = \"/path/to/images\"\ncontrol_directory = \"/path/to/control_images\"\n";
    for (const auto& [k, v] : sections->at("one_frame_dataset").items()) o << k << " = " << v.dump() << "\n";
  } else {
    if (fam.modality == "video") o << "video_directory = \"/path/to/videos\"\ntarget_frames = [" << s.frames << "]\nframe_extraction = \"head\"\n";
    else o << "image_directory = \"/path/to/images\"\n";
    if (s.reference_images > 0) o << "control_directory = \"/path/to/control_images\"\n";
  }
  o << "cache_directory = \"/path/to/cache\"\n";
  return o.str();
}

std::vector<std::string> musubi_manual(const TrainerFacts& facts, const TrainerFamily* tf) {
  const std::string script = tf && !tf->scripts.empty() ? tf->scripts.front() : "the training script";
  // the family's caching scripts where musubi.json names them
  std::string caching = "cache latents and text-encoder outputs first";
  for (const auto& e : facts.raw.at("families"))
    if (tf && e.at("family") == tf->family && e.contains("cache_scripts")) {
      std::string names;
      for (const auto& c : e.at("cache_scripts")) names += (names.empty() ? "" : " and ") + c.get<std::string>();
      caching = "cache latents and text-encoder outputs first (" + names + ")";
    }
  return {"run " + script + (tf && !tf->script_verified ? " (script name not verified)" : "") + " with these flags",
          "--dit, --vae and the text-encoder paths", "--network_module (the LoRA module for this architecture)",
          "the dataset's image/video directory and cache_directory in dataset.toml",
          "--output_dir, --output_name, --learning_rate, --max_train_steps", caching};
}

class Musubi final : public FactsTrainer {
 public:
  Musubi() : FactsTrainer("musubi") {}
  bool detects(const std::string& path) const override {
    if (extension(path) == ".toml") {
      // any .toml the trainers tried before it do not take (registry.cpp's order)
      for (const Trainer* t : all_trainers()) {
        if (t == this) break;
        if (t->detects(path)) return false;
      }
      return true;
    }
    return command_line_file(path) && readers::command_line_trainer(path) == "musubi";
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return musubi_text(*facts(), fam, c); }
  std::vector<std::string> manual_steps(const Family& fam) const override { return musubi_manual(*facts(), facts()->find(fam)); }
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    return rewrite_flags(r, rewrite_knobs(r, knobs));
  }
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
    // a key musubi stops on with this file (--fp8_scaled on an fp8 checkpoint) is never written back
    for (const auto& key : r.refused_keys)
      if (k.contains(key)) k[key] = nullptr;
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

}  // namespace

const Trainer& musubi_trainer() {
  static const Musubi t;
  return t;
}

}  // namespace segadvise
