// A diffusers example training command line (examples/**/train_*.py), read with the scripts'
// argparse defaults (facts: trainers/diffusers/diffusers.json).
#include <algorithm>

#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/families/analyzer.hpp"
#include "segadvise/trainers/phases.hpp"

namespace segadvise::readers {

namespace {

bool flag(const CommandLine& cl, const std::string& k) {
  auto it = cl.values.find(k);
  return it != cl.values.end() && it->second != "false";
}

std::string where(const std::string& path, const CommandLine& cl, const std::string& k) {
  auto it = cl.lines.find(k);
  return path + (it == cl.lines.end() ? "" : ":" + std::to_string(it->second)) + ": --" + k;
}

// The family of the script: the first entry listing it whose name_contains matches the model path
// (--pretrained_model_name_or_path decides between sizes the script loads alike: SD3.5 Large, Medium)
const TrainerFamily* script_family(const TrainerFacts& facts, const std::string& script, const std::string& model_path) {
  for (const auto& tf : facts.families) {
    if (std::find(tf.scripts.begin(), tf.scripts.end(), script) == tf.scripts.end()) continue;
    bool ok = tf.name_contains.empty();
    for (const auto& n : tf.name_contains) ok |= lower(model_path).find(n) != std::string::npos;
    if (ok) return &tf;
  }
  return nullptr;
}

// The script's own argparse default of `key` (diffusers.json script_defaults), else `def`
int script_default(const TrainerFacts& facts, const std::string& script, const std::string& key, int def) {
  const auto& sd = facts.raw.at("script_defaults");
  if (sd.contains(script) && sd.at(script).contains(key)) return sd.at(script).at(key).get<int>();
  return def;
}

}  // namespace

void diffusers_full_finetune(const TrainerFacts& facts, TrainingSetup& s, bool ema) {
  const FieldReader full = FieldReader{facts.raw, facts.origin, ""}.sub("full_finetune", true);
  s.use_ema = ema;  // only a full fine-tune script has --use_ema
  s.ema_on_gpu = ema && full.boolean("ema_on_gpu", false);
  if (s.model_type == ModelType::Full && full.boolean("trained_weights_fp32", false) && s.mixed_precision != "no") s.weight_storage_bytes = 4;
}

namespace {

// A flag given and read by the script (its script_flags entry `sf`; an unknown script: as given)
bool runs_flag(const CommandLine& cl, const nlohmann::json* sf, const std::string& k) {
  if (!flag(cl, k)) return false;
  if (!sf) return true;
  const auto& have = sf->at("flags");
  return std::find(have.begin(), have.end(), k) != have.end();
}

// The flags the prediction rests on that the plans do not set (the model path picks the variant,
// per-image captions keep the text encoder, fp8 training, prior preservation's doubled batch, the
// caching and offload a plan keeps as read): a plan printed for this line carries them
// (TrainerRead::run_keys; a flag the script refuses is dropped by read_diffusers)
void read_run_keys(const CommandLine& cl, TrainerRead& r) {
  for (const char* k : {"pretrained_model_name_or_path", "pretrained_vae_model_name_or_path", "caption_column", "do_fp8_training",
                        "train_text_encoder", "with_prior_preservation", "bnb_quantization_config_path", "num_frames",
                        "cache_latents", "offload", "use_ema"})
    if (cl.values.count(k)) {
      const std::string& v = cl.values.at(k);
      if (v == "true") r.run_keys[k] = true;
      else r.run_keys[k] = v;
    }
}

// The adapter, the batch and the --resolution square; the square's edge
int read_shape(const std::string& path, const CommandLine& cl, const TrainerFacts& facts, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const bool lora = cl.script.find("lora") != std::string::npos || cl.script.empty();
  s.model_type = lora ? ModelType::Lora : ModelType::Full;
  const int def_rank = script_default(facts, cl.script, "rank", 4), def_batch = script_default(facts, cl.script, "train_batch_size", 4),
            def_res = script_default(facts, cl.script, "resolution", 512);
  if (lora) s.lora_rank = cl.values.count("rank") ? to_int(cl.values.at("rank"), where(path, cl, "rank"), 1, kMaxLoraRank) : def_rank;
  s.batch = cl.values.count("train_batch_size") ? to_int(cl.values.at("train_batch_size"), where(path, cl, "train_batch_size"), 1, kMaxBatch) : def_batch;
  if (s.batch <= 0) throw InputError(where(path, cl, "train_batch_size") + ": must be positive");
  const int user_batch = s.batch;
  // --with_prior_preservation: the class images join each batch (collate_fn): the step sees twice the batch
  if (flag(cl, "with_prior_preservation")) {
    s.batch *= 2;
    r.warnings.push_back("--with_prior_preservation: class images are concatenated to each batch (collate_fn, train_dreambooth_lora_flux.py:895): "
                         "the step runs " + std::to_string(s.batch) + " samples");
  }
  // --resolution is one int (the script's default, 512 or 1024): a square of that edge
  const std::string res = cl.values.count("resolution") ? cl.values.at("resolution") : std::to_string(def_res);
  int edge = def_res;
  if (is_int_text(res)) {
    edge = to_int(res, where(path, cl, "resolution"), 1, kMaxEdgePixels);
  } else {
    r.rejections.push_back("--resolution '" + brief_text(res) + "' is not an int: the script's argparse stops (type=int); it trains a square");
    // predicted at the square of its largest number (WxH: the larger edge), which the file written
    // back sets (Diffusers::memory_knobs)
    long long digits = 0, largest = 0;
    for (char c : res + " ") {
      if (std::isdigit(static_cast<unsigned char>(c))) digits = std::min<long long>(digits * 10 + (c - '0'), 1 << 20);
      else {
        largest = std::max(largest, digits);
        digits = 0;
      }
    }
    edge = static_cast<int>(std::max<long long>(64, std::min<long long>(largest, 4096)));
    r.fixed_keys["resolution"] = edge;
  }
  s.width = s.height = edge;
  r.shape_source = "--resolution " + res + ": a " + std::to_string(edge) + "x" + std::to_string(edge) + " square" +
                   (cl.values.count("resolution") ? "" : " (" + cl.script + "'s default)") + ", --train_batch_size " + std::to_string(user_batch) +
                   (cl.values.count("train_batch_size") ? "" : " (" + cl.script + "'s default)") +
                   (s.batch != user_batch ? " x 2 with the class images" : "");
  return edge;
}

// A memory flag the script (its script_flags entry `sf`) lacks stops argparse
void refuse_flags_not_in_script(const CommandLine& cl, const TrainerFacts& facts, const nlohmann::json* sf, const TrainerFamily* tf,
                                TrainerRead& r) {
  if (sf)
    for (const auto& m : facts.raw.at("memory_flags")) {
      const std::string k = m.get<std::string>();
      const auto& have = sf->at("flags");
      if (cl.values.count(k) && std::find(have.begin(), have.end(), k) == have.end() && k != "aspect_ratio_buckets" &&
          k != "bnb_quantization_config_path")  // those two say so below
        refuse_flag(r, k, cl.script + " has no such flag (argparse stops: unrecognized arguments)");
    }
  if (cl.values.count("aspect_ratio_buckets")) {
    if (tf && tf->aspect_ratio_buckets && !flag(cl, "use_aspect_ratio_buckets"))
      r.rejections.push_back("--aspect_ratio_buckets without --use_aspect_ratio_buckets: the script raises ValueError "
                             "(train_dreambooth_lora_qwen_image.py:1454-1455)");
    else if (tf && tf->aspect_ratio_buckets) r.warnings.push_back("--aspect_ratio_buckets: without the dataset on this machine, predicted at the --resolution square");
    else refuse_flag(r, "aspect_ratio_buckets", cl.script + " has no such flag (argparse stops)");
  }
}

void read_dataset(const std::string& path, const CommandLine& cl, const TrainerFamily* tf, int edge, TrainerRead& r) {
  const TrainingSetup& s = r.setup;
  // the dataset (docs/datasets.md): DreamBooth scripts list --instance_data_dir's own entries
  // (Path.iterdir, PIL.ImageOps.exif_transpose, --repeats: train_dreambooth_lora_flux.py:806, 824, 326);
  // text_to_image scripts load --train_data_dir/** as an imagefolder, resized and cropped to the
  // --resolution square (train_text_to_image_lora_sdxl.py:875, 932-933)
  const bool dreambooth = cl.values.count("instance_data_dir") > 0;
  if (dreambooth || cl.values.count("train_data_dir")) {
    DatasetSpec d;
    d.id = dreambooth ? "--instance_data_dir" : "--train_data_dir";
    d.dir = cl.values.at(dreambooth ? "instance_data_dir" : "train_data_dir");
    d.recursive = !dreambooth;
    d.batch = s.batch;  // the class images of prior preservation take the instance image's bucket
    d.repeats = dreambooth && cl.values.count("repeats") ? to_int(cl.values.at("repeats"), where(path, cl, "repeats"), 1, 1000000) : 1;
    d.edge = edge;
    d.exif_transpose = dreambooth;
    if (tf && tf->aspect_ratio_buckets && flag(cl, "use_aspect_ratio_buckets")) {
      // BucketBatchSampler(drop_last=True): a bucket smaller than a batch never trains
      // (train_dreambooth_lora_qwen_image.py:971-1008, 1483); the list is "h1,w1;h2,w2;..." (:431-440)
      d.drop_last = true;
      if (cl.values.count("aspect_ratio_buckets")) {
        d.rule = "listed";
        const std::string list = cl.values.at("aspect_ratio_buckets");
        std::size_t at = 0;
        while (at <= list.size()) {
          const std::size_t end = std::min(list.find(';', at), list.size());
          const std::string item = list.substr(at, end - at);
          at = end + 1;
          if (item.empty()) continue;
          const std::size_t comma = item.find(',');
          if (comma == std::string::npos)
            throw InputError(where(path, cl, "aspect_ratio_buckets") + ": '" + brief_text(item) + "' is not h,w");
          const int h = to_int(item.substr(0, comma), where(path, cl, "aspect_ratio_buckets"), 1, kMaxEdgePixels);
          const int w = to_int(item.substr(comma + 1), where(path, cl, "aspect_ratio_buckets"), 1, kMaxEdgePixels);
          d.listed.emplace_back(w, h);
        }
        if (d.listed.empty()) throw InputError(where(path, cl, "aspect_ratio_buckets") + ": no bucket listed");
      } else {
        // on the fly: each image's ladder is generate_aspect_ratio_buckets(min(--resolution,
        // round(sqrt(h x w))), divisibility 16), its nearest bucket taken (train_dreambooth_lora_flux2_klein.py:
        // 800, 957-968); that ladder is not among the copied sources, so each image counts at that area
        d.rule = "area";
        d.width = d.height = edge;
        d.no_upscale = true;
        d.align = 16;
        d.why = "--use_aspect_ratio_buckets without --aspect_ratio_buckets: the ladder of diffusers' generate_aspect_ratio_buckets "
                "is not modelled: each image is counted at the square of its bucket's area, min(--resolution, round(sqrt(h x w)))";
      }
    }
    r.datasets.push_back(d);
  }
}

// --mixed_precision, a bitsandbytes-quantized base, fp8 training
void read_precision(const std::string& path, const CommandLine& cl, const TrainerFamily* tf, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  const std::string mp = cl.values.count("mixed_precision") ? cl.values.at("mixed_precision") : "";
  if (!mp.empty() && mp != "no" && mp != "fp16" && mp != "bf16") throw InputError(where(path, cl, "mixed_precision") + ": '" + mp + "' is not no, fp16 or bf16");
  if (mp.empty()) r.warnings.push_back("--mixed_precision unset: accelerate's default 'no' (fp32) is assumed unless its own config sets it");
  s.mixed_precision = mp.empty() ? "no" : mp;
  if (cl.values.count("bnb_quantization_config_path")) {
    if (tf && tf->quantized_base) {
      s.base_precision = "nf4-bnb";
      r.warnings.push_back("--bnb_quantization_config_path: predicted as a 4-bit nf4 base (the file is not read)");
    } else {
      refuse_flag(r, "bnb_quantization_config_path", cl.script + " has no such flag (argparse stops)");
    }
  }
  if (flag(cl, "do_fp8_training")) {
    // torchao convert_to_float8_training: Float8Linear keeps its weights in bf16 and casts per matmul
    if (cl.values.count("bnb_quantization_config_path"))
      r.rejections.push_back("--do_fp8_training with --bnb_quantization_config_path: the script raises ValueError "
                             "(train_dreambooth_lora_flux2_klein.py:760-761)");
    s.base_precision = "no_change";
    s.fp8_matmul = true;  // fp8 matmuls: the card needs fp8 tensor cores (card_limits.hpp)
    r.warnings.push_back("--do_fp8_training: torchao float8 training keeps the weights in bf16 (predicted so); its fp8 matmul speed is not modelled");
  }
}

void read_optimizer(const CommandLine& cl, const TrainerFacts& facts, const nlohmann::json* sf, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  // the optimizer (train_dreambooth_lora_flux.py:1404-1418, the same in each dreambooth script): --optimizer
  // AdamW (the default) or prodigy, anything else warned and run as AdamW; --use_8bit_adam (bitsandbytes
  // AdamW8bit) only with AdamW. The text_to_image scripts have no --optimizer: AdamW, 8-bit with the flag.
  std::string opt = "adamw";
  if (cl.values.count("optimizer") && sf && std::find(sf->at("flags").begin(), sf->at("flags").end(), "optimizer") != sf->at("flags").end()) {
    opt = lower(cl.values.at("optimizer"));
    if (opt != "adamw" && opt != "prodigy") {
      r.warnings.push_back("--optimizer " + cl.values.at("optimizer") + ": " + cl.script + " supports adamW and prodigy; it warns and runs AdamW");
      opt = "adamw";
    }
  } else if (cl.values.count("optimizer") && sf) {
    refuse_flag(r, "optimizer", cl.script + " has no such flag (argparse stops: unrecognized arguments)");
  }
  if (opt == "prodigy" && flag(cl, "use_8bit_adam"))
    r.warnings.push_back("--use_8bit_adam is ignored with --optimizer prodigy (" + cl.script + " says so and runs Prodigy)");
  s.optimizer = opt == "prodigy" ? "prodigy" : runs_flag(cl, sf, "use_8bit_adam") ? "adamw8bit" : "adamw";
  diffusers_full_finetune(facts, s, runs_flag(cl, sf, "use_ema"));
  if (s.model_type == ModelType::Full && s.weight_storage_bytes == 4)
    r.warnings.push_back(cl.script + " trains the model in float32 under autocast (--mixed_precision " + s.mixed_precision +
                         " casts only the frozen parts): float32 weights, gradients and optimizer state" +
                         (s.use_ema ? ", and --use_ema's float32 copy on the GPU" : ""));
}

void read_kept_models(const CommandLine& cl, const nlohmann::json* sf, const Family& fam, TrainerRead& r) {
  TrainingSetup& s = r.setup;
  // What stays on the GPU beside the model (train_dreambooth_lora_flux.py:1513-1522, 1247): the text
  // encoders unless they are freed after one --instance_prompt is encoded (not with --train_text_encoder
  // or per-image prompts, --caption_column); the VAE unless --cache_latents. At weight_dtype (fp32 with
  // --mixed_precision no). A trained text encoder's adapters and activations are not counted.
  // Per script (script_flags): --offload brings the VAE and the text encoders to the GPU only while they
  // encode (not through the step); the SDXL scripts keep the VAE in float32; train_text_to_image_sdxl.py
  // precomputes latents and embeddings and deletes both; train_text_to_image_lora_sdxl.py encodes the
  // prompts every step.
  const FamilyPhaseData pd = phase_data(fam);
  const double per = s.mixed_precision == "no" ? 4 : 2;
  const bool precomputes = sf && sf->value("precomputes", false);
  const bool offload = runs_flag(cl, sf, "offload");
  const bool always_te = sf && sf->value("text_encoders_stay", false);
  const bool te_stays = !precomputes && (flag(cl, "train_text_encoder") || always_te || (!offload && cl.values.count("caption_column") > 0));
  double kept = 0;
  std::string what;
  if (te_stays)
    for (const auto& te : pd.text_encoders) {
      kept += te.params * per;
      what += (what.empty() ? "" : ", ") + te.name +
              (flag(cl, "train_text_encoder") ? " (--train_text_encoder)"
               : always_te                    ? " (" + cl.script + " encodes the prompts every step)"
                                              : " (per-image prompts: --caption_column)");
    }
  const bool vae_fp32 = sf && sf->value("vae_fp32", false) && !cl.values.count("pretrained_vae_model_name_or_path");
  if (!precomputes && !offload && !runs_flag(cl, sf, "cache_latents") && pd.has_vae) {
    kept += pd.vae.params * (vae_fp32 ? 4 : per);
    what += (what.empty() ? "" : ", ") + std::string(vae_fp32 ? "VAE in float32 (it encodes each batch)" : "VAE (no --cache_latents: it encodes each batch)");
  }
  if (offload && !precomputes)
    r.warnings.push_back("--offload: the VAE and the text encoders reach the GPU only while they encode (offload_models), not through the step");
  s.kept_model_bytes = kept;
  s.kept_models = what;
}

void read_run(const CommandLine& cl, const TrainerFacts& facts, const nlohmann::json* sf, TrainerRead& r) {
  // the run's phases by the script's flags (diffusers.json "phases"); a script that precomputes latents
  // and embeddings caches both whatever its flags say
  r.run.other = trainer_run_from_data(facts, r);
  if (sf && sf->value("precomputes", false)) {
    r.run.other.latent_caching = r.run.other.text_caching = true;
    r.run.other.latent_caching_key = r.run.other.text_caching_key = cl.script + " precomputes them";
  }
}

}  // namespace

TrainerRead read_diffusers(const std::string& path, const TrainerReadOptions& o) {
  const TrainerFacts& facts = trainer_facts("diffusers");
  const CommandLine cl = parse_command_line(read_text_file(path, "diffusers command line"), path, facts);
  TrainerRead r;
  r.trainer = "diffusers";
  r.config_path = path;
  r.inputs = {path};
  r.warnings = cl.warnings;  // the launch script's (shell_script.hpp)
  read_run_keys(cl, r);
  const std::string model_path = cl.values.count("pretrained_model_name_or_path") ? cl.values.at("pretrained_model_name_or_path") : "";
  const TrainerFamily* by_script = script_family(facts, cl.script, model_path);
  const Family& fam = choose_family(o, by_script ? &find_family(by_script->family) : nullptr,
                                    path + ": " + (cl.script.empty() ? std::string("no train_*.py script on the command line")
                                                                     : "script '" + cl.script + "' is not a diffusers example segadvise knows"));
  start_setup(r, fam, "the diffusers example script");
  r.setup.script = cl.script;
  // A script that trains several sizes alike (the SD3 scripts: SD3 Medium, SD3.5 Medium, Large) whose model
  // path names none of them (a local folder): the entry without name_contains is the fallback, a guess
  if (o.model.empty() && by_script && by_script->name_contains.empty()) {
    int sizes = 0;
    for (const auto& tf : facts.families)
      sizes += std::find(tf.scripts.begin(), tf.scripts.end(), cl.script) != tf.scripts.end() ? 1 : 0;
    if (sizes > 1)
      r.setup.family_guessed_from = "the script " + cl.script + " (it trains " + std::to_string(sizes) +
                                    " model sizes alike and the model path '" + model_path + "' names none of them)";
  }
  const TrainerFamily* tf = facts.find(fam);
  const int edge = read_shape(path, cl, facts, r);
  // the script's own memory flags (diffusers.json script_flags): one it lacks stops argparse
  const nlohmann::json* sf = nullptr;
  if (facts.raw.at("script_flags").contains(cl.script)) sf = &facts.raw.at("script_flags").at(cl.script);
  refuse_flags_not_in_script(cl, facts, sf, tf, r);
  read_dataset(path, cl, tf, edge, r);
  if (cl.values.count("num_frames")) {
    const int f = to_int(cl.values.at("num_frames"), where(path, cl, "num_frames"), 1, kMaxFrames);
    if (fam.modality == "video" && f > 1) r.setup.frames = apply_frame_rule(fam, f);
  }
  r.schedule = Schedule{};
  r.schedule.checkpointing = flag(cl, "gradient_checkpointing");
  read_precision(path, cl, tf, r);
  read_optimizer(cl, facts, sf, r);
  read_kept_models(cl, sf, fam, r);
  for (const std::string& k : r.refused_keys) r.run_keys.erase(k);
  if (!tf) r.warnings.push_back("no diffusers example script is known for " + fam.name);
  read_run(cl, facts, sf, r);
  return r;
}

}  // namespace segadvise::readers
