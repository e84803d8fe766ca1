#include "commands.hpp"

namespace segadvise::cli {
// Filled in by the calibration work (issue [3/6]).
void setup_calibrate(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("calibrate", "fit the cost model's coefficients to measured runs");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    exit_code = kBadInput;
    throw InputError("calibrate: not built yet");
  });
}
void setup_accuracy(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand("accuracy", "accuracy against measured runs");
  cmd->allow_extras();
  cmd->callback([&exit_code] {
    exit_code = kBadInput;
    throw InputError("accuracy: not built yet");
  });
}
}  // namespace segadvise::cli
