// The Trainer interface's defaults (trainer.hpp), the one "fastest fit, else borderline" pick, and the
// pieces the trainers' folders build their components from (common/trainer_parts.hpp).
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_plans.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include "common/trainer_parts.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/trainers/reader_util.hpp"

namespace segadvise {

using nlohmann::ordered_json;

namespace plans {

Schedule sched(bool ck, Backend b) {
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

const TrainerFacts* FactsTrainer::facts() const {
  std::call_once(loaded_, [this] { facts_ = load_trainer_facts(id_); });
  return &*facts_;
}

}  // namespace plans

void check_emit_name(const std::string& name) {
  if (name.empty()) return;
  const auto& n = emitter_names();
  if (std::find(n.begin(), n.end(), name) != n.end()) return;
  std::string near;
  for (const auto& x : nearest_names(name, n)) near += (near.empty() ? "" : ", ") + x;
  throw InputError("--emit: '" + name + "' is not one of " + emitter_list() + "; nearest: " + near);
}

int square_edge_for_area(int width, int height) {
  if (width == height) return width;  // a square is written as planned (ai-toolkit's [632] stays 632)
  const double edge = std::sqrt(double(width) * height);
  return std::max(64, static_cast<int>(std::lround(edge / 64.0)) * 64);
}

std::vector<std::string> Trainer::setup_rejections(const Family&, const TrainingSetup&) const { return {}; }

RunSetup Trainer::run_setup(const TrainerRead& r) const {
  RunSetup run = r.run;
  if (run.other.trainer.empty() && facts()) run.other = trainer_run_from_data(*facts(), r);
  return run;
}

int fastest_fit(std::size_t n, const std::function<FitVerdict(std::size_t)>& verdict,
                const std::function<bool(std::size_t)>& preferred) {
  int borderline = -1, preferred_borderline = -1;
  for (std::size_t i = 0; i < n; ++i) {
    const FitVerdict v = verdict(i);
    if (v == FitVerdict::Fits) return static_cast<int>(i);
    if (v != FitVerdict::Borderline) continue;
    if (borderline < 0) borderline = static_cast<int>(i);
    if (preferred_borderline < 0 && preferred && preferred(i)) preferred_borderline = static_cast<int>(i);
  }
  return preferred_borderline >= 0 ? preferred_borderline : borderline;
}

int fastest_fit(const std::vector<TrainerPlan>& plans, const std::function<bool(const TrainerPlan&)>& allowed) {
  return fastest_fit(plans.size(), [&](std::size_t i) {
    return allowed && !allowed(plans[i]) ? FitVerdict::DoesNotFit : plans[i].verdict;
  });
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
    a.notes.push_back(f.name + " does not train " + fam.name + " (" + f.origin + "): nothing to emit");
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

}  // namespace segadvise
