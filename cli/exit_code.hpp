// The exit code of every command, from the one three-valued verdict (costmodel/anchor.hpp: the 90%
// range's upper end plus headroom fits = fits; straddles = borderline; lower end over = does not fit).
#pragma once

#include <optional>

#include "segadvise/planner/advisor.hpp"

namespace segadvise::cli {

// 0 fits, 1 does not fit / nothing fits / the trainer stops, 2 bad input (an InputError, mapped once in
// main), 3 borderline.
enum ExitCode { kOk = 0, kDoesNotFit = 1, kBadInput = 2, kBorderline = 3 };

// The one map from a verdict to an exit code.
int exit_code(FitVerdict answer);

// What each command answers with. `trainer_plan`: the verdict of another trainer's plan (--emit, or
// check of that trainer's config with --advise) when that plan is the answer.
int exit_code(const PredictionReport& r);  // the schedule asked for
int exit_code(const AdviceReport& r, std::optional<FitVerdict> trainer_plan = std::nullopt);
// the config's own verdict (the whole run's unless --step-only); with --advise, the advice's
int exit_code(const CheckReport& r, std::optional<FitVerdict> trainer_plan = std::nullopt);

}  // namespace segadvise::cli
