// Another trainer's plans (--emit: TrainerAdvice) as table, markdown and JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "segadvise/trainers/trainer_plans.hpp"

namespace segadvise::cli {

nlohmann::json to_json(const TrainerAdvice& a);
void print_trainer_advice(std::ostream& out, const TrainerAdvice& a, bool markdown);

}  // namespace segadvise::cli
