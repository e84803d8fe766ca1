// SimpleTuner's setup rules (setup_rules.hpp) from trainers/simpletuner/simpletuner-setup.json.
#include "segadvise/trainers/facts.hpp"
#include "segadvise/trainers/setup_rules.hpp"

#include <algorithm>

#include "segadvise/costmodel/embedded.hpp"
#include "segadvise/io/json_input.hpp"
#include "segadvise/costmodel/precision.hpp"
#include "segadvise/trainers/trainer.hpp"

namespace segadvise {

namespace {

using nlohmann::json;

struct RefusedPrecision {
  std::string precision;
  std::vector<std::string> model_families;  // SimpleTuner model_family ids
};

struct Rules {
  std::vector<FlavourPrecision> flavours;
  std::vector<NotModelled> not_modelled;
  bool quantized_full_stops = true;
  std::vector<std::string> lifted_by;
  std::vector<std::string> fp8_mixed_bases;
  std::vector<RefusedPrecision> refused;
};

const Rules& rules() {
  static const Rules x = [] {
    const std::string origin = "trainers/simpletuner/simpletuner-setup.json";
    const json j = trainer_data_file("simpletuner-setup.json");
    const FieldReader r{j, origin, ""};
    r.str("source", "", true);
    Rules out;
    const FieldReader q = r.sub("quantized_full_fine_tune", true);
    out.quantized_full_stops = q.boolean("stops", true);
    out.lifted_by = q.strings("lifted_by");
    q.str("source", "", true);
    const FieldReader m = r.sub("fp8_mixed_precision", true);
    out.fp8_mixed_bases = m.strings("bases");
    m.str("source", "", true);
    for (const auto& b : out.fp8_mixed_bases) precision_info(b);  // a data error otherwise
    const json* list = r.get("precision_refused", true);
    if (!list->is_array()) r.fail("precision_refused", "must be a list");
    for (std::size_t i = 0; i < list->size(); ++i) {
      const FieldReader e{(*list)[i], origin, "precision_refused[" + std::to_string(i) + "]."};
      RefusedPrecision p{e.str("precision", "", true), e.strings("model_families")};
      precision_info(p.precision);
      e.str("source", "", true);
      out.refused.push_back(std::move(p));
    }
    const json* fl = r.get("flavour_precision", true);
    if (!fl->is_array()) r.fail("flavour_precision", "must be a list");
    for (std::size_t i = 0; i < fl->size(); ++i) {
      const FieldReader e{(*fl)[i], origin, "flavour_precision[" + std::to_string(i) + "]."};
      FlavourPrecision f;
      f.model_family = e.str("model_family", "", true);
      f.flavours = e.strings("flavours");
      f.flavour_suffix = e.str("flavour_suffix", "");
      if (f.flavours.empty() == f.flavour_suffix.empty()) e.fail("flavours", "or flavour_suffix: exactly one of them");
      f.precision = e.str("precision", "", true);
      precision_info(f.precision);
      f.unless = e.str("unless", "");
      f.note = e.str("note", "", true);
      e.str("source", "", true);
      out.flavours.push_back(std::move(f));
    }
    const json* nm = r.get("not_modelled", true);
    if (!nm->is_array()) r.fail("not_modelled", "must be a list");
    for (std::size_t i = 0; i < nm->size(); ++i) {
      const FieldReader e{(*nm)[i], origin, "not_modelled[" + std::to_string(i) + "]."};
      out.not_modelled.push_back(
          {e.str("model_family", "", true), e.str("key", "", true), e.str("value", "", true), e.str("why", "", true)});
    }
    return out;
  }();
  return x;
}

bool contains(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

const std::vector<std::string>& quantized_full_override_keys() { return rules().lifted_by; }
const std::vector<FlavourPrecision>& flavour_precisions() { return rules().flavours; }
const std::vector<NotModelled>& simpletuner_not_modelled() { return rules().not_modelled; }

bool FlavourPrecision::matches(const std::string& family, const std::string& flavour) const {
  if (family != model_family) return false;
  if (!flavour_suffix.empty())
    return flavour.size() > flavour_suffix.size() &&
           flavour.compare(flavour.size() - flavour_suffix.size(), flavour_suffix.size(), flavour_suffix) == 0;
  return contains(flavours, flavour);
}

std::vector<std::string> setup_rejections(const Family& fam, const TrainingSetup& s) {
  return trainer(s.trainer).setup_rejections(fam, s);
}

std::vector<std::string> simpletuner_setup_rejections(const Family& fam, const TrainingSetup& s) {
  std::vector<std::string> out;
  const Rules& r = rules();
  const std::string& precision = s.base_precision;
  const bool quantized = precision_info(precision).quantized;
  if (r.quantized_full_stops && s.model_type == ModelType::Full && quantized && !s.quantized_full_allowed)
    out.push_back("base_model_precision " + precision +
                  " with model_type full: the trainer stops (quantized bases train only LoRA/LyCORIS "
                  "unless i_know_what_i_am_doing is set)");
  if (s.mixed_precision == "fp8" && quantized && !contains(r.fp8_mixed_bases, precision))
    out.push_back("mixed_precision fp8 with base_model_precision " + precision +
                  ": the trainer stops (fp8 mixed precision needs no_change or fp8-torchao)");
  for (const auto& p : r.refused)
    if (precision == p.precision && contains(p.model_families, fam.trainer_family))
      out.push_back("base_model_precision " + precision + " on " + fam.trainer_family + ": the trainer stops");
  return out;
}

}  // namespace segadvise
