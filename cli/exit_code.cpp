#include "exit_code.hpp"

namespace segadvise::cli {

int exit_code(FitVerdict answer) {
  switch (answer) {
    case FitVerdict::Fits: return kOk;
    case FitVerdict::Borderline: return kBorderline;
    case FitVerdict::DoesNotFit: break;
  }
  return kDoesNotFit;
}

int exit_code(const PredictionReport& r) { return exit_code(r.verdict()); }

int exit_code(const AdviceReport& r, std::optional<FitVerdict> trainer_plan) {
  return exit_code(trainer_plan ? *trainer_plan : r.verdict());
}

int exit_code(const CheckReport& r, std::optional<FitVerdict> trainer_plan) {
  if (trainer_plan) return exit_code(*trainer_plan);
  return exit_code(r.advice ? r.advice->verdict() : r.verdict());
}

}  // namespace segadvise::cli
