// kohya-ss sd-scripts: a launch script (`accelerate launch [--num_processes N] SCRIPT.py --flags`, in
// bash, PowerShell, cmd or a notebook), its --config_file TOML (sections flattened, command line >
// TOML > default, library/train_util.py:4700-4763), a --config_file TOML alone, and the
// --dataset_config TOML (sd_scripts_dataset.cpp). Facts: trainers/sd_scripts/sd-scripts.json.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "sd_scripts/sd_scripts_parts.hpp"
#include "segadvise/costmodel/constants.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/io/text.hpp"
#include "segadvise/trainers/multi_gpu_config.hpp"
#include "segadvise/trainers/sd_scripts_reader.hpp"

namespace segadvise::readers {

namespace sd_scripts_parts {

const TrainerFacts& facts() { return trainer_facts("sd-scripts"); }

const char* const kNoLatentCache = "color_aug or random_crop: sd-scripts refuses latent caching (train_network.py:581-588)";
const char* const kNoTextCache =
    "shuffle_caption, caption or tag dropout, or token_warmup_step: sd-scripts refuses text-encoder output caching (library/train_util.py:1102-1113)";

const nlohmann::json* script_entry(const std::string& script) {
  const nlohmann::json& s = facts().raw.at("scripts");
  return s.contains(script) ? &s.at(script) : nullptr;
}

bool script_defines(const std::string& script, const std::string& key) {
  const nlohmann::json& all = facts().raw.at("argparse").at("scripts");
  if (!all.contains(script)) return false;
  const nlohmann::json& names = all.at(script);
  return std::binary_search(names.begin(), names.end(), nlohmann::json(key));
}

bool flag(const CommandLine& cl, const std::string& k) {
  auto it = cl.values.find(k);
  return it != cl.values.end() && it->second != "false";
}

std::string where(const std::string& path, const CommandLine& cl, const std::string& k) {
  auto it = cl.lines.find(k);
  return path + (it == cl.lines.end() || it->second <= 0 ? "" : ":" + std::to_string(it->second)) + ": " + k;
}

}  // namespace sd_scripts_parts

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;
using sd_scripts_parts::facts;
using sd_scripts_parts::flag;
using sd_scripts_parts::script_defines;
using sd_scripts_parts::script_entry;
using sd_scripts_parts::where;
namespace fs = std::filesystem;

bool uncopied_name(const std::string& k) {
  const json& names = facts().raw.at("argparse").at("uncopied_parsers").at("known_names");
  return std::find(names.begin(), names.end(), json(k)) != names.end();
}

// a TOML value as argparse would hold it, as flag text (a list's items joined by spaces)
std::string flag_text(const ojson& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_array()) {
    std::string out;
    for (const auto& x : v) out += (out.empty() ? "" : " ") + flag_text(x);
    return out;
  }
  return v.dump();
}

// A --config_file TOML flattened: every section's keys at the top (library/train_util.py:4748-4757)
CommandLine flatten_config(const ojson& root, const std::string& path) {
  CommandLine cl;
  auto add = [&](const std::string& k, const ojson& v) {
    if (v.is_object()) throw InputError(path + ": " + k + ": a table inside a section: sd-scripts flattens one level only (library/train_util.py:4748-4757)");
    cl.values[k] = flag_text(v);
    cl.lines[k] = 0;
  };
  for (const auto& [k, v] : root.items()) {
    if (v.is_object())
      for (const auto& [ik, iv] : v.items()) add(ik, iv);
    else
      add(k, v);
  }
  return cl;
}

// The config file's keys no parser of the script defines: kept in the namespace, never read (one warning)
void warn_unknown_keys(const CommandLine& file_keys, const std::string& script, const std::string& file, TrainerRead& r) {
  std::string list;
  int n = 0;
  for (const auto& kv : file_keys.values) {
    const bool known = script.empty() ? facts().key(kv.first) != nullptr : script_defines(script, kv.first);
    if (known || uncopied_name(kv.first)) continue;
    if (++n <= 12) list += (list.empty() ? "" : ", ") + brief_text(kv.first);
  }
  if (n == 0) return;
  if (n > 12) list += " and " + std::to_string(n - 12) + " more";
  r.warnings.push_back(file + ": keys " + (script.empty() ? std::string("no sd-scripts training script") : script + "'s parser does not") +
                       " define" + (script.empty() ? "s" : "") + ", put in the namespace and never read: " + list +
                       " (library/train_util.py:4759-4760 parse_args(namespace=...))");
}

// The command line's flags: argparse stops on one the script's parser does not define ("unrecognized
// arguments") — certain where another script defines it; where none of the copied parsers does, the
// three uncopied ones might: a warning. A unique prefix of a defined flag is that flag (allow_abbrev).
void check_flags(CommandLine& cl, TrainerRead& r) {
  const json& names = facts().raw.at("argparse").at("scripts").at(cl.script);
  std::vector<std::pair<std::string, std::string>> renamed;
  for (const auto& kv : cl.values) {
    const std::string& k = kv.first;
    if (script_defines(cl.script, k) || uncopied_name(k)) continue;
    const int line = cl.lines.count(k) ? cl.lines.at(k) : 0;
    std::string full;
    int matches = 0;
    for (const auto& n : names)
      if (n.get<std::string>().rfind(k, 0) == 0 && ++matches == 1) full = n.get<std::string>();
    if (matches == 1 && !k.empty()) {
      renamed.emplace_back(k, full);
      continue;
    }
    const std::string at = " (" + brief_text(cl.script) + (line > 0 ? ", line " + std::to_string(line) : std::string()) + ")";
    if (facts().key(k))
      refuse_flag(r, k, cl.script + "'s parser does not define it (another sd-scripts script's flag): argparse stops with \"unrecognized arguments\"" + at);
    else
      r.warnings.push_back("--" + brief_text(k) + ": no copied sd-scripts parser defines it; unless the uncopied library/utils.py, "
                           "sai_model_spec.py or custom_train_functions.py parsers do, argparse stops with \"unrecognized arguments\"" + at);
  }
  for (const auto& [from, to] : renamed) {
    r.warnings.push_back("--" + from + " is argparse's abbreviation of --" + to + " (a unique prefix): read as --" + to);
    cl.values[to] = cl.values.at(from);
    cl.values.erase(from);
    if (cl.lines.count(from)) {
      cl.lines[to] = cl.lines.at(from);
      cl.lines.erase(from);
    }
  }
}

int int_flag(const CommandLine& cl, const std::string& path, const std::string& k, int lo, int hi) {
  return to_int(cl.values.at(k), where(path, cl, k), lo, hi);
}

// --network_args of lycoris.kohya (the LyCORIS library's network; its words "key=value"): algo=lokr is
// LoKr, sized as the family's LoRA targets factorized by `factor` (-1: the most balanced) with w2 at
// rank --network_dim, or full where the rank reaches the layers' width (LyCORIS builds a full w2 when the
// rank is at least half the layer's larger side: library knowledge, LyCORIS is not among the copied
// sources) or full_matrix=True; other algorithms are sized as a LoRA of that rank, capped at the width.
void read_lycoris_args(const CommandLine& cl, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  std::map<std::string, std::string> args;
  std::string words = cl.values.count("network_args") ? cl.values.at("network_args") : "";
  for (char& c : words)
    if (c == '"' || c == '\'' || c == '[' || c == ']' || c == ',') c = ' ';
  std::istringstream in(words);
  for (std::string w; in >> w;) {
    const size_t eq = w.find('=');
    if (eq != std::string::npos) args[w.substr(0, eq)] = w.substr(eq + 1);
  }
  std::string algo = args.count("algo") ? args.at("algo") : "lora";
  std::transform(algo.begin(), algo.end(), algo.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  int width = 0;
  for (const auto& b : fam.block_lists) width = std::max({width, b.hidden, b.ffn_hidden});
  s.lora_type = LoraType::Lycoris;
  if (algo == "lokr") {
    LycorisPreset p;
    p.algo = "lokr";
    if (args.count("factor")) {
      try {
        p.factor = std::stoi(args.at("factor"));
      } catch (const std::exception&) {
        throw InputError(r.config_path + ": --network_args factor=" + args.at("factor") + ": not an integer");
      }
      if (p.factor == 0 || p.factor < -1) p.factor = -1;
    }
    const std::string fm = args.count("full_matrix") ? args.at("full_matrix") : "";
    p.full_matrix = fm == "True" || fm == "true" || (width > 0 && 2LL * s.lora_rank >= width);
    p.linear_dim = std::min(s.lora_rank, kMaxLoraRank);
    std::vector<std::string> absent;
    const std::string why = resolve_lokr(fam, p, s, absent);
    s.notes.push_back("LyCORIS LoKr (lycoris.kohya, --network_args algo=lokr" + std::string(p.factor > 0 ? " factor=" + std::to_string(p.factor) : "") + "): " +
                      (p.full_matrix ? "a full w2 (rank " + std::to_string(s.lora_rank) + " reaches the layers' width)" : "w2 at rank " + std::to_string(p.linear_dim)));
    if (!why.empty())
      r.warnings.push_back("LyCORIS LoKr: " + why + ": trainable parameters are estimated as LoKr factor 16 on the family's LoRA targets (small next to the base weights)");
  } else {
    if (width > 0 && s.lora_rank > width) {
      r.warnings.push_back("--network_dim " + std::to_string(s.lora_rank) + " with LyCORIS " + algo + ": above every layer's width (" + std::to_string(width) +
                           "), predicted at that width (LyCORIS's factorizations cannot exceed a layer's side; library knowledge)");
      s.lora_rank = width;
    }
    s.notes.push_back("LyCORIS " + algo + " (lycoris.kohya): sized as a LoRA of rank " + std::to_string(s.lora_rank));
  }
  if (s.lora_rank > kMaxLoraRank) s.lora_rank = kMaxLoraRank;
}

// --optimizer_type as get_optimizer reads it (library/train_util.py:4826-4845, :5118-5133)
std::string optimizer_of(const CommandLine& cl, TrainerRead& r) {
  const json& t = facts().raw.at("optimizers");
  const std::string src = t.at("source").get<std::string>();
  std::string type = cl.values.count("optimizer_type") ? cl.values.at("optimizer_type") : "";
  if (flag(cl, "use_8bit_adam") || flag(cl, "use_lion_optimizer")) {
    if (!type.empty())
      r.rejections.push_back("--use_8bit_adam / --use_lion_optimizer with --optimizer_type: sd-scripts stops (\"both option ... are specified\", library/train_util.py:4829-4842)");
    type = flag(cl, "use_8bit_adam") ? "AdamW8bit" : "Lion";
  }
  if (type.empty()) return "adamw";
  if (t.at("builtin").contains(lower(type))) return t.at("builtin").at(lower(type)).get<std::string>();
  for (const auto& c : t.at("classes"))
    if (c.at("class") == type) return c.at("optimizer").get<std::string>();
  const std::string at = where(r.config_path, cl, "optimizer_type");
  const json& torch_optim = t.at("torch_optim_classes");
  if (type.find('.') == std::string::npos && std::find(torch_optim.begin(), torch_optim.end(), json(type)) == torch_optim.end()) {
    r.rejections.push_back(at + " '" + brief_text(type) + "': not one of sd-scripts' optimizer names, and without a module path the class is looked up "
                           "in torch.optim, case-sensitively, which has no such class: sd-scripts stops (" + src + ")");
    return "adamw";
  }
  r.warnings.push_back(at + ": optimizer '" + brief_text(type) + "' has no segadvise equivalent: predicted with adamw (8 bytes of state per parameter)");
  return "adamw";
}

// The memory flags as the script applies them
void read_flags(const CommandLine& cl, const json& se, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const std::string& path = r.config_path;
  const std::string& script = cl.script;
  const std::string src = se.at("source").get<std::string>();
  const bool lora = se.at("lora").get<bool>();
  const TrainerFamily* tf = facts().find(*r.family);
  const std::string mp = cl.values.count("mixed_precision") ? cl.values.at("mixed_precision") : "no";
  if (mp != "no" && mp != "fp16" && mp != "bf16")
    throw InputError(where(path, cl, "mixed_precision") + ": invalid choice '" + brief_text(mp) + "' (choose from 'no', 'fp16', 'bf16'): argparse stops (library/train_util.py:3980)");
  if (!cl.values.count("mixed_precision"))
    r.warnings.push_back("--mixed_precision unset: sd-scripts' default 'no' (float32 weights and activations, library/train_util.py:3980); "
                         "an `accelerate launch --mixed_precision` does not change it, the script passes its own to Accelerator "
                         "(library/train_util.py:5496)");
  s.mixed_precision = mp;
  const bool full_bf16 = flag(cl, "full_bf16"), full_fp16 = flag(cl, "full_fp16");
  if (full_bf16 && mp != "bf16")
    r.rejections.push_back("--full_bf16 needs --mixed_precision bf16: sd-scripts stops (\"full_bf16 requires mixed precision='bf16'\", train_network.py:819-822)");
  if (full_fp16 && mp != "fp16")
    r.rejections.push_back("--full_fp16 needs --mixed_precision fp16: sd-scripts stops (\"full_fp16 requires mixed precision='fp16'\", train_network.py:814-817)");
  const bool half_trained = (full_bf16 && mp == "bf16") || (full_fp16 && mp == "fp16");
  if (lora) {
    s.model_type = ModelType::Lora;
    // argparse's int: no upper bound in sd-scripts; a rank above every layer's width is LyCORIS's
    // "full matrix" convention (the GUI's LoKr presets write 100000), read below
    if (cl.values.count("network_dim")) s.lora_rank = int_flag(cl, path, "network_dim", 1, 1 << 24);
    else {
      s.lora_rank = 4;
      r.warnings.push_back("--network_dim unset: the LoRA module's default rank 4 is assumed (networks/lora*.py, not among the copied sources)");
    }
    // the network is float32 unless --full_bf16/--full_fp16 cast it (train_network.py:814-825)
    s.adapter_weight_bytes = half_trained ? 2 : 4;
    if (!cl.values.count("network_module"))
      r.warnings.push_back("--network_module unset: " + script + " imports None and stops; predicted as its LoRA module");
    else if (cl.values.at("network_module") == "lycoris.kohya") read_lycoris_args(cl, *r.family, r);
    else if (s.lora_rank > kMaxLoraRank) {
      r.warnings.push_back(where(path, cl, "network_dim") + ": " + std::to_string(s.lora_rank) + " is above the largest LoRA rank segadvise models: predicted at " +
                           std::to_string(kMaxLoraRank) + " (a lower bound)");
      s.lora_rank = kMaxLoraRank;
    }
  } else {
    s.model_type = ModelType::Full;
    // the trained model in float32 unless --full_bf16/--full_fp16 (flux_train.py:425-443, sdxl_train.py alike)
    if (!half_trained && mp != "no") s.weight_storage_bytes = 4;
    if (!half_trained)
      r.warnings.push_back(script + " without --full_bf16: the model trains in float32 (weights, gradients, optimizer state)" +
                           std::string(mp == "no" ? "" : ", its activations in " + mp + " under autocast"));
  }
  if (r.family->id == "chroma" && !flag(cl, "apply_t5_attn_mask"))
    r.rejections.push_back("Chroma without --apply_t5_attn_mask: sd-scripts stops (\"apply_t5_attn_mask must be True for Chroma\", flux_train_network.py:54)");
  // fp8 base: LoRA scripts only (train_network.py:829-847); HunyuanImage by --fp8_scaled; Anima turns it off
  const bool fp8_flag = flag(cl, "fp8_base") || flag(cl, "fp8_base_unet");
  if (se.value("fp8_scaled", false) && flag(cl, "fp8_scaled")) {
    s.base_precision = facts().raw.at("plans").at("fp8_base_precision").get<std::string>();
  } else if (fp8_flag && lora && se.value("fp8_base", false)) {
    if (mp == "no") r.rejections.push_back("--fp8_base needs --mixed_precision fp16 or bf16: sd-scripts stops (\"fp8_base requires mixed precision='fp16' or 'bf16'\", train_network.py:831-833)");
    else s.base_precision = facts().raw.at("plans").at("fp8_base_precision").get<std::string>();
  } else if (fp8_flag) {
    r.warnings.push_back("--fp8_base: " + script + " does not apply it (" + src + "): predicted with " + (mp == "no" ? "float32" : mp) + " weights");
  }
  // checkpointing
  r.schedule = Schedule{};
  r.schedule.checkpointing = flag(cl, "gradient_checkpointing");
  const bool cpu_ckpt = flag(cl, "cpu_offload_checkpointing");
  const bool unsloth = flag(cl, "unsloth_offload_checkpointing");
  if (cpu_ckpt || unsloth) {
    const std::string k = cpu_ckpt ? "cpu_offload_checkpointing" : "unsloth_offload_checkpointing";
    if (cpu_ckpt && !se.value("cpu_offload_checkpointing", false)) {
      if (r.schedule.checkpointing)
        r.rejections.push_back("--cpu_offload_checkpointing: " + script + "'s model takes no offload argument in enable_gradient_checkpointing "
                               "(inferred from the model code: a TypeError; " + src + ")");
      else r.warnings.push_back("--cpu_offload_checkpointing without --gradient_checkpointing: not applied");
    } else if (unsloth && !r.schedule.checkpointing) {
      r.schedule.checkpointing = true;  // anima_train_network.py:68-70 turns it on
      r.schedule.backend = Backend::Unsloth;
      r.warnings.push_back("--unsloth_offload_checkpointing turns --gradient_checkpointing on (anima_train_network.py:68-70)");
    } else if (!r.schedule.checkpointing) {
      r.warnings.push_back("--" + k + " without --gradient_checkpointing: not applied (the model's checkpointing is off)");
    } else {
      r.schedule.backend = Backend::Unsloth;  // block inputs saved on the CPU (library/flux_models.py:742-756)
    }
    if (cpu_ckpt && unsloth)
      r.rejections.push_back("--unsloth_offload_checkpointing with --cpu_offload_checkpointing: sd-scripts stops (anima_train_network.py:67-76)");
  }
  // block swap
  int n = 0;
  if (cl.values.count("blocks_to_swap")) n = int_flag(cl, path, "blocks_to_swap", 0, kMaxBlocksToSwap);
  if (se.value("split_mode", 0) > 0 && flag(cl, "split_mode")) {
    if (cl.values.count("blocks_to_swap"))
      r.warnings.push_back("--split_mode with --blocks_to_swap: --split_mode is ignored (flux_train_network.py:82-93)");
    else {
      n = se.at("split_mode").get<int>();
      r.warnings.push_back("--split_mode (deprecated) sets --blocks_to_swap " + std::to_string(n) + " (flux_train_network.py:82-93)");
    }
  }
  if (cl.values.count("double_blocks_to_swap") || cl.values.count("single_blocks_to_swap")) {
    // flux_train.py:285-298: the deprecated pair becomes d + s//2
    const int d = cl.values.count("double_blocks_to_swap") ? int_flag(cl, path, "double_blocks_to_swap", 0, kMaxBlocksToSwap) : 0;
    const int sg = cl.values.count("single_blocks_to_swap") ? int_flag(cl, path, "single_blocks_to_swap", 0, kMaxBlocksToSwap) : 0;
    if (!cl.values.count("blocks_to_swap")) n = d + sg / 2;
    r.warnings.push_back("--double_blocks_to_swap/--single_blocks_to_swap (deprecated): --blocks_to_swap " + std::to_string(n) + " (flux_train.py:285-298)");
  }
  const std::string swap = se.value("block_swap", "");
  if (n > 0 && swap == "ignored") {
    r.warnings.push_back("--blocks_to_swap " + std::to_string(n) + ": " + script + " parses it but does not swap (" + src + ")");
    n = 0;
  }
  if (n > 0 && tf) {
    if (cpu_ckpt) r.rejections.push_back("--cpu_offload_checkpointing with --blocks_to_swap: sd-scripts stops (\"blocks_to_swap is not supported with cpu_offload_checkpointing\", flux_train_network.py:77-79, sd3_train_network.py:60-62, flux_train.py:81-85)");
    if (unsloth) r.rejections.push_back("--unsloth_offload_checkpointing with --blocks_to_swap: sd-scripts stops (anima_train_network.py:67-76)");
    if (n > tf->blocks_to_swap_max)
      r.rejections.push_back("--blocks_to_swap " + std::to_string(n) + " is above " + r.family->name + "'s maximum " + std::to_string(tf->blocks_to_swap_max) +
                             ": sd-scripts stops with an AssertionError (" + tf->source + ")");
    const int m = std::min(n, tf->blocks_to_swap_max);
    sd_scripts_parts::set_swapped_blocks(s, *tf, se, m);
    if (!s.blocks_to_swap_per_list.empty()) {
      const int d = s.blocks_to_swap_per_list[0], sg = s.blocks_to_swap_per_list[1];
      r.warnings.push_back("--blocks_to_swap " + std::to_string(m) + " on " + r.family->name + " swaps the weights of the last " + std::to_string(d) + " of " +
                           std::to_string(tf->double_blocks) + " double blocks and the last " + std::to_string(sg) + " of " + std::to_string(tf->single_blocks) +
                           " single blocks (" + tf->source + "): " + std::to_string(tf->double_blocks - d) + " double and " +
                           std::to_string(tf->single_blocks - sg) + " single blocks stay on the GPU");
    }
  } else if (n > 0) {
    r.warnings.push_back("--blocks_to_swap " + std::to_string(n) + ": " + r.family->name + " has no block swap in " + script);
  }
  // optimizer, fused backward pass
  s.optimizer = optimizer_of(cl, r);
  const std::string opt_l = lower(cl.values.count("optimizer_type") ? cl.values.at("optimizer_type") : "adamw");
  const int gas = cl.values.count("gradient_accumulation_steps") ? int_flag(cl, path, "gradient_accumulation_steps", 1, 1 << 20) : 1;
  if (flag(cl, "fused_backward_pass")) {
    if (opt_l != "adafactor")
      r.rejections.push_back("--fused_backward_pass with --optimizer_type " + brief_text(opt_l) + ": sd-scripts stops (\"fused_backward_pass currently only works with optimizer_type Adafactor\", library/train_util.py:4848-4851)");
    if (gas != 1)
      r.rejections.push_back("--fused_backward_pass with --gradient_accumulation_steps " + std::to_string(gas) + ": sd-scripts stops (library/train_util.py:4852-4854)");
    if (se.value("fused_backward_pass", false)) {
      s.fused_back_pass = true;
      r.warnings.push_back("--fused_backward_pass: Adafactor steps each parameter in its gradient hook and frees its gradient (" + src + ")");
    } else {
      r.warnings.push_back("--fused_backward_pass: " + script + " parses it and does nothing (only the full fine-tune scripts apply it: sdxl_train.py:523, flux_train.py:476, sd3_train.py:603, lumina_train.py:537, anima_train.py:299): gradients counted in full");
    }
  }
  if (flag(cl, "blockwise_fused_optimizers") || cl.values.count("fused_optimizer_groups")) {
    if (se.value("blockwise_fused_optimizers", false) || (cl.values.count("fused_optimizer_groups") && script_defines(script, "fused_optimizer_groups"))) {
      s.fused_back_pass = true;
      r.warnings.push_back("--blockwise_fused_optimizers / --fused_optimizer_groups: one optimizer per block or group, stepped in the backward hooks (" + src +
                           "): about one block's gradients resident");
    }
  }
  // what stays on the GPU beside the model through the step (sd-scripts.json "caching": train_network.py:611-620, 1321-1327;
  // sdxl_train_network.py:115-116, 125-126; flux_train.py:268-269)
  const bool cache_latents = flag(cl, "cache_latents") || flag(cl, "cache_latents_to_disk");
  const bool cache_te = flag(cl, "cache_text_encoder_outputs") || flag(cl, "cache_text_encoder_outputs_to_disk");
  const bool unet_only = flag(cl, "network_train_unet_only");
  bool te_trained = false;
  if (lora) te_trained = se.value("trains_text_encoders", false) && !unet_only;
  else te_trained = flag(cl, "train_text_encoder") || (script == "train_db.py");
  if (te_trained && cache_te) {
    if (script == "sdxl_train_network.py")
      r.rejections.push_back("--cache_text_encoder_outputs without --network_train_unet_only: sd-scripts stops (\"network for Text Encoder cannot be trained with caching Text Encoder outputs\", sdxl_train_network.py:39-41)");
    else if (!lora && script == "sdxl_train.py")
      r.rejections.push_back("--train_text_encoder with --cache_text_encoder_outputs: sd-scripts stops (sdxl_train.py:109-111)");
    else if (lora)
      r.warnings.push_back("text-encoder LoRA with cached text-encoder outputs: the cached outputs do not train it (" + src + ")");
  }
  const FamilyPhaseData pd = phase_data(*r.family);
  const double per = mp == "no" ? 4 : 2;
  double kept = 0;
  std::string what;
  const bool te_fp8 = lora && flag(cl, "fp8_base") && !flag(cl, "fp8_base_unet") && se.value("fp8_base", false) && mp != "no";
  const bool te_on_gpu = !cache_te || (te_trained && !se.value("te_cache_to_cpu", false));
  if (te_on_gpu && pd.known)
    for (const auto& te : pd.text_encoders) {
      kept += te.params * (te_fp8 ? 1 : per);
      what += (what.empty() ? "" : ", ") + te.name + (cache_te ? " (trained)" : " (no --cache_text_encoder_outputs: it encodes each batch)");
    }
  if (!cache_latents && pd.has_vae) {
    kept += pd.vae.params * per;
    what += (what.empty() ? "" : ", ") + std::string("VAE (no --cache_latents: it encodes each batch)");
  }
  s.kept_model_bytes = kept;
  s.kept_models = what;
  if (te_trained) s.notes.push_back("the text encoder" + std::string(lora ? "'s LoRA" : "") + " trains too: its " + (lora ? "adapters" : "weights") + " and optimizer state are not counted");
  // attention
  if (flag(cl, "xformers")) s.attention = "xformers";
  else if (flag(cl, "sdpa")) s.attention = "sdpa";
  else r.warnings.push_back("neither --sdpa nor --xformers: sd-scripts runs the model's plain attention (library/train_util.py:3939-3940); predicted with SDPA's memory");
  // several processes: DDP, a full replica per GPU (library/train_util.py:5432-5504), DeepSpeed with --deepspeed
  if (s.multi_gpu.gpus_per_node > 1 || flag(cl, "deepspeed")) {
    if (flag(cl, "deepspeed")) {
      const int z = cl.values.count("zero_stage") ? int_flag(cl, path, "zero_stage", 0, 3) : 2;
      s.multi_gpu.strategy = z == 3 ? Strategy::zero3 : z == 2 ? Strategy::zero2 : z == 1 ? Strategy::zero1 : Strategy::ddp;
      s.multi_gpu.offload_optimizer = cl.values.count("offload_optimizer_device") && cl.values.at("offload_optimizer_device") != "none";
      s.multi_gpu.offload_param = cl.values.count("offload_param_device") && cl.values.at("offload_param_device") != "none";
      r.warnings.push_back("--deepspeed: ZeRO stage " + std::to_string(z) + " (library/deepspeed_utils.py:16-61)");
    } else {
      s.multi_gpu.strategy = Strategy::ddp;
    }
  }
  // the run's phases: caching inside the training process, sampling with --sample_prompts
  TrainerRun& o = r.run.other;
  o.trainer = facts().id;
  o.name = facts().name;
  o.latent_caching = cache_latents;
  o.latent_caching_key = flag(cl, "cache_latents_to_disk") ? "--cache_latents_to_disk" : "--cache_latents";
  o.text_caching = cache_te;
  o.text_caching_key = flag(cl, "cache_text_encoder_outputs_to_disk") ? "--cache_text_encoder_outputs_to_disk" : "--cache_text_encoder_outputs";
  o.caching_batch = cl.values.count("vae_batch_size") ? int_flag(cl, path, "vae_batch_size", 1, kMaxBatch) : 1;
  o.samples = cl.values.count("sample_prompts") > 0;
  o.sample_key = "--sample_prompts";
  o.sample_loads_text_encoders = !cache_te || te_on_gpu;
  o.load_key = "--fp8_base";
  o.save_key = "--save_every_n_epochs";
  o.source = facts().raw.at("phases").at("source").get<std::string>();
  for (const auto& f : facts().raw.at("phases").at("fixes")) {
    TrainerPhaseKnob k;
    k.phase = Phase::Validation;
    k.key = f.at("key").get<std::string>();
    k.value_json = f.at("value").dump();
    k.effect = f.at("effect").get<std::string>();
    o.phase_knobs.push_back(k);
  }
}

// The training command of a launch script: its flags (parse_command_line) and accelerate's --num_processes
int accelerate_processes(const std::string& text, const std::string& path, const std::string& script) {
  for (const ShellCommand& c : read_shell_script(text, path).commands) {
    int n = 1;
    bool has = false;
    for (std::size_t i = 0; i < c.words.size(); ++i) {
      const std::string& w = c.words[i].text;
      if (script_name(w) == script) {
        has = true;
        break;
      }
      if (w == "--num_processes" && i + 1 < c.words.size()) n = to_int(c.words[i + 1].text, path + ":" + std::to_string(c.words[i].line) + ": accelerate --num_processes", 1, kMaxGpusPerNode);
      else if (w.rfind("--num_processes=", 0) == 0) n = to_int(w.substr(16), path + ":" + std::to_string(c.words[i].line) + ": accelerate --num_processes", 1, kMaxGpusPerNode);
    }
    if (has) return n;
  }
  return 1;
}

TrainerRead read_run(CommandLine cl, int num_processes, const std::string& path, const TrainerReadOptions& o, bool toml_alone) {
  TrainerRead r;
  r.trainer = "sd-scripts";
  r.config_path = path;
  r.inputs = {path};
  r.warnings.insert(r.warnings.end(), cl.warnings.begin(), cl.warnings.end());
  if (!cl.script.empty() && script_entry(cl.script)) check_flags(cl, r);
  std::string dataset_named_in = path;
  if (!toml_alone && cl.values.count("config_file")) {
    std::string cf = cl.values.at("config_file");
    if (cf.size() < 5 || cf.compare(cf.size() - 5, 5, ".toml") != 0) cf += ".toml";  // library/train_util.py:4704
    const ShellWrittenFile* w = written_file(cl.written_files, cf);
    std::string cf_path;
    ojson root;
    if (w) {
      cf_path = cf + " (heredoc at " + path + ":" + std::to_string(w->line) + ")";
      root = toml_text_json(w->text, cf_path, "sd-scripts config");
    } else {
      fs::path p(cf);
      if (p.is_relative()) p = (o.cwd.empty() ? fs::current_path() : fs::path(o.cwd)) / cf;
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) p = fs::path(path).parent_path() / cf;
      if (!fs::is_regular_file(p, ec))
        throw InputError(where(path, cl, "config_file") + " '" + brief_text(cf) + "': not found: sd-scripts exits (library/train_util.py:4741-4743)");
      cf_path = p.string();
      root = toml_file_json(cf_path, "sd-scripts config");
    }
    const CommandLine from_file = flatten_config(root, cf_path);
    warn_unknown_keys(from_file, cl.script, cf_path, r);
    r.inputs.push_back(cf_path);
    r.config_file = cf_path;
    if (!cl.values.count("dataset_config")) dataset_named_in = cf_path;
    for (const auto& kv : from_file.values) {
      r.config_file_keys[kv.first] = kv.second;
      cl.values.emplace(kv.first, kv.second);  // the command line wins (parse_args(namespace=config_args))
    }
  }
  sd_scripts_parts::ModelRead model = sd_scripts_parts::model_of(cl, path, o.cwd);
  const Family& fam = choose_family(o, model.family, model.why_not.empty() ? path + ": the model is unknown" : model.why_not);
  start_setup(r, fam, "sd-scripts");
  if (o.model.empty()) {
    r.setup.family_guessed_from = model.guessed_from;
    for (const auto& n : model.notes) r.setup.notes.push_back(n);
    for (const auto& w : model.warnings) r.warnings.push_back(w);
  }
  if (toml_alone) warn_unknown_keys(cl, cl.script, path, r);
  const json* se = script_entry(cl.script);
  if (!se) {
    // --model named a family the command line's script does not say: its first script for the family
    for (const auto& [name, e] : facts().raw.at("scripts").items())
      for (const auto& f : e.at("families"))
        if (!se && f == fam.id) {
          se = &e;
          cl.script = name;
        }
    if (!se) throw InputError(path + ": sd-scripts has no training script for " + fam.name);
    r.warnings.push_back("read as " + cl.script + ", sd-scripts' script for " + fam.name);
  }
  bool trains = false;
  for (const auto& f : se->at("families")) trains = trains || f == fam.id;
  if (!trains) r.warnings.push_back(cl.script + " does not train " + fam.name + " (--model): its flags are read as they are");
  r.setup.script = cl.script;
  r.setup.multi_gpu.gpus_per_node = std::max(1, num_processes);
  read_flags(cl, *se, r);
  sd_scripts_parts::read_dataset(cl, dataset_named_in, o.cwd, r);
  return r;
}

}  // namespace

TrainerRead read_sd_scripts_command(const CommandLine& cl, int num_processes, const std::string& path, const TrainerReadOptions& o) {
  return read_run(cl, num_processes, path, o, false);
}

bool sd_scripts_toml(const std::string& path) {
  // a run's --config_file: sd-scripts' model key, not musubi's --dit nor a dataset config's [[datasets]]
  ojson root;
  try {
    root = toml_file_json(path, "config");
  } catch (const InputError&) {
    return false;  // not valid TOML: the TOML reader that claims it next says where
  }
  bool model = false, dit = false;
  for (const auto& [k, v] : root.items()) {
    if (k == "datasets") return false;
    model = model || k == "pretrained_model_name_or_path";
    dit = dit || k == "dit";
    if (v.is_object()) {
      model = model || v.contains("pretrained_model_name_or_path");
      dit = dit || v.contains("dit");
    }
  }
  return model && !dit;
}

TrainerRead read_sd_scripts(const std::string& path, const TrainerReadOptions& o) {
  const std::string ext = lower(fs::path(path).extension().string());
  if (ext == ".toml") {
    // a --config_file TOML alone (library/train_util.py:4748-4757): no script, no launcher
    const ojson root = toml_file_json(path, "sd-scripts config");
    CommandLine cl = flatten_config(root, path);
    return read_run(cl, 1, path, o, true);
  }
  const std::string text = read_text_file(path, "sd-scripts command line");
  CommandLine cl = parse_command_line(text, path, facts());
  if (cl.script.empty()) throw InputError(path + ": no sd-scripts training script (*.py) on any command line");
  return read_run(cl, accelerate_processes(text, path, cl.script), path, o, false);
}

}  // namespace segadvise::readers
