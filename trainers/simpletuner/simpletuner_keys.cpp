// The SimpleTuner config keys segadvise writes: a config rewritten with a schedule's checkpointing keys,
// and the keys printed for a user to merge (docs/sources/simpletuner.md §0, §4).
#include "segadvise/trainers/simpletuner_reader.hpp"
#include "segadvise/trainers/setup_rules.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "segadvise/families/analyzer.hpp"

namespace segadvise {

using nlohmann::ordered_json;

// the indentation of a JSON text: spaces before the first indented key (4 when none is)
int json_indent(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first != std::string::npos && first > 0 && line[first] == '"') return static_cast<int>(first);
  }
  return 4;
}

const std::vector<std::string>& checkpointing_keys() {
  static const std::vector<std::string> k = {"gradient_checkpointing", "gradient_checkpointing_interval",
                                             "gradient_checkpointing_segment_stride", "gradient_checkpointing_backend",
                                             "gradient_checkpointing_offload_attention"};
  return k;
}

namespace {
ordered_json with_checkpointing_keys(const ordered_json& raw, const nlohmann::json& want);
}  // namespace

ordered_json with_schedule(const ordered_json& raw, const Schedule& s) {
  return with_keys(raw, ordered_json::parse(schedule_keys(s).dump()));
}

ordered_json with_keys(const ordered_json& raw, const ordered_json& knobs) {
  const std::vector<std::string>& ck = checkpointing_keys();
  const auto is_checkpointing = [&](const std::string& k) { return std::find(ck.begin(), ck.end(), k) != ck.end(); };
  nlohmann::json want = nlohmann::json::object();
  for (auto it = knobs.begin(); it != knobs.end(); ++it)
    if (is_checkpointing(it.key())) want[it.key()] = nlohmann::json::parse(it.value().dump());
  ordered_json out = want.empty() ? raw : with_checkpointing_keys(raw, want);
  // the other keys (a phase's fix): set in the spelling the file has, else plain, added at the end
  for (auto it = knobs.begin(); it != knobs.end(); ++it) {
    if (is_checkpointing(it.key())) continue;
    const std::string dashed = "--" + it.key();
    const std::string key = out.contains(dashed) && !out.contains(it.key()) ? dashed : it.key();
    out[key] = it.value();
  }
  return out;
}

namespace {

// `raw` with the checkpointing keys of `want` (every one of the five; null: the trainer's default) set
// as with_schedule says.
ordered_json with_checkpointing_keys(const ordered_json& raw, const nlohmann::json& want) {
  // trainer defaults (§0): a key at its default that the config does not have is not added
  const nlohmann::json defaults = {{"gradient_checkpointing", true},
                                   {"gradient_checkpointing_interval", nullptr},
                                   {"gradient_checkpointing_segment_stride", nullptr},
                                   {"gradient_checkpointing_backend", "torch"},
                                   {"gradient_checkpointing_offload_attention", false}};
  bool dashed = false;
  std::size_t n_dashed = 0;
  for (auto it = raw.begin(); it != raw.end(); ++it) n_dashed += it.key().rfind("--", 0) == 0;
  dashed = n_dashed * 2 > raw.size();
  ordered_json out = ordered_json::object();
  std::map<std::string, bool> written;
  for (auto it = raw.begin(); it != raw.end(); ++it) {
    const std::string& k = it.key();
    const std::string norm = k.rfind("--", 0) == 0 ? k.substr(2) : k;
    if (!want.contains(norm)) {
      out[k] = it.value();
      continue;
    }
    if (written[norm]) continue;  // a second spelling of the same key: one is enough
    written[norm] = true;
    if (want[norm].is_null()) continue;  // unset = the trainer's default
    out[k] = want[norm];
  }
  for (const auto& k : checkpointing_keys()) {
    if (written[k] || want[k] == defaults[k]) continue;
    out[dashed ? "--" + k : k] = want[k];
  }
  return out;
}

}  // namespace

nlohmann::json schedule_keys(const Schedule& s) {
  nlohmann::json j;
  j["gradient_checkpointing"] = s.checkpointing;
  if (s.checkpointing) {
    j["gradient_checkpointing_interval"] = s.interval > 1 ? nlohmann::json(s.interval) : nlohmann::json(nullptr);
    j["gradient_checkpointing_segment_stride"] = s.stride > 0 ? nlohmann::json(s.stride) : nlohmann::json(nullptr);
    j["gradient_checkpointing_backend"] = to_string(s.backend);
  } else {
    j["gradient_checkpointing_interval"] = nullptr;
    j["gradient_checkpointing_segment_stride"] = nullptr;
    j["gradient_checkpointing_backend"] = "torch";
  }
  j["gradient_checkpointing_offload_attention"] = s.offload_attention;
  return j;
}

namespace {

// an interval without a stride: on the segmented path stride = interval is the same schedule
bool unstrided_interval(const Schedule& s) { return s.checkpointing && s.interval > 1 && s.stride <= 0; }

}  // namespace

nlohmann::json setup_keys(const Family& fam, const TrainingSetup& setup) {
  nlohmann::json j = nlohmann::json::object();
  // read_streaming's keys, where the setup differs from a config without them
  if (setup.ramtorch) {
    j["ramtorch"] = true;
    if (setup.ramtorch_percent < 100) j["ramtorch_transformer_percent"] = setup.ramtorch_percent;
  }
  if (setup.blocks_to_swap > 0) j["musubi_blocks_to_swap"] = setup.blocks_to_swap;
  if (setup.group_offload) j["enable_group_offload"] = true;
  if (setup.use_ema) {
    j["use_ema"] = true;
    j["ema_device"] = setup.ema_on_gpu ? "accelerator" : "cpu";
  }
  if (setup.attention != "diffusers") j["attention_mechanism"] = setup.attention;
  if (setup.regional_compile) {
    j["dynamo_use_regional_compilation"] = true;
    j["dynamo_backend"] = "inductor";  // read_streaming: compiled unless the backend is "no"
  }
  if (setup.mixed_precision != "bf16") j["mixed_precision"] = setup.mixed_precision;
  // read_precision's, always (a quantized base is the commonest difference between configs), as the
  // trainer spells it: int8-sdnq with sdnq_use_hadamard, no_change for bf16. Left out where a flavour of
  // the family implies the precision at no_change (Ideogram's fp8 checkpoint:
  // trainers/simpletuner/simpletuner-setup.json): the config's own no_change already means it there.
  bool by_flavour = false;
  for (const FlavourPrecision& f : flavour_precisions())
    by_flavour = by_flavour || (f.model_family == fam.trainer_family && f.precision == setup.base_precision);
  if (!by_flavour) {
    const bool hadamard_alias = setup.base_precision == "int8-sdnq-hadamard";
    j["base_model_precision"] = hadamard_alias ? "int8-sdnq"
                                : setup.base_precision == "bf16" ? "no_change" : setup.base_precision;
    if (hadamard_alias || setup.sdnq_hadamard) j["sdnq_use_hadamard"] = true;
  }
  return j;
}

nlohmann::json simpletuner_keys(const Family& fam, const Schedule& s, const TrainingSetup& setup) {
  nlohmann::json j = schedule_keys(s);
  if (j["gradient_checkpointing_interval"].is_null()) j["gradient_checkpointing_interval"] = 1;
  if (unstrided_interval(s) && interval_path(fam, s, setup).rule == IntervalRule::Segmented)
    j["gradient_checkpointing_segment_stride"] = s.interval;
  if (j["gradient_checkpointing_segment_stride"].is_null()) j.erase("gradient_checkpointing_segment_stride");
  j.update(setup_keys(fam, setup));
  return j;
}

std::vector<std::string> keys_to_remove(const Family& fam, const Schedule& s, const TrainingSetup& setup) {
  if (unstrided_interval(s) && fam.checkpointing.stride && interval_path(fam, s, setup).rule == IntervalRule::PerBlock)
    return {"gradient_checkpointing_segment_stride"};
  return {};
}

}  // namespace segadvise
