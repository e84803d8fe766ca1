// Another trainer's plans (--emit) as the report shows them.
#include "segadvise/report/trainer_advice_output.hpp"

#include "segadvise/report/format.hpp"
#include "segadvise/report/output.hpp"

namespace segadvise::cli {

namespace {

// the table's "fits" column: the verdict advise gives a schedule
const char* fits_word(FitVerdict v) {
  switch (v) {
    case FitVerdict::Fits: return "yes";
    case FitVerdict::Borderline: return "borderline";
    case FitVerdict::DoesNotFit: return "no";
  }
  return "no";
}

}  // namespace

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
                     {"peak_vram_gib", p.prediction.peak_vram_bytes / kGiB}, {"peak_vram_quantity", "reserved"},
                     {"step_time_s", p.prediction.step_time_s},
                     {"fits", p.verdict == FitVerdict::Fits},
                     {"verdict", to_string(p.verdict)}});
  j["plans"] = plans;
  j["best"] = a.best >= 0 ? nlohmann::json(a.best) : nlohmann::json(nullptr);
  j["verdict"] = to_string(a.verdict);
  j["config_format"] = a.config_format;
  j["config"] = a.config_text;
  j["notes"] = a.notes;
  j["set_by_hand"] = a.manual;
  return j;
}

void print_trainer_advice(std::ostream& out, const TrainerAdvice& a, bool markdown) {
  out << (markdown ? "\n### " : "\n") << a.trainer_name << (markdown ? "\n\n" : ":\n");
  Table t({"plan", "peak reserved", "s/step", "fits"});
  for (std::size_t i = 0; i < a.plans.size(); ++i) {
    const auto& p = a.plans[i];
    t.add({(static_cast<int>(i) == a.best ? "* " : "") + p.label, gib_str(p.prediction.peak_vram_bytes),
           secs_str(p.prediction.step_time_s), fits_word(p.verdict)});
  }
  t.print(out, markdown);
  out << "\n";
  if (!a.config_text.empty()) {
    if (markdown) out << "```" << (a.config_format == "flags" ? "" : a.config_format) << "\n";
    out << a.config_text;
    if (markdown) out << "```\n";
  }
  for (const auto& n : a.notes) out << "note: " << n << "\n";
  if (!a.manual.empty()) {
    out << (markdown ? "\nStill to set by hand:\n\n" : "still to set by hand:\n");
    for (const auto& m : a.manual) out << (markdown ? "- " : "  - ") << m << "\n";
  }
}

}  // namespace segadvise::cli
