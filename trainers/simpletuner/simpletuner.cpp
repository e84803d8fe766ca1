// SimpleTuner's component (trainer.hpp).
#include "segadvise/trainers/trainer.hpp"

#include "common/trainer_parts.hpp"
#include "segadvise/costmodel/json_input.hpp"
#include "segadvise/trainers/reader_util.hpp"
#include "segadvise/trainers/setup_rules.hpp"
#include "segadvise/trainers/simpletuner_reader.hpp"

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
  bool detects(const std::string& path) const override {
    return extension(path) == ".json" && readers::json_config_trainer(path) == "simpletuner";
  }
  TrainerRead read(const std::string& path, const TrainerReadOptions& o) const override {
    ReadOptions ro;
    ro.cwd = o.cwd;
    const ConfigRead c = read_simpletuner_config(path, ro);
    TrainerRead r;
    r.trainer = id();
    r.config_path = c.config_path;
    r.inputs = {c.config_path, c.data_backend_path};
    r.family = c.family;
    r.setup = c.setup;
    r.schedule = c.schedule;
    r.shape_source = c.backends.empty() ? "" : c.backends.front().note;
    r.rejections = c.rejections;
    r.warnings = c.warnings;
    r.run = c.run;  // SimpleTuner's own keys (run.other stays empty)
    return r;
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
  TrainerAdvice plan(const Family&, const TrainingSetup&, const PredictFn&, const std::string&) const override {
    throw InputError("--emit simpletuner: the SimpleTuner keys are the recommendation itself");
  }
  // `knobs`: SimpleTuner keys (null: remove the key); a key keeps the spelling it has in the file
  Rewritten rewrite(const TrainerRead& r, const nlohmann::ordered_json& knobs) const override {
    const std::string text = readers::read_text_file(r.config_path, "config");
    nlohmann::ordered_json raw = read_json_file(r.config_path, "config");
    for (auto it = knobs.begin(); it != knobs.end(); ++it) {
      const std::string key = raw.contains("--" + it.key()) ? "--" + it.key() : it.key();
      if (it.value().is_null()) raw.erase(key);
      else raw[key] = it.value();
    }
    return Rewritten{raw.dump(json_indent(text)) + "\n", {}};
  }
};

}  // namespace

const Trainer& simpletuner_trainer() {
  static const SimpleTuner t;
  return t;
}

}  // namespace segadvise
