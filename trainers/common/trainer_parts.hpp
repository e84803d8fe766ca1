// What the trainers' folders share to build their components (trainer.hpp): the base of the four
// trainers whose facts are data, the pieces of their knob spaces, config text and rewriters.
// Not a public interface: only trainers/<trainer>/*.cpp include it.
#pragma once

#include <initializer_list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/types.hpp"
#include "segadvise/families/family.hpp"
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/simpletuner_facts.hpp"
#include "segadvise/trainers/trainer.hpp"
#include "segadvise/trainers/trainer_writer.hpp"

namespace segadvise::plans {

// The schedule a trainer's checkpointing knob runs.
Schedule sched(bool ck, Backend b = Backend::Torch);
// `base` without the other trainers' weight streaming, quantizer coverage and storage: each plan sets its own.
TrainingSetup plain(const TrainingSetup& base);
bool quantized(const TrainingSetup& s);
// The grid and mappings segadvise plans a trainer with: the "plans" object of its facts file.
FieldReader plans_of(const TrainerFacts& facts);
// A non-empty list of numbers in [lo, hi] of `r`.
std::vector<double> numbers(const FieldReader& r, const std::string& field, double lo, double hi);
// The segadvise precision a trainer's own value maps to (`table`: a list of {key: value, "precision": p}).
std::string precision_for(const TrainerFacts& facts, const char* table, const char* key, const std::string& value);
// The note saying the user's base precision is predicted with `as`, the trainer's nearest knob.
void note_precision(const TrainingSetup& user, const std::string& as, const std::string& trainer, std::vector<std::string>& notes);
// Knobs as command-line flags: `--key value`, a true boolean `--key`, a false one left out.
std::string flag_line(const nlohmann::ordered_json& knobs);
// `keys` of `plan` (null where the plan does not set one: the key is removed)
nlohmann::ordered_json knobs_of(const nlohmann::ordered_json& plan, std::initializer_list<const char*> keys);
// A command-line plan's --mixed_precision goes into the user's file where it differs from what the file
// trains in (a line without it trains in float32, accelerate's default 'no')
void keep_mixed_precision(const TrainerRead& r, const nlohmann::ordered_json& plan, nlohmann::ordered_json& k);
// A path's extension, lower-cased; whether it is a command line (not JSON, YAML or TOML)
std::string extension(const std::string& path);
bool command_line_file(const std::string& path);

// The knobs a rewrite of `r` sets: `plan_knobs`, the keys the trainer stops on by themselves removed (a
// plan that sets one keeps its value) and r.fixed_keys set to the values they were predicted with.
nlohmann::ordered_json rewrite_knobs(const TrainerRead& r, const nlohmann::ordered_json& plan_knobs);
// A scalar as a command line or YAML writes it: a string as it is, anything else as JSON.
std::string scalar_text(const nlohmann::ordered_json& v);
// musubi's and diffusers' rewriter: a command line's flags or a TOML file's keys set to `knobs`.
Rewritten rewrite_flags(const TrainerRead& r, const nlohmann::ordered_json& knobs);

// The four trainers whose knobs and per-family support are data (trainers/<trainer>/<id>.json).
class FactsTrainer : public Trainer {
 public:
  explicit FactsTrainer(std::string id) : id_(std::move(id)) {}
  std::string id() const override { return id_; }
  std::string name() const override { return facts()->name; }
  const TrainerFacts* facts() const override;
  TrainerRead read(const std::string& path, const TrainerReadOptions& o) const override {
    TrainerReadOptions named = o;
    if (!o.model.empty()) {
      find_model(o.model);  // SimpleTuner's model_family aliases, as --model reads them everywhere
      named.model = model_name(o.model);
    }
    TrainerRead r = read_file(path, named);
    r.setup.trainer = id_;  // its own rules judge the setup, not SimpleTuner's
    return r;
  }
  std::vector<KnobCombo> knob_space(const Family& fam, const TrainingSetup& base,
                                    std::vector<std::string>& notes) const override {
    const TrainerFamily* tf = facts()->find(fam);
    if (!tf) return {};
    std::vector<KnobCombo> out = combos(*tf, base, notes);
    for (auto& c : out) c.setup.trainer = id_;
    return out;
  }

 protected:
  virtual TrainerRead read_file(const std::string& path, const TrainerReadOptions& o) const = 0;
  virtual std::vector<KnobCombo> combos(const TrainerFamily& tf, const TrainingSetup& base,
                                        std::vector<std::string>& notes) const = 0;

 private:
  std::string id_;
  mutable std::once_flag loaded_;
  mutable std::optional<TrainerFacts> facts_;
};

}  // namespace segadvise::plans
