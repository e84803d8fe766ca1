// A diffusers example training command line (examples/**/train_*.py), read with the scripts'
// argparse defaults (facts: trainers/data/diffusers.json).
#include <algorithm>

#include "segadvise/costmodel/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/families/analyzer.hpp"

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

const TrainerFamily* script_family(const TrainerFacts& facts, const std::string& script) {
  for (const auto& tf : facts.families)
    if (std::find(tf.scripts.begin(), tf.scripts.end(), script) != tf.scripts.end()) return &tf;
  return nullptr;
}

}  // namespace

TrainerRead read_diffusers(const std::string& path, const TrainerReadOptions& o) {
  const TrainerFacts& facts = trainer_facts("diffusers");
  const CommandLine cl = parse_command_line(read_text_file(path, "diffusers command line"), path, facts);
  TrainerRead r;
  r.trainer = "diffusers";
  r.config_path = path;
  r.inputs = {path};
  const TrainerFamily* by_script = script_family(facts, cl.script);
  const Family& fam = choose_family(o, by_script ? &find_family(by_script->family) : nullptr,
                                    path + ": " + (cl.script.empty() ? std::string("no train_*.py script on the command line")
                                                                     : "script '" + cl.script + "' is not a diffusers example segadvise knows"));
  start_setup(r, fam, "the diffusers example script");
  const TrainerFamily* tf = facts.find(fam);
  TrainingSetup& s = r.setup;
  const bool lora = cl.script.find("lora") != std::string::npos || cl.script.empty();
  s.model_type = lora ? ModelType::Lora : ModelType::Full;
  if (lora) s.lora_rank = cl.values.count("rank") ? to_int(cl.values.at("rank"), where(path, cl, "rank"), 1, kMaxLoraRank) : 4;
  s.batch = cl.values.count("train_batch_size") ? to_int(cl.values.at("train_batch_size"), where(path, cl, "train_batch_size"), 1, kMaxBatch) : 4;
  if (s.batch <= 0) throw InputError(where(path, cl, "train_batch_size") + ": must be positive");
  // --resolution is one int (default 512): a square of that edge
  const std::string res = cl.values.count("resolution") ? cl.values.at("resolution") : "512";
  int edge = 512;
  if (is_int_text(res)) {
    edge = to_int(res, where(path, cl, "resolution"), 1, kMaxEdgePixels);
  } else {
    r.rejections.push_back("--resolution '" + brief_text(res) + "' is not an int: the script's argparse stops (type=int); it trains a square");
    long long digits = 0;
    for (char c : res)
      if (std::isdigit(static_cast<unsigned char>(c))) digits = std::min<long long>(digits * 10 + (c - '0'), 1 << 20);
    edge = static_cast<int>(std::max<long long>(64, std::min<long long>(digits, 4096)));
  }
  s.width = s.height = edge;
  r.shape_source = "--resolution " + res + ": a " + std::to_string(edge) + "x" + std::to_string(edge) + " square" +
                   (cl.values.count("resolution") ? "" : " (the scripts' default 512)") + ", --train_batch_size " + std::to_string(s.batch) +
                   (cl.values.count("train_batch_size") ? "" : " (default 4)");
  if (cl.values.count("aspect_ratio_buckets")) {
    if (tf && tf->aspect_ratio_buckets) r.warnings.push_back("--aspect_ratio_buckets: buckets are not read; predicted at the --resolution square");
    else r.rejections.push_back("--aspect_ratio_buckets: " + cl.script + " has no such flag (argparse stops)");
  }
  if (cl.values.count("num_frames")) {
    const int f = to_int(cl.values.at("num_frames"), where(path, cl, "num_frames"), 1, kMaxFrames);
    if (fam.modality == "video" && f > 1) s.frames = apply_frame_rule(fam, f);
  }
  r.schedule = Schedule{};
  r.schedule.checkpointing = flag(cl, "gradient_checkpointing");
  const std::string mp = cl.values.count("mixed_precision") ? cl.values.at("mixed_precision") : "";
  if (!mp.empty() && mp != "no" && mp != "fp16" && mp != "bf16") throw InputError(where(path, cl, "mixed_precision") + ": '" + mp + "' is not no, fp16 or bf16");
  if (mp.empty()) r.warnings.push_back("--mixed_precision unset: accelerate's default 'no' (fp32) is assumed unless its own config sets it");
  s.mixed_precision = mp.empty() ? "no" : mp;
  if (cl.values.count("bnb_quantization_config_path")) {
    if (tf && tf->quantized_base) {
      s.base_precision = "nf4-bnb";
      r.warnings.push_back("--bnb_quantization_config_path: predicted as a 4-bit nf4 base (the file is not read)");
    } else {
      r.rejections.push_back("--bnb_quantization_config_path: " + cl.script + " has no such flag (argparse stops)");
    }
  }
  if (flag(cl, "do_fp8_training")) s.base_precision = "fp8-torchao";
  s.optimizer = flag(cl, "use_8bit_adam") ? "adamw8bit" : "adamw";
  if (!tf) r.warnings.push_back("no diffusers example script is known for " + fam.name);
  return r;
}

}  // namespace segadvise::readers
