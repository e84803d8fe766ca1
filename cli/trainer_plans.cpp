#include "trainer_plans.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "emitters.hpp"
#include "segadvise/costmodel/precision.hpp"

namespace segadvise::cli {

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
  return s;
}

bool quantized(const TrainingSetup& s) { return precision_info(s.base_precision).quantized; }

void note_precision(const TrainingSetup& user, const std::string& as, const std::string& trainer, std::vector<std::string>& notes) {
  if (user.base_precision == as || (!quantized(user) && as == "no_change")) return;
  notes.push_back("base_model_precision " + precision_key(user) + " has no equivalent in " + trainer + ": predicted with " +
                  (as == "no_change" ? std::string("a bf16 base") : as) + " (its nearest knob)");
}

std::vector<KnobCombo> musubi(const TrainerFamily& tf, const TrainingSetup& user, std::vector<std::string>& notes) {
  TrainingSetup base = plain(user);
  base.mixed_precision = "bf16";  // --mixed_precision bf16 is emitted
  const bool fp8 = quantized(user);
  base.base_precision = fp8 ? "fp8wo-torchao" : "no_change";
  note_precision(user, base.base_precision, "musubi-tuner", notes);
  std::vector<int> swaps = {0};
  const int max = tf.blocks_to_swap_max;
  if (max > 0) swaps = {0, max / 4, max / 2, (3 * max) / 4, max};
  else notes.push_back("musubi-tuner's block-swap maximum for this model is not recorded: block swap is not offered");
  swaps.erase(std::unique(swaps.begin(), swaps.end()), swaps.end());
  std::vector<KnobCombo> out;
  for (int gc = 0; gc < 3; ++gc)
    for (int n : swaps) {
      KnobCombo c;
      c.knobs["sdpa"] = true;  // one attention flag is required (trainer_base.py:1513)
      c.knobs["mixed_precision"] = "bf16";
      c.knobs["gradient_checkpointing"] = gc >= 1;
      if (gc == 2) c.knobs["gradient_checkpointing_cpu_offload"] = true;
      if (n > 0) c.knobs["blocks_to_swap"] = n;
      if (fp8) {
        c.knobs["fp8_base"] = true;
        c.knobs["fp8_scaled"] = true;
      }
      if (base.model_type == ModelType::Lora) c.knobs["network_dim"] = base.lora_rank;
      c.setup = base;
      c.setup.model_type = ModelType::Lora;
      c.setup.blocks_to_swap = musubi_swapped_chain_blocks(tf, n);
      c.schedule = sched(gc >= 1, gc == 2 ? Backend::Unsloth : Backend::Torch);
      c.label = gc == 0 ? "no checkpointing" : gc == 1 ? "gradient checkpointing" : "checkpointing + CPU offload";
      if (n > 0) c.label += ", --blocks_to_swap " + std::to_string(n);
      out.push_back(c);
    }
  if (user.model_type == ModelType::Full) notes.push_back("musubi-tuner's *_train_network.py scripts train a LoRA: planned as LoRA rank " + std::to_string(base.lora_rank));
  return out;
}

std::vector<KnobCombo> ai_toolkit(const TrainerFamily& tf, const TrainingSetup& user, std::vector<std::string>& notes) {
  TrainingSetup base = plain(user);
  base.mixed_precision = "bf16";  // train.dtype bf16 is emitted
  const bool q = quantized(user);
  std::vector<int> pcts = {0};
  if (tf.layer_offloading) pcts = {0, 25, 50, 75, 100};
  else notes.push_back("model.layer_offloading does nothing on this family in ai-toolkit (" + tf.source + "): not offered");
  if (q && tf.layer_offloading) notes.push_back("quantizer: model.qtype qfloat8 is optimum-quanto; with layer_offloading ai-toolkit uses float8 = torchao "
                         "Float8WeightOnlyConfig instead (config_modules.py:714-715), and the emitted qtype says so");
  std::vector<KnobCombo> out;
  for (int gc = 0; gc < 2; ++gc)
    for (int pct : pcts) {
      KnobCombo c;
      c.setup = base;
      c.knobs["train.dtype"] = "bf16";  // default fp32 (config_modules.py:395)
      c.knobs["train.gradient_checkpointing"] = gc == 1;
      if (q) {
        c.knobs["model.quantize"] = true;
        c.knobs["model.qtype"] = pct > 0 ? "float8" : "qfloat8";
        c.setup.base_precision = pct > 0 ? "fp8wo-torchao" : "fp8-quanto";
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
      c.label = std::string(gc ? "gradient checkpointing" : "no checkpointing") + (pct > 0 ? ", " + std::to_string(pct) + "% of layers offloaded" : "");
      out.push_back(c);
    }
  if (q) note_precision(user, "fp8-quanto", "ai-toolkit", notes);
  return out;
}

std::string onetrainer_dtype(const TrainingSetup& user, std::string& precision) {
  if (user.base_precision == "nf4-bnb") {
    precision = "nf4-bnb";
    return "NFLOAT_4";
  }
  precision = quantized(user) ? "fp8wo-torchao" : "no_change";
  return quantized(user) ? "FLOAT_8" : "BFLOAT_16";  // BFLOAT_16 explicitly: a part's default is FLOAT_32
}

std::vector<KnobCombo> onetrainer(const TrainerFamily& tf, const TrainingSetup& user, std::vector<std::string>& notes) {
  TrainingSetup base = plain(user);
  base.mixed_precision = "bf16";  // train_dtype BFLOAT_16 is emitted
  std::string precision;
  const std::string dtype = onetrainer_dtype(user, precision);
  base.base_precision = precision;
  note_precision(user, precision, "OneTrainer", notes);
  const std::string& part = tf.part;
  std::vector<double> fracs = {0};
  if (tf.part_offloading) fracs = {0, 0.25, 0.5, 0.75, 1.0};
  else notes.push_back("OneTrainer's " + part + " has no layer or activation offloading (" + tf.source + "): not offered");
  std::vector<KnobCombo> out;
  for (int gc = 0; gc < 2; ++gc)
    for (bool act : {false, true})
      for (double frac : fracs) {
        if (act && (!gc || !tf.part_offloading)) continue;
        KnobCombo c;
        c.knobs["__version"] = 11;  // without it every migration runs (TrainConfig.py:752-762, 830-842)
        c.knobs[part + ".weight_dtype"] = dtype;
        c.knobs[part + ".gradient_checkpointing"] = gc == 1;
        c.knobs[part + ".offload_fraction"] = frac;
        c.knobs[part + ".activation_offloading"] = act;
        c.knobs["async_offloading"] = true;
        c.knobs["train_dtype"] = "BFLOAT_16";
        if (frac > 0 && base.model_type == ModelType::Full) c.knobs["optimizer.fused_back_pass"] = true;  // create.py:141-144
        c.setup = base;
        c.setup.ramtorch = frac > 0;
        c.setup.ramtorch_percent = frac > 0 ? frac * 100 : 100;
        c.schedule = sched(gc == 1, act ? Backend::Unsloth : Backend::Torch);
        std::ostringstream l;
        l << (gc ? "gradient checkpointing" : "no checkpointing");
        if (frac > 0) l << ", " << static_cast<int>(frac * 100) << "% of layers offloaded";
        if (act) l << ", activations offloaded";
        c.label = l.str();
        out.push_back(c);
      }
  return out;
}

std::vector<KnobCombo> diffusers(const TrainerFamily& tf, const TrainingSetup& user, std::vector<std::string>& notes) {
  TrainingSetup base = plain(user);
  base.mixed_precision = "bf16";  // --mixed_precision bf16 is emitted
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
  std::vector<KnobCombo> out;
  for (int gc = 0; gc < 2; ++gc) {
    KnobCombo c;
    c.knobs["gradient_checkpointing"] = gc == 1;
    c.setup = base;
    c.schedule = sched(gc == 1);
    c.label = gc ? "--gradient_checkpointing" : "no checkpointing";
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
  std::ostringstream o;
  o << "# flags (or the same keys in a --config_file TOML)\n" << flag_line(c.knobs) << " --dataset_config dataset.toml\n";
  o << "# dataset.toml: the shape this was planned for (dataset/config_utils.py)\n[general]\nresolution = [" << s.width << ", "
    << s.height << "]\nbatch_size = " << s.batch << "\nenable_bucket = true\n\n[[datasets]]\n";
  if (fam.modality == "video") o << "video_directory = \"/path/to/videos\"\ntarget_frames = [" << s.frames << "]\nframe_extraction = \"head\"\n";
  else o << "image_directory = \"/path/to/images\"\n";
  o << "cache_directory = \"/path/to/cache\"\n";
  return o.str();
}

void yaml_scalar(std::ostringstream& o, const ordered_json& v) {
  if (v.is_string()) o << '"' << v.get<std::string>() << '"';
  else o << v.dump();
}

std::string ai_toolkit_text(const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  std::ostringstream o;
  o << "job: extension\nconfig:\n  name: \"segadvise_plan\"\n  process:\n    - type: \"sd_trainer\"\n      model:\n"
    << "        name_or_path: \"/path/to/model\"\n";
  for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it)
    if (it.key().rfind("model.", 0) == 0) {
      o << "        " << it.key().substr(6) << ": ";
      yaml_scalar(o, it.value());
      o << "\n";
    }
  o << "      train:\n        batch_size: " << s.batch << "\n";
  for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it)
    if (it.key().rfind("train.", 0) == 0) {
      o << "        " << it.key().substr(6) << ": ";
      yaml_scalar(o, it.value());
      o << "\n";
    }
  if (s.model_type == ModelType::Lora)
    o << "      network:\n        type: \"lora\"\n        linear: " << s.lora_rank << "\n        linear_alpha: " << s.lora_rank << "\n";
  o << "      datasets:\n        - folder_path: \"/path/to/images\"\n          resolution: [" << square_edge_for_area(s.width, s.height) << "]\n";
  if (fam.modality == "video") o << "          num_frames: " << s.frames << "\n";
  return o.str();
}

std::string onetrainer_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const TrainerFamily* tf = facts.find(fam);
  ordered_json j = ordered_json::object();
  j["__version"] = 11;
  j["model_type"] = tf && !tf->model_types.empty() ? tf->model_types.front() : "";
  j["training_method"] = s.model_type == ModelType::Lora ? "LORA" : "FINE_TUNE";
  j["base_model_name"] = "/path/to/model";
  j["train_dtype"] = "BFLOAT_16";
  j["resolution"] = std::to_string(square_edge_for_area(s.width, s.height));
  if (fam.modality == "video") j["frames"] = std::to_string(s.frames);
  j["batch_size"] = s.batch;
  if (s.model_type == ModelType::Lora) j["lora_rank"] = s.lora_rank;
  for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it) {
    const std::string& k = it.key();
    const auto dot = k.find('.');
    if (dot == std::string::npos) j[k] = it.value();
    else j[k.substr(0, dot)][k.substr(dot + 1)] = it.value();
  }
  return j.dump(4) + "\n";
}

std::string diffusers_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const TrainerFamily* tf = facts.find(fam);
  std::string script = "train_*.py";
  if (tf)
    for (const auto& sc : tf->scripts)
      if ((sc.find("lora") != std::string::npos) == (s.model_type == ModelType::Lora)) {
        script = sc;
        break;
      }
  const std::string flags = flag_line(c.knobs);
  std::string line = "accelerate launch " + script + (flags.empty() ? "" : " " + flags);
  line += " --mixed_precision bf16 --resolution " + std::to_string(s.width) + " --train_batch_size " + std::to_string(s.batch);
  if (s.model_type == ModelType::Lora) line += " --rank " + std::to_string(s.lora_rank);
  return line + "\n";
}

}  // namespace

int square_edge_for_area(int width, int height) {
  const double edge = std::sqrt(double(width) * height);
  return std::max(64, static_cast<int>(std::lround(edge / 64.0)) * 64);
}

std::vector<KnobCombo> trainer_combos(const TrainerFacts& facts, const Family& fam, const TrainingSetup& base,
                                      std::vector<std::string>& notes) {
  const TrainerFamily* tf = facts.find(fam);
  if (!tf) return {};
  if (facts.id == "musubi") return musubi(*tf, base, notes);
  if (facts.id == "ai-toolkit") return ai_toolkit(*tf, base, notes);
  if (facts.id == "onetrainer") return onetrainer(*tf, base, notes);
  return diffusers(*tf, base, notes);
}

std::string trainer_config_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  if (facts.id == "musubi") return musubi_text(fam, c);
  if (facts.id == "ai-toolkit") return ai_toolkit_text(fam, c);
  if (facts.id == "onetrainer") return onetrainer_text(facts, fam, c);
  return diffusers_text(facts, fam, c);
}

std::vector<std::string> trainer_manual_steps(const TrainerFacts& facts, const Family& fam) {
  const TrainerFamily* tf = facts.find(fam);
  const std::string script = tf && !tf->scripts.empty() ? tf->scripts.front() : "the training script";
  if (facts.id == "musubi")
    return {"run " + script + (tf && !tf->script_verified ? " (script name not verified)" : "") + " with these flags",
            "--dit, --vae and the text-encoder paths", "--network_module (the LoRA module for this architecture)",
            "the dataset's image/video directory and cache_directory in dataset.toml",
            "--output_dir, --output_name, --learning_rate, --max_train_steps", "cache latents and text-encoder outputs first"};
  if (facts.id == "ai-toolkit")
    return {"model.name_or_path (and model.arch for this architecture)", "datasets[].folder_path", "config.name, training_folder",
            "train.steps, train.lr, train.optimizer", "the sample section"};
  if (facts.id == "onetrainer")
    return {"base_model_name", "the concepts (concept_file_name)", "output_model_destination and output_model_format",
            "learning_rate, epochs, optimizer"};
  return {"--pretrained_model_name_or_path", "--instance_data_dir (or --dataset_name) and --instance_prompt",
          "--output_dir, --learning_rate, --max_train_steps"};
}

TrainerAdvice plan_for_trainer(const std::string& trainer, const Family& fam, const TrainingSetup& setup,
                               const PredictFn& predict, const std::string& headroom) {
  const TrainerFacts& facts = trainer_facts(trainer);
  TrainerAdvice a;
  a.trainer = trainer;
  a.trainer_name = facts.name;
  a.config_format = facts.config_format;
  const TrainerFamily* tf = facts.find(fam);
  a.family_supported = tf != nullptr;
  if (!tf) {
    a.notes.push_back(facts.name + " does not train " + fam.name + " (families/data/trainer/" + trainer +
                      ".json): nothing to emit");
    return a;
  }
  if (setup.ramtorch || setup.blocks_to_swap > 0 || setup.group_offload)
    a.notes.push_back("the config's weight streaming (RamTorch / block swap / group offload) is replaced by " + facts.name +
                      "'s own knob where it has one");
  for (auto& c : trainer_combos(facts, fam, setup, a.notes)) {
    TrainerPlan p;
    p.label = c.label;
    p.knobs = c.knobs;
    p.schedule = c.schedule;
    p.setup = c.setup;
    p.prediction = predict(c.setup, c.schedule);
    if (p.prediction.supported) a.plans.push_back(std::move(p));  // a backend the family lacks never counts
  }
  std::stable_sort(a.plans.begin(), a.plans.end(), [](const TrainerPlan& x, const TrainerPlan& y) {
    return x.prediction.step_time_s < y.prediction.step_time_s;
  });
  for (std::size_t i = 0; i < a.plans.size(); ++i) {
    const Prediction& p = a.plans[i].prediction;
    if (a.best < 0 && p.fits) {
      a.best = static_cast<int>(i);
      a.verdict = FitVerdict::Fits;
    }
    if (a.smallest < 0 || p.peak_vram_bytes < a.plans[a.smallest].prediction.peak_vram_bytes) a.smallest = static_cast<int>(i);
  }
  const int shown = a.best >= 0 ? a.best : a.smallest;
  if (shown >= 0) {
    const TrainerPlan& p = a.plans[shown];
    KnobCombo c{p.label, p.knobs, p.schedule, p.setup};
    a.config_text = trainer_config_text(facts, fam, c);
    if (a.best < 0)
      a.notes.push_back("nothing within " + facts.name + "'s knobs fits with " + headroom + " headroom; the lines are its smallest plan");
  }
  a.manual = trainer_manual_steps(facts, fam);
  return a;
}

}  // namespace segadvise::cli
