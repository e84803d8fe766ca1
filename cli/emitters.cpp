// Emitters for trainers other than SimpleTuner.
//
// What each trainer can do about memory, as far as its documented options go (written without
// network access, from general knowledge of each project's options; "(uncertain)" marks what may
// have changed or may be named differently — docs/check.md has the same table):
//
//   musubi-tuner (kohya-ss)   --gradient_checkpointing (every block), --gradient_checkpointing_cpu_offload
//                             (checkpoint inputs kept in host memory; uncertain name), --blocks_to_swap N
//                             (last N blocks live on the CPU and are streamed in), --fp8_base
//                             (+ --fp8_scaled: fp8 weights, weight-only). No interval or stride.
//                             Arguments also work as a --config_file TOML (key = value).
//   ai-toolkit (ostris)       train.gradient_checkpointing (bool), model.quantize + model.qtype
//                             (optimum-quanto qfloat8 by default), model.layer_offloading with
//                             layer_offloading_transformer_percent (weights streamed from host; uncertain,
//                             added late 2025). No activation offload, no interval.
//   OneTrainer (Nerogar)      "gradient_checkpointing": OFF | ON | CPU_OFFLOADED; with CPU_OFFLOADED,
//                             "layer_offload_fraction" 0..1 of the weights stay in host memory and
//                             "enable_activation_offloading" moves checkpointed activations to the host
//                             ("enable_async_offloading" overlaps it). Per-part "weight_dtype" FLOAT_8
//                             (weight-only fp8) / NFLOAT_4 (bnb nf4).
//   diffusers examples        --gradient_checkpointing only (train_dreambooth_lora_*.py); --mixed_precision,
//                             --train_batch_size, --rank. Some scripts take a bitsandbytes config for
//                             QLoRA (uncertain, per script): not used here, the base is bf16.
//
// How the cost model sees the knobs: every-block checkpointing is the "layer" schedule; checkpoint
// activations in host memory are the unsloth backend (saved tensors of checkpointed work in pinned
// host memory); block swap is musubi_blocks_to_swap; an offload fraction streams that share of the
// block weights (RamTorch percent). fp8 weight-only bases are predicted as fp8wo-torchao, quanto
// qfloat8 as fp8-quanto, bnb nf4 as nf4-bnb: the nearest precision the cost model knows.
#include "emitters.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "output.hpp"
#include "segadvise/costmodel/json_io.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/families/trainer_facts.hpp"

namespace segadvise::cli {

using nlohmann::ordered_json;

namespace {

using TrainerInfo = EmitterTrainer;

// the trainers, their families and config formats: families/data/trainer/emitters.json
const std::vector<TrainerInfo>& trainers() { return emitter_facts().trainers; }

std::string fmt(const char* f, double x) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

int checkpointed_blocks(const Context& ctx) {
  int n = 0;
  for (const auto& b : ctx.chain.blocks) n += b.checkpointable;
  return std::max(1, n);
}

Schedule sched(bool ck, Backend b = Backend::Torch) {
  Schedule s;
  s.checkpointing = ck;
  s.backend = b;
  return s;
}

// evaluates one knob combination with its own setup (the chain is rebuilt for it)
TrainerPlan evaluate_plan(const Context& base, const std::string& label, ordered_json knobs, const Schedule& s,
                          const TrainingSetup& setup) {
  const Context ctx = base.with_setup(setup);
  TrainerPlan p;
  p.label = label;
  p.knobs = std::move(knobs);
  p.schedule = s;
  p.setup = setup;
  // the trainer's own checkpointing has no family-specific interval semantics: realize only decides
  // which blocks are checkpointable
  p.prediction = evaluate(ctx, s).prediction;
  return p;
}

std::string precision_for(const std::string& trainer, const TrainingSetup& s, std::vector<std::string>& notes) {
  const PrecisionInfo pi = precision_info(s.base_precision);
  if (!pi.quantized) return "no_change";
  std::string out;
  if (trainer == "musubi") out = "fp8wo-torchao";
  else if (trainer == "ai-toolkit") out = "fp8-quanto";
  else if (trainer == "onetrainer") out = s.base_precision == "nf4-bnb" ? "nf4-bnb" : "fp8wo-torchao";
  else out = "no_change";
  if (out != s.base_precision) {
    const std::string name = out == "no_change" ? "bf16" : out;
    notes.push_back("base_model_precision " + precision_key(s) + " has no equivalent here: predicted with " + name +
                    (trainer == "diffusers" ? " (the example scripts train a bf16 base)" : " (the nearest knob)"));
  }
  return out;
}

std::string unet_part(const Family& f) {
  const auto& parts = emitter_facts().denoiser_part;  // families/data/trainer/emitters.json
  const auto it = parts.find(f.trainer_family);
  return it == parts.end() ? emitter_facts().denoiser_part_default : it->second;
}

std::string config_text(const TrainerAdvice& a, const TrainerPlan& p, const Context& ctx) {
  std::ostringstream o;
  const TrainingSetup& s = p.setup;
  const bool lora = s.model_type == "lora";
  if (a.trainer == "musubi") {
    std::string flags;
    std::string toml;
    for (auto it = p.knobs.begin(); it != p.knobs.end(); ++it) {
      if (it.value().is_boolean()) {
        if (it.value().get<bool>()) flags += " --" + it.key();
      } else {
        flags += " --" + it.key() + " " + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
      }
      toml += it.key() + " = " + it.value().dump() + "\n";
    }
    o << "# flags\n" << flags.substr(flags.empty() ? 0 : 1) << "\n# or, in a --config_file TOML\n" << toml;
  } else if (a.trainer == "ai-toolkit") {
    o << "config:\n  process:\n    - model:\n";
    bool any_model = false;
    for (auto it = p.knobs.begin(); it != p.knobs.end(); ++it)
      if (it.key().rfind("model.", 0) == 0) {
        o << "        " << it.key().substr(6) << ": " << it.value().dump() << "\n";
        any_model = true;
      }
    if (!any_model) o << "        quantize: false\n";
    o << "      train:\n";
    for (auto it = p.knobs.begin(); it != p.knobs.end(); ++it)
      if (it.key().rfind("train.", 0) == 0) o << "        " << it.key().substr(6) << ": " << it.value().dump() << "\n";
    o << "        batch_size: " << s.batch << "\n";
    if (lora) o << "      network:\n        type: \"lora\"\n        linear: " << s.lora_rank << "\n        linear_alpha: " << s.lora_rank << "\n";
  } else if (a.trainer == "onetrainer") {
    ordered_json j = ordered_json::object();
    for (auto it = p.knobs.begin(); it != p.knobs.end(); ++it) {
      const std::string& k = it.key();
      const auto dot = k.find('.');
      if (dot == std::string::npos) j[k] = it.value();
      else j[k.substr(0, dot)][k.substr(dot + 1)] = it.value();
    }
    j["batch_size"] = s.batch;
    if (lora) j["lora_rank"] = s.lora_rank;
    o << j.dump(2) << "\n";
  } else {
    std::string flags;
    for (auto it = p.knobs.begin(); it != p.knobs.end(); ++it)
      if (it.value().is_boolean() ? it.value().get<bool>() : true)
        flags += " --" + it.key() + (it.value().is_boolean() ? "" : " " + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump()));
    flags += " --mixed_precision bf16 --train_batch_size " + std::to_string(s.batch);
    if (lora) flags += " --rank " + std::to_string(s.lora_rank);
    flags += " --resolution " + std::to_string(std::max(s.width, s.height));
    o << flags.substr(1) << "\n";
  }
  (void)ctx;
  return o.str();
}

}  // namespace

const std::vector<std::string>& emitter_names() {
  static const std::vector<std::string> n = {"simpletuner", "musubi", "ai-toolkit", "onetrainer", "diffusers"};
  return n;
}

void check_emit_name(const std::string& name) {
  if (name.empty()) return;
  const auto& n = emitter_names();
  if (std::find(n.begin(), n.end(), name) != n.end()) return;
  std::string near;
  for (const auto& x : nearest_names(name, n)) near += (near.empty() ? "" : ", ") + x;
  throw InputError("--emit: '" + name + "' is not one of simpletuner, musubi, ai-toolkit, onetrainer, diffusers; nearest: " + near);
}

TrainerAdvice advise_for_trainer(const Context& ctx, const std::string& trainer, const Candidate* simpletuner_best) {
  check_emit_name(trainer);
  if (trainer == "simpletuner") throw InputError("--emit simpletuner: the SimpleTuner keys are the recommendation itself");
  const TrainerInfo* info = nullptr;
  for (const auto& t : trainers())
    if (t.id == trainer) info = &t;
  TrainerAdvice a;
  a.trainer = trainer;
  a.trainer_name = info->name;
  a.config_format = info->format;
  const Family& fam = *ctx.family;
  a.family_supported = info->families.count(fam.trainer_family) > 0;
  if (!a.family_supported)
    a.notes.push_back(info->name + " does not train " + fam.name + " as far as known: the lines below show what its knobs "
                      "would do, not a tested config");

  TrainingSetup base = ctx.setup;
  base.base_precision = precision_for(trainer, ctx.setup, a.notes);
  base.sdnq_hadamard = false;
  base.ramtorch = false;
  base.ramtorch_percent = 100;
  base.blocks_to_swap = 0;
  base.group_offload = false;
  if (ctx.setup.ramtorch || ctx.setup.blocks_to_swap > 0 || ctx.setup.group_offload)
    a.notes.push_back("the config's weight streaming (RamTorch / block swap / group offload) is replaced by this "
                      "trainer's own knob where it has one");
  const bool fp8 = base.base_precision != "no_change";
  const int n = checkpointed_blocks(ctx);

  if (trainer == "musubi") {
    const int max_swap = fam.checkpointing.max_swappable_blocks > 0 ? fam.checkpointing.max_swappable_blocks : n - 1;
    std::vector<int> swaps = {0, n / 4, n / 2, (3 * n) / 4, max_swap};
    std::sort(swaps.begin(), swaps.end());
    swaps.erase(std::unique(swaps.begin(), swaps.end()), swaps.end());
    for (int gc = 0; gc < 3; ++gc)
      for (int sw : swaps) {
        if (sw < 0 || sw > max_swap) continue;
        ordered_json k = ordered_json::object();
        if (gc >= 1) k["gradient_checkpointing"] = true;
        if (gc == 2) k["gradient_checkpointing_cpu_offload"] = true;
        if (sw > 0) k["blocks_to_swap"] = sw;
        if (fp8) {
          k["fp8_base"] = true;
          k["fp8_scaled"] = true;
        }
        k["mixed_precision"] = "bf16";
        if (base.model_type == "lora") k["network_dim"] = base.lora_rank;
        TrainingSetup s = base;
        s.blocks_to_swap = sw;
        std::string label = gc == 0 ? "no checkpointing" : gc == 1 ? "gradient checkpointing" : "checkpointing + CPU offload";
        if (sw > 0) label += ", " + std::to_string(sw) + " blocks swapped";
        a.plans.push_back(evaluate_plan(ctx, label, k, sched(gc >= 1, gc == 2 ? Backend::Unsloth : Backend::Torch), s));
      }
  } else if (trainer == "ai-toolkit") {
    for (int gc = 0; gc < 2; ++gc)
      for (int pct : {0, 25, 50, 75, 100}) {
        ordered_json k = ordered_json::object();
        if (fp8) {
          k["model.quantize"] = true;
          k["model.qtype"] = "qfloat8";
        }
        if (pct > 0) {
          k["model.layer_offloading"] = true;
          k["model.layer_offloading_transformer_percent"] = pct / 100.0;
        }
        k["train.gradient_checkpointing"] = gc == 1;
        TrainingSetup s = base;
        s.ramtorch = pct > 0;
        s.ramtorch_percent = pct > 0 ? pct : 100;
        std::string label = gc ? "gradient checkpointing" : "no checkpointing";
        if (pct > 0) label += ", " + std::to_string(pct) + "% of layers offloaded";
        a.plans.push_back(evaluate_plan(ctx, label, k, sched(gc == 1), s));
      }
  } else if (trainer == "onetrainer") {
    const std::string part = unet_part(fam);
    auto dtype_knob = [&](ordered_json& k) {
      if (base.base_precision == "nf4-bnb") k[part + ".weight_dtype"] = "NFLOAT_4";
      else if (fp8) k[part + ".weight_dtype"] = "FLOAT_8";
    };
    for (const char* mode : {"OFF", "ON"}) {
      ordered_json k = ordered_json::object();
      k["gradient_checkpointing"] = mode;
      dtype_knob(k);
      a.plans.push_back(evaluate_plan(ctx, std::string("gradient_checkpointing ") + mode, k,
                                      sched(std::string(mode) == "ON"), base));
    }
    for (bool act : {false, true})
      for (int pct : {0, 25, 50, 75, 100}) {
        ordered_json k = ordered_json::object();
        k["gradient_checkpointing"] = "CPU_OFFLOADED";
        k["layer_offload_fraction"] = pct / 100.0;
        k["enable_async_offloading"] = true;
        k["enable_activation_offloading"] = act;
        dtype_knob(k);
        TrainingSetup s = base;
        s.ramtorch = pct > 0;
        s.ramtorch_percent = pct > 0 ? pct : 100;
        const std::string label = std::string("CPU_OFFLOADED, ") + std::to_string(pct) + "% of layers offloaded" +
                                  (act ? ", activations offloaded" : "");
        a.plans.push_back(evaluate_plan(ctx, label, k, sched(true, act ? Backend::Unsloth : Backend::Torch), s));
      }
  } else {  // diffusers
    for (int gc = 0; gc < 2; ++gc) {
      ordered_json k = ordered_json::object();
      k["gradient_checkpointing"] = gc == 1;
      a.plans.push_back(evaluate_plan(ctx, gc ? "--gradient_checkpointing" : "no checkpointing", k, sched(gc == 1), base));
    }
  }

  // unsupported combinations (a backend the family lacks) never count
  a.plans.erase(std::remove_if(a.plans.begin(), a.plans.end(), [](const TrainerPlan& p) { return !p.prediction.supported; }),
                a.plans.end());
  std::stable_sort(a.plans.begin(), a.plans.end(), [](const TrainerPlan& x, const TrainerPlan& y) {
    return x.prediction.step_time_s < y.prediction.step_time_s;
  });
  for (std::size_t i = 0; i < a.plans.size(); ++i) {
    const Prediction& p = a.plans[i].prediction;
    if (a.best < 0 && p.fits) a.best = static_cast<int>(i);
    if (a.smallest < 0 || p.peak_vram_bytes < a.plans[a.smallest].prediction.peak_vram_bytes) a.smallest = static_cast<int>(i);
  }
  const int shown = a.best >= 0 ? a.best : a.smallest;
  if (shown >= 0) a.config_text = config_text(a, a.plans[shown], ctx);
  if (a.best < 0 && shown >= 0)
    a.notes.push_back("nothing within " + info->name + "'s knobs fits with " + gib_str(ctx.headroom_bytes) +
                      " headroom; the lines are its smallest plan (" + gib_str(a.plans[shown].prediction.peak_vram_bytes) + ")");

  // what SimpleTuner's own schedule space would gain
  if (simpletuner_best) {
    const Prediction& st = simpletuner_best->prediction;
    std::string line = "SimpleTuner's plan " + simpletuner_best->schedule.name() + " (same precision and streaming as the config: " +
                       secs_str(st.step_time_s) + "/step, peak " + gib_str(st.peak_vram_bytes) + ")";
    if (a.best >= 0) {
      const Prediction& t = a.plans[a.best].prediction;
      const double gain = (t.step_time_s - st.step_time_s) / t.step_time_s;
      if (gain > 0.005)
        line += " is " + fmt("%.0f", gain * 100) + "% faster than " + info->name + "'s best (" + secs_str(t.step_time_s) + "/step)";
      else
        line += " gains nothing over " + info->name + "'s best (" + secs_str(t.step_time_s) + "/step)";
    } else {
      line += " fits where " + info->name + "'s knobs do not";
    }
    a.notes.push_back(line);
  }
  return a;
}

nlohmann::json to_json(const TrainerAdvice& a) {
  nlohmann::json j;
  j["trainer"] = a.trainer;
  j["trainer_name"] = a.trainer_name;
  j["family_supported"] = a.family_supported;
  nlohmann::json plans = nlohmann::json::array();
  for (const auto& p : a.plans)
    plans.push_back({{"label", p.label},
                     {"knobs", nlohmann::json::parse(p.knobs.dump())},
                     {"schedule", p.schedule.name()},
                     {"peak_vram_gib", p.prediction.peak_vram_bytes / kGiB},
                     {"step_time_s", p.prediction.step_time_s},
                     {"fits", p.prediction.fits}});
  j["plans"] = plans;
  j["best"] = a.best >= 0 ? nlohmann::json(a.best) : nlohmann::json(nullptr);
  j["config_format"] = a.config_format;
  j["config"] = a.config_text;
  j["notes"] = a.notes;
  return j;
}

void print_trainer_advice(std::ostream& out, const TrainerAdvice& a, bool markdown) {
  out << (markdown ? "\n### " : "\n") << a.trainer_name << (markdown ? "\n\n" : ":\n");
  Table t({"plan", "peak", "s/step", "fits"});
  for (std::size_t i = 0; i < a.plans.size(); ++i) {
    const auto& p = a.plans[i];
    t.add({(static_cast<int>(i) == a.best ? "* " : "") + p.label, gib_str(p.prediction.peak_vram_bytes),
           secs_str(p.prediction.step_time_s), p.prediction.fits ? "yes" : "no"});
  }
  t.print(out, markdown);
  out << "\n";
  if (!a.config_text.empty()) {
    if (markdown) out << "```" << (a.config_format == "flags" ? "" : a.config_format) << "\n";
    out << a.config_text;
    if (markdown) out << "```\n";
  }
  for (const auto& n : a.notes) out << "note: " << n << "\n";
}

}  // namespace segadvise::cli
