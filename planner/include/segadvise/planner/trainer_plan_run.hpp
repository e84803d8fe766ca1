// `check --advise` of a config within its own trainer's knobs: the plan shown carries the keys of the
// user's file its run is predicted with, and the whole run of that plan is predicted by the trainer's own
// keys, taking on the keys of a phase fix the trainer's plans set (Trainer::phase_knobs).
#pragma once

#include "segadvise/planner/advisor.hpp"
#include "segadvise/trainers/trainer.hpp"

namespace segadvise {

// The whole run of `ta`'s plan shown (its best, else its smallest) for `tr`'s own trainer, on the
// context of the check; `ta`'s shown plan and config text updated with the run keys and phase keys
// it takes on. nullopt where no plan is shown.
std::optional<RunPhases> own_plan_run(TrainerAdvice& ta, const TrainerRead& tr, const Context& ctx);

}  // namespace segadvise
