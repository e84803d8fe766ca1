// OneTrainer's component (trainer.hpp): its knob combinations for a family (onetrainer.json), the
// config JSON it reads, what is left to set by hand, and its config written back.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/trainer_parts.hpp"
#include "segadvise/trainers/phases.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"  // read_json_file
#include "segadvise/trainers/trainer_writer.hpp"
#include "onetrainer/onetrainer_migrate.hpp"

namespace segadvise {

using nlohmann::ordered_json;
using namespace plans;

namespace {

// BFLOAT_16 explicitly for an unquantized base: a part's default is FLOAT_32
std::string onetrainer_dtype(const TrainerFacts& facts, const TrainingSetup& user, std::string& precision) {
  // a quantized precision OneTrainer has a DataType for (INT_8, FLOAT_W8A8, …) stays that DataType
  if (quantized(user))
    for (const auto& e : facts.raw.at("weight_dtypes"))
      if (e.at("precision") == user.base_precision) {
        precision = user.base_precision;
        return e.at("dtype").get<std::string>();
      }
  const FieldReader plans = plans_of(facts);
  const std::string dtype = plans.str(user.base_precision == "nf4-bnb" ? "weight_dtype_nf4"
                                      : quantized(user)                ? "weight_dtype_quantized"
                                                                       : "weight_dtype_unquantized",
                                      "", true);
  precision = precision_for(facts, "weight_dtypes", "dtype", dtype);
  return dtype;
}

// The OneTrainer name of a segadvise optimizer (its "optimizers" table, else the first of "optimizers_as"
// sized as it), "" when none maps to it.
std::string onetrainer_optimizer(const TrainerFacts& facts, const std::string& optimizer) {
  for (auto it = facts.raw.at("optimizers").begin(); it != facts.raw.at("optimizers").end(); ++it)
    if (it.value() == optimizer) return it.key();
  for (auto it = facts.raw.at("optimizers_as").begin(); it != facts.raw.at("optimizers_as").end(); ++it)
    if (it.value().at("as") == optimizer) return it.key();
  return "";
}

// OneTrainer's memory knobs for the family's denoiser part: checkpointing, offload_fraction (by bytes),
// activation offloading, and for a full fine-tune the fused back pass. Every plan caches latents and
// leaves the text encoders untrained (the text encoders then leave the GPU, setup_train_device) and
// never offloads without checkpointing (OneTrainer raises NotImplementedError, checkpointing_util.py:154).
std::vector<KnobCombo> onetrainer(const TrainerFacts& facts, const Family& fam, const TrainerFamily& tf,
                                  const TrainingSetup& user, std::vector<std::string>& notes) {
  TrainingSetup base = plain(user);
  base.mixed_precision = "bf16";  // train_dtype BFLOAT_16 is emitted, and the part's weight_dtype (plain: no FLOAT_32 storage)
  // the adapters in lora_weight_dtype: a OneTrainer config's own (its key carried as read), else the
  // FLOAT_32 default the emitted file leaves unset (TrainConfig.py:1236)
  base.adapter_weight_bytes = user.adapter_weight_bytes > 0 ? user.adapter_weight_bytes
                                                            : readers::onetrainer_adapter_bytes(facts, "", facts.origin + ": lora_weight_dtype");
  base.layer_offload_fraction = 0;
  base.fused_back_pass = false;
  // text encoders untrained, latents cached: nothing beside the denoiser; an embedding (textual
  // inversion) trains through the text encoders, which OneTrainer keeps on the GPU: what it keeps
  // stays as read, latent caching as the user has it
  const bool embedding = user.embedding_params > 0;
  const bool latent_caching = !embedding || user.kept_models.find("VAE") == std::string::npos;
  if (!embedding) {
    base.kept_model_bytes = 0;
    base.kept_models.clear();
  }
  std::string precision;
  const std::string dtype = onetrainer_dtype(facts, user, precision);
  base.base_precision = precision;
  base.quantize_all_block_linears = quantized(base);  // quantization.layer_filter_preset "full" (default)
  note_precision(user, precision, "OneTrainer", notes);
  const std::string& part = tf.part;
  std::vector<double> fracs = {0};
  if (tf.part_offloading) fracs = numbers(plans_of(facts), "offload_fractions", 0, 1);
  else notes.push_back("OneTrainer's " + part + " has no layer or activation offloading (" + tf.source + "): not offered");
  const bool full = base.model_type == ModelType::Full;
  const std::string ot_opt = onetrainer_optimizer(facts, base.optimizer);
  const auto& fused_ok = facts.raw.at("optimizer_defaults").at("fused_back_pass_optimizers");
  const bool fused_possible = full && std::find(fused_ok.begin(), fused_ok.end(), ot_opt) != fused_ok.end();
  if (full && !fused_possible)
    notes.push_back("optimizer " + base.optimizer + (ot_opt.empty() ? " has no OneTrainer name" : " (" + ot_opt + ") is not known to support fused_back_pass") +
                    ": no fused back pass, so no layer offload for this full fine-tune (create.py:141-144)");
  const FamilyPhaseData pd = phase_data(fam);
  const auto& te_parts = facts.raw.at("text_encoders").at("parts");
  std::vector<KnobCombo> out;
  for (int gc = 0; gc < 2; ++gc)
    for (bool act : {false, true})
      for (double frac : fracs)
        for (bool fused : {false, true}) {
          if (act && (!gc || !tf.part_offloading)) continue;
          if (frac > 0 && !gc) continue;                   // offloading requires gradient checkpointing
          if (fused && !fused_possible) continue;
          if (full && frac > 0 && !fused) continue;        // create.py:141-144
          KnobCombo c;
          c.knobs["__version"] = 11;  // without it every migration runs (TrainConfig.py:752-762, 830-842)
          c.knobs[part + ".weight_dtype"] = dtype;
          c.knobs[part + ".gradient_checkpointing"] = gc == 1;
          c.knobs[part + ".offload_fraction"] = frac;
          c.knobs[part + ".activation_offloading"] = act;
          for (std::size_t i = 0; i < pd.text_encoders.size() && i < te_parts.size(); ++i)
            c.knobs[te_parts[i].get<std::string>() + ".train"] = false;  // a part's train defaults to true (TrainConfig.py)
          c.knobs["latent_caching"] = latent_caching;
          c.knobs["async_offloading"] = true;
          if (base.use_ema) c.knobs["ema"] = base.ema_on_gpu ? "GPU" : "CPU";  // the EMA it is predicted with (default OFF)
          c.knobs["train_dtype"] = "BFLOAT_16";
          if (fused_possible) {
            // the UI lays optimizer_defaults[<optimizer>] over the optimizer (optimizer_util.py change_optimizer),
            // scripts/train.py reads the optimizer object: both say it, on or off (a preset's
            // optimizer_defaults may switch it on where the plan has it off)
            c.knobs["optimizer.optimizer"] = ot_opt;
            c.knobs["optimizer.fused_back_pass"] = fused;
            c.knobs["optimizer_defaults." + ot_opt + ".optimizer"] = ot_opt;
            c.knobs["optimizer_defaults." + ot_opt + ".fused_back_pass"] = fused;
          }
          c.setup = base;
          c.setup.layer_offload_fraction = frac;
          c.setup.fused_back_pass = fused;
          c.schedule = sched(gc == 1, act ? Backend::Unsloth : Backend::Torch);
          std::ostringstream l;
          l << (gc ? "gradient checkpointing" : "no checkpointing");
          if (frac > 0) l << ", " << static_cast<int>(std::lround(frac * 100)) << "% of layer bytes offloaded";
          if (act) l << ", activations offloaded";
          if (fused) l << ", fused back pass";
          c.label = l.str();
          out.push_back(c);
        }
  return out;
}

std::string onetrainer_text(const TrainerFacts& facts, const Family& fam, const KnobCombo& c) {
  const TrainingSetup& s = c.setup;
  const TrainerFamily* tf = facts.find(fam);
  ordered_json j = ordered_json::object();
  j["__version"] = 11;
  j["model_type"] = tf && !tf->model_types.empty() ? tf->model_types.front() : "";
  j["training_method"] = s.embedding_params > 0 ? "EMBEDDING" : s.model_type == ModelType::Lora ? "LORA" : "FINE_TUNE";
  // a family told from another of its model_type by the path (onetrainer.json families: name_contains)
  // is written with the path that names it, so that the file reads back as that family
  j["base_model_name"] = "/path/to/model";
  for (const auto& e : facts.raw.at("families"))
    if (e.at("family") == fam.id && e.contains("base_model_name")) j["base_model_name"] = e.at("base_model_name");
  // the optimizer the plan was predicted with (the knobs below name it only for a fused back pass)
  if (const std::string opt = onetrainer_optimizer(facts, s.optimizer); !opt.empty()) j["optimizer"]["optimizer"] = opt;
  j["train_dtype"] = "BFLOAT_16";
  j["resolution"] = std::to_string(square_edge_for_area(s.width, s.height));
  if (fam.modality == "video") j["frames"] = std::to_string(s.frames);
  j["batch_size"] = s.batch;
  if (s.model_type == ModelType::Lora && s.embedding_params <= 0) j["lora_rank"] = s.lora_rank;
  for (auto it = c.knobs.begin(); it != c.knobs.end(); ++it) set_dotted_key(j, it.key(), it.value());
  return j.dump(4) + "\n";
}

Rewritten rewrite_json(const TrainerFacts& facts, const TrainerRead& r, const ordered_json& knobs) {
  ordered_json j = read_json_file(r.config_path, "OneTrainer config");
  Rewritten out;
  // a file OneTrainer migrates is written back migrated (the __version 11 written below skips the
  // migrations: a v8 file's prior would otherwise not reach transformer, nor a v9 file's NONE its dtype)
  const int version = j.is_object() && j.contains("__version") && j["__version"].is_number_integer() ? j["__version"].get<int>() : 0;
  if (!readers::onetrainer_built_in_preset(r.config_path) && version < facts.raw.value("config_version", 11)) {
    readers::OneTrainerMigration m = readers::migrate_onetrainer(j, version, facts);
    if (m.failure.empty()) {
      j = std::move(m.data);
      out.notes.push_back("the file's migrations from __version " + std::to_string(version) + " applied, as OneTrainer applies them on loading");
    }
  }
  for (const auto& removed : facts.raw.at("removed_keys")) {
    const std::string k = removed.at("name").get<std::string>();
    if (j.contains(k)) {
      j.erase(k);
      out.notes.push_back("removed " + k + " (OneTrainer no longer reads it)");
    }
  }
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    const std::string& k = it.key();
    const auto dot = k.find('.');
    if (dot == std::string::npos) {
      if (k == "__version" && !j.contains(k)) out.notes.push_back("added \"__version\": 11 so that OneTrainer does not migrate the per-part keys away");
      j[k] = it.value();
    } else {
      set_dotted_key(j, k, it.value());
    }
  }
  out.text = j.dump(4) + "\n";
  return out;
}

class OneTrainer final : public FactsTrainer {
 public:
  OneTrainer() : FactsTrainer("onetrainer") {}
  bool detects(const std::string& path) const override {
    return extension(path) == ".json" && readers::json_config_trainer(path) == "onetrainer";
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override { return onetrainer_text(*facts(), fam, c); }
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    return rewrite_json(*facts(), r, rewrite_knobs(r, knobs));
  }
  std::vector<std::string> manual_steps(const Family&) const override {
    return {"base_model_name", "the concepts (concept_file_name)", "output_model_destination and output_model_format",
            "learning_rate, epochs, optimizer"};
  }

 protected:
  TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const override {
    return readers::read_onetrainer(path, o);
  }
  std::vector<KnobCombo> knob_space(const Family& fam, const TrainingSetup& base,
                                    std::vector<std::string>& notes) const override {
    const TrainerFamily* tf = facts()->find(fam);
    if (!tf) return {};
    std::vector<KnobCombo> out = onetrainer(*facts(), fam, *tf, base, notes);
    for (auto& c : out) c.setup.trainer = id();
    return out;
  }
  std::vector<KnobCombo> combos(const TrainerFamily&, const TrainingSetup&, std::vector<std::string>&) const override {
    return {};  // knob_space above (it needs the family's text encoders)
  }

 public:
  // OneTrainer's phase keys (onetrainer.json phases.fixes: sample_after_unit NEVER turns sampling off)
  // are top-level keys of its config, as its plans write theirs: a plan whose sampling is over the card
  // takes the key on
  nlohmann::ordered_json phase_knobs(const std::vector<PhaseFix>& fixes) const override {
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (const PhaseFix& f : fixes)
      if (!f.key.empty() && f.value_json != "null") k[f.key] = nlohmann::ordered_json::parse(f.value_json);
    return k;
  }
};

}  // namespace

const Trainer& onetrainer_trainer() {
  static const OneTrainer t;
  return t;
}

}  // namespace segadvise
