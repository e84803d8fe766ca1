// SimpleTuner's component (trainer.hpp).
#include "segadvise/trainers/trainer.hpp"

#include "common/trainer_parts.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/setup_rules.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "simpletuner/simpletuner_parts.hpp"

namespace segadvise {

using namespace plans;

namespace {

// SimpleTuner: its config reader is read_simpletuner_config (the data backends, the run's other
// phases); its schedule space and plan are the advisor's (planner/advisor.hpp), which no knob
// combination here repeats.
class SimpleTuner final : public Trainer {
 public:
  std::string id() const override { return "simpletuner"; }
  std::string name() const override { return "SimpleTuner"; }
  // config.json, a JSON config saved as config.json.txt, config.toml, config.env (simpletuner_formats.cpp)
  bool detects(const std::string& path) const override {
    const simpletuner::ConfigFormat f = simpletuner::config_format(path);
    if (f == simpletuner::ConfigFormat::Env) return true;
    if (f == simpletuner::ConfigFormat::Toml) {  // a config.toml names its model_family; musubi's TOMLs do not
      try {
        const nlohmann::ordered_json t = readers::toml_file_json(path, "config");
        return t.contains("model_family") || t.contains("--model_family");
      } catch (const InputError&) {
        return false;  // musubi's reader names what is wrong with it
      }
    }
    return f == simpletuner::ConfigFormat::Json && readers::json_config_trainer(path) == "simpletuner";
  }
  TrainerRead read(const std::string& path, const TrainerReadOptions& o) const override {
    return read_simpletuner_config(path, o);
  }
  RunSetup run_setup(const TrainerRead& r) const override { return r.run; }
  std::vector<std::string> setup_rejections(const Family& fam, const TrainingSetup& setup) const override {
    return simpletuner_setup_rejections(fam, setup);
  }
  std::vector<KnobCombo> knob_space(const Family&, const TrainingSetup&, std::vector<std::string>&) const override {
    return {};
  }
  std::string config_text(const Family& fam, const KnobCombo& c) const override {
    return simpletuner_keys(fam, c.schedule, c.setup).dump(2) + "\n";
  }
  std::vector<std::string> manual_steps(const Family&) const override { return {}; }
  bool plans_are_schedules() const override { return true; }
  nlohmann::ordered_json schedule_knobs(const Schedule& s) const override {
    return nlohmann::ordered_json::parse(schedule_keys(s).dump());
  }
  // a phase's key as the fix gives it (a null value written as null: with_keys)
  nlohmann::ordered_json phase_knobs(const std::vector<PhaseFix>& fixes) const override {
    nlohmann::ordered_json k = nlohmann::ordered_json::object();
    for (const PhaseFix& f : fixes)
      if (!f.key.empty()) k[f.key] = nlohmann::ordered_json::parse(f.value_json);
    return k;
  }
  // `knobs`: SimpleTuner keys, each kept in the file's spelling and place (with_keys)
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    return Rewritten{with_keys(r.raw, knobs).dump(r.indent) + "\n", {}};
  }
};

}  // namespace

const Trainer& simpletuner_trainer() {
  static const SimpleTuner t;
  return t;
}

}  // namespace segadvise
