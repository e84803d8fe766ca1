// Config lines for other trainers: the best plan within each trainer's own memory knobs
// (segadvise/trainers/trainer_plans.hpp) evaluated against the advisor's context, and what
// SimpleTuner's interval/stride plan would gain over it; printed as a table or JSON.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "common.hpp"
#include "segadvise/planner/advisor.hpp"
#include "segadvise/trainers/trainer_plans.hpp"

namespace segadvise::cli {

// The best plan within `trainer`'s knobs for the context's setup. `simpletuner_best` is advise's
// recommendation over SimpleTuner's whole schedule space (nullptr when nothing fits there). `adjust`
// (where given) sees the plans before the comparison with SimpleTuner is written (a re-pick of the best).
TrainerAdvice advise_for_trainer(const Context& ctx, const std::string& trainer, const Candidate* simpletuner_best,
                                 const std::function<void(TrainerAdvice&)>& adjust = nullptr);


}  // namespace segadvise::cli
